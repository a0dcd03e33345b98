#!/usr/bin/env bash
# Fails when the committed generated code in api/ differs from what
# oapi-codegen produces from api/openapi.yaml. It regenerates into a
# temporary directory, so it never touches the working tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root/api"
for cfg in oapi-codegen-server.yaml oapi-codegen-client.yaml; do
  out=$(sed -n 's/^output: *//p' "$cfg")
  # The config's output path wins over -o, so regenerate through a copy of
  # the config that writes into the temporary directory.
  sed "s|^output: .*|output: $tmp/$(basename "$out")|" "$cfg" > "$tmp/$cfg"
  go tool oapi-codegen -config "$tmp/$cfg" openapi.yaml
  if ! cmp -s "$tmp/$(basename "$out")" "$(basename "$out")"; then
    echo "api/$(basename "$out") is stale: run 'make generate' and commit the result" >&2
    diff -u "$(basename "$out")" "$tmp/$(basename "$out")" | head -40 >&2 || true
    exit 1
  fi
done
echo "generated code is up to date"
