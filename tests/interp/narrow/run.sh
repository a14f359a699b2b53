#!/usr/bin/env bash
# Every conversion between the 15 dtypes over all 8/16-bit patterns, and narrow arithmetic and
# reductions: reference/narrow/make_narrow.py computes the expectations apart from outerworld
# (16 MB of cases: generated here, not committed), check_narrow.py runs them with `ow` on each
# backend and requires every output byte for byte.
#   tests/interp/narrow/run.sh OW_BINARY
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ow=$1
py=/usr/bin/python3
[[ -x $py ]] || py=python3
cases=$(mktemp -d "${TMPDIR:-/tmp}/ow-narrow.XXXXXX")
trap 'rm -rf "$cases"' EXIT
"$py" "$here/../../../reference/narrow/make_narrow.py" --out "$cases" >/dev/null
status=0
for backend in interp tcc cc check; do
  "$py" "$here/check_narrow.py" --ow "$ow" --cases "$cases" --backend "$backend" | tail -n 1 || status=1
done
exit $status
