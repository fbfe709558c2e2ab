#!/bin/sh
# make test-load: `make test` on a busy machine, the way the
# suite is judged: two busy loops per core (stress-ng --cpu) run beside
# it for the whole of each run.
#
#   tools/test-load.sh [RUNS]      (RUNS, or LOAD_RUNS, default 1)
#
# Each run is `make test` from the build as it is (make rebuilds what
# changed); its output goes to BUILD/test-load/run-N.log.  At the end one
# line per run: passed or failed, and its wall time.  Exits non-zero if
# any run failed.  LOAD_PER_CORE changes the busy loops per core.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
RUNS=${1:-${LOAD_RUNS:-1}}
PER_CORE=${LOAD_PER_CORE:-2}
MAKE=${MAKE:-make}
LOGS="$BUILD/test-load"
mkdir -p "$LOGS"

cores=$(nproc)
loops=$((cores * PER_CORE))

command -v stress-ng >/dev/null 2>&1 || {
    echo "test-load: stress-ng missing (tools/deps.sh load installs it)" >&2
    exit 1
}

stress=""
stop_load() {
    if [ -n "$stress" ]; then
        kill "$stress" 2>/dev/null
        wait "$stress" 2>/dev/null
        stress=""
    fi
}
trap 'stop_load' EXIT
trap 'stop_load; exit 130' INT TERM

cd "$TOP"
results=""
failed=0
i=1
while [ "$i" -le "$RUNS" ]; do
    # a busy loop per worker; stress-ng ends its workers when it gets TERM
    stress-ng --cpu "$loops" --cpu-load 100 --quiet --timeout 0 &
    stress=$!
    echo "test-load: run $i of $RUNS: make test beside $loops busy loops" \
         "($PER_CORE per core, $cores cores); log $LOGS/run-$i.log"
    start=$(date +%s)
    if $MAKE --no-print-directory test > "$LOGS/run-$i.log" 2>&1; then
        verdict=passed
    else
        verdict=FAILED
        failed=$((failed + 1))
    fi
    secs=$(( $(date +%s) - start ))
    stop_load
    line="run $i: $verdict in ${secs} s"
    echo "test-load: $line"
    if [ "$verdict" = FAILED ]; then
        grep -E '^(t/.*(Wstat|Dubious|Failed)|FAIL|Result:|  Failed tests:|#.*(gave up|limit))' \
            "$LOGS/run-$i.log" | sed 's/^/    /' | head -n 20
    fi
    results="$results
    $line"
    i=$((i + 1))
done

echo "test-load: $((RUNS - failed)) of $RUNS runs passed:$results"
[ "$failed" -eq 0 ]
