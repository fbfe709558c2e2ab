#!/bin/sh
# The module's cost in the proxy, measured with wrk on loopback.
#
#   bench/wrk.sh BUILD
#
# One nginx (worker_processes = number of cores) with an origin serving
# about 25 KB HTML pages (real documentation pages from the python3.11-doc
# and postgresql-doc-15 packages, or the demo site's articles concatenated
# when those are missing), a plain proxy in front of it and the same proxy
# with the module.  wrk drives both in one run, one after the other, with
# the same pages; every request carries a unique query string, so every
# response is a new document key: the module fingerprints it, looks it up
# and (the pages repeat) tags it a duplicate.  The result: requests/s of
# each, their ratio, p50/p99 latency, and the error count (non-2xx
# responses and socket errors), which must be 0.
#
# Environment: DURATION (seconds per run, default 10), CONNECTIONS
# (default 32), THREADS (wrk threads, default 2), SIZE (page bytes,
# default 25000).
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
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp" "$PREFIX/html/p"
chmod 755 "$PREFIX" "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/tmp" \
          "$PREFIX/html" "$PREFIX/html/p"

# --- pages of about SIZE bytes ---------------------------------------------

perl - "$PREFIX/html/p" "$SIZE" "$TOP/demo/site" <<'EOF'
use strict;
use warnings;
use File::Find;
my ($out, $size, $demo) = @_ ? @_ : @ARGV;
($out, $size, $demo) = @ARGV;
my @found;
for my $dir ('/usr/share/doc/python3.11/html',
             '/usr/share/doc/postgresql-doc-15/html') {
    next unless -d $dir;
    find(sub {
        return unless /\.html$/ && -f $_;
        my $s = -s _;
        push @found, $File::Find::name
            if $s >= $size * 0.95 && $s <= $size * 1.05;
    }, $dir);
}
@found = (sort @found)[0 .. 39] if @found > 40;
my $n = 0;
if (@found >= 10) {
    for my $f (@found) {
        open(my $in, '<:raw', $f) or next;
        local $/;
        my $c = <$in>;
        open(my $o, '>:raw', sprintf("%s/%02d.html", $out, $n++)) or die;
        print $o $c;
    }
    print "pages: $n real documentation pages of ${size} bytes +-5%\n";
} else {
    # the demo articles, each repeated and interleaved with another
    my @a;
    find(sub { push @a, $File::Find::name if /\.html$/ && -s $_ > 2000 },
         $demo);
    @a = sort @a;
    my @text = map { local $/; open(my $i, '<', $_) or die; my $c = <$i>;
                     $c =~ s/.*<body>|<\/body>.*//gs; $c } @a;
    for my $i (0 .. $#text) {
        my $body = '';
        my $j = $i;
        while (length $body < $size - 200) {
            $body .= $text[$j++ % @text];
        }
        open(my $o, '>', sprintf("%s/%02d.html", $out, $n++)) or die;
        print $o "<!DOCTYPE html><html><head><title>page $i</title></head>"
               . "<body>" . substr($body, 0, $size - 120)
               . "</body></html>\n";
    }
    print "pages: $n pages of ${size} bytes built from the demo site\n";
}
EOF
chmod 644 "$PREFIX"/html/p/*.html

# --- nginx: origin, plain proxy, proxy with the module --------------------

free_port() {
    perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1,
        LocalAddr => "127.0.0.1", LocalPort => 0)->sockport'
}
ORIGIN=$(free_port)
PLAIN=$(free_port)
SIMHASH=$(free_port)
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

    simhash_zone zone=bench:64m;

    server {
        listen 127.0.0.1:$ORIGIN;
        root $PREFIX/html;
        open_file_cache max=100;
    }

    # both proxies as nginx does it by default: a new upstream connection
    # per request (a crawler's proxy talks to many origins)
    server {
        listen 127.0.0.1:$PLAIN;
        location / { proxy_pass http://127.0.0.1:$ORIGIN; }
    }

    server {
        listen 127.0.0.1:$SIMHASH;
        location / {
            simhash bench;
            proxy_pass http://127.0.0.1:$ORIGIN;
        }
        location = /stats { simhash_stats; }
    }
}
EOF

# -e: the log nginx opens before reading the configuration (default
# /var/log/nginx/error.log, which only root may open)
nginx_prefix() {
    "$NGINX" -p "$PREFIX/" -c "$PREFIX/conf/nginx.conf" \
             -e "$PREFIX/logs/error.log" "$@"
}
# on exit: nginx stopped, its error log kept in OUT, the prefix removed
trap 'nginx_prefix -s stop 2>/dev/null || true; sleep 0.2
      cp "$PREFIX/logs/error.log" "$OUT/" 2>/dev/null || true
      rm -rf "$PREFIX"' EXIT
nginx_prefix
sleep 0.3

# --- wrk: every request a random page under a unique URL -------------------

{
    echo 'paths = {'
    for f in "$PREFIX"/html/p/*.html; do
        echo "  \"/p/$(basename "$f")\","
    done
    cat <<'EOF'
}
local nthreads = 0
function setup(thread)
    nthreads = nthreads + 1
    thread:set("tid", nthreads)
end
function init(args)
    math.randomseed(tid * 7919)
    counter = 0
end
function request()
    counter = counter + 1
    local p = paths[math.random(#paths)]
    return wrk.format("GET", p .. "?t=" .. tid .. "&n=" .. counter)
end
EOF
} > "$PREFIX/urls.lua"

# CPU seconds used so far by the nginx workers (origin and both proxies)
nginx_cpu() {
    master=$(cat "$PREFIX/logs/nginx.pid")
    for p in $(pgrep -P "$master"); do cat "/proc/$p/stat"; done | perl -ne '
        s/^.*\) //; my @f = split; $t += $f[11] + $f[12];
        END { printf "%.2f\n", $t / '"$(getconf CLK_TCK)"' }'
}

# wrk, with its own CPU time and the workers' CPU time appended to its output
run() {
    before=$(nginx_cpu)
    perl -e 'system(@ARGV) == 0 or exit 1; my @t = times;
             printf "wrk cpu: %.2f\n", $t[2] + $t[3]' \
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2"s --latency \
            -s "$PREFIX/urls.lua" "http://127.0.0.1:$1/" > "$OUT/$3.txt" 2>&1
    after=$(nginx_cpu)
    echo "nginx cpu: $(perl -e "print $after - $before")" >> "$OUT/$3.txt"
}

# warm up both (page cache, upstream keepalive, the stemmer's cache)
run "$PLAIN" 2 warm-plain
run "$SIMHASH" 2 warm-simhash

run "$PLAIN" "$DURATION" plain
run "$SIMHASH" "$DURATION" simhash
curl_stats=$(perl -MHTTP::Tiny -e \
    'print HTTP::Tiny->new->get("http://127.0.0.1:'"$SIMHASH"'/stats")->{content}')

perl - "$OUT/plain.txt" "$OUT/simhash.txt" "$curl_stats" \
     "$DURATION" "$CONNECTIONS" "$THREADS" "$WORKERS" <<'EOF'
use strict;
use warnings;
use JSON::PP;
my ($plain, $simhash, $stats, $dur, $conn, $thr, $workers) = @ARGV;

sub parse {
    my ($f) = @_;
    open(my $fh, '<', $f) or die "$f: $!";
    local $/;
    my $t = <$fh>;
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
    $r{errors} = ($c // 0) + ($rd // 0) + ($w // 0) + ($to // 0);
    die "cannot parse $f:\n$t" unless $r{rps};
    return \%r;
}

my $p = parse($plain);
my $s = parse($simhash);
my $z = decode_json($stats)->{zones}{bench};
my $ratio = $s->{rps} / $p->{rps};

printf "wrk -t%d -c%d -d%ds, nginx %d workers, %d cores, loopback\n",
       $thr, $conn, $dur, $workers, $workers;
printf "%-22s %10s %9s %9s %8s\n", '', 'req/s', 'p50', 'p99', 'errors';
printf "%-22s %10.0f %9s %9s %8d\n", 'plain proxy', $p->{rps}, $p->{p50},
       $p->{p99}, $p->{non2xx} + $p->{errors};
printf "%-22s %10.0f %9s %9s %8d\n", 'proxy + simhash', $s->{rps}, $s->{p50},
       $s->{p99}, $s->{non2xx} + $s->{errors};
printf "ratio (simhash/plain)  %10.2f   target >= 0.50: %s\n", $ratio,
       $ratio >= 0.5 ? 'met' : 'NOT MET';
# CPU per request: what the run cost, whatever else the machine was doing
my ($pc, $sc) = map { 1e6 * ($_->{nginx_cpu} + $_->{wrk_cpu}) / $_->{requests} }
                ($p, $s);
printf "cpu per request (nginx workers + wrk): plain %.0f us, simhash %.0f us "
       . "(nginx alone: %.0f / %.0f us)\n", $pc, $sc,
       1e6 * $p->{nginx_cpu} / $p->{requests},
       1e6 * $s->{nginx_cpu} / $s->{requests};
printf "ratio bound on an idle machine (cpu plain / cpu simhash): %.2f\n",
       $pc / $sc;
if (open(my $la, '<', '/proc/loadavg')) {
    printf "load average at the end: %s", scalar <$la>;
}
printf "module: %d responses fingerprinted (%d new, %d duplicate, %d skipped), "
       . "%.1f MB, %.2f probes per lookup, %d entries\n",
       $z->{lookups}, $z->{responses}{new}, $z->{responses}{duplicate},
       $z->{responses}{skipped}, $z->{fingerprinted_bytes} / 1e6,
       $z->{mean_probes}, $z->{entries};
print "errors: ", ($p->{non2xx} + $p->{errors} + $s->{non2xx} + $s->{errors}
                  ? 'SOME (see BUILD/bench/wrk/*.txt)' : 'none'), "\n";
EOF
