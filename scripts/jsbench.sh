#!/usr/bin/env bash
# jsbench.sh: the side-by-side benchmark of issue 22. It serves one
# LangGraph.js graph (tests/langgraphjs-dev/src/echo.mjs) by this server and
# by the JS server (`langgraphjs dev`, installed from npm in
# tests/langgraphjs-dev with its lock file), starting both fresh in each
# round and alternating which goes first, and prints run latency at c=1,
# runs/s at c=50 and each server's peak memory (its whole process tree:
# our server plus its Node graph worker; the JS CLI plus the server it
# starts), with the ratios against the targets.
#
#   scripts/jsbench.sh                      # 4 rounds
#   scripts/jsbench.sh -js-rounds 6 -js-c50-n 1000
#
# Extra arguments go to cmd/loadgen. Needs node 20+ and npm (for the
# install, once); nothing is fetched at run time, and the JS CLI's usage
# analytics and LangSmith tracing are turned off.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tests/langgraphjs-dev
if [ ! -e "$dir/node_modules/@langchain/langgraph-cli" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund)
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/server" ./cmd/server
go build -o "$bin/loadgen" ./cmd/loadgen
echo "uptime: $(uptime)"
"$bin/loadgen" -server "$bin/server" -scenario js-side-by-side -js-dev-dir "$dir" "$@"
echo "uptime: $(uptime)"
