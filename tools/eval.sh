#!/bin/sh
# tools/eval.sh BUILD -- the quality evaluation behind docs/QUALITY.md
# (`make eval` installs the corpora, builds BUILD/sh-eval and runs this).
#
#   1. lists the pages: rust-doc's std tree aligned path by path with core
#      and alloc (std re-exports them: the same documentation under two
#      URLs), and every page of python3.11-doc and postgresql-doc-15;
#   2. lists a corpus disjoint from the measured pages for IDF tables;
#   3. runs sh-eval over the configurations below (fingerprints cached in
#      BUILD/eval/cache, keyed by options and binary);
#   4. plots the precision/recall curve of the chosen configuration into
#      docs/quality-h.png and refreshes the generated tables of
#      docs/QUALITY.md (between its BEGIN/END markers).
#
# Environment: EVAL_THREADS (default: the number of CPUs), EVAL_SEEDS (hash
# keys per configuration, default 4), EVAL_CHOSEN (the configuration
# plotted, default "recommended": what docs/QUALITY.md proposes),
# EVAL_CONFIGS (a file with one "NAME: --option value ..." per line,
# replacing the built-in list), EVAL_DOCS (where the PNG, its data and
# QUALITY.md go, default docs), EVAL_MATCH (the configuration the two
# match rules are compared under, default "default").
#
# The match rules (hamming and weighted, src/sh_match.h) are compared on
# two corpora: the one above, and the short-page corpus of section 5 (the
# Linux manual pages rendered to HTML by two renderers); see
# docs/QUALITY.md, "Weighted matching".
set -eu

BUILD=${1:-build}
OUT=$BUILD/eval
CACHE=$OUT/cache
EVAL=$BUILD/sh-eval
CHOSEN=${EVAL_CHOSEN:-default}
MATCH=${EVAL_MATCH:-default}
THREADS=${EVAL_THREADS:-$(nproc 2>/dev/null || echo 2)}
SEEDS=${EVAL_SEEDS:-4}
DOCS=${EVAL_DOCS:-docs}

die() { echo "eval: $*" >&2; exit 1; }

[ -x "$EVAL" ] || die "$EVAL missing (run make eval)"
mkdir -p "$OUT" "$CACHE"

# --- 1. pages ------------------------------------------------------------
# Ask dpkg where each package put its HTML rather than assuming paths.
html_of() {
    dpkg -L "$1" 2>/dev/null | grep -E '\.html$' | while read -r f; do
        [ -f "$f" ] && [ ! -L "$f" ] && printf '%s\n' "$f"
    done
}

rust_index=$(dpkg -L rust-doc 2>/dev/null | grep -E '/html/std/index\.html$' \
             | head -n 1) || true
[ -n "$rust_index" ] || die "rust-doc is not installed (tools/deps.sh eval)"
RUST=$(dirname "$(dirname "$rust_index")")

# std/x.html <-> core/x.html and alloc/x.html, for every x present in both.
: >"$OUT/aligned.tsv"
for other in core alloc; do
    (cd "$RUST/std" && find . -name '*.html' -type f | sed 's|^\./||' \
        | LC_ALL=C sort) >"$OUT/std.lst"
    (cd "$RUST/$other" && find . -name '*.html' -type f | sed 's|^\./||' \
        | LC_ALL=C sort) >"$OUT/$other.lst"
    LC_ALL=C comm -12 "$OUT/std.lst" "$OUT/$other.lst" \
        | awk -v g="$other" -v r="$RUST" \
              '{ printf "%s\t%s/std/%s\t%s/%s/%s\n", g, r, $0, r, g, $0 }' \
        >>"$OUT/aligned.tsv"
done

: >"$OUT/prose.tsv"
for spec in python:python3.11-doc postgresql:postgresql-doc-15; do
    group=${spec%%:*}
    pkg=${spec#*:}
    html_of "$pkg" | LC_ALL=C sort | awk -v g="$group" '{ print g "\t" $0 }' \
        >>"$OUT/prose.tsv"
    grep -q "^$group	" "$OUT/prose.tsv" \
        || die "$pkg has no HTML pages (tools/deps.sh eval)"
done

# --- 1b. the template corpus -----------------------------------------------
# The same documents under two templates: the Rust standard library's API
# documentation and the Rust books as rust-doc ships them (Rust 1.63,
# rustdoc's and mdbook's templates of 2022) and as rust-web-doc does (Rust
# 1.85, their templates of 2025: other sidebars, headers, menus; mdbook's
# table of contents moved out of the page).  rust-web-doc conflicts with
# rust-doc, so it is not installed: its package is fetched and the trees
# used are unpacked under $OUT (apt-get download, dpkg-deb).  Pairs are
# the relative paths present in both; the truth is main-content text,
# selected per generator by XPath (tools/eval/template.c): rustdoc's
# section#main-content, mdbook's div#content.
WEB=$OUT/rust-web-doc
WEB_TREES="std book reference nomicon rust-by-example"
if [ ! -f "$WEB/.unpacked" ]; then
    mkdir -p "$OUT/debs"
    (cd "$OUT/debs" && rm -f rust-web-doc_*.deb \
        && { apt-get download rust-web-doc 2>/dev/null \
             || { apt-get update -qq && apt-get download rust-web-doc; }; }) \
        || die "cannot fetch rust-web-doc"
    deb=$(ls "$OUT"/debs/rust-web-doc_*.deb)
    rm -rf "$WEB"
    mkdir -p "$WEB"
    set -f
    pats=
    for t in $WEB_TREES; do
        pats="$pats ./usr/share/doc/rust-web-doc/html/$t/*"
    done
    # shellcheck disable=SC2086
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$WEB" --wildcards $pats
    set +f
    dpkg-deb -f "$deb" Version >"$WEB/.unpacked"
fi
WEBR=$WEB/usr/share/doc/rust-web-doc/html
[ -d "$WEBR/std" ] || die "rust-web-doc unpacked without std/"

pages_of() {    # ROOT TREE: its HTML pages, relative, sorted
    (cd "$1/$2" && find . -name '*.html' -type f | sed 's|^\./||' \
        | grep -v -E '(^|/)(print|toc|404)\.html$' | LC_ALL=C sort)
}
XP_RUSTDOC="//section[@id='main-content']"
XP_MDBOOK="//div[@id='content']"
: >"$OUT/template.tsv"
: >"$OUT/site.tsv"
for t in $WEB_TREES; do
    if [ "$t" = std ]; then g=rustdoc xp=$XP_RUSTDOC; else g=mdbook xp=$XP_MDBOOK; fi
    pages_of "$RUST" "$t" >"$OUT/old.lst"
    pages_of "$WEBR" "$t" >"$OUT/new.lst"
    LC_ALL=C comm -12 "$OUT/old.lst" "$OUT/new.lst" \
        | awk -v g="$g" -v x="$xp" -v a="$RUST/$t" -v b="$WEBR/$t" \
              '{ printf "%s\t%s\t%s/%s\t%s/%s\n", g, x, a, $0, b, $0 }' \
        >>"$OUT/template.tsv"
    # Different documents under one template: every page of rust-doc's
    # std, and of rust-web-doc's books.
    if [ "$t" = std ]; then
        awk -v x="$xp" -v a="$RUST/$t" \
            '{ printf "rustdoc-1.63\t%s\t%s/%s\n", x, a, $0 }' \
            "$OUT/old.lst" >>"$OUT/site.tsv"
    else
        awk -v x="$xp" -v b="$WEBR/$t" \
            '{ printf "mdbook-1.85\t%s\t%s/%s\n", x, b, $0 }' \
            "$OUT/new.lst" >>"$OUT/site.tsv"
    fi
done

# --- 2. IDF corpus ---------------------------------------------------------
# IDF must not be learnt from the pages it is measured on: a crawler learns
# it from its own past crawl, not from the pair it is comparing.  The rust
# books (the book, reference, nomicon, rust-by-example, ...) are English
# technical prose disjoint from both populations.  sh-eval builds the table
# from this list itself (--idf-corpus), once per hash key, exactly as
# `simhash idf build --list` does.
find "$RUST" -name '*.html' -type f \
    \( -path '*/book/*' -o -path '*/reference/*' -o -path '*/nomicon/*' \
       -o -path '*/rust-by-example/*' -o -path '*/edition-guide/*' \
       -o -path '*/embedded-book/*' -o -path '*/rustc/*' \
       -o -path '*/unstable-book/*' -o -path '*/rustdoc/*' \) \
    | LC_ALL=C sort >"$OUT/idf-corpus.lst"
IDF=$OUT/idf-corpus.lst

# --- 3. configurations -----------------------------------------------------
# "default" is whatever src/sh_config.h says, and its first place makes it
# define "visible text" for the ground truth (only ignore patterns would
# matter there); "recommended" is what docs/QUALITY.md proposes.  Every
# other line spells out the choices it makes, so the table keeps its
# meaning when the defaults move: shingle size w, the word and shingle
# weights (only their ratio matters: W is normalised), IDF on the word
# features, stemming, stop words.
if [ -n "${EVAL_CONFIGS:-}" ]; then
    cp "$EVAL_CONFIGS" "$OUT/configs.txt"
else
    cat >"$OUT/configs.txt" <<EOF
default:
content-off: --content off
content-structure: --content structure
w1: --shingle 1
w2: --shingle 2
w4: --shingle 4
w5: --shingle 5
shingles-only: --word-weight 0
words-x1: --word-weight 1
words-x1.5: --word-weight 1.5
words-x2: --word-weight 2
nostem: --stem none
english-stop: --stopwords english
english-stop-words-x1: --stopwords english --word-weight 1
w2-english-stop: --shingle 2 --stopwords english --word-weight 1
min-features-16: --min-features 16
w1-idf: --shingle 1 --word-weight 1 --idf-corpus $IDF
idf: --word-weight 1 --idf-corpus $IDF
idf-s2: --word-weight 1 --shingle-weight 2 --idf-corpus $IDF
EOF
fi

set --
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    set -- "$@" --config "$line"
done <"$OUT/configs.txt"

echo "eval: $(wc -l <"$OUT/aligned.tsv") aligned pairs," \
     "$(wc -l <"$OUT/prose.tsv") prose pages, $THREADS threads" >&2
# Cached fingerprints stay valid while the library is the same (ar writes
# deterministic archives), whatever happens to the evaluation code.
ident=$(cksum <"$BUILD/libsimhash.a" | cut -d' ' -f1,2)
start=$(date +%s)
"$EVAL" --identity "lib $ident" --match "$MATCH" \
    --aligned "$OUT/aligned.tsv" --prose "$OUT/prose.tsv" \
    --template "$OUT/template.tsv" --site "$OUT/site.tsv" --sketch \
    --out "$OUT" --cache "$CACHE" --threads "$THREADS" --seeds "$SEEDS" "$@"
echo "eval: sh-eval took $(( $(date +%s) - start )) s" >&2

# --- 4. plot and docs ------------------------------------------------------
[ -f "$OUT/curve-$CHOSEN.dat" ] || die "no configuration named $CHOSEN"
cp "$OUT/curve-$CHOSEN.dat" "$DOCS/quality-h.dat"
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "datafile='$DOCS/quality-h.dat'" \
            -e "outfile='$DOCS/quality-h.png'; label='$CHOSEN'" \
        "$DOCS/quality-h.gp"
else
    echo "eval: gnuplot missing, $DOCS/quality-h.png not redrawn" >&2
fi

# The generated part of QUALITY.md: everything between the markers is
# replaced; the prose around it (choices and reasons) is written by hand.
{
    echo "Generated by \`tools/eval.sh\` ($(date -u +%Y-%m-%d), $SEEDS hash" \
         "keys per configuration); plotted configuration: \`$CHOSEN\`." \
         "Pair counts are summed over the $SEEDS keys (a pair counts once per" \
         "key); rates and percentages are pooled the same way.  MB/s is" \
         "wall-clock throughput of the whole run on $THREADS threads, on" \
         "a machine that may have been busy: \`make bench\` measures speed."
    echo
    sed 's/^/    /' "$OUT/summary.txt"
    echo
    echo "#### Ground truth: Jaccard of the pairs measured"
    echo
    cat "$OUT/population.md"
    echo
    echo "#### Configurations at h = 3"
    echo
    cat "$OUT/comparison.md"
    echo
    echo "#### Precision and recall against h, configuration \`$CHOSEN\`"
    echo
    cat "$OUT/curve-$CHOSEN.md"
    echo
    echo "#### Pair groups at h = 3, configuration \`$CHOSEN\`"
    echo
    cat "$OUT/groups-$CHOSEN.md"
    echo
    echo "#### Recall at h = 3 against page length, configuration" \
         "\`$CHOSEN\`"
    echo
    cat "$OUT/lengths-$CHOSEN.md"
} >"$OUT/generated.md"

# The content weighting section has its own generated block: the template
# corpus (tools/eval/template.c) and the learned-template simulation
# (tools/eval/sketch.c).
{
    echo "Generated by \`tools/eval.sh\` ($(date -u +%Y-%m-%d), $SEEDS hash" \
         "keys per configuration, rust-web-doc" \
         "$(cat "$WEB/.unpacked")); counts are summed over the keys."
    echo
    echo "#### Pairs of the template corpus (main-content Jaccard)"
    echo
    sed -n '1,/^$/p' "$OUT/template.md"
    sed -n '/^Template pairs listed/p' "$OUT/template.md"
    echo
    echo "#### Configurations: two templates, one template, and the other" \
         "populations"
    echo
    sed -n '/^| config /,$p' "$OUT/template.md"
    echo
    echo "#### Learned templates, simulated"
    echo
    cat "$OUT/sketch.md"
} >"$OUT/generated-content.md"

if [ -f "$DOCS/QUALITY.md" ] \
   && grep -q '^<!-- BEGIN generated content' "$DOCS/QUALITY.md"; then
    awk -v gen="$OUT/generated-content.md" '
        /^<!-- BEGIN generated content/ { print
                                  while ((getline l < gen) > 0) print l
                                  skip = 1; next }
        /^<!-- END generated content/   { skip = 0 }
        !skip { print }' "$DOCS/QUALITY.md" >"$OUT/QUALITY.md.new"
    mv "$OUT/QUALITY.md.new" "$DOCS/QUALITY.md"
fi

if [ -f "$DOCS/QUALITY.md" ] \
   && grep -q '^<!-- BEGIN generated by' "$DOCS/QUALITY.md"; then
    awk -v gen="$OUT/generated.md" '
        /^<!-- BEGIN generated by/ { print
                                  while ((getline l < gen) > 0) print l
                                  skip = 1; next }
        /^<!-- END generated -->/  { skip = 0 }
        !skip { print }' "$DOCS/QUALITY.md" >"$OUT/QUALITY.md.new"
    mv "$OUT/QUALITY.md.new" "$DOCS/QUALITY.md"
    echo "eval: refreshed $DOCS/QUALITY.md" >&2
else
    echo "eval: tables in $OUT/generated.md" >&2
fi
cat "$OUT/comparison.md"

# --- 5. short pages: the match rules ---------------------------------------
# Where the weighted rule is weakest: short pages made from one template.
# The Linux manual pages of sections 2 and 3 (manpages-dev) are rendered
# twice, by mandoc (as manpages.debian.org serves them) and by man2html
# (the CGI many hosts run): the same page under two URLs with two different
# frames, the aligned pairs; every pair of mandoc renders, pages that share
# their section headings, the ATTRIBUTES table and the colophon, are the
# strangers.  Rendered once per package versions; man2html's time stamp is
# fixed so that the pages, hence the cached truth, are the same every run.
MAN=$OUT/man
stamp=$(dpkg-query -W -f='${Package}=${Version} ' manpages-dev mandoc \
        man2html-base 2>/dev/null) || die "manpages-dev, mandoc or" \
        "man2html-base missing (tools/deps.sh eval)"
if [ "$(cat "$MAN/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$MAN/mandoc" "$MAN/man2html"
    mkdir -p "$MAN/mandoc" "$MAN/man2html"
    dpkg -L manpages-dev | grep -E '/man[23]/[^/]+\.gz$' | LC_ALL=C sort \
    | while read -r f; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        zcat "$f" | head -c 3 | grep -q '^\.so' && continue   # a redirect
        name=$(basename "$f" .gz).html
        mandoc -T html "$f" >"$MAN/mandoc/$name" 2>/dev/null || true
        zcat "$f" | man2html 2>/dev/null | sed -e '1,/^$/d' \
            -e 's/^Time: .*GMT, .*/Time: 00:00:00 GMT, January 1, 2000/' \
            >"$MAN/man2html/$name" || true
    done
    echo "$stamp" >"$MAN/stamp"
fi
: >"$MAN/aligned.tsv"
: >"$MAN/prose.tsv"
for f in "$MAN"/mandoc/*.html; do
    name=$(basename "$f")
    [ -s "$f" ] && [ -s "$MAN/man2html/$name" ] || continue
    printf 'man2html\t%s\t%s\n' "$f" "$MAN/man2html/$name" >>"$MAN/aligned.tsv"
    printf 'man\t%s\n' "$f" >>"$MAN/prose.tsv"
done
mline=$(grep -E "^$MATCH:" "$OUT/configs.txt" | head -n 1) \
    || die "EVAL_MATCH=$MATCH: no such configuration"
echo "eval: short pages: $(wc -l <"$MAN/aligned.tsv") manual pages," \
     "two renderers" >&2
"$EVAL" --identity "lib $ident" --match "$MATCH" \
    --aligned "$MAN/aligned.tsv" --prose "$MAN/prose.tsv" \
    --out "$MAN" --cache "$CACHE" --threads "$THREADS" --seeds "$SEEDS" \
    --config "$mline" >/dev/null

# The frontier plot: recall on J >= 0.9 against the close strangers
# accepted, both rules, both corpora.
if command -v gnuplot >/dev/null 2>&1; then
    cp "$OUT/match-$MATCH.dat" "$DOCS/quality-match-docs.dat"
    cp "$MAN/match-$MATCH.dat" "$DOCS/quality-match-man.dat"
    gnuplot -e "docsfile='$DOCS/quality-match-docs.dat'" \
            -e "manfile='$DOCS/quality-match-man.dat'" \
            -e "outfile='$DOCS/quality-match.png'" "$DOCS/quality-match.gp"
fi

{
    echo "Generated by \`tools/eval.sh\` ($(date -u +%Y-%m-%d), $SEEDS hash" \
         "keys), configuration \`$MATCH\`."
    echo
    echo "#### Rust-doc std ~ core/alloc, Python and PostgreSQL manuals"
    echo
    cat "$OUT/match-$MATCH.md"
    echo
    echo "#### Short pages: Linux manual pages, mandoc ~ man2html"
    echo
    sed 's/^/    /' "$MAN/summary.txt" | grep -v '^    config '
    echo
    sed 's/| std ~ man2html /| mandoc ~ man2html /' "$MAN/population.md"
    echo
    cat "$MAN/match-$MATCH.md"
} >"$OUT/generated-match.md"

if [ -f "$DOCS/QUALITY.md" ] \
   && grep -q '^<!-- BEGIN match tables' "$DOCS/QUALITY.md"; then
    awk -v gen="$OUT/generated-match.md" '
        /^<!-- BEGIN match tables/ { print; while ((getline l < gen) > 0) print l
                                     skip = 1; next }
        /^<!-- END match tables/   { skip = 0 }
        !skip { print }' "$DOCS/QUALITY.md" >"$OUT/QUALITY.md.new"
    mv "$OUT/QUALITY.md.new" "$DOCS/QUALITY.md"
    echo "eval: refreshed the match tables of $DOCS/QUALITY.md" >&2
else
    echo "eval: match tables in $OUT/generated-match.md" >&2
fi

# --- 6. hub pages ----------------------------------------------------------
# Pages whose own content is links (tools/eval/hub.py): link-swapped
# real-web pages, and the index and listing pages of the documentation
# packages; under the default and the other two content modes.  Apart
# from the tables above: its truth is whole-page text, link text included.
# Under the defaults also every pair reported over all the packages' pages,
# against whole-page and main-content truth (two more minutes), the index
# pages of Sphinx and MkDocs sites inside their navigation, and HTML mail
# (two more).
# Alone (a few minutes): python3 tools/eval/hub.py BUILD.
{
    echo "Generated by \`tools/eval.sh\` ($(date -u +%Y-%m-%d))."
    for opts in "" "--content structure" "--content off"; do
        parts="swap docs"
        [ -n "$opts" ] || parts="swap docs pairs sites mail"
        echo
        echo '```'
        HUB_OPTS="$opts" HUB_PARTS="$parts" python3 tools/eval/hub.py "$BUILD"
        echo '```'
    done
} >"$OUT/generated-hub.md" || die "hub pages: tools/eval/hub.py failed"
if [ -f "$DOCS/QUALITY.md" ] \
   && grep -q '^<!-- BEGIN hub tables' "$DOCS/QUALITY.md"; then
    awk -v gen="$OUT/generated-hub.md" '
        /^<!-- BEGIN hub tables/ { print; while ((getline l < gen) > 0) print l
                                   skip = 1; next }
        /^<!-- END hub tables/   { skip = 0 }
        !skip { print }' "$DOCS/QUALITY.md" >"$OUT/QUALITY.md.new"
    mv "$OUT/QUALITY.md.new" "$DOCS/QUALITY.md"
    echo "eval: refreshed the hub tables of $DOCS/QUALITY.md" >&2
else
    echo "eval: hub tables in $OUT/generated-hub.md" >&2
fi
