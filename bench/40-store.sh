#!/bin/sh
# The compact document store (src/sh_store.h) at the sizes a big crawl
# needs, side by side in one run: shared memory a document, fill rate,
# query latency (key + PSM lookup) p50/p99, the longest hold of the lock
# during a sliced save, and start-up from the image.  Real rust-doc
# fingerprints, relocated; rust-doc paths as URLs.
#   STORE_LOG2N   sizes, log2 documents (default 20,24; issue 24 measured
#                 20,27, which needs about 19 GB of memory and 12 GB of disk)
set -eu
BUILD=${1:-build}
root=$(dpkg -L rust-doc 2>/dev/null | grep -E '/html/std/index\.html$' \
       | head -n 1)
[ -n "$root" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
root=$(dirname "$(dirname "$root")")
list="$BUILD/bench/store-pages.txt"
mkdir -p "$BUILD/bench"     # run alone on a clean tree, before make bench
find "$root" -name '*.html' -type f | LC_ALL=C sort > "$list"
img=$(mktemp -d "${TMPDIR:-/tmp}/store-bench.XXXXXX")
trap 'rm -rf "$img"' EXIT
echo "command: $BUILD/simhash store-bench --list $list" \
     "--cache $BUILD/bench/store-pages.cache --log2n ${STORE_LOG2N:-20,24}" \
     "--queries 200000 --image-dir $img"
"$BUILD/simhash" store-bench --list "$list" \
    --cache "$BUILD/bench/store-pages.cache" \
    --log2n "${STORE_LOG2N:-20,24}" --queries 200000 --image-dir "$img"
