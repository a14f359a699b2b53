#!/usr/bin/env bash
# meson test 'install': outerworld as a user outside the source tree gets it.
#
#   tests/install/run.sh SOURCE_DIR BUILD_DIR PREFIX LIBDIR
#
# Installs the build into a temporary directory (meson install --destdir), builds the README's
# C++ example there with `pkg-config --cflags --libs outerworld` only, runs it on the bundled
# scan inputs and compares its output with the numpy-computed expectation; then imports the
# installed Python package (when the source has one) from the installed site directory.
set -euo pipefail
src=$1 build=$2 prefix=$3 libdir=$4
tmp=$(mktemp -d /tmp/ow-install-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root$prefix

meson install -C "$build" --no-rebuild --destdir "$tmp/root" --quiet >/dev/null
[[ -x $root/bin/ow ]] || { echo "install: no bin/ow under $root" >&2; exit 1; }
"$root/bin/ow" --version

# The first ```cpp block after "## A short example in C++" in the README, as a file of its own.
mkdir "$tmp/example"
awk '/^## A short example in C\+\+/ {on = 1} on && /^```cpp/ {copy = 1; next} copy && /^```/ {exit} copy {print}' \
  "$src/README.md" > "$tmp/example/example.cpp"
[[ -s $tmp/example/example.cpp ]] || { echo "install: no C++ example found in README.md" >&2; exit 1; }
export PKG_CONFIG_PATH=$root/$libdir/pkgconfig
flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs outerworld)
(cd "$tmp/example" && g++ example.cpp -o example $flags)
data=$src/reference/expected/scan_with_assign
"$tmp/example/example" "$data/in_vec.npy" "$data/in_mats.npy" > "$tmp/example/out.txt"

# Expected: reference/make_expected.py's float64 math cast to float32 once. The example computes
# in float32 (ten-term dot products chained three deep), a few float32 roundings (2^-24
# relative) per term; rtol 1e-5 is far above that noise and far below any real error.
/usr/bin/python3 - "$tmp/example/out.txt" "$data/out_out.npy" <<'PY'
import sys
import numpy as np
got = np.loadtxt(sys.argv[1], dtype=np.float64)
want = np.load(sys.argv[2]).astype(np.float64).reshape(-1)
assert got.shape == want.shape, (got.shape, want.shape)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
print("install: the README's C++ example, built against the installed prefix, printed the 30 expected values")
PY

if [[ -d $src/python/outerworld ]]; then
  site=$(find "$root" -type d -name outerworld -path '*-packages/*' | head -1)
  [[ -n $site ]] || { echo "install: the Python package was not installed" >&2; exit 1; }
  # The installed package finds the installed ow by itself (no OW_BIN, no ow on PATH).
  (cd "$tmp" && env -u OW_BIN PATH=/usr/bin:/bin PYTHONPATH=$(dirname "$site") /usr/bin/python3 -c "
import numpy as np, outerworld
assert outerworld.__file__.startswith('$root'), outerworld.__file__
graph = outerworld.load('$src/reference/cases/scan_with_assign.uop')
inputs = {n: np.load('$data/in_' + n + '.npy') for n in ('vec', 'mats')}
out = outerworld.run(graph, inputs, backend='tcc')['out']
np.testing.assert_allclose(out, np.load('$data/out_out.npy'), rtol=1e-5, atol=1e-6)
w = outerworld.Worker()
assert w.process.args[0].startswith('$root'), w.process.args
w.close()
print('install: the installed package ran the bundled scan on the installed ow:', outerworld.__file__)")
fi
