#!/usr/bin/env bash
# The reference MCP servers (npm, pinned in tests/real-servers) under
# toolgauge's three checks, for the table in docs/real-tools.md:
# check-tools (their definitions), tools check (every tool called with
# 5 valid generated argument sets; --all: writes too, in a sandbox) and
# fuzz (50 valid and 50 invalid cases per read-only tool, the server's
# own validation judged). Findings about a server are the server's.
#
#   scripts/real-servers.sh [OUT]   OUT: where fuzz.csv files go
#                                   [default: target/real-servers]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/real-servers}"
npm ci --prefix tests/real-servers --no-audit --no-fund >/dev/null
cargo build --release --quiet
toolgauge="$PWD/target/release/toolgauge"
servers="$PWD/tests/real-servers/node_modules/@modelcontextprotocol"
sandbox="$(mktemp -d)"
trap 'rm -rf "$sandbox"' EXIT
mkdir -p "$sandbox/files" "$out"
echo hello >"$sandbox/files/a.txt"
# The memory server keeps its graph in this file, not in the package.
export MEMORY_FILE_PATH="$sandbox/memory.jsonl"

for server in \
  "server-filesystem/dist/index.js $sandbox/files" \
  "server-memory/dist/index.js" \
  "server-sequential-thinking/dist/index.js" \
  "server-everything/dist/index.js stdio"; do
  name="${server%%/*}"
  spec="mcp:node $servers/$server"
  echo "== $name"
  "$toolgauge" check-tools "$spec" || true
  "$toolgauge" tools check "$spec" --all --calls 5 --elicit decline || true
  "$toolgauge" fuzz --tools "$spec" --cases 50 --out "$out/$name" || true
done
