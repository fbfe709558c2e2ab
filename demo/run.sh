#!/bin/sh
# make run: a crawl to watch.  nginx with the module starts in the
# foreground, wget -r crawls a small generated site through it, the demo
# prints what the proxy did as it happens and what it came to, asks "why?"
# about one URL, and nginx keeps serving (the console, the proxy) until
# Ctrl-C.
#
#   demo/run.sh BUILD_DIR
#
# DEMO_MODULE overrides the module (default BUILD_DIR/nginx/...so), e.g. the
# one Debian's package installed, DEMO_CLI the simhash tool (default
# BUILD_DIR/simhash), DEMO_ARTICLES the site's size (160).
# SH_PORTS=LO-HI: the range the three ports are chosen from
# (tools/free-ports.sh; default 20000 up to the ephemeral range).
#
# One nginx, three parts, in a fresh prefix under /tmp (see below):
#   origin  127.0.0.1:<free port>, the site demo/gensite.pl writes:
#           www.gazette.example and its mirror m.gazette.example, chosen by
#           Host; articles whose links carry session ids, tracking
#           parameters, print views and the mirror;
#   proxy   127.0.0.1:<free port>, a forward proxy for the crawler, as
#           conf-examples/drop.conf: drop mode, a DUST learner that
#           predicts (simhash_dust on), a snapshot file; every Host goes to
#           the origin above;
#   stats   127.0.0.1:<free port>, the statistics, the console and "why?"
#           (simhash_stats), on a port of their own: on the proxy's port
#           they would shadow every site's own /simhash-stats, and the
#           console's polling would fill the crawl log.
# The prefix (configuration, logs, the snapshot, what wget saved) is
# removed when the demo ends, Ctrl-C or failure; DEMO_KEEP=1 keeps it, and
# the script says where.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
MODULE=${DEMO_MODULE:-$BUILD/nginx/ngx_http_simhash_module.so}
CLI=${DEMO_CLI:-$BUILD/simhash}
ARTICLES=${DEMO_ARTICLES:-160}
NGINX=${NGINX:-nginx}
command -v "$NGINX" >/dev/null 2>&1 || NGINX=/usr/sbin/nginx

[ -f "$MODULE" ] || { echo "demo: $MODULE missing: run make module" >&2; exit 1; }
command -v wget >/dev/null 2>&1 || {
    echo "demo: wget missing: run make deps as root, or install wget" >&2
    exit 1
}

# three distinct ports, held together while chosen
set -- $("$TOP/tools/free-ports.sh" 3)
ORIGIN=$1 PROXY=$2 STATS=$3

# The prefix is not in the checkout, and the site is written into it: run
# as root, nginx's workers are nobody, and a clone under ~root or
# `mktemp -d` (0700) is closed to them (tools/nginx-tmpdir.sh says more).
# The master, still root, loads the module from wherever it is.  Modes are
# set explicitly: the site must be readable whatever the umask.
PREFIX=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/simhash-demo.XXXXXX")

cleanup() {
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        echo "demo: configuration, logs, snapshot and crawl kept in $PREFIX"
    else
        rm -rf "$PREFIX"
    fi
}
trap cleanup EXIT
SITE="$PREFIX/html"
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp" "$PREFIX/data" \
         "$PREFIX/crawl"
perl "$TOP/demo/gensite.pl" "$SITE" "$ARTICLES"
chmod -R u=rwX,go=rX "$PREFIX"
# The snapshot's directory is the workers' own (nginx -t refuses one that
# every user may write): as root, nginx's workers are nobody.
USER_LINE=
if [ "$(id -u)" -eq 0 ]; then
    WGROUP=$(id -gn nobody 2>/dev/null || echo nogroup)
    USER_LINE="user nobody $WGROUP;"
    chown "nobody:$WGROUP" "$PREFIX/data"
fi
chmod 0700 "$PREFIX/data"
SNAP="$PREFIX/data/demo.snap"

cat > "$PREFIX/conf/nginx.conf" <<EOF
load_module $MODULE;

$USER_LINE
worker_processes 2;
pid $PREFIX/logs/nginx.pid;
# notice: a DUST rule turning on or off is logged at this level
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

    # --- the origin: the demo site and its mirror -----------------------

    log_format origin '\$host \$request_uri \$status';

    server {
        listen 127.0.0.1:$ORIGIN;
        server_name www.gazette.example m.gazette.example;
        access_log $PREFIX/logs/origin.log origin;
        root $SITE/www;
    }

    # --- the proxy the crawler talks to ---------------------------------

    # conf-examples/drop.conf's zone: the default match rule, a DUST
    # learner (dust=), a snapshot (file=: the documents, the rules learnt
    # and the console's figures survive a restart; saved every 5 s here,
    # and when nginx stops)
    simhash_zone zone=demo:16m dust=4m file=$SNAP save=5s;

    log_format crawl '\$simhash_action \$simhash_status \$status '
                     '"\$simhash_request_scheme://\$simhash_host\$request_uri" '
                     '"\$simhash_duplicate_of"';

    server {
        listen 127.0.0.1:$PROXY;
        access_log $PREFIX/logs/crawl.log crawl;

        proxy_http_version 1.1;
        proxy_set_header Host \$http_host;

        location / {
            # the default key, \$simhash_request_scheme://\$simhash_host\$request_uri
            simhash demo;
            # a duplicate of a page with the same path (a session id, a
            # tracking parameter, a mirror) is answered 204, empty; one
            # under another path (a print view) is tagged and passes
            simhash_action drop;
            # learn which URL differences do not change the page, and
            # answer what a rule predicts without fetching it
            simhash_dust on;
            # a real forward proxy would use a resolver and
            # proxy_pass \$scheme://\$http_host\$request_uri; the demo
            # site lives on the origin above
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
    }

    # --- the statistics, the console and "why?" --------------------------

    server {
        listen 127.0.0.1:$STATS;
        access_log off;

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

for port in "$PROXY" "$STATS" "$ORIGIN"; do
    i=0
    until perl -MIO::Socket::INET -e 'exit !IO::Socket::INET->new(
            PeerAddr => "127.0.0.1", PeerPort => '"$port"')' 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$NGINX_PID" 2>/dev/null; then
            echo "demo: nginx did not start, see $PREFIX/logs/error.log" >&2
            cat "$PREFIX/logs/error.log" >&2 || true
            kill "$NGINX_PID" 2>/dev/null || true
            exit 1
        fi
        sleep 0.1
    done
done

START=http://www.gazette.example/
cat <<EOF
== the site: $START and its mirror, http://m.gazette.example/
   origin   nginx at 127.0.0.1:$ORIGIN (the host chosen by Host), serving
            $SITE/www
   $ARTICLES articles; each links the next one with a new session id
   (?PHPSESSID=...) and its print view (/print/...); every third a
   tracking variant (?utm_source=...), every fourth the mirror's copy

== the crawl: wget -r through the proxy at 127.0.0.1:$PROXY
   drop mode, DUST learning and predicting (as conf-examples/drop.conf);
   the first two requests of each kind, and each DUST rule as it turns on:

EOF

# wget follows both hosts (-H -D), three links deep: the articles' own
# links are the last level
http_proxy=http://127.0.0.1:$PROXY wget -r -l 3 -H -D gazette.example \
    -e robots=off -t 1 -T 10 -nv -P "$PREFIX/crawl" "$START" \
    > "$PREFIX/logs/wget.log" 2>&1 &
WGET_PID=$!
perl "$TOP/demo/watch.pl" "$WGET_PID" "$PREFIX/logs/crawl.log" \
    "$PREFIX/logs/error.log" "$PREFIX/logs/origin.log"
rc=0
wait "$WGET_PID" || rc=$?
[ "$rc" -eq 0 ] || echo "  (wget exited $rc: see $PREFIX/logs/wget.log)"

SAVED=$(find "$PREFIX/crawl" -type f -size +0 | wc -l)
SAVED_KB=$(du -sk "$PREFIX/crawl" | cut -f1)
echo "         wget saved $SAVED pages ($SAVED_KB KB) in $PREFIX/crawl"

# "why?" about a URL the crawl did not fetch: the last session id a rule
# predicted, else the last URL predicted, else the last one dropped
WHY=$(perl -ne 'print "$1\n" if /^predicted \S+ \d+ "([^"]+PHPSESSID[^"]+)"/' \
          "$PREFIX/logs/crawl.log" | tail -n 1)
[ -n "$WHY" ] || WHY=$(perl -ne 'print "$1\n" if /^predicted \S+ \d+ "([^"]+)"/' \
          "$PREFIX/logs/crawl.log" | tail -n 1)
[ -n "$WHY" ] || WHY=$(perl -ne 'print "$1\n" if /^dropped \S+ \d+ "([^"]+)"/' \
          "$PREFIX/logs/crawl.log" | tail -n 1)
STATS_URL=http://127.0.0.1:$STATS/simhash-stats
if [ -n "$WHY" ] && [ -x "$CLI" ]; then
    cat <<EOF

== "why?": why was a URL not fetched?  Ask the node:
   \$ simhash explain '$WHY' \\
         $STATS_URL
EOF
    "$CLI" explain "$WHY" "$STATS_URL" | sed 's/^/   /' || true
fi

# the snapshot: written every save= interval once something changed
i=0
while [ ! -s "$SNAP" ] && [ $i -lt 150 ]; do
    sleep 0.1
    i=$((i + 1))
done
if [ -s "$SNAP" ]; then
    SNAP_TEXT="$SNAP ($(du -k "$SNAP" | cut -f1) KB)"
else
    SNAP_TEXT="$SNAP (not written yet)"
fi

cat <<EOF

== nginx keeps serving (Ctrl-C to stop):
   console  http://127.0.0.1:$STATS/simhash-stats?format=html
            open it in a browser: the rates, the sites, the DUST rules and
            their evidence; its "why?" box answers for any URL, e.g. the
            one above
   why?     $CLI explain URL $STATS_URL
   stats    $STATS_URL (JSON), and ?format=prometheus
   proxy    127.0.0.1:$PROXY, a forward proxy; try
            curl -si -x 127.0.0.1:$PROXY 'http://www.gazette.example/articles/a007.html?PHPSESSID=0123'
   origin   127.0.0.1:$ORIGIN (Host: www.gazette.example or m.gazette.example)
   snapshot $SNAP_TEXT: the documents, the rules learnt and
            the console's figures, saved every 5 s and when nginx stops;
            $CLI explain URL --snapshot $SNAP
   config   $PREFIX/conf/nginx.conf
   logs     $PREFIX/logs/crawl.log, $PREFIX/logs/error.log
EOF

wait "$NGINX_PID"
