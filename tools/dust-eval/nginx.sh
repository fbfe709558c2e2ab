#!/bin/sh
# tools/dust-eval/nginx.sh start|stop PREFIX [MODULE GEN ZONE_OPTS]  (env ACTION)
# One nginx, one worker, in PREFIX: the origin of the generated site
# (GEN/origin.conf, its trees copied into PREFIX/html) and the proxy
# (proxy.conf) with a cold zone.  start prints "ORIGIN PROXY STATS" ports.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
NGINX=${NGINX:-nginx}
command -v "$NGINX" >/dev/null 2>&1 || NGINX=/usr/sbin/nginx
cmd=$1 PREFIX=$2

if [ "$cmd" = stop ]; then
    [ -f "$PREFIX/logs/nginx.pid" ] && kill -QUIT "$(cat "$PREFIX/logs/nginx.pid")" 2>/dev/null || true
    i=0; while [ -f "$PREFIX/logs/nginx.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    exit 0
fi

MODULE=$3 GEN=$4 ZONE_OPTS=${5:-} ACTION=${ACTION:-drop}
# shellcheck disable=SC2046
set -- $("$(dirname "$0")/../free-ports.sh" 3)
ORIGIN=$1 PROXY=$2 STATS=$3
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp" "$PREFIX/html"
[ -d "$PREFIX/html/site" ] || cp -R "$GEN/site" "$GEN/nodust" "$PREFIX/html/"
chmod -R u=rwX,go=rX "$PREFIX"
chmod 0777 "$PREFIX/tmp"
sub() {
    sed -e "s|%%PORT%%|$ORIGIN|g; s|%%PROXY%%|$PROXY|g; s|%%STATS%%|$STATS|g" \
        -e "s|%%ROOT%%|$PREFIX/html|g; s|%%LOGS%%|$PREFIX/logs|g" \
        -e "s|%%ZONE_OPTS%%|$ZONE_OPTS|g; s|%%ACTION%%|$ACTION|g" "$1"
}
{
    echo "load_module $MODULE;"
    echo "worker_processes 1;"
    echo "pid $PREFIX/logs/nginx.pid;"
    echo "error_log $PREFIX/logs/proxy.log info;"
    echo "events { worker_connections 256; }"
    echo "http {"
    echo "    client_body_temp_path $PREFIX/tmp/body;"
    echo "    proxy_temp_path $PREFIX/tmp/proxy;"
    echo "    fastcgi_temp_path $PREFIX/tmp/fastcgi;"
    echo "    uwsgi_temp_path $PREFIX/tmp/uwsgi;"
    echo "    scgi_temp_path $PREFIX/tmp/scgi;"
    sub "$GEN/origin.conf"
    sub "$HERE/proxy.conf"
    echo "}"
} > "$PREFIX/conf/nginx.conf"
"$NGINX" -p "$PREFIX" -c "$PREFIX/conf/nginx.conf" -t -q
nice -n 19 "$NGINX" -p "$PREFIX" -c "$PREFIX/conf/nginx.conf"
i=0; while [ ! -f "$PREFIX/logs/nginx.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
echo "$ORIGIN $PROXY $STATS"
