#!/usr/bin/env bash
# libFuzzer for the .uop parser, verifier and printer (tests/fuzz/fuzz_parse.cpp).
#
#   tools/fuzz.sh [SECONDS]     build build-fuzz/fuzz_parse and fuzz for SECONDS (default 60)
#   tools/fuzz.sh --build       only build it
#   tools/fuzz.sh --regress     build it and replay tests/fuzz/regressions, tests/fuzz/seeds and
#                               reference/cases once each (tools/test.sh runs this)
#
# The corpus lives in build-fuzz/corpus, seeded from reference/cases/*.uop, tests/fuzz/seeds/*
# and tests/fuzz/regressions/*. A crash, timeout or leak is copied to tests/fuzz/regressions/
# (commit it, next to a minimized copy) and the script exits non-zero.
# Environment: FUZZ_JOBS=N runs N fuzzing processes (-fork=N); CXX_FUZZ overrides clang++.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build-fuzz
bin=$out/fuzz_parse
cxx=${CXX_FUZZ:-clang++}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc)

die() { echo "fuzz: error: $*" >&2; exit 1; }

# ---- build -----------------------------------------------------------------------------------
build() {
  command -v "$cxx" >/dev/null || die "$cxx not found: run tools/setup.sh first"
  # The core library without dot.cpp (boost graph writer; not reached by the harness).
  local srcs=() f
  for f in src/uop/*.cpp; do
    [[ "$f" == src/uop/dot.cpp ]] || srcs+=("$f")
  done
  srcs+=(tests/fuzz/fuzz_parse.cpp)
  # Rebuild everything when any source, header or this script is newer than the binary.
  if [[ -x "$bin" ]] && [[ -z "$(find src/uop tests/fuzz/fuzz_parse.cpp tools/fuzz.sh -newer "$bin" \
                                     \( -name '*.cpp' -o -name '*.h' -o -name '*.sh' \) -print -quit)" ]]; then
    return 0
  fi
  echo "fuzz: building $bin"
  mkdir -p "$out/obj"
  rm -f "$out"/obj/*.o
  # One object per source, compiled in parallel, then one link.
  printf '%s\n' "${srcs[@]}" |
    xargs -P "$(nproc)" -I{} sh -c 'o="$1/obj/$(echo "$2" | tr / _).o"; exec "$3" $4 -c "$2" -o "$o"' \
      sh "$out" {} "$cxx" "${flags[*]}" ||
    die "compiling the fuzzer failed"
  "$cxx" "${flags[@]}" "$out"/obj/*.o -o "$bin.tmp" || die "linking the fuzzer failed"
  mv "$bin.tmp" "$bin"
}

# Files in DIRs that are inputs, not documentation.
inputs() {
  local d f
  for d in "$@"; do
    [[ -d "$d" ]] || continue
    for f in "$d"/*; do
      [[ -f "$f" ]] || continue
      case "$(basename "$f")" in
        README* | .gitkeep | *.md) ;;
        *) printf '%s\n' "$f" ;;
      esac
    done
  done
}

mode=fuzz
seconds=60
case "${1:-}" in
  --build) mode=build ;;
  --regress) mode=regress ;;
  -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) [[ "$1" =~ ^[0-9]+$ ]] || die "usage: tools/fuzz.sh [SECONDS | --build | --regress]"; seconds=$1 ;;
esac

build
[[ $mode == build ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if [[ $mode == regress ]]; then
  mapfile -t files < <(inputs tests/fuzz/regressions tests/fuzz/seeds reference/cases)
  ((${#files[@]})) || { echo "fuzz: no regression inputs"; exit 0; }
  log=$out/regress.log
  if "$bin" -timeout=10 -rss_limit_mb=4096 "${files[@]}" >"$log" 2>&1; then
    echo "fuzz: ${#files[@]} regression inputs replayed, no crash"
    exit 0
  fi
  cat "$log" >&2
  die "a fuzz regression input crashed the harness (log above, also in $log)"
fi

# ---- fuzz ------------------------------------------------------------------------------------
corpus=$out/corpus
artifacts=$out/artifacts
mkdir -p "$corpus" "$artifacts" tests/fuzz/regressions
while IFS= read -r f; do
  # Name seeds by content so re-seeding is idempotent and never clobbers libFuzzer's files.
  cp -n "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
done < <(inputs reference/cases tests/fuzz/seeds tests/fuzz/regressions)

dict=()
[[ -f tests/fuzz/uop.dict ]] && dict=(-dict=tests/fuzz/uop.dict)
jobs=()
[[ -n "${FUZZ_JOBS:-}" ]] && jobs=(-fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1)

before=$(ls "$artifacts" | wc -l)
echo "fuzz: fuzzing for ${seconds}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs)"
set +e
"$bin" -max_total_time="$seconds" -max_len=65536 -timeout=5 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "${dict[@]}" "${jobs[@]}" "$corpus" 2>&1 |
  tee "$out/fuzz.log" | grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE|pulse)|stat::|==[0-9]+==ERROR|SUMMARY|.*: runtime error:|artifact_prefix|Test unit written|INFO: fork|Done [0-9]+ runs)' || true
status=${PIPESTATUS[0]}
set -e

found=0
for a in "$artifacts"/*; do
  [[ -f "$a" ]] || continue
  name=$(basename "$a")
  [[ -e "tests/fuzz/regressions/$name" ]] && continue
  found=1
  cp "$a" "tests/fuzz/regressions/$name"
  echo "fuzz: new reproducer tests/fuzz/regressions/$name"
  case "$name" in
    crash-* | timeout-* | leak-* | oom-*)
      if "$bin" -minimize_crash=1 -runs=20000 -timeout=5 -exact_artifact_path="$out/min-$name" "$a" \
           >"$out/minimize-$name.log" 2>&1 || [[ -s "$out/min-$name" ]]; then
        if [[ -s "$out/min-$name" ]] && ! cmp -s "$out/min-$name" "$a"; then
          cp "$out/min-$name" "tests/fuzz/regressions/$name-min"
          echo "fuzz: minimized to tests/fuzz/regressions/$name-min ($(wc -c <"$out/min-$name") bytes)"
        fi
      fi
      ;;
  esac
done
echo "fuzz: full log in $out/fuzz.log; $(($(ls "$artifacts" | wc -l) - before)) new artifact(s)"
if ((found)) || ((status != 0)); then
  [[ $status != 0 ]] && echo "fuzz: the fuzzer exited with status $status" >&2
  exit 1
fi
