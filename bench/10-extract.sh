#!/bin/sh
# Fingerprinting throughput against libxml2 parsing alone, one core, the same
# in-memory pages, alternating rounds (bench/bench_extract.c), on two corpora:
#   rust-doc   every 20th HTML page of rust-doc in sorted path order (1,500):
#              documentation, mostly text and markup
#   real-web   the 258 pages of npm's htmlparser-benchmark (bench/webpages.sh):
#              popular sites as crawled, script-heavy; skipped, with a line
#              that says why, when npm or its registry is out of reach
set -eu
BUILD=${1:-build}
root=$(dpkg -L rust-doc 2>/dev/null | grep -E '/html/std/index\.html$' \
       | head -n 1)
[ -n "$root" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
root=$(dirname "$(dirname "$root")")
list="$BUILD/bench/extract-sample.txt"
find "$root" -name '*.html' -type f | LC_ALL=C sort | awk 'NR % 20 == 0' \
    | head -n 1500 > "$list"
echo "--- rust-doc"
echo "command: $BUILD/bench/bench_extract --rounds 7 $list"
"$BUILD/bench/bench_extract" --rounds 7 "$list"

echo "--- real-web"
if web=$(sh "$(dirname "$0")/webpages.sh" "$BUILD"); then
    list="$BUILD/bench/extract-web.txt"
    find "$web" -name '*.html' -type f | LC_ALL=C sort > "$list"
    echo "command: $BUILD/bench/bench_extract --rounds 7 $list"
    "$BUILD/bench/bench_extract" --rounds 7 "$list"
else
    echo "skipped (no real-web corpus)"
fi
