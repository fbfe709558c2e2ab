#!/bin/sh
# make run: nginx in the foreground with the module, a demo site behind it,
# a short crawl through it, then it keeps serving until Ctrl-C.
#
#   demo/run.sh BUILD_DIR
#
# DEMO_MODULE overrides the module (default BUILD_DIR/nginx/...so), e.g. the
# one Debian's package installed.
#
# One nginx, two parts, in a fresh prefix under /tmp (see below):
#   origin  127.0.0.1:<free port>, four made-up sites from demo/site/ chosen
#           by Host: gazette.example, kitchen.example, shop.example,
#           docs.example, aggregator.example (originals, near-duplicates
#           under other URLs, unrelated pages);
#   proxy   127.0.0.1:<free port>, a forward proxy for the crawler, as in
#           conf-examples/forward-proxy.conf, with the module in tag mode;
#           every Host goes to the origin above.
# demo/crawl.pl then fetches demo/urls.txt through the proxy.  The prefix
# (configuration, logs) is removed when the demo ends, Ctrl-C or failure;
# DEMO_KEEP=1 keeps it, and the script says where.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
MODULE=${DEMO_MODULE:-$BUILD/nginx/ngx_http_simhash_module.so}
NGINX=${NGINX:-nginx}
command -v "$NGINX" >/dev/null 2>&1 || NGINX=/usr/sbin/nginx

[ -f "$MODULE" ] || { echo "demo: $MODULE missing: run make module" >&2; exit 1; }

# two distinct ports, held together while chosen
set -- $("$TOP/tools/free-ports.sh" 2)
ORIGIN=$1 PROXY=$2

# The prefix is not in the checkout, and the sites are served from a copy
# in it: run as root, nginx's workers are nobody, and a clone under ~root
# or `mktemp -d` (0700) is closed to them (tools/nginx-tmpdir.sh says
# more).  The master, still root, loads the module from wherever it is.
# Modes are set explicitly: the copy must be readable whatever the umask.
PREFIX=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/simhash-demo.XXXXXX")

cleanup() {
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        echo "demo: configuration and logs kept in $PREFIX"
    else
        rm -rf "$PREFIX"
    fi
}
trap cleanup EXIT
SITE="$PREFIX/html"
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp"
cp -R "$TOP/demo/site" "$SITE"
chmod -R u=rwX,go=rX "$PREFIX"

cat > "$PREFIX/conf/nginx.conf" <<EOF
load_module $MODULE;

worker_processes 2;
pid $PREFIX/logs/nginx.pid;
error_log $PREFIX/logs/error.log notice;

events {
    worker_connections 256;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;

    client_body_temp_path $PREFIX/tmp/body;
    proxy_temp_path       $PREFIX/tmp/proxy;
    fastcgi_temp_path     $PREFIX/tmp/fastcgi;
    uwsgi_temp_path       $PREFIX/tmp/uwsgi;
    scgi_temp_path        $PREFIX/tmp/scgi;

    # --- the origin: the demo sites -------------------------------------

    map \$http_x_demo_edition \$demo_edition {
        default  morning;
        evening  evening;
    }

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name gazette.example;
        access_log off;
        root $SITE/gazette;

        location = / {
            try_files /front/\$demo_edition.html =404;
        }
    }

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name kitchen.example;
        access_log off;
        root $SITE/kitchen;
    }

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name shop.example;
        access_log off;
        root $SITE/shop;
    }

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name docs.example;
        access_log off;
        root $SITE/docs;
    }

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name aggregator.example;
        access_log off;
        root $SITE/aggregator;
    }

    # --- the proxy the crawler talks to ---------------------------------

    # the default match rule (weighted, distance at most 10, threshold 12)
    # and content weighting (simhash_content auto): the printer-friendly
    # version and the syndicated copies, whose templates differ, are
    # duplicates of their originals (see docs/module.md, "Choosing the
    # distance")
    simhash_zone zone=demo:16m;

    log_format crawl '\$time_local \$simhash_status \$simhash '
                     '\$simhash_distance "\$scheme://\$simhash_host\$request_uri" '
                     '"\$simhash_duplicate_of"';

    server {
        listen 127.0.0.1:$PROXY;
        access_log $PREFIX/logs/crawl.log crawl;

        proxy_http_version 1.1;
        proxy_set_header Host \$http_host;

        # the default key, \$scheme://\$simhash_host\$request_uri: the URL
        # of the absolute-URI request, with its port unless it is 80
        simhash demo;

        # a real forward proxy would use a resolver and
        # proxy_pass \$scheme://\$http_host\$request_uri; the demo sites
        # all live on the origin above
        location / {
            proxy_pass http://127.0.0.1:$ORIGIN;
        }

        location = /simhash-stats {
            simhash_stats;
        }
    }
}
EOF

# -e: the log nginx opens before reading the configuration (default
# /var/log/nginx/error.log, which only root may open)
set -- -p "$PREFIX/" -c "$PREFIX/conf/nginx.conf" -e "$PREFIX/logs/error.log"
"$NGINX" -t -q "$@"

"$NGINX" "$@" -g 'daemon off;' &
NGINX_PID=$!

stop() {
    trap - INT TERM
    kill -QUIT "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    echo
    echo "demo: nginx stopped"
    exit 0
}
trap stop INT TERM

i=0
until perl -MIO::Socket::INET -e 'exit !IO::Socket::INET->new(
        PeerAddr => "127.0.0.1", PeerPort => '"$PROXY"')' 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 "$NGINX_PID" 2>/dev/null; then
        echo "demo: nginx did not start, see $PREFIX/logs/error.log" >&2
        cat "$PREFIX/logs/error.log" >&2 || true
        kill "$NGINX_PID" 2>/dev/null || true
        exit 1
    fi
    sleep 0.1
done

echo "== demo crawl through the proxy (the zone's default match rule)"
echo
perl "$TOP/demo/crawl.pl" "$PROXY" "$TOP/demo/urls.txt"

cat <<EOF

== nginx keeps serving (Ctrl-C to stop):
   proxy   http://127.0.0.1:$PROXY/   (a forward proxy: try
           curl -si -x 127.0.0.1:$PROXY http://shop.example/products/k200-black.html)
   stats   http://127.0.0.1:$PROXY/simhash-stats
           http://127.0.0.1:$PROXY/simhash-stats?format=prometheus
   config  $PREFIX/conf/nginx.conf
   logs    $PREFIX/logs/crawl.log, $PREFIX/logs/error.log
EOF

wait "$NGINX_PID"
