#!/bin/sh
# The PSM index against BPHS (4, 10, 20 tables) and brute force, online
# mode as in section 8.4 of the PSM paper: real rust-doc fingerprints plus
# random background, n = 2^20 .. 2^26 stored, one core.  See BENCHMARKS.md
# for the workload.  Writes BUILD/bench/index.json (one object per method
# and n), the table below, and docs/index-qps.png, docs/index-recall.png.
set -eu
BUILD=${1:-build}
N=${SH_BENCH_N:-20,21,22,23,24,25,26}
root=/usr/share/doc/rust-doc/html
[ -d "$root/std" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
out="$BUILD/bench"
mkdir -p "$out"
cmd="$BUILD/simhash bench --corpus $root --cache $out/rustdoc.fps --n $N --learn 22 --json --dat $out/index"
echo "command: $cmd"
$cmd > "$out/index.json"

echo
awk -f "$(dirname "$0")/index-table.awk" "$out/index.json"
echo
printf '%-16s %6s %12s %8s %10s\n' method n queries/s recall B/entry
awk -F'\t' '!/^#/ { printf "%-16s   2^%-2s %12s %8s %10s\n", $2, $1, $3, $4, $5 }' \
    "$out/index-qps.dat"
echo
echo "learner (recall on held-out queries, built-in -> learned table):"
grep '"learner"' "$out/index.json" || true

# Figures 7 and 8 of the paper: queries/s against n, recall against n at
# fixed k.
if command -v gnuplot >/dev/null 2>&1; then
    for m in PSM_F PSM_A BPHS4_F BPHS4_A BPHS10_F BPHS10_A BPHS20_F BPHS20_A; do
        awk -F'\t' -v m="$m" '$2 == m { print $1, $3 }' "$out/index-qps.dat" \
            > "$out/qps-$m.dat"
    done
    gnuplot <<GP
set terminal pngcairo size 900,560 font "sans,11"
set output "docs/index-qps.png"
set title "Online lookups, one core (h = 3; PSM at 95% relative recall)"
set xlabel "log2 n (stored fingerprints)"
set ylabel "queries/s"
set logscale y
set key outside right
set grid
plot for [m in "PSM_F PSM_A BPHS4_F BPHS4_A BPHS10_F BPHS10_A BPHS20_F BPHS20_A"] \
     "$out/qps-".m.".dat" using 1:2 with linespoints title m
set output "docs/index-recall.png"
set title "PSM relative recall at a fixed number of probes k (t = log2 n - 1)"
set ylabel "relative recall"
unset logscale y
set yrange [0.5:1]
plot "$out/index-recall.dat" using 1:3 with linespoints title "PSM_F k=5", \
     "" using 1:5 with linespoints title "PSM_F k=10", \
     "" using 1:7 with linespoints title "PSM_F k=20", \
     "" using 1:9 with linespoints title "PSM_F k=50", \
     "" using 1:4 with linespoints dt 2 title "PSM_A k=5", \
     "" using 1:6 with linespoints dt 2 title "PSM_A k=10", \
     "" using 1:8 with linespoints dt 2 title "PSM_A k=20", \
     "" using 1:10 with linespoints dt 2 title "PSM_A k=50"
GP
    echo "plots: docs/index-qps.png docs/index-recall.png"
fi
