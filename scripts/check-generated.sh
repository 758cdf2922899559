#!/usr/bin/env bash
# Fails when generated/api.ts is not what openapi-typescript makes of openapi.yaml today, or when
# docs/mcp.md's tool list is not what the MCP tool generator makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
npx --no-install openapi-typescript openapi.yaml -o "$tmp" >/dev/null 2>&1
if ! cmp -s "$tmp" generated/api.ts; then
  echo "generated/api.ts is stale: run 'npm run generate' and commit the result" >&2
  diff -u generated/api.ts "$tmp" | head -40 >&2 || true
  exit 1
fi
echo "generated/api.ts is fresh"
# The MCP tool list in docs/mcp.md (needs dist/, which npm ci's prepare builds).
node scripts/mcp-tools-doc.js --check
