#!/usr/bin/env bash
# Compare `ow run` on every reference case with tinygrad's golden results.
#
#   tools/check_golden.sh            # golden data in ${GOLDEN:-../shared/golden} (default relative to the repo root)
#   GOLDEN=/path/to/golden OW=/path/to/ow tools/check_golden.sh
#
# For each directory <case>/ of the golden data (sgd_baseline: the one-graph OUTER training loop)
# runs reference/cases/<case>.uop with every in_<name>.npy bound to buffer <name>, saves every
# output that has an out_<name>.npy, and compares with /usr/bin/python3 + numpy:
# PASS if max|a-b| <= tol * max|expected| (tol 1e-4 for the large _big_/_mlp_ cases, else 1e-5)
# and the shapes agree. One line per output, then "N passed, M failed"; exits 1 on any failure.
# The golden data is optional: without it the script says so and exits 77 (meson's "skipped": it
# is meson test golden), or 1 when OW_REQUIRE_GOLDEN is set. The project's other tests do not use
# it (they use reference/expected/, see reference/make_expected.py).
set -u

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# GOLDEN and OW, when given, are taken relative to the caller's directory; the default golden
# path is relative to the repo root.
golden="${GOLDEN:-$root/../shared/golden}"
ow="${OW:-$root/build/tools/ow}"
[ -d "$golden" ] && golden="$(cd "$golden" && pwd)"
case "$ow" in /*) ;; *) ow="$PWD/$ow" ;; esac
cd "$root"
python=/usr/bin/python3

if [ ! -d "$golden" ]; then
  if [ -n "${OW_REQUIRE_GOLDEN:-}" ]; then
    echo "check_golden: no golden data at '$golden' (set GOLDEN=DIR), and OW_REQUIRE_GOLDEN is set" >&2
    exit 1
  fi
  echo "check_golden: skipped: no golden data at '$golden' (set GOLDEN=DIR)"
  exit 77
fi
if [ ! -x "$ow" ]; then
  echo "check_golden: '$ow' not found; build first (ninja -C build) or set OW=PATH" >&2
  exit 2
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ow-golden-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# One line per output for the comparison step: case, output, tolerance, expected, actual (or "-").
list="$tmp/list.tsv"
: >"$list"
run_failed=0
for dir in "$golden"/*/; do
  case_name="$(basename "$dir")"
  tol=1e-5
  case "$case_name" in *_big_* | *_mlp_*) tol=1e-4 ;; esac
  graph="reference/cases/$case_name.uop"
  outs=()
  for f in "$dir"out_*.npy; do
    [ -e "$f" ] || continue
    n="$(basename "$f" .npy)"
    outs+=("${n#out_}")
  done
  if [ ! -f "$graph" ]; then
    echo "$case_name: no $graph" >&2
    for n in "${outs[@]}"; do printf '%s\t%s\t%s\t%s\t-\n' "$case_name" "$n" "$tol" "$dir/out_$n.npy" >>"$list"; done
    continue
  fi
  args=()
  for f in "$dir"in_*.npy; do
    [ -e "$f" ] || continue
    n="$(basename "$f" .npy)"
    args+=(--in "${n#in_}=$f")
  done
  mkdir -p "$tmp/$case_name"
  for n in "${outs[@]}"; do args+=(--out "$n=$tmp/$case_name/out_$n.npy"); done
  if ! "$ow" run "$graph" "${args[@]}" >"$tmp/$case_name/log" 2>&1; then
    echo "$case_name: ow run failed:" >&2
    sed 's/^/  /' "$tmp/$case_name/log" >&2
    run_failed=1
  fi
  for n in "${outs[@]}"; do
    got="$tmp/$case_name/out_$n.npy"
    [ -f "$got" ] || got=-
    printf '%s\t%s\t%s\t%s\t%s\n' "$case_name" "$n" "$tol" "$dir/out_$n.npy" "$got" >>"$list"
  done
done

"$python" - "$list" <<'EOF'
import sys
import numpy as np

passed = failed = 0
print(f"{'case':28s} {'output':10s} {'max|diff|':>10s} {'relative':>10s}  result")
for line in open(sys.argv[1]):
    case, name, tol, want_path, got_path = line.rstrip("\n").split("\t")
    tol = float(tol)
    want = np.load(want_path).astype(np.float64)
    if got_path == "-":
        print(f"{case:28s} {name:10s} {'no output':>10s} {'':>10s}  FAIL (not produced)")
        failed += 1
        continue
    got = np.load(got_path).astype(np.float64)
    if got.shape != want.shape:
        print(f"{case:28s} {name:10s} {'':>10s} {'':>10s}  FAIL (shape {got.shape} != expected {want.shape})")
        failed += 1
        continue
    scale = float(np.abs(want).max()) if want.size else 0.0
    diff = float(np.abs(got - want).max()) if want.size else 0.0
    if np.isnan(diff):
        diff = float("inf")
    rel = diff / scale if scale > 0 else diff
    ok = diff <= tol * scale
    passed += ok
    failed += not ok
    print(f"{case:28s} {name:10s} {diff:10.3g} {rel:10.3g}  {'PASS' if ok else 'FAIL'} (tol {tol:g})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
EOF
rc=$?
[ $rc -eq 0 ] && [ $run_failed -ne 0 ] && rc=1
exit $rc
