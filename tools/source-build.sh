#!/bin/bash
# The module built the way nginx's own documentation builds a dynamic
# module, against an nginx built from its source (make source-build):
#   tools/source-build.sh [BUILD]
#
# Operators who run nginx.org's packages or their own nginx do not have
# Debian's nginx-dev: they build the module from nginx's source tree of
# the same version with
#     ./configure --with-compat --add-dynamic-module=PATH && make modules
# and the project's top-level `config` is what that reads.  This does it:
#
#   1. fetches the source of nginx from the Debian archive (the source
#      package of the host's release, SH_SRC_SUITE, default the host's
#      codename: `apt-get source --download-only` with a private sources
#      list and lists, as root or not) and unpacks the upstream tarball it
#      carries (nginx-VERSION.orig.tar.gz, nginx.org's release as it is,
#      none of Debian's patches);
#   2. runs nginx's ./configure with --with-compat, a few common modules
#      (ssl, threads, stub_status; sub and gunzip, which t/ uses) and --add-dynamic-module=THIS TREE,
#      nothing else: the libraries' flags come from `config` itself
#      (pkg-config for libxml2, nginx's own library checks for the rest);
#   3. `make` (nginx and the module, in BUILD/source-build/nginx-VERSION/objs);
#   4. loads the module into that nginx (nginx -t) and runs some of t/
#      against it (SOURCE_TESTS, default below) with SH_NGINX naming the
#      nginx built here.
#
# The download is kept in SH_SRC_CACHE (default /var/tmp/sh-nginx-src)
# and the build in BUILD/source-build; configure runs again when `config`
# changes.  About two minutes on 2 cores the first time (nginx's own
# compile), seconds then.  SH_SRC_MIRROR: the Debian mirror (default the
# host's apt one).
set -eu
umask 022

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
CACHE=${SH_SRC_CACHE:-/var/tmp/sh-nginx-src}
SUITE=${SH_SRC_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
OUT="$BUILD/source-build"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
TESTS=${SOURCE_TESTS:-"t/basic.t t/changed.t t/encoding.t t/config.t
t/options.t t/identical.t t/replicate.t"}

say() { echo "source-build: $*"; }
die() { echo "source-build: $*" >&2; exit 1; }

[ -n "$SUITE" ] || die "no Debian codename in /etc/os-release: set SH_SRC_SUITE"
[ -f "$KEYRING" ] || die "$KEYRING missing (package debian-archive-keyring)"

MIRROR=${SH_SRC_MIRROR:-$(sh "$TOP/tools/debian-mirror.sh")}

# ---- 1. nginx's source, from the Debian archive ----
dir="$CACHE/$SUITE"
mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
# the release and its security updates: the nginx Debian ships today
cat > "$dir/sources.list" <<EOF
deb-src [signed-by=$KEYRING] $MIRROR $SUITE main
EOF
apt=(-q -o "Dir::Etc::SourceList=$dir/sources.list"
     -o "Dir::Etc::SourceParts=$dir/none"
     -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
     -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"
     -o Acquire::Check-Valid-Until=false)
if [ -z "$(ls "$dir"/nginx_*.orig.tar.gz 2>/dev/null)" ]; then
    say "apt-get source --download-only nginx ($SUITE, $MIRROR)"
    apt-get "${apt[@]}" update > "$dir/apt.log" 2>&1 \
        || { cat "$dir/apt.log" >&2; die "apt-get update failed"; }
    (cd "$dir" && apt-get "${apt[@]}" source --download-only nginx) \
        >> "$dir/apt.log" 2>&1 \
        || { cat "$dir/apt.log" >&2; die "apt-get source failed"; }
fi
tarball=$(ls "$dir"/nginx_*.orig.tar.gz | head -n1)
version=${tarball##*/nginx_}
version=${version%.orig.tar.gz}
NGX="$OUT/nginx-$version"
if [ ! -x "$NGX/configure" ]; then
    say "unpacking ${tarball##*/} (nginx.org's release $version)"
    rm -rf "$NGX"
    mkdir -p "$OUT"
    tar -xzf "$tarball" -C "$OUT"
    [ -x "$NGX/configure" ] || die "no nginx-$version/configure in $tarball"
fi

# ---- 2. configure: --with-compat --add-dynamic-module ----
# nginx's -Werror (it adds it when CFLAGS is unset) stays: the module must
# build warning-free with nginx's own flags too.
PKGS="libxml-2.0 libpcre2-8 libutf8proc libxxhash hiredis libcrypto libpsl zlib"
# shellcheck disable=SC2086
conf=(--prefix="$OUT/prefix" --with-compat --with-threads
      --with-http_ssl_module --with-http_stub_status_module
      --with-http_sub_module --with-http_gunzip_module
      --add-dynamic-module="$TOP"
      --with-cc-opt="$(pkg-config --cflags-only-I $PKGS)"
      --with-ld-opt="$(pkg-config --libs-only-L $PKGS)")
stamp="$NGX/.sh-configured"
want="${conf[*]} $(cksum < "$TOP/config")"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "./configure ${conf[*]}"
    (cd "$NGX" && ./configure "${conf[@]}") > "$OUT/configure.log" 2>&1 || {
        tail -n 20 "$OUT/configure.log" >&2
        die "configure failed, see $OUT/configure.log"
    }
    echo "$want" > "$stamp"
fi

# ---- 3. make: nginx and the module ----
# (the console's page may have changed without config)
"$TOP/tools/console-header.sh" "$TOP/module/console.html" \
    "$NGX/objs/ngx_http_simhash_console_html.h"
say "make (nginx $version and the module; log $OUT/make.log)"
make -C "$NGX" -j"$(nproc 2>/dev/null || echo 2)" > "$OUT/make.log" 2>&1 || {
    grep -E 'error|warning' "$OUT/make.log" | head -n 40 >&2
    die "make failed, see $OUT/make.log"
}
nginx="$NGX/objs/nginx"
so="$NGX/objs/ngx_http_simhash_module.so"
[ -x "$nginx" ] && [ -f "$so" ] || die "make made no $nginx or $so"
say "built $nginx and $so"

# ---- 4. load it, and some of t/ ----
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/logs" "$t/conf"
cat > "$t/conf/nginx.conf" <<EOF
load_module $so;
error_log $t/logs/error.log;
pid $t/logs/nginx.pid;
events {}
http { simhash_zone zone=z:1m; }
EOF
"$nginx" -p "$t" -c conf/nginx.conf -t 2>&1 | sed 's/^/    /'
[ "${PIPESTATUS[0]}" -eq 0 ] || die "nginx -t with the module failed"
say "the module loads into nginx $version built from source (nginx -t)"

say "make cli dust-replay (the tests' reference tool)"
make -s -C "$TOP" BUILD="$BUILD" "$BUILD/simhash" "$BUILD/dust-replay" \
    >/dev/null
say "prove $(echo $TESTS)"
cd "$TOP"
# shellcheck disable=SC2086
SH_NGINX="$nginx" SH_MODULE="$so" SH_CLI="$BUILD/simhash" \
SH_REPLAY="$BUILD/dust-replay" prove --timer -j4 $TESTS
say "nginx $version from source: the module builds, loads, and passes" \
    "$(echo $TESTS | wc -w) files of t/"
