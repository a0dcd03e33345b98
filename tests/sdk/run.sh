#!/usr/bin/env bash
# Runs the @langchain/langgraph-sdk compatibility suite against a freshly built server.
#
#   bash tests/sdk/run.sh                 # whole suite
#   bash tests/sdk/run.sh threads         # only tests/sdk/threads.test.mjs
#
# Builds ./cmd/server, starts it on 127.0.0.1:<free port> with a throw-away data
# dir and the repo's langgraph.json, waits for GET /ok, runs node's test runner
# with LANGGRAPH_API_URL pointing at it, then stops the server. Exit status is
# the test runner's. Set KEEP_SERVER_LOG=1 to always print the server log.
set -euo pipefail

SDK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SDK_DIR/../.." && pwd)"
READY_TIMEOUT_S="${READY_TIMEOUT_S:-20}"

command -v go >/dev/null || { echo "run.sh: go is not installed" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is not installed" >&2; exit 2; }
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "run.sh: node >= 20 required (found $(node --version))" >&2
  exit 2
fi

if [ ! -d "$SDK_DIR/node_modules/@langchain/langgraph-sdk" ]; then
  echo "run.sh: installing SDK test dependencies (npm ci)"
  (cd "$SDK_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

tmp="$(mktemp -d)"
data_dir="$(mktemp -d)"
server_pid=""
server_log="$tmp/server.log"

cleanup() {
  local status=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    # Give it a few seconds to shut down gracefully, then insist.
    for _ in $(seq 1 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      echo "run.sh: server did not stop after SIGTERM; sending SIGKILL" >&2
      kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ] || [ "${KEEP_SERVER_LOG:-0}" = 1 ]; then
    if [ -s "$server_log" ]; then
      echo "----- server log (last 80 lines) -----" >&2
      tail -n 80 "$server_log" >&2 || true
      echo "--------------------------------------" >&2
    fi
  fi
  rm -rf "$tmp" "$data_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "run.sh: building server"
(cd "$REPO_ROOT" && go build -o "$tmp/server" ./cmd/server)

port="$(node -e '
  const s = require("net").createServer();
  s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
')"
api_url="http://127.0.0.1:$port"

echo "run.sh: starting server on $api_url"
env -u AGENTSERVER_API_KEY "$tmp/server" --addr "127.0.0.1:$port" --data-dir "$data_dir" --config "$REPO_ROOT/langgraph.json" \
  >"$server_log" 2>&1 &
server_pid=$!

deadline=$((SECONDS + READY_TIMEOUT_S))
until curl -fsS --max-time 1 "$api_url/ok" >/dev/null 2>&1; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" && rc=0 || rc=$?
    server_pid=""
    echo "run.sh: server exited (status $rc) before answering GET /ok" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "run.sh: server did not answer GET $api_url/ok within ${READY_TIMEOUT_S}s" >&2
    exit 1
  fi
  sleep 0.1
done
echo "run.sh: server ready"

files=()
if [ "$#" -gt 0 ]; then
  for name in "$@"; do files+=("$SDK_DIR/${name%.test.mjs}.test.mjs"); done
else
  files=("$SDK_DIR"/*.test.mjs)
fi

set +e
LANGGRAPH_API_URL="$api_url" node --test --test-reporter=spec --test-timeout=20000 "${files[@]}"
test_status=$?
set -e
exit "$test_status"
