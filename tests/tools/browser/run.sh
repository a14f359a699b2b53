#!/usr/bin/env bash
# meson test 'browser': ow report opened in headless Chromium through playwright-core.
#
#   tests/tools/browser/run.sh OW_BINARY SOURCE_DIR WORK_DIR
#
# Needs node, npm and Debian's chromium (tools/setup.sh installs them). When one is missing the
# test is skipped (exit 77, meson's skip code) unless OW_REQUIRE_BROWSER is set (tools/test.sh
# and so CI set it): then it fails. playwright-core is installed from the committed lock file
# into WORK_DIR (the build dir), once; the browser it drives is the system's, never a download.
set -euo pipefail
ow=$1 src=$2 work=$3
chromium=${OW_CHROMIUM:-/usr/bin/chromium}

missing=()
command -v node >/dev/null || missing+=(node)
command -v npm >/dev/null || missing+=(npm)
[[ -x "$chromium" ]] || missing+=("$chromium")
if ((${#missing[@]})); then
  if [[ -n "${OW_REQUIRE_BROWSER:-}" ]]; then
    echo "browser test: missing ${missing[*]} (OW_REQUIRE_BROWSER is set; tools/setup.sh installs them)" >&2
    exit 1
  fi
  echo "browser test: skipped, missing ${missing[*]}"
  exit 77
fi

# npm ci only when the lock file changed since the last install in WORK_DIR.
mkdir -p "$work"
cp "$src/tests/tools/browser/package.json" "$src/tests/tools/browser/report.test.mjs" "$work/"
if ! cmp -s "$src/tests/tools/browser/package-lock.json" "$work/package-lock.json" || [[ ! -d "$work/node_modules/playwright-core" ]]; then
  cp "$src/tests/tools/browser/package-lock.json" "$work/"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$work" --prefer-offline --no-audit --no-fund --loglevel=error
fi

OW_CHROMIUM=$chromium exec node "$work/report.test.mjs" "$ow" "$src" "$work"
