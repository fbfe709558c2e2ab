#!/bin/sh
# What the DUST learner costs a request (bench/bench_dust.c), against what
# fingerprinting a page costs: CPU time per request, then instructions,
# counted by callgrind inside sh_dust_predict and sh_dust_observe for
# 20,000 typical requests and inside sh_doc_* for 100 documentation pages
# of about 25 KB (the size bench/wrk.sh serves).  Instructions do not
# depend on what else the machine is doing; this VM has no hardware
# counter for perf, so callgrind counts them.
set -eu
BUILD=${1:-build}
echo "command: $BUILD/bench/bench_dust"
"$BUILD/bench/bench_dust"

command -v valgrind >/dev/null 2>&1 || {
    echo "instructions: skipped (valgrind missing)"; exit 0; }
# collected, page_instructions
. "$(dirname "$0")/page-instructions.sh"
n=20000
dust=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
           --toggle-collect=sh_dust_predict --toggle-collect=sh_dust_observe \
           "$BUILD/bench/bench_dust" --once typical --urls $n 2>&1 | collected)
page_instructions dust
if [ -z "$dust" ] || [ -z "$page" ]; then
    echo "instructions: callgrind counted nothing (are $BUILD/bench/bench_dust" \
         "and bench_extract built? make bench builds them)" >&2
    exit 1
fi
echo "command: valgrind --tool=callgrind --toggle-collect=sh_dust_predict" \
     "--toggle-collect=sh_dust_observe $BUILD/bench/bench_dust --once typical" \
     "--urls $n; valgrind --tool=callgrind --toggle-collect='sh_doc_*'" \
     "$BUILD/bench/bench_extract --once fingerprint $list"
perl -e 'my ($d, $n, $p, $np) = @ARGV;
    printf "instructions: %.0f a request (predict + observe, typical URL), "
         . "%.0f a page fingerprinted (%d pages of about 25 KB): the "
         . "learner is %.2f%% of a new page (target <= 2%%)\n",
         $d / $n, $p / $np, $np, 100 * ($d / $n) / ($p / $np);' \
    "$dust" "$n" "$page" "$pages"
