#!/bin/sh
# tools/dust-eval/run.sh BUILD NAME CRAWLER SITE [ZONE_OPTS]
# One crawl from a cold zone: starts nginx (origin + proxy, nginx.sh),
# crawls SITE (site or nodust) with CRAWLER (own: crawl.pl; wget: wget -r
# through the proxy), saves the proxy's log, the origin's log, the final
# stats and the crawler's record in BUILD/dust-eval/runs/NAME, stops nginx.
# ACTION: simhash_action's arguments (default "drop"); CHECK_TRUTH=1 also
# checks the ground truth against the origin (check-truth.pl) first.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILD=$1 NAME=$2 CRAWLER=$3 SITE=$4 ZONE_OPTS=${5:-}
MODULE="$BUILD/nginx/ngx_http_simhash_module.so"
# DUST_SITE=2: the second site (gensite2.pl), in BUILD/dust-eval-2
OUT="$BUILD/dust-eval"; [ "${DUST_SITE:-1}" = 1 ] || OUT="$BUILD/dust-eval-$DUST_SITE"
GEN="$OUT/gen"
RUN="$OUT/runs/$NAME"
rm -rf "$RUN"; mkdir -p "$RUN"
PREFIX=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/simhash-dust-eval.XXXXXX")
trap '"$HERE/nginx.sh" stop "$PREFIX"; rm -rf "$PREFIX"' EXIT
ACTION=${ACTION:-drop}
export ACTION
set -- $("$HERE/nginx.sh" start "$PREFIX" "$MODULE" "$GEN" "$ZONE_OPTS")
ORIGIN=$1 PROXY=$2 STATS=$3
if [ "${CHECK_TRUTH:-0}" = 1 ]; then
    nice -n 19 perl "$HERE/check-truth.pl" "$ORIGIN" "$GEN" | tee "$OUT/truth-check.txt"
fi
SITE_SEED=http://site.test/ SITE_HOSTS='site\.test|www\.site\.test' SITE_DOMAINS=site.test
NODUST_SEED=http://nodust.test/ NODUST_HOSTS='nodust\.test' NODUST_DOMAINS=nodust.test
[ -f "$GEN/hosts.sh" ] && . "$GEN/hosts.sh"
case $SITE in
    site)   SEED=$SITE_SEED HOSTS=$SITE_HOSTS DOMAINS=$SITE_DOMAINS ;;
    nodust) SEED=$NODUST_SEED HOSTS=$NODUST_HOSTS DOMAINS=$NODUST_DOMAINS ;;
esac
echo "$NAME: $CRAWLER crawls $SEED through 127.0.0.1:$PROXY (zone: dust=8m $ZONE_OPTS; simhash_action $ACTION)"
start=$(date +%s)
case $CRAWLER in
    own) nice -n 19 perl "$HERE/crawl.pl" "$PROXY" "$SEED" "$HOSTS" "$RUN/crawl.tsv" ;;
    wget)
        # -H -D: www.site.test is the site's alias; --delete-after: the
        # pages are parsed for links, not kept; -nd: no directories (a
        # URL and URL/ would clash as file and directory)
        mkdir -p "$PREFIX/wget"
        nice -n 19 wget -r -l inf -H -D "$DOMAINS" -nd -P "$PREFIX/wget" \
            --delete-after -e robots=off -e use_proxy=on \
            -e "http_proxy=http://127.0.0.1:$PROXY" -o "$RUN/wget.log" \
            "$SEED" || true
        tail -n 3 "$RUN/wget.log" ;;
esac
echo "$NAME: $(( $(date +%s) - start )) s"
perl -MHTTP::Tiny -e 'print HTTP::Tiny->new->get($ARGV[0])->{content}' \
    "http://127.0.0.1:$STATS/stats" > "$RUN/stats.json"
cp "$PREFIX/logs/proxy.log" "$PREFIX/logs/origin.log" "$RUN/"
echo "$CRAWLER $SITE $ACTION${ZONE_OPTS:+, $ZONE_OPTS}" > "$RUN/what"
