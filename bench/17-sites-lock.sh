#!/bin/sh
# What the per-site accounting's own hold of the zone's lock costs under
# load (issue 36).  ngx_http_simhash_sites_event takes the lock for the
# heavy-hitters table and the last decision: before the accounting was
# folded into the decision's hold, for every response, after the
# decision's own hold; since, only for a response given up without a
# decision.  bench/wrk.sh (2 workers on this 2-core machine, wrk -t2
# -c32) runs the module as built, then a copy of the same tree whose
# sites_event returns before its hold (built into a directory of its own),
# for the re-fetch of identical pages (the cheapest response: where a
# second hold weighs most) and for new pages, ROUNDS times, the order of
# the two alternating.  Printed: requests/s and CPU per request of each,
# the ratios without/with, and each run's CPU against the plain proxy's
# in the same run.
#   bench/17-sites-lock.sh BUILD
# Environment: ROUNDS (default 3), DURATION (default 10), as bench/wrk.sh.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
ROUNDS=${ROUNDS:-3}
export DURATION=${DURATION:-10} CORPORA=docs MAXDOCS=${MAXDOCS:-200}

command -v wrk >/dev/null 2>&1 || { echo "wrk: not installed"; exit 0; }

# the tree without the second hold
copy=$(mktemp -d "${TMPDIR:-/tmp}/sites-lock.XXXXXX")
trap 'rm -rf "$copy"' EXIT
(cd "$TOP" && tar cf - config ngx_simhash_module.c module src tools) \
    | (cd "$copy" && tar xf -)
f="$copy/module/ngx_http_simhash_sites.c"
# sites_event's hold, the first after its name
awk '/^ngx_http_simhash_sites_event\(/ { in_ev = 1 }
     in_ev && /ngx_http_simhash_zone_lock\(zone, log\);/ {
         print "    return;    /* bench: no second hold */"; in_ev = 0 }
     { print }' "$f" > "$f.new" && mv "$f.new" "$f"
grep -q 'bench: no second hold' "$f" || { echo "patch failed" >&2; exit 1; }
echo "building the module without the second hold in $copy/build"
BUILD="$copy/build" "$copy/tools/build-module.sh" > "$copy/build.log" 2>&1 \
    || { cat "$copy/build.log" >&2; exit 1; }

echo "command: ROUNDS=$ROUNDS DURATION=$DURATION MAXDOCS=$MAXDOCS" \
     "bench/17-sites-lock.sh $1 (each run: SCENARIOS=S CORPORA=docs" \
     "sh bench/wrk.sh BUILD)"
# the order alternates from round to round: the first of two runs in a row
# fared about 9% worse, two builds of the same code compared (a first
# measurement, which ran "with" first every time, took that for the cost)
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        order="with:$BUILD without:$copy/build"
    else
        order="without:$copy/build with:$BUILD"
    fi
    for s in identical new; do
        for b in $order; do
            line=$(SCENARIOS=$s sh "$TOP/bench/wrk.sh" "${b#*:}" 2>&1 \
                   | grep -E '^docs +(identical|new) ' || true)
            echo "round $r ${b%%:*} $line"
        done
    done
done | tee "$copy/runs.txt"

# the simhash columns: req/s and CPU per request, and the CPU ratio of the
# plain proxy to the module in the same run (the least noisy figure on a
# shared machine: both runs see the same load)
perl -e '
    my %s;
    while (<>) {
        my ($with, $sc, @f) = /^round \d+ (\w+) docs +(\w+) [\w-]+ +(.*)$/
            or next;
        @f = split " ", $f[0];
        push @{ $s{$sc}{$with}{rps} }, $f[1];
        push @{ $s{$sc}{$with}{cpu} }, $f[4];
        push @{ $s{$sc}{$with}{rel} }, $f[5];    # plain/module CPU, same run
    }
    sub mean { my $n = 0; $n += $_ for @_; @_ ? $n / @_ : 0 }
    for my $sc (sort keys %s) {
        my ($w, $o) = ($s{$sc}{with}, $s{$sc}{without});
        printf "%-9s with the second hold: %6.0f req/s, %4.0f us CPU; " .
               "without: %6.0f req/s, %4.0f us CPU; without/with: " .
               "req/s %.3f, CPU %.3f\n", $sc,
               mean(@{$w->{rps}}), mean(@{$w->{cpu}}),
               mean(@{$o->{rps}}), mean(@{$o->{cpu}}),
               mean(@{$o->{rps}}) / (mean(@{$w->{rps}}) || 1),
               mean(@{$o->{cpu}}) / (mean(@{$w->{cpu}}) || 1);
        printf "%-9s the plain proxy'"'"'s CPU per request over the module'"'"'s, " .
               "each run against its own plain run: with %.3f, without " .
               "%.3f\n", $sc, mean(@{$w->{rel}}), mean(@{$o->{rel}});
    }' "$copy/runs.txt"
