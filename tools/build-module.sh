#!/bin/bash
# Build the dynamic module against Debian's nginx (package nginx-dev).
#
# Debian's tree in /usr/share/nginx/src has `configure` and headers but no
# top-level Makefile; configure must run from that directory and write into
# a build directory of ours.  We pass Debian's own configure flags
# (conf_flags: --with-compat, --with-debug, --with-threads, ...) so that the
# module sees the same NGX_* macros as the installed binary.  configure runs
# again only when `config` or the nginx version changes.
#
# NGX_SRC names another nginx tree of the same layout (default Debian's
# /usr/share/nginx/src): tools/nginx-api-check.sh builds the module against
# the nginx-dev of other Debian releases that way.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
OUT="$BUILD/nginx"
SRC=${NGX_SRC:-/usr/share/nginx/src}

[ -x "$SRC/configure" ] || {
    echo "build-module: $SRC/configure missing: install nginx-dev" >&2
    exit 1
}

# Debian's hardening flags; without a CFLAGS nginx adds -Werror for us,
# with one we add it ourselves: the module must build warning-free.
CFLAGS="$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo -O2 -g) -fPIC -Werror"
CFLAGS="$CFLAGS -Wall -Wno-unused-parameter"
LDFLAGS="$(dpkg-buildflags --get LDFLAGS 2>/dev/null || true)"
if [ "${SANITIZE:-0}" = 1 ]; then
    CFLAGS="$CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer"
    LDFLAGS="$LDFLAGS -fsanitize=address,undefined"
fi

# nginx's auto/make names a module's objects with sed rules meant for
# file extensions, unanchored: once the build directory is prefixed, its
# rule for assembler sources turns any ".S" in that directory's path into
# ".o" (a clone in /tmp/ci.S1xz/ would not build).  Such a build
# directory is reached through a symbolic link whose path has none.
OBJ="$OUT"
case "$OUT" in
    *.S*)
        mkdir -p "$OUT"
        OBJ="/tmp/simhash-nginx-build-$(id -u)-$(printf %s "$OUT" | cksum \
                                                | cut -d' ' -f1)"
        ln -sfn "$OUT" "$OBJ"
        trap 'rm -f "$OBJ"' EXIT        # made again at each build
        ;;
esac

stamp="$OUT/.configured"
version=$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' \
          "$SRC/src/core/nginx.h" 2>/dev/null)
want="nginx $version $SRC $(cksum < "$TOP/config") $CFLAGS $OBJ"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    mkdir -p "$OUT"
    # shellcheck disable=SC1091
    . "$SRC/conf_flags"
    (cd "$SRC" && ./configure --builddir="$OBJ" "${NGX_CONF_FLAGS[@]}" \
        --with-cc-opt="$CFLAGS" --with-ld-opt="$LDFLAGS" \
        --add-dynamic-module="$TOP" > "$OUT/configure.log" 2>&1) || {
        echo "build-module: nginx configure failed, see $OUT/configure.log" >&2
        exit 1
    }
    echo "$want" > "$stamp"
fi

# the console's page may have changed without `config`
"$TOP/tools/console-header.sh" "$TOP/module/console.html" \
    "$OUT/ngx_http_simhash_console_html.h"

# NGX_OBJECTS=glue: only the objects of module/ and the top file (the
# nginx API check: the library's parts in src/ use no nginx header)
targets=modules
if [ "${NGX_OBJECTS:-all}" = glue ]; then
    targets=$(sed -n 's#^\('"$OBJ"'/addon/\(module\|main\)/[^:]*\.o\):.*#\1#p' \
              "$OBJ/Makefile")
fi

# shellcheck disable=SC2086
make -s -f "$OBJ/Makefile" -C "$SRC" $targets > "$OUT/make.log" 2>&1 || {
    cat "$OUT/make.log" >&2
    exit 1
}
[ "$targets" = modules ] && echo "build-module: $OUT/ngx_http_simhash_module.so"
exit 0
