#!/usr/bin/env bash
# Browser end-to-end test of the web console (/ui): builds the server and
# the scripted model, then runs console.test.mjs, which starts both (the
# server with an API key) and drives Debian's Chromium with playwright-core.
# Never downloads a browser: set CHROMIUM to another binary if needed.
#
#   bash tests/ui/run.sh
set -euo pipefail

UI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$UI_DIR/../.." && pwd)"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

command -v node >/dev/null || { echo "tests/ui: node is not installed" >&2; exit 2; }
if [ ! -x "$CHROMIUM" ] && [ "$CHROMIUM" = /usr/bin/chromium ]; then
  # A bare machine: Debian's Chromium, never a browser download.
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "tests/ui: installing Debian's chromium"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
[ -x "$CHROMIUM" ] || { echo "tests/ui: $CHROMIUM not found (apt-get install chromium)" >&2; exit 2; }
if [ ! -d "$UI_DIR/node_modules/playwright-core" ]; then
  echo "tests/ui: installing playwright-core (npm ci)"
  (cd "$UI_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi

bins="$(mktemp -d)"
trap 'rm -rf "$bins"' EXIT
(cd "$REPO_ROOT" && go build -o "$bins/scriptedllm" ./cmd/scriptedllm && go build -o "$bins/server" ./cmd/server)

CHROMIUM="$CHROMIUM" UI_BINS="$bins" UI_CONFIG="$REPO_ROOT/langgraph.json" \
  node --test --test-reporter=spec --test-timeout=240000 --test-concurrency=1 "$UI_DIR/console.test.mjs"
