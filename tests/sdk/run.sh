#!/usr/bin/env bash
# Runs the @langchain/langgraph-sdk compatibility suite against a freshly built server.
#
#   bash tests/sdk/run.sh                 # whole suite
#   bash tests/sdk/run.sh threads         # only tests/sdk/threads.test.mjs
#
# Builds ./cmd/scriptedllm and ./cmd/server. Starts the scripted model on a free
# port of 127.0.0.1 and waits for it to print its base URL, then starts the
# server on 127.0.0.1:<free port> with a throw-away data dir, the repo's
# langgraph.json (with store.index added, see below), --cron-seconds (so
# cron tests fire within a second) and
# OPENAI_BASE_URL=<model URL>, OPENAI_API_KEY=test-key (so
# the researcher and coder agents talk to the deterministic model), waits for
# GET /ok, runs node's test runner with LANGGRAPH_API_URL pointing at it, then
# stops both. Exit status is the test runner's. Set KEEP_SERVER_LOG=1 to always
# print the server log. SDK_TEST_TIMEOUT_MS (default 20000) is node's
# --test-timeout, for a loaded machine.
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

if [ ! -d "$SDK_DIR/node_modules/@langchain/langgraph-sdk" ] || [ ! -d "$SDK_DIR/node_modules/deepagents" ] || [ ! -d "$SDK_DIR/node_modules/@modelcontextprotocol/server-everything" ] || [ ! -d "$SDK_DIR/node_modules/@a2a-js/sdk" ]; then
  echo "run.sh: installing SDK test dependencies (npm ci)"
  (cd "$SDK_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

tmp="$(mktemp -d)"
data_dir="$(mktemp -d)"
server_pid=""
server_log="$tmp/server.log"
model_pid=""
model_out="$tmp/scriptedllm.out"
model_log="$tmp/scriptedllm.log"

# stop_proc PID NAME: SIGTERM, a few seconds' grace, then SIGKILL; reaps it.
stop_proc() {
  local pid="$1" name="$2"
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "run.sh: $name did not stop after SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

# With SDK_REPLICAS=N (N > 1, PostgreSQL only) the suite talks to N servers
# sharing the database through a round-robin proxy (rrproxy.mjs): a client's
# consecutive calls land on different replicas.
replicas="${SDK_REPLICAS:-1}"
extra_pids=()
proxy_pid=""

cleanup() {
  local status=$?
  rm -f "${sdk_config:-}"
  stop_proc "$proxy_pid" rrproxy
  for pid in ${extra_pids[@]+"${extra_pids[@]}"}; do stop_proc "$pid" replica; done
  # The server first: it may still be talking to the model.
  stop_proc "$server_pid" server
  stop_proc "$model_pid" scriptedllm
  if [ "$status" -ne 0 ] && [ -s "$model_log" ]; then
    echo "----- scriptedllm stderr -----" >&2
    tail -n 20 "$model_log" >&2 || true
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

echo "run.sh: building scriptedllm and server"
(cd "$REPO_ROOT" && go build -o "$tmp/scriptedllm" ./cmd/scriptedllm && go build -o "$tmp/server" ./cmd/server)

# Port 0: the model picks a free port itself and prints its base URL.
"$tmp/scriptedllm" -addr 127.0.0.1:0 >"$model_out" 2>"$model_log" &
model_pid=$!
model_url=""
deadline=$((SECONDS + READY_TIMEOUT_S))
until [ -n "$model_url" ]; do
  # The URL line ends in /v1; a partly written line does not match yet.
  model_url="$(sed -n '1{/^http:\/\/127\.0\.0\.1:[0-9]*\/v1$/p}' "$model_out")"
  [ -n "$model_url" ] && break
  if ! kill -0 "$model_pid" 2>/dev/null; then
    wait "$model_pid" && rc=0 || rc=$?
    model_pid=""
    echo "run.sh: scriptedllm exited (status $rc) before printing its URL" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "run.sh: scriptedllm did not print its URL within ${READY_TIMEOUT_S}s (got: $(head -c 200 "$model_out"))" >&2
    exit 1
  fi
  sleep 0.05
done
echo "run.sh: scripted model at $model_url"

port="$(node -e '
  const s = require("net").createServer();
  s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
')"
api_url="http://127.0.0.1:$port"

# The repo's langgraph.json with semantic store search turned on (store.index,
# embedded by the scripted model's /v1/embeddings) and the JavaScript graphs of
# the fixture project tests/jsgraphs added (jsgraphs.test.mjs), every relative
# path made absolute. It is written into the fixture project, whose folder is
# the JavaScript graphs' project (its node_modules), and removed at exit. One
# more graph: supervisor-notify, the shipped supervisor with
# notify_on_completion on (a finished async task queues a supervisor run;
# chatui.test.mjs and streamv2.test.mjs follow it), its spec in the temp dir.
JSGRAPHS_DIR="$REPO_ROOT/tests/jsgraphs"
if [ ! -d "$JSGRAPHS_DIR/node_modules/@langchain/langgraph" ]; then
  echo "run.sh: installing the JavaScript graph fixture's packages (npm ci)"
  (cd "$JSGRAPHS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi
config="$JSGRAPHS_DIR/.sdk-langgraph-$$.json"
sdk_config="$config" # removed by cleanup
node -e '
  const fs = require("fs"), path = require("path");
  const [src, js, dst, tmp] = process.argv.slice(1);
  const c = JSON.parse(fs.readFileSync(src, "utf8"));
  const abs = (p) => (p.includes(":") || path.isAbsolute(p) ? p : path.resolve(path.dirname(src), p));
  for (const k of Object.keys(c.graphs)) c.graphs[k] = abs(c.graphs[k]);
  const jsc = JSON.parse(fs.readFileSync(js, "utf8"));
  for (const [k, v] of Object.entries(jsc.graphs)) {
    const entry = typeof v === "string" ? v : v.path;
    if (entry.startsWith("builtin:") || k in c.graphs) continue;
    c.graphs[k] = path.resolve(path.dirname(js), entry);
  }
  if (typeof c.env === "string") c.env = abs(c.env);
  c.store = { ...(c.store || {}), index: { dims: 64, embed: "openai:scripted-embedding", fields: ["text"] } };
  const notify = fs.readFileSync(c.graphs.supervisor, "utf8").replace(/^notify_on_completion: false$/m, "notify_on_completion: true");
  if (!/^notify_on_completion: true$/m.test(notify)) throw new Error("agents/supervisor.yaml: no notify_on_completion: false line to turn on");
  c.graphs["supervisor-notify"] = path.join(tmp, "supervisor-notify.yaml");
  fs.writeFileSync(c.graphs["supervisor-notify"], notify);
  fs.writeFileSync(dst, JSON.stringify(c, null, 2));
' "$REPO_ROOT/langgraph.json" "$JSGRAPHS_DIR/langgraph.json" "$config" "$tmp"

# With AGENTSERVER_TEST_DATABASE_URL (scripts/pg-test-cluster.sh sets it) the
# server keeps its database there: the suite then runs on PostgreSQL.
database_args=()
if [ -n "${AGENTSERVER_TEST_DATABASE_URL:-}" ]; then
  database_args=(--database-url "$AGENTSERVER_TEST_DATABASE_URL")
  echo "run.sh: the server's database is PostgreSQL"
fi

echo "run.sh: starting server on $api_url"
env -u AGENTSERVER_API_KEY OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=test-key \
  "$tmp/server" --addr "127.0.0.1:$port" --data-dir "$data_dir" --config "$config" --cron-seconds "${database_args[@]}" \
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

# free_port prints a free port of 127.0.0.1.
free_port() {
  node -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
  '
}

if [ "$replicas" -gt 1 ]; then
  [ "${#database_args[@]}" -gt 0 ] || { echo "run.sh: SDK_REPLICAS needs AGENTSERVER_TEST_DATABASE_URL" >&2; exit 2; }
  backend_ports=("$port")
  for i in $(seq 2 "$replicas"); do
    rport="$(free_port)"
    mkdir -p "$tmp/data-$i"
    env -u AGENTSERVER_API_KEY OPENAI_BASE_URL="$model_url" OPENAI_API_KEY=test-key \
      "$tmp/server" --addr "127.0.0.1:$rport" --data-dir "$tmp/data-$i" --config "$config" --cron-seconds "${database_args[@]}" \
      >"$tmp/server-$i.log" 2>&1 &
    extra_pids+=("$!")
    backend_ports+=("$rport")
    deadline=$((SECONDS + READY_TIMEOUT_S))
    until curl -fsS --max-time 1 "http://127.0.0.1:$rport/ok" >/dev/null 2>&1; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        echo "run.sh: replica $i did not answer GET /ok within ${READY_TIMEOUT_S}s" >&2
        tail -n 40 "$tmp/server-$i.log" >&2 || true
        exit 1
      fi
      sleep 0.1
    done
  done
  pport="$(free_port)"
  node "$SDK_DIR/rrproxy.mjs" "$pport" "${backend_ports[@]}" >"$tmp/rrproxy.log" 2>&1 &
  proxy_pid=$!
  api_url="http://127.0.0.1:$pport"
  deadline=$((SECONDS + READY_TIMEOUT_S))
  until curl -fsS --max-time 1 "$api_url/ok" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "run.sh: the round-robin proxy did not answer within ${READY_TIMEOUT_S}s" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "run.sh: $replicas replicas behind a round-robin proxy at $api_url"
fi

files=()
if [ "$#" -gt 0 ]; then
  for name in "$@"; do files+=("$SDK_DIR/${name%.test.mjs}.test.mjs"); done
elif [ "$replicas" -gt 1 ]; then
  # The thread-centric (v2) protocol is served by the replica that runs
  # the thread's runs only (docs/scale-out.md): not through the proxy.
  for f in "$SDK_DIR"/*.test.mjs; do
    [ "$(basename "$f")" = streamv2.test.mjs ] || files+=("$f")
  done
else
  files=("$SDK_DIR"/*.test.mjs)
fi

set +e
# Node 20 has WebSocket (used by the protocol v2 tests) only behind a flag.
ws_flag=()
if [ "$node_major" -lt 22 ]; then ws_flag=(--experimental-websocket); fi
LANGGRAPH_API_URL="$api_url" node ${ws_flag[@]+"${ws_flag[@]}"} --test --test-reporter=spec --test-timeout="${SDK_TEST_TIMEOUT_MS:-20000}" "${files[@]}"
test_status=$?
set -e
exit "$test_status"
