#!/bin/sh
# The module's cost in the proxy, measured with wrk on loopback.
#
#   bench/wrk.sh BUILD
#
# One nginx (worker_processes = number of cores) with an origin, a plain
# proxy in front of it and the same proxy with the module (two of them: one
# zone for new pages, one for re-fetches).  Two corpora, each page served
# as it is:
#   docs      documentation pages of about 25 KB (SIZE +-5%) from the
#             python3.11-doc, postgresql-doc-15 and rust-doc packages (the
#             demo site's articles concatenated when those are missing)
#   real-web  the 258 pages of npm's htmlparser-benchmark, saved from
#             popular sites, 1 KB to 400 KB (bench/webpages.sh; skipped
#             when npm or its registry is out of reach)
# and three scenarios for each, every one run through the plain proxy and
# through the module back to back, with the same requests:
#   new        every request a random page under a unique query string: a
#              new document key each time, fingerprinted and looked up
#   identical  re-fetches: the pages under their own URLs, each stored once
#              before the run (the zone warmed), fetched again with the
#              same bytes: answered from the body's digest, no parse
#   mix        re-fetches of the same keys, 70% with the bytes last stored
#              and 30% with the other of two versions of the page (a line
#              of text added before </body>: a timestamp and a view count),
#              which the module parses and whose digest then replaces the
#              stored one
#   learn      the new-page requests through a zone of their own with a
#              DUST learner (`dust=8m`, `simhash_dust learn`: it learns,
#              it does not predict): what learning costs a page
#   predicted  the pages under a fresh session id each time (?sid=...),
#              through a zone whose rule drop_param(sid) is pinned and
#              which holds the pages once (a warm-up under ?sid=warm; the
#              pages stored under their own key are requested): each
#              answered as a predicted duplicate, without the origin
# The origin serves version b of a page when the request says
# `X-Bench-Version: b`; wrk's threads own disjoint sets of keys and
# remember which version each key was last fetched in.
#
# For each run: requests/s, p50/p99 latency, errors (non-2xx responses and
# socket errors, which must be 0), and the CPU time nginx's workers (origin
# and proxy) and wrk used per request, which does not depend on what else
# the machine is doing; then the ratios, module to plain proxy, of both.
#
# Environment: DURATION (seconds per run, default 10), CONNECTIONS
# (default 32), THREADS (wrk threads, default 2), SIZE (docs page bytes,
# default 25000), MAXDOCS (docs pages, default 400), CORPORA (default
# "docs web"), SCENARIOS (default "new identical mix learn predicted"),
# NEW_ZONE and
# REFETCH_ZONE (what follows zone=NAME: in each zone's simhash_zone,
# default "64m"; bench/45-store-wrk.sh gives one of them a snapshot of
# 2^27 documents to start from).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
MODULE="$BUILD/nginx/ngx_http_simhash_module.so"
OUT="$BUILD/bench/wrk"
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
SIZE=${SIZE:-25000}
MAXDOCS=${MAXDOCS:-400}
CORPORA=${CORPORA:-docs web}
SCENARIOS=${SCENARIOS:-new identical mix learn predicted}
NEW_ZONE=${NEW_ZONE:-64m}
REFETCH_ZONE=${REFETCH_ZONE:-64m}
NGINX=${NGINX:-nginx}
command -v "$NGINX" >/dev/null 2>&1 || NGINX=/usr/sbin/nginx

command -v wrk >/dev/null 2>&1 || { echo "wrk: not installed (apt-get install wrk)"; exit 0; }
[ -f "$MODULE" ] || { echo "wrk: $MODULE missing: run make module" >&2; exit 1; }

# nginx's prefix, with the pages it serves, is not in the build directory:
# run as root, nginx's workers are nobody, and a checkout under ~root or
# `mktemp -d` (0700) is closed to them (tools/nginx-tmpdir.sh).  wrk's
# results go to OUT, in the build directory.
rm -rf "$OUT"
mkdir -p "$OUT"
PREFIX=$(mktemp -d "$("$TOP/tools/nginx-tmpdir.sh")/simhash-wrk.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp" \
         "$PREFIX/html/a/p" "$PREFIX/html/b/p" \
         "$PREFIX/html/a/w" "$PREFIX/html/b/w"

# --- the pages, each in two versions --------------------------------------

WEB=""
case " $CORPORA " in
    *" web "*)
        WEB=$(sh "$TOP/bench/webpages.sh" "$BUILD") || {
            echo "real-web corpus: skipped"
            WEB=""
            CORPORA=$(echo " $CORPORA " | sed 's/ web / /')
        } ;;
esac

perl - "$PREFIX" "$SIZE" "$MAXDOCS" "$TOP/demo/site" "$WEB" <<'EOF'
use strict;
use warnings;
use File::Find;
my ($prefix, $size, $max, $demo, $web) = @ARGV;

# version b: the page with one more line of text at the end of its body
sub both {
    my ($dir, $name, $c) = @_;
    my $extra = "<p>Updated 2026-11-23 12:00 UTC, 1,234 views, "
              . "56 comments.</p>\n";
    my $b = $c;
    $b =~ s{(.*)(</body)}{$1$extra$2}si or $b .= $extra;
    for (['a', $c], ['b', $b]) {
        open(my $o, '>:raw', "$prefix/html/$_->[0]/$dir/$name") or die $!;
        print $o $_->[1];
        close $o;
    }
    return "/$dir/$name";
}
sub slurp { local $/; open(my $i, '<:raw', $_[0]) or return; return <$i> }

my @found;
for my $dir ('/usr/share/doc/python3.11/html',
             '/usr/share/doc/postgresql-doc-15/html',
             '/usr/share/doc/rust-doc/html') {
    next unless -d $dir;
    my @d;
    find(sub {
        return unless /\.html$/ && -f $_;
        my $s = -s _;
        push @d, $File::Find::name
            if $s >= $size * 0.95 && $s <= $size * 1.05;
    }, $dir);
    push @found, sort @d;
}
splice(@found, $max) if @found > $max;
my (@docs, $n);
if (@found >= 10) {
    $n = 0;
    push @docs, both('p', sprintf("%03d.html", $n++), slurp($_)) for @found;
    print "docs: ", scalar @docs, " documentation pages of ${size} bytes "
        . "+-5%\n";
} else {
    # the demo articles, each repeated and interleaved with another
    my @a;
    find(sub { push @a, $File::Find::name if /\.html$/ && -s $_ > 2000 },
         $demo);
    @a = sort @a;
    my @text = map { my $c = slurp($_); $c =~ s/.*<body>|<\/body>.*//gs; $c }
               @a;
    for my $i (0 .. $#text) {
        my $body = '';
        my $j = $i;
        $body .= $text[$j++ % @text] while length $body < $size - 200;
        push @docs, both('p', sprintf("%03d.html", $i),
            "<!DOCTYPE html><html><head><title>page $i</title></head>"
            . "<body>" . substr($body, 0, $size - 120) . "</body></html>\n");
    }
    print "docs: ", scalar @docs, " pages of ${size} bytes built from the "
        . "demo site\n";
}
open(my $l, '>', "$prefix/docs.pages") or die $!;
print $l "$_\n" for @docs;
close $l;

if ($web ne '') {
    opendir(my $d, $web) or die "$web: $!";
    my @w = sort grep { /\.html$/ } readdir $d;
    my ($bytes, @pages) = (0);
    for (@w) {
        my $c = slurp("$web/$_");
        $bytes += length $c;
        push @pages, both('w', $_, $c);
    }
    open(my $o, '>', "$prefix/web.pages") or die $!;
    print $o "$_\n" for @pages;
    printf "real-web: %d pages of htmlparser-benchmark, %.1f MB, "
         . "%.0f KB on average\n", scalar @pages, $bytes / 1e6,
         $bytes / 1e3 / @pages;
}
EOF
# the umask may be 077: nginx's workers (nobody) read the pages
chmod -R a+rX "$PREFIX"

# --- nginx: origin, plain proxy, proxy with the module --------------------

# shellcheck disable=SC2046
set -- $("$(dirname "$0")/../tools/free-ports.sh" 6)
ORIGIN=$1 PLAIN=$2 NEW=$3 REFETCH=$4 DUST=$5 LEARN=$6
WORKERS=$(nproc 2>/dev/null || echo 2)

cat > "$PREFIX/conf/nginx.conf" <<EOF
load_module $MODULE;
worker_processes $WORKERS;
pid $PREFIX/logs/nginx.pid;
error_log $PREFIX/logs/error.log warn;
events { worker_connections 4096; }
http {
    types { text/html html; }
    access_log off;
    client_body_temp_path $PREFIX/tmp/body;
    proxy_temp_path       $PREFIX/tmp/proxy;
    fastcgi_temp_path     $PREFIX/tmp/fastcgi;
    uwsgi_temp_path       $PREFIX/tmp/uwsgi;
    scgi_temp_path        $PREFIX/tmp/scgi;
    keepalive_requests    100000;

    simhash_zone zone=new:$NEW_ZONE;
    simhash_zone zone=refetch:$REFETCH_ZONE;
    simhash_zone zone=learn:64m dust=8m;
    simhash_zone zone=dust:64m dust=8m;
    simhash_dust_rule zone=dust host=bench.test pattern=/p/
                      drop_param=sid pin;
    simhash_dust_rule zone=dust host=bench.test pattern=/w/
                      drop_param=sid pin;

    # the origin: version a of each page, or b when the request asks
    map \$http_x_bench_version \$bench_version { default a; b b; }
    server {
        listen 127.0.0.1:$ORIGIN;
        root $PREFIX/html/\$bench_version;
        open_file_cache max=2000;
    }

    # the proxies as nginx does it by default: a new upstream connection
    # per request (a crawler's proxy talks to many origins)
    server {
        listen 127.0.0.1:$PLAIN;
        location / { proxy_pass http://127.0.0.1:$ORIGIN; }
    }

    server {
        listen 127.0.0.1:$NEW;
        location / {
            simhash new;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
        location = /stats { simhash_stats; }
    }

    server {
        listen 127.0.0.1:$REFETCH;
        location / {
            simhash refetch;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
    }

    # DUST learning: as the new-page proxy, with a learner that only learns
    # (the bench's URLs differ by counters that do not change the page: it
    # would learn them, and predict)
    server {
        listen 127.0.0.1:$LEARN;
        location / {
            simhash learn;
            simhash_dust learn;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
    }

    # DUST predictions: the same pages, keyed under one host; predictions
    # dropped (204) with nothing verified, so that every predicted request
    # is answered before the upstream
    server {
        listen 127.0.0.1:$DUST;
        location / {
            simhash dust;
            simhash_key http://bench.test\$request_uri;
            simhash_dust on;
            simhash_dust_verify 0%;
            simhash_action drop;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
    }
}
EOF

# -e: the log nginx opens before reading the configuration (default
# /var/log/nginx/error.log, which only root may open)
nginx_prefix() {
    "$NGINX" -p "$PREFIX/" -c "$PREFIX/conf/nginx.conf" \
             -e "$PREFIX/logs/error.log" "$@"
}
# on exit: nginx stopped (and gone: a zone with file= saves first), its
# error log kept in OUT, the prefix removed
trap 'master=$(cat "$PREFIX/logs/nginx.pid" 2>/dev/null || true)
      nginx_prefix -s stop 2>/dev/null || true
      while [ -n "$master" ] && kill -0 "$master" 2>/dev/null; do
          sleep 0.2; done
      cp "$PREFIX/logs/error.log" "$OUT/" 2>/dev/null || true
      rm -rf "$PREFIX"' EXIT
# start-up: nginx returns once its zones are loaded (the master loads a
# snapshot before it forks), then until the proxy answers, 60 s at most
t0=$(date +%s.%N)
nginx_prefix
tries=0
until perl -MHTTP::Tiny -e 'exit !HTTP::Tiny->new(timeout => 5)->get(
          "http://127.0.0.1:'"$NEW"'/stats")->{success}' 2>/dev/null; do
    tries=$((tries + 1))
    [ $tries -lt 1200 ] || { echo "nginx does not answer" >&2; exit 1; }
    sleep 0.05
done
echo "nginx answers $(perl -e "printf '%.2f', $(date +%s.%N) - $t0") s" \
     "after it was started (zones: new $NEW_ZONE, refetch $REFETCH_ZONE)"

# --- wrk's requests ---------------------------------------------------------

# wrk ... -- MODE LIST THREADS RUN: MODE new, identical or mix; LIST the
# file of URL paths (every page for new, the re-fetch keys otherwise); RUN
# the run's name, part of new pages' query strings (new in every run)
cat > "$PREFIX/bench.lua" <<'EOF'
local nthreads = 0
function setup(thread)
    nthreads = nthreads + 1
    thread:set("tid", nthreads)
end
function init(args)
    mode = args[1]
    run = args[4]
    local threads = tonumber(args[3])
    math.randomseed(tid * 7919)
    counter = 0
    -- this thread's keys: every THREADS-th of the list
    paths, version = {}, {}
    local i = 0
    for line in io.lines(args[2]) do
        if mode ~= "identical" and mode ~= "mix"
           or i % threads == tid - 1 then
            paths[#paths + 1] = line
            version[#paths] = "a"
        end
        i = i + 1
    end
end
function request()
    counter = counter + 1
    local k = math.random(#paths)
    if mode == "new" then
        return wrk.format("GET", paths[k] .. "?r=" .. run .. "&t=" .. tid
                                    .. "&n=" .. counter)
    end
    if mode == "predicted" then
        return wrk.format("GET", paths[k] .. "?sid=" .. run .. "." .. tid
                                    .. "." .. counter)
    end
    if mode == "mix" and math.random() >= 0.7 then
        version[k] = version[k] == "a" and "b" or "a"
    end
    return wrk.format("GET", paths[k], { ["X-Bench-Version"] = version[k] })
end
EOF

# CPU seconds used so far by the nginx workers (origin and proxies)
nginx_cpu() {
    master=$(cat "$PREFIX/logs/nginx.pid")
    for p in $(pgrep -P "$master"); do cat "/proc/$p/stat"; done | perl -ne '
        s/^.*\) //; my @f = split; $t += $f[11] + $f[12];
        END { printf "%.2f\n", $t / '"$(getconf CLK_TCK)"' }'
}

stats() {
    perl -MHTTP::Tiny -e 'print HTTP::Tiny->new->get(
        "http://127.0.0.1:'"$NEW"'/stats")->{content}'
}

# run PORT SECONDS NAME MODE LIST: wrk, with its own CPU time, the workers'
# CPU time and the zones' counters before and after appended to its output
run() {
    before=$(nginx_cpu)
    stats > "$OUT/$3.before.json"
    perl -e 'system(@ARGV) == 0 or exit 1; my @t = times;
             printf "wrk cpu: %.2f\n", $t[2] + $t[3]' \
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2"s --latency \
            -s "$PREFIX/bench.lua" "http://127.0.0.1:$1/" \
            -- "$4" "$5" "$THREADS" "$3" > "$OUT/$3.txt" 2>&1
    after=$(nginx_cpu)
    stats > "$OUT/$3.after.json"
    echo "nginx cpu: $(perl -e "print $after - $before")" >> "$OUT/$3.txt"
}

# warm the re-fetch zone: every page once, version a; the keys of the
# re-fetch runs are the pages stored then (a page that is a near-duplicate
# of another one is not stored under its own key, and would be parsed at
# every re-fetch: not what these runs measure)
warm_zone() {
    perl -MHTTP::Tiny - "$1" "${3:-$REFETCH}" "$2" "${4:-}" <<'EOF'
use strict;
use warnings;
my ($list, $port, $keys, $query) = @ARGV;
my $http = HTTP::Tiny->new(keep_alive => 1);
open(my $l, '<', $list) or die "$list: $!";
open(my $k, '>', $keys) or die "$keys: $!";
my ($n, $kept) = (0, 0);
while (my $p = <$l>) {
    chomp $p;
    my $r = $http->get("http://127.0.0.1:$port$p$query",
                       { headers => { 'X-Bench-Version' => 'a' } });
    die "$p: $r->{status}\n" unless $r->{success};
    $n++;
    next unless ($r->{headers}{'x-simhash-status'} // '') eq 'new';
    print $k "$p\n";
    $kept++;
}
print "  warm-up: $kept of $n pages stored under their own key (the others "
    . "are near-duplicates of one of them, or skipped)\n";
EOF
}

for corpus in $CORPORA; do
    echo "$corpus:"
    list="$PREFIX/$corpus.pages"
    # warm up (page cache, the stemmer's cache), through the new-page zone
    run "$PLAIN" 2 "warm-$corpus-plain" new "$list"
    run "$NEW" 2 "warm-$corpus-simhash" new "$list"
    keys=""
    for s in $SCENARIOS; do
        mode=$s
        case "$s" in
            new) port=$NEW; l=$list ;;
            learn) port=$LEARN; l=$list; mode=new ;;
            predicted)
                warm_zone "$list" "$PREFIX/$corpus.dust" "$DUST" "?sid=warm"
                port=$DUST; l="$PREFIX/$corpus.dust" ;;
            identical|mix)
                if [ -z "$keys" ]; then
                    keys="$PREFIX/$corpus.keys"
                    warm_zone "$list" "$keys"
                fi
                port=$REFETCH; l=$keys ;;
            *) echo "unknown scenario $s" >&2; exit 1 ;;
        esac
        echo "  $s"
        run "$PLAIN" "$DURATION" "$s-$corpus-plain" "$mode" "$l"
        run "$port" "$DURATION" "$s-$corpus-simhash" "$mode" "$l"
    done
done

# --- the report -------------------------------------------------------------

perl - "$OUT" "$DURATION" "$CONNECTIONS" "$THREADS" "$WORKERS" \
     "$CORPORA" "$SCENARIOS" <<'EOF'
use strict;
use warnings;
use JSON::PP;
my ($out, $dur, $conn, $thr, $workers, $corpora, $scenarios) = @ARGV;

sub slurp { local $/; open(my $fh, '<', $_[0]) or die "$_[0]: $!"; <$fh> }

sub parse {
    my ($name) = @_;
    my $t = slurp("$out/$name.txt");
    my %r;
    ($r{rps}) = $t =~ /Requests\/sec:\s+([\d.]+)/;
    ($r{p50}) = $t =~ /^\s+50%\s+(\S+)/m;
    ($r{p99}) = $t =~ /^\s+99%\s+(\S+)/m;
    ($r{requests}) = $t =~ /(\d+) requests in/;
    ($r{wrk_cpu}) = $t =~ /^wrk cpu: ([\d.]+)/m;
    ($r{nginx_cpu}) = $t =~ /^nginx cpu: ([\d.]+)/m;
    ($r{non2xx}) = $t =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    $r{non2xx} //= 0;
    my ($c, $rd, $w, $to) =
        $t =~ /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/;
    $r{errors} = $r{non2xx} + ($c // 0) + ($rd // 0) + ($w // 0) + ($to // 0);
    die "cannot parse $name:\n$t" unless $r{rps};
    $r{cpu} = 1e6 * ($r{nginx_cpu} + $r{wrk_cpu}) / $r{requests};
    $r{ncpu} = 1e6 * $r{nginx_cpu} / $r{requests};
    # what the module did during the run: both zones' counters, after
    # minus before
    my ($b, $a) = map { decode_json(slurp("$out/$name.$_.json"))->{zones} }
                  qw(before after);
    for my $z (keys %$a) {
        $r{parsed} += $a->{$z}{fingerprinted_bytes} - $b->{$z}{fingerprinted_bytes};
        $r{identical} += $a->{$z}{identical} - $b->{$z}{identical};
        for my $s (keys %{$a->{$z}{responses}}) {
            $r{responses} += $a->{$z}{responses}{$s} - $b->{$z}{responses}{$s};
            $r{status}{$s} += $a->{$z}{responses}{$s} - $b->{$z}{responses}{$s};
        }
    }
    return \%r;
}

my %title = (new => 'new pages', identical => 'identical re-fetch',
             mix => '70/30 re-fetch mix', learn => 'new, DUST learning',
             predicted => 'predicted duplicate');
my %cname = (docs => 'docs', web => 'real-web');
printf "wrk -t%d -c%d -d%ds, nginx %d workers, %d cores, loopback\n",
       $thr, $conn, $dur, $workers, $workers;
print "CPU per request: nginx's workers (origin and proxy) and wrk, "
    . "in microseconds\n\n";
printf "%-8s %-19s %9s %9s %6s %8s %8s %6s %8s %8s\n", 'corpus', 'scenario',
       'plain/s', 'simhash/s', 'ratio', 'cpu', 'cpu', 'ratio', 'p99', 'errors';
printf "%-8s %-19s %9s %9s %6s %8s %8s %6s %8s %8s\n", '', '', '', '',
       'req/s', 'plain', 'simhash', 'cpu', 'simhash', '';
my ($errors, @notes) = (0);
for my $c (split ' ', $corpora) {
    my %done;
    for my $s (split ' ', $scenarios) {
        my ($p, $m) = map { parse("$s-$c-$_") } qw(plain simhash);
        $done{$s} = $m;
        my $ratio = $m->{rps} / $p->{rps};
        printf "%-8s %-19s %9.0f %9.0f %6.2f %8.0f %8.0f %6.2f %8s %8d\n",
               $cname{$c}, $title{$s}, $p->{rps}, $m->{rps}, $ratio,
               $p->{cpu}, $m->{cpu}, $p->{cpu} / $m->{cpu}, $m->{p99},
               $p->{errors} + $m->{errors};
        $errors += $p->{errors} + $m->{errors};
        my $st = $m->{status};
        push @notes, sprintf "%s, %s: %d responses through the module, "
            . "%d answered from the digest (%.1f%%), %.1f MB parsed; "
            . "%s; nginx alone %.0f / %.0f us per request",
            $cname{$c}, $title{$s}, $m->{responses}, $m->{identical},
            100 * $m->{identical} / ($m->{responses} || 1), $m->{parsed} / 1e6,
            join(', ', map { "$st->{$_} $_" } grep { $st->{$_} } sort keys %$st),
            $p->{ncpu}, $m->{ncpu};
        if ($s eq 'learn' && $done{new}) {
            push @notes, sprintf "%s: the DUST learner on new pages: %+.0f us "
                . "of nginx CPU a request (%.0f against %.0f, %+.1f%%; the "
                . "runs' own spread is a few percent)", $cname{$c},
                $m->{ncpu} - $done{new}{ncpu}, $m->{ncpu}, $done{new}{ncpu},
                100 * ($m->{ncpu} / $done{new}{ncpu} - 1);
        }
        if ($s eq 'predicted' && $done{new}) {
            my $x = $m->{rps} / $done{new}{rps};
            push @notes, sprintf "target: a predicted duplicate answered at "
                . ">= 5x the req/s of a new page fetched through the module "
                . "(%s): %.1fx, %s (by CPU per request: %.1fx); %.1fx the "
                . "plain proxy's", $cname{$c}, $x, $x >= 5 ? 'met' : 'NOT MET',
                $done{new}{cpu} / $m->{cpu}, $m->{rps} / $p->{rps};
        }
        if ($c eq 'docs' && $s eq 'identical') {
            push @notes, sprintf "target: identical re-fetch of 25 KB pages "
                . ">= 0.80 of the plain proxy's req/s: %.2f, %s (by CPU per "
                . "request: %.2f)", $ratio, $ratio >= 0.8 ? 'met' : 'NOT MET',
                $p->{cpu} / $m->{cpu};
        }
    }
}
print "\n";
print "$_\n" for @notes;
if (open(my $la, '<', '/proc/loadavg')) {
    printf "load average at the end: %s", scalar <$la>;
}
print "errors: ", ($errors ? 'SOME (see BUILD/bench/wrk/*.txt)' : 'none'), "\n";
EOF
