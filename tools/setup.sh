#!/usr/bin/env bash
# Set up outerworld on Debian 12 from nothing: install the system packages that are missing,
# configure build/ with meson and build it. Safe to run again: it installs nothing that is
# already there and only rebuilds what changed.
#
#   tools/setup.sh                  packages + build/ (debugoptimized)
#   tools/setup.sh --sanitize       also build-asan/ (ASan + UBSan, for tools/test.sh)
#   tools/setup.sh --configure-only install and configure, but do not build
#   tools/setup.sh --packages-only  install the packages and stop
#   tools/setup.sh --oracle-suite   install only what tools/oracle_suite.sh needs (SUITE_PACKAGES) and stop
#
# Runs as root, or as a user with sudo. Environment: CXX compiles build/ (default g++),
# OW_ASAN_CXX compiles build-asan/ (default clang++ when installed, else g++).
set -euo pipefail

# The system packages outerworld needs, one place for all of them (Debian 12 names).
PACKAGES=(
  meson ninja-build pkg-config g++  # build
  clang libclang-rt-14-dev          # clang with libFuzzer and the sanitizer runtimes (tools/fuzz.sh)
  libboost-graph-dev                # ow dot (header-only boost graph)
  libboost-program-options-dev      # the ow command line
  catch2                            # unit tests (Catch2 v2)
  libtcc-dev tcc                    # the C backend (JIT through libtcc)
  xtensor-dev xtl-dev               # reference arrays in tests
  python3-numpy                     # cross-checks against numpy
  python3-pytest python3-pytest-xdist  # the tinygrad oracle's pytest plugin (meson test tinygrad-plugin)
  libopenblas0-pthread              # ow bench: numpy's matmul on OpenBLAS, the issue's baseline (--numpy-blas)
  graphviz                          # ow dot --svg
  chromium nodejs npm               # the browser test of ow report (tests/tools/browser, playwright-core)
  git
)
# What tools/oracle_suite.sh needs to run tinygrad's test files under the oracle (with an ow built
# or installed): tinygrad's CPU device compiles with clang, its tests import torch (large, and
# needed by nothing else) and hypothesis; the plugin runs in pytest and pytest-xdist.
SUITE_PACKAGES=(
  clang python3-numpy python3-pytest python3-pytest-xdist python3-torch python3-hypothesis
)

sanitize=0
build=1
packages_only=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --configure-only) build=0 ;;
    --packages-only) packages_only=1 ;;
    --oracle-suite) PACKAGES=("${SUITE_PACKAGES[@]}"); packages_only=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# ---- system packages -------------------------------------------------------------------------
command -v dpkg-query >/dev/null && command -v apt-get >/dev/null ||
  die "this script needs a Debian/Ubuntu system with dpkg and apt-get (Debian 12 is supported)"

# A nodejs package from elsewhere (NodeSource) bundles npm and conflicts with Debian's npm.
provided() { [[ $1 == npm ]] && command -v npm >/dev/null; }

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || provided "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
  if ((EUID == 0)); then
    SUDO=()
  elif command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    die "missing packages (${missing[*]}) and not root and no sudo: run 'apt-get install ${missing[*]}' as root"
  fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1 ||
     ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
         "${missing[@]}" >>"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "apt-get failed (output above)"
  fi
  rm -f "$log"
  # Verify: a package name that apt resolved to something else would leave us half set up.
  for p in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == installed ]] || die "package $p is still not installed after apt-get"
  done
else
  say "all ${#PACKAGES[@]} system packages present"
fi
((packages_only)) && exit 0

# ---- configure and build ---------------------------------------------------------------------
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# configure DIR CXX BUILDTYPE [meson options...]: meson setup DIR with that C++ compiler. setup.sh
# remembers how it configured a dir (DIR/ow-setup-options): the same options are a no-op (ninja
# re-runs meson by itself when a meson.build changes), different ones delete the dir and set it
# up again. A dir configured by hand (no such file) is left as it is.
configure() {
  local dir=$1 cxx=$2 buildtype=$3
  shift 3
  local want="CXX=$cxx --buildtype=$buildtype $*"
  if [[ -f "$dir/meson-private/coredata.dat" && -f "$dir/build.ninja" ]]; then
    [[ -f "$dir/ow-setup-options" ]] || return 0
    [[ "$(cat "$dir/ow-setup-options")" == "$want" ]] && return 0
  fi
  # (meson setup --wipe would keep the old options, so start from an empty dir)
  [[ -d "$dir/meson-private" ]] && rm -rf "$dir"
  command -v "$cxx" >/dev/null || die "$cxx not found (is the package list above complete?)"
  say "configuring $dir ($want)"
  local log
  log=$(mktemp)
  if ! CXX=$cxx meson setup "$dir" --buildtype="$buildtype" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "meson setup $dir failed (output above)"
  fi
  rm -f "$log"
  echo "$want" >"$dir/ow-setup-options"
}

build_dir() {
  say "building $1"
  ninja -C "$1" --quiet || die "build of $1 failed (compiler output above)"
}

configure build "${CXX:-g++}" debugoptimized
if ((sanitize)); then
  # The sanitizer build: ASan + UBSan at -O0 (buildtype debug): with ASan, GCC 12 compiles 4x
  # faster at -O0 than at -O2 (the Catch2 main: 30 s vs 130 s), the tests run fast enough without
  # optimization, and ASan misses less. GCC 12 reports false -Wmaybe-uninitialized inside
  # libstdc++ under sanitizers, hence the flag.
  # It is compiled with clang++ by default (OW_ASAN_CXX=g++ to use GCC): with ASan, clang builds
  # it in a quarter of GCC's time (135 s vs 502 s measured for the whole build-asan/) and puts a
  # second compiler next to build/'s GCC. (clang 14 rejects lambdas that capture structured
  # bindings, C++20 P1091, clang >= 16: capture them explicitly, [&, &name = name].)
  if [[ -n "${OW_ASAN_CXX:-}" ]]; then
    asan_cxx=$OW_ASAN_CXX
  elif command -v clang++ >/dev/null; then
    asan_cxx=clang++
  else
    asan_cxx=g++
  fi
  asan_args=(-Db_sanitize=address,undefined -Db_lundef=false)
  case "$(basename "$asan_cxx")" in
    g++* | c++*) asan_args+=(-Dcpp_args=-Wno-maybe-uninitialized) ;;
  esac
  configure build-asan "$asan_cxx" debug "${asan_args[@]}"
fi
((build)) || exit 0
build_dir build
((sanitize)) && build_dir build-asan
say "done: build/tools/ow is ready"
