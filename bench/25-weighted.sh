#!/bin/sh
# The two match rules (src/sh_match.h) in the PSM index, same stored set and
# same queries: the hamming rule (h = 3, truth: 10-table BPHS) and the
# weighted rule (T = 12, H <= 10, truth: brute force, every query against
# every stored fingerprint -- no block design is exact for it).  For each n,
# PSM's k is the smallest reaching 95% relative recall under each rule.
# Writes BUILD/bench/weighted.json and the table below.  The brute-force
# truth is the heavy part: about 2.5 minutes at 2^24 on one core.
set -eu
BUILD=${1:-build}
N=${SH_BENCH_WEIGHTED_N:-20,22,24}
root=/usr/share/doc/rust-doc/html
[ -d "$root/std" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
out="$BUILD/bench"
mkdir -p "$out"
cmd="$BUILD/simhash bench --corpus $root --cache $out/rustdoc.fps --n $N --match both --queries 20000 --truth-queries 20000 --methods psm,brute --json"
echo "command: $cmd"
echo "load before: $(uptime)"
$cmd > "$out/weighted.json"
echo "load after: $(uptime)"
echo
printf '| n | rule | PSM_F q/s (k, recall) | PSM_A q/s (k, recall) | PSM_F, k from the k(t) table (k, recall) |\n'
printf '|---|---|---|---|---|\n'
awk '
function field(line, key,    re, s) {
    re = "\"" key "\": \"?[^,}\"]*"
    if (match(line, re) == 0) return ""
    s = substr(line, RSTART, RLENGTH)
    sub("\"" key "\": \"?", "", s)
    return s
}
/"method": "PSM_/ {
    m = field($0, "method"); r = field($0, "rule"); n = field($0, "n")
    key = n SUBSEP r
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    v[key, m] = field($0, "qps") " (" field($0, "k") ", " field($0, "recall") ")"
}
END {
    for (i = 1; i <= nk; i++) {
        split(order[i], p, SUBSEP); lg = 0; for (x = p[1]; x > 1; x /= 2) lg++
        printf "| 2^%d | %s | %s | %s | %s |\n", lg, p[2], v[order[i], "PSM_F"],
            v[order[i], "PSM_A"], v[order[i], "PSM_F(k-table)"]
    }
}' "$out/weighted.json"
