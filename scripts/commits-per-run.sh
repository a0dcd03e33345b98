#!/usr/bin/env bash
# Counts the storage commits (each one fsync on bbolt) that sequential
# POST /threads/{id}/runs/wait of the echo graph cost, each run on a fresh
# thread, from the server's own counter
# agentserver_storage_commit_duration_seconds_count read before and after
# the runs (thread creation is not counted).
#
#   scripts/commits-per-run.sh SERVER_BIN [RUNS] [EXTRA_RUN_FIELDS]
#
# EXTRA_RUN_FIELDS is JSON added to each run body, e.g. '"after_seconds":0.001'
# (a run queued first, started by a worker). Uses 127.0.0.1 only and a
# temporary data directory, removed at exit.
set -euo pipefail
bin="$1"
n="${2:-200}"
extra="${3:-}"
[ -n "$extra" ] && extra=",$extra"
dir="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
echo '{"graphs":{"echo":"builtin:echo"}}' >"$dir/langgraph.json"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
base="http://127.0.0.1:$port"
"$bin" --addr "127.0.0.1:$port" --data-dir "$dir/data" --config "$dir/langgraph.json" >"$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fs "$base/ok" >/dev/null && break; sleep 0.1; done
post() { curl -fs -X POST "$base$1" -H 'content-type: application/json' -d "$2"; }
ids=()
for _ in $(seq 1 "$n"); do
  ids+=("$(post /threads '{}' | sed 's/.*"thread_id":"\([^"]*\)".*/\1/')")
done
commits() { curl -fs "$base/metrics" | awk '/^agentserver_storage_commit_duration_seconds_count/ {print $2}'; }
before="$(commits)"
for id in "${ids[@]}"; do
  post "/threads/$id/runs/wait" "{\"assistant_id\":\"echo\",\"input\":{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}$extra}" >/dev/null
done
after="$(commits)"
echo "$n runs: $((after - before)) commits, $(awk -v c="$((after - before))" -v n="$n" 'BEGIN {printf "%.2f", c / n}') per run"
