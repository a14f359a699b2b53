#!/usr/bin/env bash
# Run every test outerworld has, from a fresh Debian 12 machine if need be:
#
#   1. tools/setup.sh --sanitize  (missing packages, configure build/ and build-asan/)
#   2. build/ (debugoptimized): build, meson test
#   3. build-asan/ (ASan + UBSan): build, meson test with leak checking and UB as a hard error
#   4. the fuzzer regression corpus through both harnesses, reader and interpreter
#      (tools/fuzz.sh --target parse|run --regress: libFuzzer + ASan + UBSan, clang)
#
# Every step runs even if an earlier one failed. The last line of output is always exactly
# "N passed, M failed": N and M count meson test results of both builds; a step that fails
# without producing test results (a build, the fuzz regressions) counts as one failure.
# Above it, "skipped: K" and one line per meson test that reported a skip (exit 77: it could not
# run its check here), with its build dir and why. The exit status is 0 only if M is 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export OW_REQUIRE_BROWSER=1  # the browser test (tests/tools/browser) must run here, never skip
export OW_REQUIRE_TINYGRAD=1  # and so must tinygrad's own tests under the oracle (tests/python)
export OW_REQUIRE_GRAPHVIZ=1 OW_REQUIRE_OPENBLAS=1  # and the ones that need them (setup.sh installs both)

passed=0
failed=0
skipped=()  # "DIR/NAME: why" of every meson test that reported a skip
done_=0
start=$SECONDS

# The skipped tests, named, then the totals (the last line).
totals() {
  echo
  echo "skipped: ${#skipped[@]}"
  local s
  for s in "${skipped[@]}"; do echo "  $s"; done
  echo "$passed passed, $failed failed"
}

summary() {
  local rc=$?
  if ((!done_)); then
    ((rc == 0)) || failed=$((failed + 1))  # an unexpected error in this script itself
    totals
  fi
  ((failed == 0)) || exit 1
  exit "$rc"
}
trap summary EXIT

step() { echo; echo "=== $* ($((SECONDS - start))s)"; }

# count_results DIR: add DIR's meson test results (meson-logs/testlog.json) to the totals, and
# its skipped tests to `skipped`. Sets counted to the number of passed and failed results.
count_results() {
  local log=$1/meson-logs/testlog.json ok bad line
  counted=0
  [[ -f "$log" ]] || return 0
  {
    read -r ok bad
    while IFS= read -r line; do skipped+=("$1/$line"); done
  } < <(python3 - "$log" <<'EOF'
import json, sys
ok = bad = 0
skips = []  # "name: why", why the first line of its output that says it skipped
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.strip()
    if not line:
        continue
    test = json.loads(line)
    result = test.get("result", "")
    if result in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif result == "SKIP":
        out = (test.get("stdout") or "") + (test.get("stderr") or "")
        why = next((l.strip() for l in out.splitlines() if "SKIP" in l or "skipped" in l), "")
        skips.append(test.get("name", "?") + (": " + why[:200] if why else ""))
    else:  # FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR, INTERRUPT
        bad += 1
print(ok, bad)
for s in skips:
    print(s)
EOF
)
  passed=$((passed + ok))
  failed=$((failed + bad))
  counted=$((ok + bad))
}

# run_suite DIR [meson test options]: build DIR, run its tests, count the results.
run_suite() {
  local dir=$1 rc=0
  shift
  step "build $dir"
  if ! ninja -C "$dir" --quiet; then
    echo "test: build of $dir failed; its tests are not run" >&2
    failed=$((failed + 1))
    return
  fi
  step "meson test -C $dir"
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --print-errorlogs "$@" || rc=$?
  count_results "$dir"
  if ((rc != 0 && counted == 0)); then
    echo "test: meson test in $dir failed (status $rc) without recording results" >&2
    failed=$((failed + 1))
  fi
}

step "setup"
tools/setup.sh --sanitize --configure-only || exit 1  # counted as one failure by summary()

run_suite build

ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  run_suite build-asan --timeout-multiplier 3

step "fuzz regressions"
for target in parse run; do
  [[ -f tests/fuzz/fuzz_$target.cpp ]] || continue
  tools/fuzz.sh --target "$target" --regress || failed=$((failed + 1))
done

echo
echo "test: finished in $((SECONDS - start))s"
totals
done_=1
