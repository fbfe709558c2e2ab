#!/bin/sh
# make install: the module from source into Debian's nginx, the way the
# package lays it out (docs/module.md, "Installation on Debian"):
#
#   tools/install.sh BUILD_DIR
#
#   /usr/lib/nginx/modules/ngx_http_simhash_module.so
#   /etc/nginx/modules-enabled/50-mod-http-simhash.conf   (load_module)
#   /etc/nginx/simhash-resolver.conf    from /etc/resolv.conf, written only
#                                       when missing (edits are kept): the
#                                       examples include it, and nginx
#                                       never reads resolv.conf
#   /var/lib/nginx/simhash/             the snapshots' directory, the
#                                       workers' user's (www-data), 0750
#
# No site configuration: copy the example you want from conf-examples/ into
# /etc/nginx/conf.d/ and edit it.  DESTDIR=DIR installs under DIR instead
# (nothing is chowned, nginx -t is not run).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
SO="$BUILD/nginx/ngx_http_simhash_module.so"
D=${DESTDIR:-}

[ -f "$SO" ] || { echo "install: $SO missing: run make module" >&2; exit 1; }
if [ -z "$D" ] && [ "$(id -u)" -ne 0 ]; then
    echo "install: run as root (or with DESTDIR=DIR)" >&2
    exit 1
fi

install -d "$D/usr/lib/nginx/modules" "$D/etc/nginx/modules-enabled"
install -m 644 "$SO" "$D/usr/lib/nginx/modules/"
install -m 644 "$TOP/conf-examples/mod-http-simhash.conf" \
    "$D/etc/nginx/modules-enabled/50-mod-http-simhash.conf"

if [ -e "$D/etc/nginx/simhash-resolver.conf" ]; then
    echo "install: $D/etc/nginx/simhash-resolver.conf kept as it is"
else
    "$TOP/tools/resolver-conf.sh" > "$D/etc/nginx/simhash-resolver.conf"
    chmod 644 "$D/etc/nginx/simhash-resolver.conf"
    echo "install: wrote $D/etc/nginx/simhash-resolver.conf from" \
         "/etc/resolv.conf"
fi

install -d -m 750 "$D/var/lib/nginx/simhash"
if [ -z "$D" ]; then
    if id www-data >/dev/null 2>&1; then
        chown www-data:www-data /var/lib/nginx/simhash
    fi
    nginx -t
fi
echo "install: done; now copy an example from conf-examples/ to" \
     "/etc/nginx/conf.d/, edit it, and restart nginx"
