#!/bin/sh
# make bench: every benchmark, one section each, in one run on this machine.
#   bench/run.sh BUILD
# Each section is its own script (bench/*.sh, in name order) taking the
# build directory; the figures go to stdout and into BUILD/bench/*.txt.
set -eu
BUILD=${1:-build}
mkdir -p "$BUILD/bench"
for s in "$(dirname "$0")"/[0-9]*-*.sh; do
    [ -f "$s" ] || continue
    name=$(basename "$s" .sh)
    echo "=== $name"
    sh "$s" "$BUILD" | tee "$BUILD/bench/$name.txt"
done
# the module through nginx under wrk (bench/wrk.sh, not numbered: it needs
# the module built and wrk installed)
echo "=== wrk"
sh "$(dirname "$0")/wrk.sh" "$BUILD" | tee "$BUILD/bench/wrk.txt"
# replication through Redis (bench/replicate.pl: needs redis-server and wrk)
echo "=== replicate"
perl "$(dirname "$0")/replicate.pl" "$BUILD" | tee "$BUILD/bench/replicate.txt"
# the index in a Redis Cluster: a lookup's latency, new pages with the
# cluster beside a local-only zone, recall side by side
# (bench/cluster.pl: needs redis-server, redis-cli and wrk;
# BENCH_CLUSTER_DOCS documents loaded, 2^20 unless set)
echo "=== cluster"
perl "$(dirname "$0")/cluster.pl" "$BUILD" | tee "$BUILD/bench/cluster.txt"
