#!/usr/bin/env bash
# tinygrad's own test files under the outerworld oracle, each also run without it, side by side.
#
#   tools/oracle_suite.sh [options] [SUITE_DIR] [FILE...]
#
# SUITE_DIR: a copy of tinygrad's test suite (its test/ folder, with the folders its files import
# beside it), default ../shared/tinygrad/suite relative to the repository root; the tinygrad
# package is taken from SUITE_DIR/.. unless OW_TINYGRAD names it. FILE: test files of
# SUITE_DIR/test to run (test_ops.py ...), default all of them.
#
# Each file runs twice in pytest with the oracle's plugin (python/outerworld/tinygrad/pytest_plugin.py):
# plainly (--ow-report: the outcomes only) and under the oracle (--ow-oracle). Then, per file:
# realizes, agree, DISAGREE, NaN as written, refused by reason, the tests whose outcome the
# oracle changed, and the wall time of both runs (tools/oracle_suite_report.py; every DISAGREE
# and every outcome change is listed below the table).
#
#   -n N        pytest-xdist workers for both runs (default: none, one process)
#   --out DIR   where the reports and logs go (default ${TMPDIR:-/tmp}/oracle-suite)
#   --no-install  do not check the Debian packages (tools/setup.sh --oracle-suite)
#   -k EXPR     passed to pytest (a subset of the tests)
#   --max-memory SIZE  memory each ow worker may use per request (default ow's, half of physical
#               memory: with -n N give each worker a share, e.g. 4G; over it a realize is refused, "budget")
#   --overlap   ow computes while tinygrad does (the plugin's --ow-overlap)
#
# Environment: OW_BIN (default build/tools/ow), DEV (default CPU). Takes long (test_ops.py alone
# is minutes): it is not part of the CI test command; meson test tinygrad-plugin is its smoke test.
# Exits 1 when the oracle failed (its own errors, non-identical round trips) or changed a test's
# outcome, 2 on a usage or setup error; DISAGREEs are findings about tinygrad, reported, not failed on.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workers=""
out="${TMPDIR:-/tmp}/oracle-suite"
install=1
filter=()
oracle_opts=()
args=()
while (($#)); do
  case "$1" in
    -n) workers=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    -k) filter=(-k "$2"); shift 2 ;;
    --max-memory) oracle_opts+=(--ow-max-memory "$2"); shift 2 ;;
    --overlap) oracle_opts+=(--ow-overlap); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "oracle_suite: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

suite="$root/../shared/tinygrad/suite"
if ((${#args[@]})) && [[ -d "${args[0]}" ]]; then suite=${args[0]}; args=("${args[@]:1}"); fi
[[ -d "$suite/test" ]] || { echo "oracle_suite: no test/ folder in '$suite' (give SUITE_DIR)" >&2; exit 2; }
suite="$(cd "$suite" && pwd)"
tinygrad="${OW_TINYGRAD:-$(cd "$suite/.." && pwd)}"
[[ -d "$tinygrad/tinygrad" ]] || { echo "oracle_suite: no tinygrad package in '$tinygrad' (set OW_TINYGRAD)" >&2; exit 2; }
export OW_BIN="${OW_BIN:-$root/build/tools/ow}"
[[ "$OW_BIN" = /* ]] || OW_BIN="$PWD/$OW_BIN"
[[ -x "$OW_BIN" ]] || { echo "oracle_suite: no ow binary at '$OW_BIN' (tools/setup.sh builds it, or set OW_BIN)" >&2; exit 2; }
export DEV="${DEV:-CPU}"

if ((install)); then "$root/tools/setup.sh" --oracle-suite || exit 2; fi
python=/usr/bin/python3  # Debian's: the packages above are installed for it

files=("${args[@]}")
if ((${#files[@]} == 0)); then
  for f in "$suite"/test/test_*.py; do files+=("$(basename "$f")"); done
fi
mkdir -p "$out"
xdist=()
[[ -n "$workers" ]] && xdist=(-n "$workers")

# tinygrad's test_dtype.py imports test/unit/test_dtype_spec.py, which a suite copy may lack
# (../shared/tinygrad/suite does): then the files run from an overlay of the suite folder, links
# to its entries plus outerworld's stand-in for that module (tools/oracle_suite_shims/unit).
if [[ ! -e "$suite/test/unit" ]]; then
  overlay="$out/suite-overlay"
  rm -rf "$overlay" && mkdir -p "$overlay/test" || exit 2
  for e in "$suite"/*; do [[ "$(basename "$e")" = test ]] || ln -s "$e" "$overlay/"; done
  for e in "$suite"/test/*; do ln -s "$e" "$overlay/test/"; done
  ln -s "$root/tools/oracle_suite_shims/unit" "$overlay/test/unit"
  echo "oracle_suite: $suite/test has no unit/ (test_dtype.py imports unit/test_dtype_spec.py): running from $overlay, with outerworld's stand-in for it" >&2
  suite=$overlay
fi

# run NAME FILE OPTIONS...: pytest on FILE from the suite folder (so `test`, `extra` and
# `examples` import), its output in $out/NAME.log; prints "SECONDS STATUS".
run() {
  local name=$1 file=$2 start ms status
  shift 2
  start=$(date +%s%N)
  (cd "$suite" && PYTHONPATH="$root/python:$tinygrad:$suite" "$python" -m pytest -q -p no:cacheprovider "${xdist[@]}" \
    "${filter[@]}" -p outerworld.tinygrad.pytest_plugin "$@" "test/$file") >"$out/$name.log" 2>&1
  status=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  printf '%d.%03d %d\n' $((ms / 1000)) $((ms % 1000)) "$status"
}

for f in "${files[@]}"; do
  base=${f%.py}
  echo "oracle_suite: $f: plain ..." >&2
  read -r plain_s plain_rc < <(run "$base.plain" "$f" --ow-report "$out/$base.plain.json")
  echo "oracle_suite: $f: plain $plain_s s (pytest status $plain_rc); under the oracle ..." >&2
  read -r oracle_s oracle_rc < <(run "$base.oracle" "$f" --ow-oracle "${oracle_opts[@]}" --ow-report "$out/$base.oracle.json")
  echo "oracle_suite: $f: under the oracle $oracle_s s (pytest status $oracle_rc)" >&2
  echo "$plain_s $plain_rc $oracle_s $oracle_rc" >"$out/$base.times"
done

echo "uptime: $(uptime)"
"$python" "$root/tools/oracle_suite_report.py" "$out" "${files[@]}"
