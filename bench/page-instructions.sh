# Sourced by bench/15-dust.sh and bench/16-sites.sh (not a section of its
# own: bench/run.sh runs only the numbered scripts).  What a new page
# costs, the figure both compare their per-request work with:
#
#   collected              instructions callgrind collected, read from its
#                          summary on stdin
#   page_instructions TAG  100 documentation pages of about 25 KB into
#                          $BUILD/bench/TAG-pages.txt ($list, $pages) and
#                          the instructions inside sh_doc_* to fingerprint
#                          them all ($page; empty when callgrind counted
#                          nothing); fails when no such page is installed

collected() {
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -n 1
}

page_instructions() {
    list="$BUILD/bench/$1-pages.txt"
    for d in /usr/share/doc/python3.11/html \
             /usr/share/doc/postgresql-doc-15/html /usr/share/doc/rust-doc/html
    do
        [ -d "$d" ] && find "$d" -name '*.html' -type f -size +23k -size -27k
    done | LC_ALL=C sort | head -n 100 > "$list"
    pages=$(wc -l < "$list")
    [ "$pages" -gt 0 ] || {
        echo "instructions: no pages of 25 KB" >&2; exit 1; }
    page=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
               --toggle-collect='sh_doc_*' \
               "$BUILD/bench/bench_extract" --once fingerprint "$list" 2>&1 \
           | collected)
}
