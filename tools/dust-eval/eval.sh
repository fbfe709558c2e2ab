#!/bin/sh
# tools/dust-eval/eval.sh BUILD -- the DUST evaluation with a real crawl
# (`make dust-eval`; docs/DUST.md, "Evaluation"):
#   1. gensite.pl: the test site from the doc packages (BUILD/dust-eval/gen,
#      made once; DUST_REGEN=1 makes it again)
#   2. check-pages.sh: the pages a content-changing parameter selects are
#      not near-duplicates for the module (sort, page, q)
#   3. run.sh: crawls, each from a cold zone, through the proxy in drop mode:
#        own-default   crawl.pl, site.test, defaults (the ground truth
#                      checked against the origin first)
#        wget-default  wget -r, site.test, defaults
#        own-p90       crawl.pl, dust_precision=0.9
#        own-p99       crawl.pl, dust_precision=0.99
#        own-keysany   crawl.pl, simhash_action drop keys=any
#        own-nodust    crawl.pl, nodust.test (no DUST: no prediction allowed)
#        wget-nodust   wget -r, nodust.test
#   4. report.pl: BUILD/dust-eval/report.txt
# DUST_RUNS: a subset of the run names above.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$(pwd)/$BUILD" ;; esac
# SITE=N (DUST_SITE=N, N = 2, 3, 4): the Nth site, gensiteN.pl, in
# BUILD/dust-eval-N
DUST_SITE=${DUST_SITE:-${SITE:-1}}
export DUST_SITE
OUT="$BUILD/dust-eval"; GENSITE=gensite.pl
if [ "$DUST_SITE" != 1 ]; then OUT="$BUILD/dust-eval-$DUST_SITE"; GENSITE=gensite$DUST_SITE.pl; fi
RUNS=${DUST_RUNS:-own-default wget-default own-p90 own-p99 own-keysany own-nodust wget-nodust}
mkdir -p "$OUT"

if [ ! -f "$OUT/gen/truth.tsv" ] || [ "${DUST_REGEN:-0}" = 1 ]; then
    rm -rf "$OUT/gen"
    nice -n 19 perl "$HERE/$GENSITE" "$OUT/gen"
fi
if [ "$DUST_SITE" = 1 ]; then
    "$HERE/check-pages.sh" "$BUILD" | tee "$OUT/pages.txt"
else
    # its traps serve other real documents (scipy pages), not listings
    echo "(the traps of sites 2 to 4 are other documents or listings)" > "$OUT/pages.txt"
fi

for run in $RUNS; do
    case $run in
        own-default)  CHECK_TRUTH=1 "$HERE/run.sh" "$BUILD" "$run" own site ;;
        wget-default) "$HERE/run.sh" "$BUILD" "$run" wget site ;;
        own-p90)      "$HERE/run.sh" "$BUILD" "$run" own site dust_precision=0.9 ;;
        own-p99)      "$HERE/run.sh" "$BUILD" "$run" own site dust_precision=0.99 ;;
        own-keysany)  ACTION="drop keys=any" "$HERE/run.sh" "$BUILD" "$run" own site ;;
        own-nodust)   "$HERE/run.sh" "$BUILD" "$run" own nodust ;;
        wget-nodust)  "$HERE/run.sh" "$BUILD" "$run" wget nodust ;;
        *) echo "dust-eval: unknown run $run" >&2; exit 2 ;;
    esac
done

{
    echo "DUST evaluation, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    cat "$OUT/gen/site.txt"
    [ -f "$OUT/truth-check.txt" ] && cat "$OUT/truth-check.txt"
    echo
    echo "pages a content-changing parameter selects, by simhash distance:"
    cat "$OUT/pages.txt"
    echo
    cd "$OUT/runs" && perl "$HERE/report.pl" "$OUT/gen" $RUNS
    # what the wget crawl almost learned (docs/DUST.md, "Replaying a crawl")
    if [ -f wget-default/proxy.log ] && [ -x "$BUILD/dust-replay" ]; then
        echo
        echo "== wget-default replayed (dust-replay --near 0.5)"
        "$BUILD/dust-replay" --near 0.5 "$OUT/gen" wget-default/proxy.log \
            | sed -n '/^[0-9]* requests/,$p'
    fi
} > "$OUT/report.txt"
cat "$OUT/report.txt"
