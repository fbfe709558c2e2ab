#!/bin/sh
# What the console's per-site accounting (issue 36) costs a response,
# against what fingerprinting a new page costs: instructions counted by
# callgrind inside bench_sites' account() (the rate ring, the lock, the
# host, the heavy-hitters table, the last decision: what
# ngx_http_simhash_sites_event does) for 20,000 events, and inside sh_doc_*
# for 100 documentation pages of about 25 KB, as bench/15-dust.sh does.
set -eu
BUILD=${1:-build}
echo "command: $BUILD/bench/bench_sites"
"$BUILD/bench/bench_sites"

command -v valgrind >/dev/null 2>&1 || {
    echo "instructions: skipped (valgrind missing)"; exit 0; }
# collected, page_instructions
. "$(dirname "$0")/page-instructions.sh"
n=20000
sites=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --toggle-collect=account \
            "$BUILD/bench/bench_sites" --once --events $n 2>&1 | collected)
page_instructions sites
if [ -z "$sites" ] || [ -z "$page" ]; then
    echo "instructions: callgrind counted nothing (are $BUILD/bench/" \
         "bench_sites and bench_extract built? make bench builds them)" >&2
    exit 1
fi
echo "command: valgrind --tool=callgrind --toggle-collect=account" \
     "$BUILD/bench/bench_sites --once --events $n;" \
     "valgrind --tool=callgrind --toggle-collect='sh_doc_*'" \
     "$BUILD/bench/bench_extract --once fingerprint $list"
perl -e 'my ($s, $n, $p, $np) = @ARGV;
    printf "instructions: %.0f an event (per-site accounting), %.0f a page "
         . "fingerprinted (%d pages of about 25 KB): the accounting is "
         . "%.3f%% of a new page (target <= 1%%)\n",
         $s / $n, $p / $np, $np, 100 * ($s / $n) / ($p / $np);' \
    "$sites" "$n" "$page" "$pages"
