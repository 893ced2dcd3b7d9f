#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in a _test.go file) for DURATION each,
# one after the other, and stops at the first failure.
#
#   scripts/fuzz.sh          10s per target
#   scripts/fuzz.sh 5m       the long run (security.md check 77: 5 min or more each)
#
# DURATION is a Go duration (30s, 5m, 1h) or a count of inputs (10000x). Each
# package's test binary is built once, with coverage instrumentation, and runs
# each target from the package directory as `go test -fuzz` would. Inputs that
# reach new code are kept in $(go env GOCACHE)/fuzz, so the next run starts
# from them; with CI=true they are thrown away, so CI's time does not grow.
#
# FUZZ_COVERAGE=0 builds plain test binaries instead: no coverage guidance, but
# no instrumented build of every dependency (minutes on a cold Go cache) and
# far more inputs per second. .ci/run uses it for its short run.
#
# A failing input is written to <package>/testdata/fuzz/<FuzzName>/<hash>; the
# script prints that path and the command that replays it. Commit the file
# with the fix: `go test ./...` replays it from then on. Store-backed targets
# also run on PostgreSQL when GATEHOUSE_TEST_POSTGRES_URL is set.
set -euo pipefail
cd "$(dirname "$0")/.."

duration="${1:-10s}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cache="$(go env GOCACHE)/fuzz"
if [ "${CI:-}" = true ]; then
  cache="$work/cache"
fi

dirs=$(grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=node_modules --exclude-dir=testdata \
  '^func Fuzz[A-Z0-9_]' . | xargs -r -n1 dirname | sort -u)
if [ -z "$dirs" ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

count=0
for dir in $dirs; do
  pkg=$(go list "$dir")
  bin="$work/$(basename "$dir").test"
  start=$SECONDS
  if [ "${FUZZ_COVERAGE:-1}" = 0 ]; then
    go test -c -o "$bin" "$dir"
  else
    go test -c -fuzz . -o "$bin" "$dir"
  fi
  echo "(built $pkg in $((SECONDS - start))s)"
  for name in $(cd "$dir" && "$bin" -test.list '^Fuzz'); do
    count=$((count + 1))
    log="$work/$name.log"
    printf '%-60s ' "$pkg $name"
    start=$SECONDS
    if (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^$name\$" -test.fuzztime "$duration" \
      -test.fuzzcachedir "$cache/$pkg") >"$log" 2>&1; then
      # The last progress line: how many inputs ran.
      echo "$(grep -o 'execs: [0-9]*' "$log" | tail -n 1) in $((SECONDS - start))s"
      continue
    fi
    # Go's fuzzing engine can end a run that found nothing with "context
    # deadline exceeded" when fuzztime runs out while a worker is busy (a
    # known toolchain flake on loaded machines): no input was written, so it
    # is not a finding. Run that target once more.
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log" &&
      (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^$name\$" -test.fuzztime "$duration" \
        -test.fuzzcachedir "$cache/$pkg") >"$log" 2>&1; then
      echo "$(grep -o 'execs: [0-9]*' "$log" | tail -n 1) in $((SECONDS - start))s (second try)"
      continue
    fi
    echo "FAIL"
    cat "$log"
    crasher=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | sed -n 1p)
    if [ -n "$crasher" ]; then
      echo
      echo "crasher: ${dir#./}/$crasher"
      echo "replay:  go test -run '^$name/$(basename "$crasher")\$' ./${dir#./}"
    fi
    exit 1
  done
done
echo "$count fuzz targets ran for $duration each without a failure"
