#!/usr/bin/env bash
# Soak: a mixed workload at a fixed rate against a fresh development server,
# sampled over time, checked for growth (docs/performance.md, "Soak").
#
#   scripts/soak.sh DURATION [--postgres ADMIN_URL] [gatehouse-load flags]
#
#   scripts/soak.sh 10m                                  SQLite, 40 operations/s
#   scripts/soak.sh 1h --postgres 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable' -rate 80
#
# It builds gatehouse and gatehouse-load, starts `gatehouse serve --dev` on a
# loopback port with the sign-in rate limits off and logs at warn, on a new
# SQLite file, or with --postgres on a new database made on that server
# (dropped afterwards; ADMIN_URL must be allowed to create databases;
# SOAK_POSTGRES_URL works too). Then `gatehouse-load -scenario soak` starts
# operations at a fixed rate whatever the answers take (code logins, refreshes,
# current_user; every event goes to a local webhook receiver), samples the
# server every -interval (10 s) and writes soak.csv, soak.png and soak.txt.
#
# It exits non-zero when, after the warm-up, heap in use, goroutines, the
# server's open files or its PostgreSQL connections grew, when more than 1 %
# of an operation failed, or when the server could not keep up. Latency and
# lag are recorded, never judged. The files stay in SOAK_OUT (default: a new
# temporary directory), with the server's log (standard error; its start-up
# banner, which shows the dev app's API secret, is not kept); the path is
# printed.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
duration=$1
shift
pg_admin="${SOAK_POSTGRES_URL:-}"
if [ "${1:-}" = --postgres ]; then
  pg_admin=${2:?--postgres needs a URL}
  shift 2
fi

out="${SOAK_OUT:-$(mktemp -d -t gatehouse-soak.XXXXXX)}"
mkdir -p "$out"
work=$(mktemp -d -t gatehouse-soak-run.XXXXXX)
pid=""
db=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ -n "$db" ]; then
    psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "soak: building gatehouse and gatehouse-load"
go build -o "$work/gatehouse" ./cmd/gatehouse
go build -o "$work/gatehouse-load" ./cmd/gatehouse-load

engine=sqlite
db_env=()
load_pg=()
if [ -n "$pg_admin" ]; then
  engine=postgres
  db="gatehouse_soak_$$_$RANDOM"
  psql "$pg_admin" -qc "CREATE DATABASE $db" >/dev/null
  # The same server and options, the new database's name as the path.
  db_url=$(printf '%s' "$pg_admin" | sed -E "s#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\1/$db#")
  db_env=(GATEHOUSE_DATABASE_URL="$db_url")
  load_pg=(-pg "$db_url")
fi

# Port 0: the kernel picks a free one (a guessed port could be taken, e.g. by an
# outbound connection); the server writes its base URL to bootstrap.json.
base=""
env "${db_env[@]}" GATEHOUSE_HTTP_ADDR="127.0.0.1:0" GATEHOUSE_LOG_LEVEL=warn \
  GATEHOUSE_RATELIMIT_SEND_PER_IP=off GATEHOUSE_RATELIMIT_SEND_PER_IDENTIFIER=off GATEHOUSE_RATELIMIT_VERIFY_PER_IP=off \
  "$work/gatehouse" serve --dev --data-dir "$work/data" >"$work/banner.txt" 2>"$out/server.log" &
pid=$!
for _ in $(seq 1 120); do
  base=$(sed -n 's/^ *"base_url": *"\([^"]*\)".*/\1/p' "$work/data/bootstrap.json" 2>/dev/null || true)
  [ -n "$base" ] && curl -sf "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "soak: the server exited at start-up; its log:" >&2; cat "$out/server.log" >&2; exit 1; }
  sleep 0.5
done
curl -sf "$base/readyz" >/dev/null || { echo "soak: the server is not ready after 60 s" >&2; exit 1; }
echo "soak: gatehouse serve --dev on $engine, pid $pid, $base; server log in $out/server.log"

rc=0
"$work/gatehouse-load" -scenario soak -base "$base" -bootstrap "$work/data/bootstrap.json" -pid "$pid" \
  "${load_pg[@]}" -d "$duration" -out "$out" "$@" || rc=$?

kill -TERM "$pid"
server_rc=0
wait "$pid" || server_rc=$?
pid=""
if [ "$server_rc" -ne 0 ]; then
  echo "soak: FAIL: the server exited $server_rc on SIGTERM (want 0); see $out/server.log" >&2
  rc=1
fi
echo "soak: $engine, $duration: files in $out (soak.csv, soak.png, soak.txt, server.log)"
exit "$rc"
