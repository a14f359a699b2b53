#!/usr/bin/env bash
# Set up outerworld on Debian 12 from nothing: install the system packages that are missing,
# configure build/ with meson and build it. Safe to run again: it installs nothing that is
# already there and only rebuilds what changed.
#
#   tools/setup.sh                  packages + build/ (debugoptimized)
#   tools/setup.sh --sanitize       also build-asan/ (ASan + UBSan, for tools/test.sh)
#   tools/setup.sh --configure-only install and configure, but do not build
#   tools/setup.sh --packages-only  install the packages and stop
#
# Runs as root, or as a user with sudo.
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
  graphviz                          # ow dot --svg
  git
)

sanitize=0
build=1
packages_only=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --configure-only) build=0 ;;
    --packages-only) packages_only=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# ---- system packages -------------------------------------------------------------------------
command -v dpkg-query >/dev/null && command -v apt-get >/dev/null ||
  die "this script needs a Debian/Ubuntu system with dpkg and apt-get (Debian 12 is supported)"

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
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

# configure DIR BUILDTYPE [meson options...]: meson setup DIR, unless it is already configured
# with these options (remembered in DIR/ow-setup-options); different options reconfigure it.
configure() {
  local dir=$1 buildtype=$2
  shift 2
  local want="--buildtype=$buildtype $*" mode=()
  if [[ -f "$dir/meson-private/coredata.dat" && -f "$dir/build.ninja" ]]; then
    [[ "$(cat "$dir/ow-setup-options" 2>/dev/null)" == "$want" ]] && return 0
    mode=(--reconfigure)  # ninja re-runs meson by itself when only a meson.build changed
  fi
  say "configuring $dir ($want)"
  local log
  log=$(mktemp)
  if ! meson setup "${mode[@]}" "$dir" --buildtype="$buildtype" "$@" >"$log" 2>&1; then
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

configure build debugoptimized
if ((sanitize)); then
  # -O0 (buildtype debug): GCC takes 4-5x longer to compile with ASan at -O2 (the Catch2 main
  # alone: 30 s vs 130 s), the tests run fast enough without optimization, and ASan misses
  # less. GCC 12 also reports false -Wmaybe-uninitialized in libstdc++ under sanitizers.
  configure build-asan debug -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-Wno-maybe-uninitialized
fi
((build)) || exit 0
build_dir build
((sanitize)) && build_dir build-asan
say "done: build/tools/ow is ready"
