#!/bin/sh
# make run-tier: a tier of two nodes whose index is held by a Redis
# Cluster.  Six redis-server processes in cluster mode (3 masters, each
# with a replica) on free loopback ports, the index's layout written into
# them by `simhash cluster load`, an origin serving two pages of Debian's
# rust-doc that are one document under two URLs, and two nginx nodes with
# the module, each its own zone, both with cluster= naming the cluster.
# A page is fetched through node A, its copy under another URL through
# node B, which never saw the first: B finds it in the cluster.  The demo
# prints both responses' headers, node B's cluster counters and where each
# node's console is, then keeps everything running until Ctrl-C, which
# stops all it started and removes its files.
#
#   demo/run-tier.sh BUILD_DIR
#
# RUN_TIER_ONCE=1: run the demo, stop everything and exit (0 when node B
# found the copy, 1 otherwise; t/run-tier.t runs it so).
# DEMO_MODULE overrides the module (default BUILD_DIR/nginx/...so),
# DEMO_CLI the simhash tool (default BUILD_DIR/simhash), DEMO_KEEP=1 keeps
# the prefix (configuration, logs, the Redis nodes' directories).
# SH_PORTS=LO-HI: the range the 17 ports are chosen from
# (tools/free-ports.sh; default 20000 up to the ephemeral range).
#
# Everything lives in a fresh prefix under /tmp (tools/nginx-tmpdir.sh):
#   redis/N     the six Redis nodes' directories (nodes.conf, redis.log),
#               each node on a client port and a cluster bus port
#   origin/     an nginx without the module: the two pages, by Host
#               doc.rust.example, from t/fixtures/rust (README there)
#   a/, b/      the two nodes: forward proxies for the crawler, as
#               conf-examples/cluster.conf, with their statistics, console
#               and simhash_cluster_query on a port of their own
# Run as root, nginx's workers are nobody, and a clone in a 0700 directory
# is closed to them: what they read is copied into the prefix with modes
# every user can read (as demo/run.sh does).  Redis runs as whoever runs
# this.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
MODULE=${DEMO_MODULE:-$BUILD/nginx/ngx_http_simhash_module.so}
CLI=${DEMO_CLI:-$BUILD/simhash}
ONCE=${RUN_TIER_ONCE:-0}
NGINX=${NGINX:-nginx}
command -v "$NGINX" >/dev/null 2>&1 || NGINX=/usr/sbin/nginx

say() { echo "run-tier: $*" >&2; }
[ -f "$MODULE" ] || { say "$MODULE missing: run make module"; exit 1; }
[ -x "$CLI" ] || { say "$CLI missing: run make cli"; exit 1; }
for c in redis-server redis-cli; do
    command -v "$c" >/dev/null 2>&1 || {
        say "$c missing: run make deps as root, or install redis-server"
        exit 1
    }
done

# 6 Redis client ports, 6 cluster bus ports (chosen free too, not assumed
# at port + 10000), the origin, and each node's proxy and statistics
set -- $("$TOP/tools/free-ports.sh" 17)
RPORTS="$1 $2 $3 $4 $5 $6"
BPORTS="$7 $8 $9 ${10} ${11} ${12}"
ORIGIN=${13} A_PROXY=${14} A_STATS=${15} B_PROXY=${16} B_STATS=${17}
R1=$1

PREFIX=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/simhash-tier.XXXXXX")
PIDS=""

# Stops what this script started, by the ids it recorded: the nodes first
# (their workers hold connections to the masters), then Redis; then the
# prefix goes.  Run on every exit: the end, Ctrl-C, a failure.
cleanup() {
    rc=$?
    trap - EXIT INT TERM
    for p in $PIDS; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in $PIDS; do
        wait "$p" 2>/dev/null || true
    done
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        say "configuration and logs kept in $PREFIX"
    else
        rm -rf "$PREFIX"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "run-tier: stopped"; exit 0' INT TERM
# a terminal or a reader that went away must not end this script before
# its cleanup (a write would kill it with SIGPIPE)
trap '' PIPE

# Polls a condition (a command) every 0.1 s, up to 60 s: generous for a
# busy machine; what it waited for is said when it fails.
wait_for() {
    what=$1
    shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 600 ]; then
            say "gave up waiting for $what (60 s); logs in $PREFIX"
            DEMO_KEEP=1
            return 1
        fi
        sleep 0.1
    done
}

echo "run-tier: starting 6 redis-server, an origin and two nginx nodes" \
     "in $PREFIX"
echo

# ---- the Redis Cluster: six nodes, joined by redis-cli --cluster create

n=0
set -- $BPORTS
for port in $RPORTS; do
    n=$((n + 1))
    d="$PREFIX/redis/$n"
    mkdir -p "$d"
    cat > "$d/redis.conf" <<EOF
port $port
bind 127.0.0.1
dir $d
save ""
appendonly no
logfile $d/redis.log
daemonize no
cluster-enabled yes
cluster-port $1
cluster-config-file nodes.conf
cluster-node-timeout 2000
EOF
    shift
    redis-server "$d/redis.conf" </dev/null >/dev/null 2>&1 &
    PIDS="$PIDS $!"
done
for port in $RPORTS; do
    wait_for "redis-server on port $port" redis-cli -p "$port" ping
done
ADDRS=$(for p in $RPORTS; do printf '127.0.0.1:%s ' "$p"; done)
# shellcheck disable=SC2086
if ! redis-cli --cluster create $ADDRS --cluster-replicas 1 --cluster-yes \
        > "$PREFIX/redis/create.log" 2>&1; then
    cat "$PREFIX/redis/create.log" >&2
    say "redis-cli --cluster create failed"
    exit 1
fi
cluster_ok() {
    for p in $RPORTS; do
        redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' || return 1
    done
}
wait_for "the cluster to be ok on every node" cluster_ok

# The index's layout (the meta key every worker reads at start: the bits
# of a bucket of each family), by a load of no documents.  A tier's first
# load would carry its documents; here the nodes write every page.  2^16
# table buckets and 2^14 record buckets: the layout `simhash cluster load`
# chooses for about four million documents.
# The tier's secret (simhash_seed): it keys the fingerprints too, so a
# fixed one makes the same demo every time (the two pages 3 bits apart).
# A tier keeps its own 32 random characters out of every file others read.
SEED=make-run-tier-demo-secret
: > "$PREFIX/redis/none.txt"
"$CLI" cluster load --seed "$SEED" --redis "127.0.0.1:$R1" \
    --fp-bits 16 --rec-bits 14 "$PREFIX/redis/none.txt" \
    > "$PREFIX/redis/load.log" 2>&1 || {
    cat "$PREFIX/redis/load.log" >&2
    say "simhash cluster load failed"
    exit 1
}

# ---- the origin: two pages of rust-doc, one document under two URLs

mkdir -p "$PREFIX/origin/html/std/option" "$PREFIX/origin/html/core/option" \
         "$PREFIX/origin/conf" "$PREFIX/origin/logs" "$PREFIX/origin/tmp"
for lib in std core; do
    gzip -dc "$TOP/t/fixtures/rust/$lib-enum.Option.html.gz" \
        > "$PREFIX/origin/html/$lib/option/enum.Option.html"
done

USER_LINE=
if [ "$(id -u)" -eq 0 ]; then
    USER_LINE="user nobody $(id -gn nobody 2>/dev/null || echo nogroup);"
fi

temp_paths() {
    for t in client_body proxy fastcgi uwsgi scgi; do
        echo "    ${t}_temp_path $1/tmp/$t;"
    done
}

cat > "$PREFIX/origin/conf/nginx.conf" <<EOF
$USER_LINE
worker_processes 1;
pid $PREFIX/origin/logs/nginx.pid;
error_log $PREFIX/origin/logs/error.log;
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
$(temp_paths "$PREFIX/origin")
    server {
        listen 127.0.0.1:$ORIGIN;
        server_name doc.rust.example;
        access_log $PREFIX/origin/logs/access.log;
        root $PREFIX/origin/html;
    }
}
EOF

# ---- the two nodes: their own zone each, one cluster

node_conf() {
    name=$1 proxy=$2 stats=$3
    shift 3
    d="$PREFIX/$name"
    mkdir -p "$d/conf" "$d/logs" "$d/tmp"
    cat > "$d/conf/nginx.conf" <<EOF
load_module $MODULE;

$USER_LINE
# one worker: every request of the demo meets the client whose readiness
# it waited for (a node runs one a core)
worker_processes 1;
pid $d/logs/nginx.pid;
error_log $d/logs/error.log notice;
events { worker_connections 256; }

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
$(temp_paths "$d")

    # this node's own zone (its hot set), and the tier's index in the
    # cluster: any master serves as a seed, each worker reads the slot map
    # and keeps a connection a master.  cluster_timeout: the most a lookup
    # waits (default 50ms, for a LAN; more here, for a busy laptop)
    simhash_zone zone=$name:16m
                 cluster=redis://127.0.0.1:$1,redis://127.0.0.1:$2,redis://127.0.0.1:$3
                 cluster_timeout=500ms;

    log_format crawl '\$simhash_status \$status \$simhash '
                     '"\$simhash_request_scheme://\$simhash_host\$request_uri" '
                     '"\$simhash_duplicate_of"';

    server {
        listen 127.0.0.1:$proxy;
        access_log $d/logs/crawl.log crawl;

        location / {
            simhash $name;
            # the tier's secret: the same on every node and for simhash
            # cluster load (the cluster's entries carry a MAC under it)
            simhash_seed "$SEED";
            proxy_http_version 1.1;
            proxy_set_header Host \$simhash_host;
            # a real forward proxy: a resolver and
            # proxy_pass \$simhash_request_scheme://\$simhash_host\$request_uri;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
    }

    server {
        listen 127.0.0.1:$stats;
        access_log off;

        location = /simhash-stats { simhash_stats; }
        location = /simhash-cluster { simhash_cluster_query; }
    }
}
EOF
}
# the three masters as seeds
set -- $RPORTS
node_conf a "$A_PROXY" "$A_STATS" "$1" "$2" "$3"
node_conf b "$B_PROXY" "$B_STATS" "$1" "$2" "$3"
chmod -R u=rwX,go=rX "$PREFIX"

start_nginx() {
    d="$PREFIX/$1"
    set -- -p "$d/" -c "$d/conf/nginx.conf" -e "$d/logs/error.log"
    "$NGINX" -t -q "$@"
    "$NGINX" "$@" -g 'daemon off;' </dev/null &
    PIDS="$PIDS $!"
}
port_open() {
    perl -MIO::Socket::INET -e 'exit !IO::Socket::INET->new(
        PeerAddr => "127.0.0.1", PeerPort => $ARGV[0])' "$1"
}
start_nginx origin
start_nginx a
start_nginx b
for port in $ORIGIN $A_PROXY $A_STATS $B_PROXY $B_STATS; do
    wait_for "nginx on port $port" port_open "$port"
done

# ---- the demo

STD=http://doc.rust.example/std/option/enum.Option.html
CORE=http://doc.rust.example/core/option/enum.Option.html
cat <<EOF
== a tier of two nodes, one index: a Redis Cluster

   cluster  6 redis-server in cluster mode on 127.0.0.1: 3 masters and
            3 replicas, ports $RPORTS
            (joined by redis-cli --cluster create --cluster-replicas 1);
            the index's layout written by \`simhash cluster load\`
   origin   nginx at 127.0.0.1:$ORIGIN, two pages of Debian's rust-doc:
            $STD
            $CORE
            the same documentation under two URLs (std re-exports core)
   node A   nginx at 127.0.0.1:$A_PROXY, a forward proxy, its own zone "a"
   node B   nginx at 127.0.0.1:$B_PROXY, a forward proxy, its own zone "b"
            No node holds a replica of the other's zone: what they share
            is the cluster.
EOF

rc=0
perl "$TOP/demo/tier.pl" "$STD" "$CORE" "$A_PROXY" "$A_STATS" \
    "$B_PROXY" "$B_STATS" "$R1" || rc=$?

if [ "$ONCE" = 1 ]; then
    exit "$rc"
fi

cat <<EOF

== the tier keeps running (Ctrl-C stops it all and removes its files):
   console  node A: http://127.0.0.1:$A_STATS/simhash-stats?format=html
            node B: http://127.0.0.1:$B_STATS/simhash-stats?format=html
   stats    http://127.0.0.1:$A_STATS/simhash-stats and
            http://127.0.0.1:$B_STATS/simhash-stats (JSON; ?format=prometheus)
   lookup   a fingerprint in the cluster, as a node asks it:
            http://127.0.0.1:$B_STATS/simhash-cluster?zone=b&fp=HEX
   proxies  node A 127.0.0.1:$A_PROXY, node B 127.0.0.1:$B_PROXY; try
            curl -si -x 127.0.0.1:$B_PROXY $STD
   cluster  redis-cli -c -p $R1 (e.g. cluster nodes; keys sh:*)
   config   $PREFIX/a/conf/nginx.conf, $PREFIX/b/conf/nginx.conf
   logs     $PREFIX/a/logs, $PREFIX/b/logs, $PREFIX/redis/N/redis.log
EOF

# until Ctrl-C (the trap above), or every process has ended
wait
