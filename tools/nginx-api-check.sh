#!/bin/bash
# Build the module against the nginx of other Debian releases:
#   tools/nginx-api-check.sh [BUILD] [SUITE...]     (make api-check)
#
# The module is built against this machine's nginx-dev by `make all`; an
# nginx release that renames or removes something the module uses breaks
# only the build on that release, which nothing here would see.  This
# fetches each suite's nginx-dev package (headers, configure and Debian's
# configure flags: no chroot, no binary) from the Debian archive, unpacks
# it, runs that nginx's configure with the release's own flags, and
# compiles module/ and the top file as tools/build-module.sh compiles them
# (warnings are errors; the library's parts in src/ include no nginx
# header and are not compiled again).  Any error fails the check, with the
# compiler's output.
#
# SUITES: trixie (Debian 13, stable) and sid (unstable) by default; the
# host's own nginx (Debian 12) is `make all`'s.  The package lists and the
# .deb are kept in SH_API_CACHE (default /var/tmp/sh-nginx-api), fetched
# again when older than a day, so that a new nginx in sid is seen soon.
# The archive: SH_API_MIRROR, default the host's apt mirror for Debian.
# About half a minute a suite on 2 cores, most of it nginx's configure.
set -eu
umask 022

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
shift || true
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
SUITES=${*:-trixie sid}
CACHE=${SH_API_CACHE:-/var/tmp/sh-nginx-api}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "api-check: $*" >&2; exit 1; }

MIRROR=${SH_API_MIRROR:-$(sh "$TOP/tools/debian-mirror.sh")}

[ -f "$KEYRING" ] || die "$KEYRING missing (package debian-archive-keyring)"

# fetch SUITE: the suite's nginx-dev unpacked in $CACHE/SUITE/root
fetch() {
    local suite=$1 dir="$CACHE/$1" apt deb
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    echo "deb [signed-by=$KEYRING] $MIRROR $suite main" > "$dir/sources.list"
    apt=(-q -o "Dir::Etc::SourceList=$dir/sources.list"
         -o "Dir::Etc::SourceParts=$dir/none"
         -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
         -o Debug::NoLocking=1 -o APT::Sandbox::User=root
         -o Acquire::Check-Valid-Until=false)
    if [ -z "$(find "$dir/lists" -name '*Packages*' -mtime -1 2>/dev/null)" ]
    then
        echo "api-check: $suite: the package list from $MIRROR"
        apt-get "${apt[@]}" update > "$dir/apt.log" 2>&1 \
            || { cat "$dir/apt.log" >&2; die "$suite: apt-get update failed"; }
        rm -f "$dir"/nginx-dev_*.deb
    fi
    deb=$(ls "$dir"/nginx-dev_*.deb 2>/dev/null | head -n1)
    if [ -z "$deb" ]; then
        (cd "$dir" && apt-get "${apt[@]}" download nginx-dev) \
            > "$dir/apt.log" 2>&1 \
            || { cat "$dir/apt.log" >&2; die "$suite: no nginx-dev"; }
        deb=$(ls "$dir"/nginx-dev_*.deb | head -n1)
        rm -rf "$dir/root"
    fi
    if [ ! -x "$dir/root/usr/share/nginx/src/configure" ]; then
        rm -rf "$dir/root"
        dpkg-deb -x "$deb" "$dir/root"
    fi
}

mkdir -p "$BUILD"
fail=0
for suite in $SUITES; do
    fetch "$suite"
    src="$CACHE/$suite/root/usr/share/nginx/src"
    version=$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' \
              "$src/src/core/nginx.h")
    out="$BUILD/api-$suite"
    if NGX_SRC="$src" NGX_OBJECTS=glue BUILD="$out" \
        "$TOP/tools/build-module.sh" \
        > "$out.log" 2>&1
    then
        echo "api-check: $suite (nginx $version): the module builds"
    else
        echo "api-check: $suite (nginx $version): the module does NOT build:"
        grep -E 'error|warning' "$out.log" | head -n 40
        echo "api-check: (the whole output: $out.log)"
        fail=1
    fi
done
exit $fail
