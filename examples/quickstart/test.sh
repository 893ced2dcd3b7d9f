#!/usr/bin/env bash
# Runs the quickstart's Chromium test: builds gatehouse and the quickstart, installs the page's
# npm project (with playwright-core), builds the browser bundle, then drives the page.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT

echo "== examples/quickstart: building gatehouse and the quickstart"
(cd "$repo" && go build -o "$bin/gatehouse" ./cmd/gatehouse && go build -o "$bin/quickstart" ./examples/quickstart)

echo "== examples/quickstart: npm ci and the browser bundle"
(cd "$here/web" && npm ci --no-audit --no-fund && npm run build)

echo "== examples/quickstart: the page in headless Chromium"
(cd "$here/web" && GATEHOUSE_BIN="$bin/gatehouse" QUICKSTART_BIN="$bin/quickstart" npm test)
