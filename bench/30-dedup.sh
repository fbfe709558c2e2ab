#!/bin/sh
# Batch mode: `simhash dedup` over 1M fingerprints (every rust-doc page
# plus random background).  PSM_A against the exact batch table method
# (4 tables, the fastest design here) in the same run, three runs (time is
# CPU time, memory the peak RSS of each method; medians at the end); then
# each exact design; then PSM_A at each k up to the first that reaches
# 95% relative recall.
set -eu
BUILD=${1:-build}
root=/usr/share/doc/rust-doc/html
[ -d "$root/std" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
out="$BUILD/bench"
mkdir -p "$out"
find "$root" -name '*.html' -type f | LC_ALL=C sort > "$out/dedup.lst"
pages=$(wc -l < "$out/dedup.lst")
bg=$((1048576 - pages))
cmd="$BUILD/simhash dedup --list $out/dedup.lst --cache $out/dedup.fps --background $bg --quiet"

echo "command: $cmd --method both    (3 runs)"
for run in 1 2 3; do
    $cmd --method both 2>&1 | grep '^dedup:'
done | tee "$out/dedup-both.txt"
# the median of a column of numbers
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p=$(sed -n 's/^dedup: psm_a.* time=\([0-9.]*\)s.*/\1/p' "$out/dedup-both.txt" | median)
b=$(sed -n 's/^dedup: bphs.* time=\([0-9.]*\)s.*/\1/p' "$out/dedup-both.txt" | median)
r=$(sed -n 's/.*speed-up over bphs[0-9]* \([0-9.]*\)x$/\1/p' "$out/dedup-both.txt" | median)
echo "median of 3: psm_a ${p}s, bphs4 ${b}s, speed-up of psm_a ${r}x"

for tables in 4 10 20; do
    echo "command: $cmd --method bphs --tables $tables"
    $cmd --method bphs --tables "$tables" 2>&1 | grep '^dedup:'
done

echo "command: $cmd --method both --k K    (K = 1, 2, ... until 95%)"
for k in 1 2 3 4 5 6 7 8 10 12 16; do
    line=$($cmd --method both --k "$k" 2>&1 | grep '^dedup:')
    echo "$line" | sed "s/^/k=$k /"
    echo "$line" | awk '/relative recall/ { ok = $6 >= 0.95 } END { exit !ok }' \
        && break
done
