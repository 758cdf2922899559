#!/usr/bin/env bash
# Fails when generated/api.ts is not what openapi-typescript makes of openapi.yaml today.
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
