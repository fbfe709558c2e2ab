#!/bin/bash
# make eval's quality figures under another Debian release's libxml2
# (make trixie-eval, make sid-eval):  tools/chroot-eval.sh SUITE [BUILD]
#
# The same evaluation, the same pages, another parser: SUITE trixie
# (Debian 13: libxml2 2.9.14 under a 2.12.7 version name) or sid
# (unstable: libxml2 2.15).  The host's `make eval` (run first, here, if
# its lists are missing; its PNG and tables then go to BUILD/eval-docs,
# not docs/) has made the pair lists in BUILD/eval; the chroot of
# tools/chroot-test.sh SUITE builds sh-eval against the release's libxml2
# and runs it on those lists, with the
# host's documentation packages and the unpacked rust-web-doc mounted
# read-only where the lists name them.  So the corpus is byte for byte the
# host's, and only the library the pages go through differs.
#
# Writes BUILD/eval-SUITE/ (sh-eval's tables under SUITE), BUILD/eval-
# SUITE/host/ (the host's, the same configurations) and
# BUILD/eval-SUITE/side-by-side.md: the figures of the default
# configuration under both, from the two runs' own tables.  As root only
# (chroot, mount).
set -eu
umask 022

SUITE=${1:-}
[ -n "$SUITE" ] || { echo "usage: $0 SUITE [BUILD]" >&2; exit 2; }
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${2:-build}
ROOT=${SH_CHROOT_ROOT:-/var/tmp/sh-$SUITE}
SEEDS=${EVAL_SEEDS:-4}
THREADS=${EVAL_THREADS:-$(nproc 2>/dev/null || echo 2)}

die() { echo "$SUITE-eval: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (chroot, mount)"
cd "$TOP"
case "$BUILD" in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
OUT=$BUILD/eval
for f in aligned.tsv prose.tsv template.tsv site.tsv configs.txt; do
    [ "${CHROOT_EVAL_TABLE_ONLY:-0}" = 1 ] && break
    [ -f "$OUT/$f" ] || { echo "$SUITE-eval: running make eval on the" \
                               "host first (its lists are missing)" >&2
                          EVAL_DOCS="$BUILD/eval-docs" make -s eval \
                              BUILD="$BUILD"
                          break; }
done
SUITEOUT=$BUILD/eval-$SUITE
HOSTOUT=$SUITEOUT/host

# Only the default configuration: the side-by-side table reads its rows
# alone (CHROOT_EVAL_ALL=1: every configuration of make eval's list, for
# the whole tables in BUILD/eval-SUITE; about 19 times the fingerprints).
configs=()
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    if [ "${CHROOT_EVAL_ALL:-0}" != 1 ]; then
        case "$line" in default:*) ;; *) continue ;; esac
    fi
    configs+=(--config "$line")
done <"$OUT/configs.txt"

# CHROOT_EVAL_TABLE_ONLY=1: the side-by-side table again from the two
# runs' tables, nothing run
if [ "${CHROOT_EVAL_TABLE_ONLY:-0}" != 1 ]; then
# the chroot and the source, as make SUITE makes them (build only)
echo "$SUITE-eval: the $SUITE chroot and the build in it" >&2
CHROOT_SRC=/opt/src-eval CHROOT_BUILD_ONLY=1 CHROOT_BUILD_TARGET=build/sh-eval \
    "$TOP/tools/chroot-test.sh" "$SUITE" >&2

rm -rf "$SUITEOUT"
mkdir -p "$SUITEOUT"

# Inside: /opt/src-eval is the tree tools/chroot-test.sh copied; its build/eval is the
# host's lists (read-only), the documentation is the host's, the tables
# go to /opt/eval-out.

echo "$SUITE-eval: sh-eval in the chroot, $SEEDS hash keys, $THREADS threads" >&2
unshare --mount --pid --fork --mount-proc="$ROOT/proc" /bin/bash -c '
    set -eu
    r=$1; out=$2; suiteout=$3; suite=$4; shift 4
    mkdir -p "$r/opt/src-eval/build/eval" "$r/opt/eval-out" "$r/usr/share/doc"
    mount --bind "$out" "$r/opt/src-eval/build/eval"
    mount -o remount,bind,ro "$r/opt/src-eval/build/eval"
    # the lists name pages under the host path of BUILD/eval as well
    mkdir -p "$r$out"
    mount --bind "$out" "$r$out"
    mount -o remount,bind,ro "$r$out"
    mount --bind /usr/share/doc "$r/usr/share/doc"
    mount -o remount,bind,ro "$r/usr/share/doc"
    mount --bind "$suiteout" "$r/opt/eval-out"
    chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 /bin/bash -c "
        set -eu
        cd /opt/src-eval
        echo \"$suite-eval: libxml2 \$(pkg-config --modversion libxml-2.0)\"
        make -s build/sh-eval
        ident=\$(cksum <build/libsimhash.a | cut -d\" \" -f1,2)
        build/sh-eval --identity \"lib \$ident $suite\" --match default \
            --aligned build/eval/aligned.tsv --prose build/eval/prose.tsv \
            --template build/eval/template.tsv --site build/eval/site.tsv \
            --sketch --out /opt/eval-out --cache /opt/eval-out/cache \
            \"\$@\"
    " "$suite-eval" "$@"
' "$SUITE-eval" "$ROOT" "$OUT" "$SUITEOUT" "$SUITE" --threads "$THREADS" --seeds "$SEEDS" \
    "${configs[@]}"

fi

# The host's side, the same configurations by the host's sh-eval
# (built by make eval) into BUILD/eval-SUITE/host: make eval's cache
# (the ground truth, the fingerprints) makes it quick after make eval.
if [ "${CHROOT_EVAL_TABLE_ONLY:-0}" != 1 ] || [ ! -f "$HOSTOUT/comparison.md" ]
then
    echo "$SUITE-eval: sh-eval on the host, the same configurations" >&2
    make -s "$BUILD/sh-eval" BUILD="$BUILD"
    mkdir -p "$HOSTOUT"
    ident=$(cksum <"$BUILD/libsimhash.a" | cut -d' ' -f1,2)
    "$BUILD/sh-eval" --identity "lib $ident" --match default \
        --aligned "$OUT/aligned.tsv" --prose "$OUT/prose.tsv" \
        --template "$OUT/template.tsv" --site "$OUT/site.tsv" --sketch \
        --out "$HOSTOUT" --cache "$OUT/cache" --threads "$THREADS" \
        --seeds "$SEEDS" "${configs[@]}"
fi

# side by side: the default configuration's rows of the two runs' tables
row() {     # FILE: the table rows of configuration "default"
    grep -E '^\| default \|' "$1" || true
}
{
    echo "Generated by \`make $SUITE-eval\` ($(date -u +%Y-%m-%d)):" \
         "the default configuration, $SEEDS hash keys, the same pages."
    echo
    echo "Libxml2 on the host ($(. /etc/os-release && echo \
         "${VERSION_CODENAME:-?}")): $(dpkg-query -W -f '${Version}' \
         libxml2-dev 2>/dev/null || pkg-config --modversion libxml-2.0);" \
         "in the $SUITE chroot: $(chroot "$ROOT" dpkg-query -W \
         -f '${Version}' libxml2-dev)."
    for t in comparison.md template.md; do
        echo
        echo "From $t (host, then $SUITE):"
        echo
        sed -n '/^| config /{p;n;p;q}' "$HOSTOUT/$t"
        row "$HOSTOUT/$t"
        row "$SUITEOUT/$t"
    done
    if [ -f "$HOSTOUT/match-default.md" ] &&
       [ -f "$SUITEOUT/match-default.md" ]
    then
        echo
        echo "The weighted rule at its default T (host, then $SUITE):"
        echo
        sed -n '/^| rule /{p;n;p;q}' "$HOSTOUT/match-default.md"
        grep -E '^\| weighted \(default T\)' "$HOSTOUT/match-default.md" \
            || true
        grep -E '^\| weighted \(default T\)' "$SUITEOUT/match-default.md" \
            || true
    fi
    echo
    echo "(make eval's other parts, the manual pages and the hub pages, are"
    echo "not run under $SUITE.)"
} >"$SUITEOUT/side-by-side.md"
cat "$SUITEOUT/side-by-side.md"
