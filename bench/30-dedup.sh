#!/bin/sh
# Batch mode: `simhash dedup` over 1M fingerprints (every rust-doc page
# plus random background), PSM_A against the BPHS batch variant (10
# tables) in the same run; pairs/s and time on stderr.
set -eu
BUILD=${1:-build}
root=/usr/share/doc/rust-doc/html
[ -d "$root/std" ] || { echo "rust-doc missing (tools/deps.sh eval)" >&2; exit 1; }
out="$BUILD/bench"
mkdir -p "$out"
find "$root" -name '*.html' -type f | LC_ALL=C sort > "$out/dedup.lst"
pages=$(wc -l < "$out/dedup.lst")
bg=$((1048576 - pages))
cmd="$BUILD/simhash dedup --list $out/dedup.lst --cache $out/dedup.fps --background $bg --method both --quiet"
echo "command: $cmd"
$cmd 2>&1 | grep '^dedup:'
