#!/bin/sh
# tools/dust-eval/check-pages.sh BUILD -- are the pages that a content-
# changing parameter selects really other pages for the module?  `simhash
# distance` (the module's match rule) over every listing page by name
# against the same page number by date (sort), against the next page
# (page), and over search result pages of consecutive words (q); counts
# "match" (a near-duplicate: the parameter would look like DUST),
# "listing" (set aside as two listings) and "differ".
set -eu
BUILD=$1
CLI="$BUILD/simhash"
GEN="$BUILD/dust-eval/gen/site"
count() { sort | uniq -c | awk '{printf " %s %s", $2, $1}'; }
n=$(ls "$GEN/listing" | grep -c '^name-')
printf 'sort (name-N ~ date-N, %d pairs):' "$n"
for i in $(seq 1 "$n"); do
    "$CLI" distance "$GEN/listing/name-$i.html" "$GEN/listing/date-$i.html" | awk '{print $3}'
done | count; echo
printf 'page (name-N ~ name-N+1, %d pairs):' $((n - 1))
for i in $(seq 1 $((n - 1))); do
    "$CLI" distance "$GEN/listing/name-$i.html" "$GEN/listing/name-$((i + 1)).html" | awk '{print $3}'
done | count; echo
set -- $(ls "$GEN/searchres")
printf 'q (consecutive words, %d pairs):' $(($# - 1))
prev=$1; shift
for w in "$@"; do
    "$CLI" distance "$GEN/searchres/$prev" "$GEN/searchres/$w" 2>/dev/null | awk '{print $3}' || echo short
    prev=$w
done | count; echo
