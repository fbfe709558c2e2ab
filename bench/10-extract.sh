#!/bin/sh
# Fingerprinting throughput against libxml2 parsing alone, one core, the same
# in-memory pages, alternating rounds (bench/bench_extract.c).
#   sample: every 20th HTML page of rust-doc in sorted path order (1,500)
set -eu
BUILD=${1:-build}
root=$(dpkg -L rust-doc 2>/dev/null | grep -E '/html/std/index\.html$' \
       | head -n 1)
[ -n "$root" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
root=$(dirname "$(dirname "$root")")
list="$BUILD/bench/extract-sample.txt"
find "$root" -name '*.html' -type f | LC_ALL=C sort | awk 'NR % 20 == 0' \
    | head -n 1500 > "$list"
echo "command: $BUILD/bench/bench_extract --rounds 7 $list"
"$BUILD/bench/bench_extract" --rounds 7 "$list"
