#!/usr/bin/env bash
# libFuzzer harnesses (clang, with ASan + UBSan):
#   parse  tests/fuzz/fuzz_parse.cpp  the .uop parser, verifier and printer (round trip)
#   run    tests/fuzz/fuzz_run.cpp    the reference interpreter on every graph that verifies; lowering
#                                     refuses every graph that does not, as the interpreter does
#
#   tools/fuzz.sh [--target T] [SECONDS]   build build-fuzz/fuzz_T and fuzz for SECONDS (default 60)
#   tools/fuzz.sh [--target T] --build     only build it
#   tools/fuzz.sh [--target T] --regress   build it and run tests/fuzz/regressions, tests/fuzz/seeds
#                                          and reference/cases through it once (tools/test.sh)
# The target defaults to parse.
#
# The corpus lives in build-fuzz/corpus-T, seeded from reference/cases/*.uop, tests/fuzz/seeds/*
# and tests/fuzz/regressions/*. A crash, timeout or leak is copied to tests/fuzz/regressions/
# with a minimized copy next to it (commit both), and the script exits non-zero.
# Environment: FUZZ_JOBS=N runs N fuzzing processes (-fork=N); CXX_FUZZ overrides clang++.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "fuzz: error: $*" >&2; exit 1; }

target=parse
mode=fuzz
seconds=60
while (($#)); do
  case "$1" in
    --target) [[ $# -ge 2 ]] || die "--target needs parse or run"; target=$2; shift ;;
    --target=*) target=${1#--target=} ;;
    --build) mode=build ;;
    --regress) mode=regress ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ "$1" =~ ^[0-9]+$ ]] || die "usage: tools/fuzz.sh [--target parse|run] [SECONDS | --build | --regress]"
       seconds=$1 ;;
  esac
  shift
done

out=build-fuzz
bin=$out/fuzz_$target
cxx=${CXX_FUZZ:-clang++}
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc)

# Sources of each target: the layers it needs, without dot.cpp (the boost graph writer, which no
# harness reaches).
case "$target" in
  parse) dirs=(src/uop) ;;
  run) dirs=(src/uop src/grad src/interp src/opt src/lower) ;;
  *) die "unknown target '$target' (parse or run)" ;;
esac
harness=tests/fuzz/fuzz_$target.cpp
[[ -f "$harness" ]] || die "$harness is missing"

# ---- build -----------------------------------------------------------------------------------
build() {
  command -v "$cxx" >/dev/null || die "$cxx not found: run tools/setup.sh first"
  local srcs=() f d
  for d in "${dirs[@]}"; do
    for f in "$d"/*.cpp; do
      [[ "$f" == src/uop/dot.cpp ]] || srcs+=("$f")
    done
  done
  srcs+=("$harness")
  # Rebuild everything when any source, header or this script is newer than the binary.
  if [[ -x "$bin" ]] && [[ -z "$(find "${dirs[@]}" "$harness" tools/fuzz.sh -newer "$bin" \
                                     \( -name '*.cpp' -o -name '*.h' -o -name '*.sh' \) -print -quit)" ]]; then
    return 0
  fi
  echo "fuzz: building $bin"
  local obj=$out/obj-$target
  mkdir -p "$obj"
  rm -f "$obj"/*.o
  # One object per source, compiled in parallel, then one link.
  printf '%s\n' "${srcs[@]}" |
    xargs -P "$(nproc)" -I{} sh -c 'o="$1/$(echo "$2" | tr / _).o"; exec "$3" $4 -c "$2" -o "$o"' \
      sh "$obj" {} "$cxx" "${flags[*]}" ||
    die "compiling the fuzzer failed"
  "$cxx" "${flags[@]}" "$obj"/*.o -o "$bin.tmp" || die "linking the fuzzer failed"
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
        README* | .* | *.md) ;;
        *) printf '%s\n' "$f" ;;
      esac
    done
  done
}

build
[[ $mode == build ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

if [[ $mode == regress ]]; then
  mapfile -t files < <(inputs tests/fuzz/regressions tests/fuzz/seeds reference/cases)
  ((${#files[@]})) || { echo "fuzz: no regression inputs"; exit 0; }
  log=$out/regress-$target.log
  if "$bin" -timeout=10 -rss_limit_mb=4096 "${files[@]}" >"$log" 2>&1; then
    echo "fuzz: ${#files[@]} regression inputs through $bin, no crash"
    exit 0
  fi
  grep -v '^Running: \|^Executed ' "$log" | tail -60 >&2
  die "a regression input crashed $bin (see above; full log in $log)"
fi

# ---- fuzz ------------------------------------------------------------------------------------
corpus=$out/corpus-$target
artifacts=$out/artifacts-$target
mkdir -p "$corpus" "$artifacts" tests/fuzz/regressions
while IFS= read -r f; do
  # Name seeds by content so re-seeding is idempotent and never clobbers libFuzzer's files.
  cp -n "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
done < <(inputs reference/cases tests/fuzz/seeds tests/fuzz/regressions)

dict=()
[[ -f tests/fuzz/uop.dict ]] && dict=(-dict=tests/fuzz/uop.dict)
jobs=()
[[ -n "${FUZZ_JOBS:-}" ]] && jobs=(-fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1)

# Reproducers are saved under a target prefix so the two harnesses' files stay apart.
prefix=
[[ $target == parse ]] || prefix=$target-
before=$(ls "$artifacts" | wc -l)
echo "fuzz: fuzzing $bin for ${seconds}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs)"
set +e
"$bin" -max_total_time="$seconds" -max_len=65536 -timeout=5 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "${dict[@]}" "${jobs[@]}" "$corpus" 2>&1 |
  tee "$out/fuzz-$target.log" |
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE|pulse)|stat::|==[0-9]+==ERROR|SUMMARY|.*: runtime error:|artifact_prefix|Test unit written|INFO: fork|Done [0-9]+ runs)' || true
status=${PIPESTATUS[0]}
set -e

found=0
for a in "$artifacts"/*; do
  [[ -f "$a" ]] || continue
  name=$prefix$(basename "$a")
  [[ -e "tests/fuzz/regressions/$name" ]] && continue
  found=1
  cp "$a" "tests/fuzz/regressions/$name"
  echo "fuzz: new reproducer tests/fuzz/regressions/$name"
  case "$name" in
    *crash-* | *timeout-* | *leak-* | *oom-*)
      "$bin" -minimize_crash=1 -runs=20000 -timeout=5 -exact_artifact_path="$out/min-$name" "$a" \
        >"$out/minimize-$name.log" 2>&1 || true
      if [[ -s "$out/min-$name" ]] && ! cmp -s "$out/min-$name" "$a"; then
        cp "$out/min-$name" "tests/fuzz/regressions/$name-min"
        echo "fuzz: minimized to tests/fuzz/regressions/$name-min ($(wc -c <"$out/min-$name") bytes)"
      fi
      ;;
  esac
done
echo "fuzz: full log in $out/fuzz-$target.log; $(($(ls "$artifacts" | wc -l) - before)) new artifact(s)"
if ((found)) || ((status != 0)); then
  ((status == 0)) || echo "fuzz: the fuzzer exited with status $status" >&2
  exit 1
fi
