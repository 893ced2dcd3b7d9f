#!/usr/bin/env bash
# Runs the @scute/core end-to-end suite against a freshly built Gatehouse:
# once on SQLite and, when GATEHOUSE_TEST_POSTGRES_URL (a postgres:// URL) is
# set, once more on a fresh PostgreSQL database created here and dropped on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
db=""

cleanup() {
  if [ -n "$db" ]; then
    psql -X -q -v ON_ERROR_STOP=1 "$GATEHOUSE_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null ||
      echo "warning: could not drop database $db" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== e2e/sdk: building gatehouse"
(cd "$repo" && go build -o "$tmp/gatehouse" ./cmd/gatehouse && go build -o "$tmp/testop" ./e2e/testop)
export GATEHOUSE_BIN="$tmp/gatehouse"
# The OpenID provider of the social sign-in test (oauth.browser.test.mjs).
export GATEHOUSE_TESTOP_BIN="$tmp/testop"

echo "== e2e/sdk: npm ci"
(cd "$here" && npm ci --no-audit --no-fund)

echo "== e2e/sdk: @scute/core suite on SQLite"
(cd "$here" && env -u GATEHOUSE_DATABASE_URL -u GATEHOUSE_E2E_DATABASE_URL npm test)

if [ -n "${GATEHOUSE_TEST_POSTGRES_URL:-}" ]; then
  # Each test file starts a server with a master key of its own, so each gets
  # a fresh database of its own.
  for file in "$here"/test/*.test.mjs; do
    db="gh_e2e_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
    psql -X -q -v ON_ERROR_STOP=1 "$GATEHOUSE_TEST_POSTGRES_URL" -c "CREATE DATABASE $db" >/dev/null
    # The same server and credentials, with the new database's name as the path.
    url="$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; process.stdout.write(u.href)' \
      "$GATEHOUSE_TEST_POSTGRES_URL" "$db")"
    echo "== e2e/sdk: $(basename "$file") on PostgreSQL (database $db)"
    (cd "$here" && GATEHOUSE_E2E_DATABASE_URL="$url" node --test --test-concurrency=1 "$file")
    psql -X -q -v ON_ERROR_STOP=1 "$GATEHOUSE_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
    db=""
  done
else
  echo "== e2e/sdk: GATEHOUSE_TEST_POSTGRES_URL is not set; skipping the PostgreSQL run"
fi
