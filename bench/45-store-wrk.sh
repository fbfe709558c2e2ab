#!/bin/sh
# The module through wrk on a zone that already holds 2^N documents, side
# by side for each N of STORE_WRK_LOG2N (default 20; issue 24 measured
# 20,27): `simhash store-bench` fills a store of that size with relocated
# real fingerprints and realistic keys, saves it as a snapshot of a zone
# of the default options and says which simhash_zone loads it in place;
# bench/wrk.sh then starts nginx with that zone (start-up time) and runs
# its new-page scenario on it, then again for the re-fetch scenarios.
# Each run's zone is saved at shutdown (the file is the zone's).  Needs
# memory for one zone of the largest size and disk for two copies of its
# snapshot (2^27: about 15 GB of memory, 25 GB of disk).
#   bench/45-store-wrk.sh BUILD
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
root=$(dpkg -L rust-doc 2>/dev/null | grep -E '/html/std/index\.html$' \
       | head -n 1)
[ -n "$root" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
root=$(dirname "$(dirname "$root")")
list="$BUILD/bench/store-pages.txt"
mkdir -p "$BUILD/bench"
find "$root" -name '*.html' -type f | LC_ALL=C sort > "$list"

# the snapshots: where nginx's workers (nobody, when root) may save them,
# and nobody else may write (the module refuses a directory open to all)
dir=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/store-wrk.XXXXXX")
trap 'rm -rf "$dir"' EXIT
[ "$(id -u)" != 0 ] || chown nobody "$dir"
chmod 0755 "$dir"

for n in $(echo "${STORE_WRK_LOG2N:-20}" | tr ',' ' '); do
    echo "== 2^$n documents"
    echo "command: $BUILD/simhash store-bench --list $list" \
         "--cache $BUILD/bench/store-pages.cache --log2n $n --queries 20000" \
         "--image-dir $dir --keep yes"
    out=$("$BUILD/simhash" store-bench --list "$list" \
              --cache "$BUILD/bench/store-pages.cache" --log2n "$n" \
              --queries 20000 --image-dir "$dir" --keep yes)
    echo "$out"
    zone=$(echo "$out" | sed -n 's/.*simhash_zone zone=NAME:\(.*\)$/\1/p')
    [ -n "$zone" ] || { echo "store-bench wrote no snapshot" >&2; exit 1; }
    [ "$(id -u)" != 0 ] || chown nobody "$dir"/*.snap
    zone="$zone save=off"
    snap=$(echo "$zone" | sed -n 's/.* file=\([^ ]*\).*/\1/p')
    # the first run saves its zone over the file at shutdown: the second
    # starts from the file as store-bench wrote it
    cp -p "$snap" "$snap.orig"
    echo "-- new pages, zone new:$zone"
    NEW_ZONE="$zone" SCENARIOS=new CORPORA=docs sh "$TOP/bench/wrk.sh" \
        "$BUILD"
    mv -f "$snap.orig" "$snap"
    echo "-- re-fetches, zone refetch:$zone"
    REFETCH_ZONE="$zone" SCENARIOS="identical mix" CORPORA=docs \
        sh "$TOP/bench/wrk.sh" "$BUILD"
    rm -f "$dir"/*.snap*
done
