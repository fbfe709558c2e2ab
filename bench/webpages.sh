#!/bin/sh
# The real-web corpus of the benchmarks: the 258 pages saved from popular
# sites that npm's htmlparser-benchmark package ships (24.6 MB, 1 KB to
# 400 KB each, script-heavy, as crawled), fetched once with `npm pack` and
# unpacked under the build directory.  Nothing of the package is installed
# or run: only its files/*.html are read.
#
#   dir=$(bench/webpages.sh BUILD) || skip
#
# Prints the directory holding the pages.  Without npm or the registry it
# says so in one line on stderr and fails, and the benchmark that asked
# skips its real-web part.
set -eu
BUILD=${1:-build}
VERSION=1.1.3
CACHE="$BUILD/corpus"
DIR="$CACHE/htmlparser-benchmark-$VERSION"

if [ ! -f "$DIR/.complete" ]; then
    command -v npm >/dev/null 2>&1 || {
        echo "real-web corpus: npm not installed (apt-get install npm)," \
             "skipped" >&2
        exit 1
    }
    mkdir -p "$CACHE"
    tgz="$CACHE/htmlparser-benchmark-$VERSION.tgz"
    if [ ! -s "$tgz" ]; then
        # npm pack checks the tarball against the registry's integrity
        # digest; a registry out of reach fails here, not half-way
        timeout 300 npm pack --loglevel=error --fetch-retries=1 \
            --pack-destination "$CACHE" \
            "htmlparser-benchmark@$VERSION" >/dev/null 2>"$CACHE/npm.log" || {
            rm -f "$tgz"
            echo "real-web corpus: npm pack htmlparser-benchmark@$VERSION" \
                 "failed (no registry?), skipped; see $CACHE/npm.log" >&2
            exit 1
        }
    fi
    rm -rf "$DIR"
    mkdir -p "$DIR"
    tar -xzf "$tgz" -C "$DIR" --strip-components=2 package/files
    n=$(find "$DIR" -name '*.html' -type f | wc -l)
    [ "$n" -gt 200 ] || {
        echo "real-web corpus: $tgz holds $n pages, expected 258," \
             "skipped" >&2
        exit 1
    }
    touch "$DIR/.complete"
fi
echo "$DIR"
