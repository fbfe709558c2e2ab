#!/usr/bin/perl
# make bench: replication through one Redis (simhash_replicate).
#
#   perl bench/replicate.pl BUILD
#
# Three parts, one redis-server (append-only, as the tests run it) and
# nginx instances of the built module under BUILD/bench/replicate/:
#
#   1. capacity  three publishers (one connection each, as three nodes)
#                send N entries as fast as they can, pipelined XADD ...
#                MAXLEN ~ 1000000 with the module's fields (random keys and
#                fingerprints), read and applied by one nginx node (one
#                worker), then N more read by three: the CPU each entry
#                costs Redis (its INFO: the XADD and the readers) and a
#                node's worker 0 (/proc).  Redis is one thread, so
#                1 / (its CPU per entry) is what one Redis carries,
#                whatever else this machine runs; the two runs give the
#                cost of the XADD and of each reader apart, hence the
#                figure for larger tiers.  And Redis's memory per entry.
#   2. lag       the same three nodes apply what three publishers emulating
#                the module's (one per node id, each flushing every 10 ms
#                what was "stored" in the last 10 ms, stamped when stored)
#                send at 2,000 and 20,000 entries/s across the tier, for
#                LAG_SECONDS each: p50 and p99 of the nodes' lag histogram
#                (simhash_stats lag_ms; interpolated in its buckets).
#   3. cost      a proxy with simhash_replicate and the same without, over
#                pages that are all new (SSI composes each from six random
#                blocks of 60 words; a unique key each), so that every
#                request publishes:
#                a. instructions per request, counted by callgrind in one
#                   nginx process (master_process off: it publishes and
#                   reads its own entries back too) over COST_REQUESTS
#                   requests after a warm-up, until its own entries have
#                   come back, less what the process spends idle in that
#                   time (the publisher's 10 ms timer; measured over 2 s
#                   without requests: valgrind makes the run ~50 times
#                   longer, which would bill the timer 50 times over):
#                   repeatable whatever the load;
#                b. wrk for COST_SECONDS against 2 workers, three rounds of
#                   each, one after the other: requests/s and CPU per
#                   request (/proc), medians; on a shared 2-core machine
#                   this includes the contention Redis adds.
#
# Environment: CAPACITY_N (entries, default 200000), LAG_SECONDS (default
# 5), COST_REQUESTS (default 300), COST_SECONDS (default 6), CONNECTIONS
# (wrk, default 16).

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Path qw(make_path remove_tree);
use FindBin;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(floor);
use Time::HiRes qw(sleep time);

use lib "$FindBin::Bin/../t/lib";
use lib "$FindBin::Bin/../stress/lib";
use RedisTest;
use StressNginx;

my $TOP = abs_path("$FindBin::Bin/..");
my $BUILD = abs_path(shift // "$TOP/build");
my $MODULE = "$BUILD/nginx/ngx_http_simhash_module.so";
my $BASE = "$BUILD/bench/replicate";
my $N = $ENV{CAPACITY_N} // 200000;
my $LAG_S = $ENV{LAG_SECONDS} // 5;
my $COST_S = $ENV{COST_SECONDS} // 6;
my $COST_N = $ENV{COST_REQUESTS} // 300;
my $CONNS = $ENV{CONNECTIONS} // 16;
my $TICK = POSIX::sysconf(POSIX::_SC_CLK_TCK()) || 100;

for my $tool (qw(redis-server wrk)) {
    next if grep { -x "$_/$tool" } split /:/, $ENV{PATH};
    print "replicate: $tool is not installed (tools/deps.sh eval)\n";
    exit 0;
}
-f $MODULE or die "replicate: $MODULE missing: run make module\n";

remove_tree($BASE);
make_path($BASE);
$ENV{TMPDIR} = $BASE;

my $redis = RedisTest->new;
$redis->start;
my $stream = 'simhash:crawl';

END { StressNginx::cleanup_all() }

printf "load: %s %s %s\n", (split ' ', `cat /proc/loadavg`)[0 .. 2];

# --- the nginx instances ----------------------------------------------------

# An origin composing pages from blocks (SSI), for part 3 and the seed.
my $origin_port = StressNginx::free_port();
my $origin = StressNginx->new(name => 'origin', dir => "$BASE/origin",
                              port => $origin_port);
make_path("$BASE/origin/html/b");
chmod 0755, "$BASE/origin/html", "$BASE/origin/html/b";
{
    my @vocab = vocabulary();
    my $x = 4242;
    my $rnd = sub { $x = ($x * 1103515245 + 12345) % 2147483648; $x };
    for my $i (0 .. 999) {
        StressNginx::write_file("$BASE/origin/html/b/$i.html",
            '<p>' . join(' ', map { $vocab[$rnd->() % @vocab] } 1 .. 60)
            . ".</p>\n");
    }
    StressNginx::write_file("$BASE/origin/html/p.html",
        "<!DOCTYPE html>\n<html><head><title>Page</title></head><body>\n"
        . join('', map { "<!--# include virtual=\"/b/\$arg_$_.html\" -->\n" }
                   qw(a b c d e f))
        . "</body></html>\n");
}
$origin->set_conf(<<"EOF");
worker_processes 1;
pid $BASE/origin/logs/nginx.pid;
error_log $BASE/origin/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    default_type text/html;
    client_body_temp_path $BASE/origin/tmp/body;
    proxy_temp_path $BASE/origin/tmp/proxy;
    fastcgi_temp_path $BASE/origin/tmp/fastcgi;
    uwsgi_temp_path $BASE/origin/tmp/uwsgi;
    scgi_temp_path $BASE/origin/tmp/scgi;
    server {
        listen 127.0.0.1:$origin_port;
        root $BASE/origin/html;
        location = /p { ssi on; try_files /p.html =404; }
    }
}
EOF
$origin->start;

# A proxy node: zone "crawl", replicated (node NAME) or not (undef).
sub proxy {
    my ($name, $node, $workers, $zone) = @_;
    my $dir = "$BASE/$name";
    my $port = StressNginx::free_port();
    my $repl = defined $node
        ? "simhash_replicate crawl ${\ $redis->url} node=$node;" : '';
    my $ng = StressNginx->new(name => $name, dir => $dir, port => $port,
                              workers => $workers);
    $ng->set_conf(<<"EOF");
load_module $MODULE;
worker_processes $workers;
pid $dir/logs/nginx.pid;
error_log $dir/logs/error.log notice;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    simhash_zone zone=crawl:$zone;
    $repl
    server {
        listen 127.0.0.1:$port;
        location / {
            simhash crawl;
            simhash_key \$request_uri;
            proxy_pass http://127.0.0.1:$origin_port;
        }
        location = /simhash-stats { simhash_stats; }
    }
}
EOF
    return $ng;
}

# CPU seconds of processes (utime + stime).
sub cpu_of {
    my $t = 0;
    for my $pid (@_) {
        my $stat = StressNginx::read_file("/proc/$pid/stat") // next;
        $stat =~ s/^.*\) //;
        my @f = split ' ', $stat;
        $t += $f[11] + $f[12];
    }
    return $t / $TICK;
}

sub instance_cpu {
    my ($ng) = @_;
    return cpu_of($ng->pid, map { $_->[0] } $ng->children);
}

# worker 0: the process that says "replicated through ... by process P"
sub applier {
    my ($ng) = @_;
    my @p = $ng->error_log =~ /replicated through .* by process (\d+)/g;
    return $p[-1];
}

sub repl { ($_[0]->stats // {})->{replication} // {} }

sub wait_until {
    my ($cond, $timeout) = @_;
    my $end = time + ($timeout // 60);
    while (time < $end) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return 0;
}

# --- 1. capacity ------------------------------------------------------------

my @nodes = map { proxy("node$_", "n$_", 1, '64m') } 1 .. 3;

# One run of N entries read by the nodes up: Redis CPU and the median
# worker 0 CPU per entry, seconds to publish and to apply everywhere.
sub capacity_run {
    my ($seed, @up) = @_;
    my @applied0 = map { repl($_)->{applied} } @up;
    my @w0 = map { applier($_) } @up;
    my @wcpu0 = map { cpu_of($_) } @w0;
    my $rcpu0 = $redis->cpu;
    my $t0 = time;
    publish(1e9, $N / 1e9, $seed);
    my $pub_s = time - $t0;
    wait_until(sub { my $i = 0;
                     !grep { repl($_)->{applied} - $applied0[$i++] < $N } @up },
               300)
        or warn "replicate: the nodes did not apply everything: "
                . join(" ", map { encode_json(repl($_)) } @up) . "\n";
    my $all_s = time - $t0;
    my @wcpu = sort { $a <=> $b } map { cpu_of($w0[$_]) - $wcpu0[$_] }
                                  0 .. $#up;
    return { redis => ($redis->cpu - $rcpu0) / $N,
             worker => $wcpu[$#wcpu / 2] / $N, pub_s => $pub_s,
             all_s => $all_s };
}

# the seed of the stream's entries: a node publishes one page
$nodes[0]->start;
wait_until(sub { (repl($nodes[0])->{connected} // 0) == 2 }, 20)
    or die "replicate: node1 not connected\n";
$nodes[0]->get('/p?a=1&b=2&c=3&d=4&e=5&f=6');
wait_until(sub { $redis->cmd('XLEN', $stream) >= 1 }, 10)
    or die "replicate: nothing published\n";
my %first = @{ $redis->cmd('XRANGE', $stream, '-', '+')->[0][1] };
my $seed = $first{seed};

# one reader, then three (the two others catch up first)
my $one = capacity_run($seed, $nodes[0]);
$_->start for @nodes[1, 2];
wait_until(sub { !grep { (repl($_)->{applied} // 0) < $N } @nodes[1, 2] },
           300);
my $three = capacity_run($seed, @nodes);
my $per_entry = $redis->cmd('MEMORY', 'USAGE', $stream, 'SAMPLES', '0')
                / $redis->cmd('XLEN', $stream);

# Redis CPU per entry = fixed + per_reader * readers
my $per_reader = ($three->{redis} - $one->{redis}) / 2;
my $fixed = $one->{redis} - $per_reader;

print "\n1. capacity: $N entries from 3 connections, read and applied by "
    . "1 node, then by 3\n";
for my $r ([1, $one], [3, $three]) {
    printf "   %d reader%s: published at %.0f XADD/s, applied everywhere in "
           . "%.1f s; Redis CPU %.2f us/entry; worker 0 %.2f us/entry\n",
           $r->[0], $r->[0] > 1 ? 's' : '', $N / $r->[1]{pub_s},
           $r->[1]{all_s}, $r->[1]{redis} * 1e6, $r->[1]{worker} * 1e6;
}
printf "   Redis CPU per entry ~ %.2f us + %.2f us per reading node; one "
       . "Redis core carries:\n", $fixed * 1e6, $per_reader * 1e6;
printf "     %2d nodes: %7.0f entries/s\n", $_, 1 / ($fixed + $per_reader * $_)
    for 3, 8, 16, 32;
printf "   a node's worker 0 applies %.0f entries/s on one core\n",
       1 / $three->{worker};
printf "   Redis memory: %.0f bytes an entry (keys of ~60 bytes)\n",
       $per_entry;

# --- 2. lag -----------------------------------------------------------------

print "\n2. lag across the tier (3 nodes apply what 3 emulated publishers "
    . "send)\n";
print "   rate/s   entries   p50 ms   p99 ms   max bucket\n";
for my $rate (2000, 20000) {
    my @h0 = map { repl($_)->{lag_ms} } @nodes;
    my @a0 = map { repl($_)->{applied} } @nodes;
    my $sent = publish($rate, $LAG_S, $seed);
    wait_until(sub { my $i = 0;
                     !grep { repl($_)->{applied} - $a0[$i++] < $sent } @nodes },
               120);
    my %d;
    for my $i (0 .. 2) {
        my $h = repl($nodes[$i])->{lag_ms};
        $d{$_} += $h->{$_} - $h0[$i]{$_} for keys %$h;
    }
    printf "   %6d   %7d   %6s   %6s   %s\n", $rate, $sent,
           quantile(\%d, 0.50), quantile(\%d, 0.99), top_bucket(\%d);
}
$_->stop for @nodes;

# --- 3. cost per request on the publishing node -------------------------------

print "\n3a. instructions per request (callgrind, one nginx process, "
    . "$COST_N new pages)\n";
my %ir;
for my $mode (qw(off replicated)) {
    my $ng = proxy("cg-$mode", $mode eq 'off' ? undef : 'cg', 1, '16m');
    my ($pid, $count) = callgrind_start($ng);
    my $page = 0;
    my $fetch = sub {
        my ($n) = @_;
        for (1 .. $n) {
            $page++;
            my @a = map { int(rand(1000)) } 1 .. 6;
            $ng->get(sprintf('/p?a=%d&b=%d&c=%d&d=%d&e=%d&f=%d&n=%s-%d', @a,
                             $mode, $page));
        }
    };
    my $settle = sub {
        # the replicated node's own entries come back through the stream
        my $want = $mode eq 'off' ? 0 : $page;
        wait_until(sub { $redis->cmd('XLEN', $stream) >= $want }, 60);
        sleep 2;
    };
    $redis->cmd('DEL', $stream);
    $fetch->(20);
    $settle->();
    my ($i0, $t0) = ($count->(), time);
    sleep 2;
    my $idle = ($count->() - $i0) / (time - $t0);
    ($i0, $t0) = ($count->(), time);
    $fetch->($COST_N);
    $settle->();
    my ($i1, $t1) = ($count->(), time);
    my $st = $ng->stats;
    $ir{$mode} = ($i1 - $i0 - $idle * ($t1 - $t0)) / $COST_N;
    printf "   %-10s  %9.0f instructions/request   (idle: %.0f/s; new %d, "
           . "published %d)\n", $mode, $ir{$mode}, $idle,
           $st->{responses}{new},
           $mode eq 'off' ? 0 : $st->{replication}{published};
    kill 'TERM', $pid;
    waitpid($pid, 0);
}
printf "   replication adds %.0f instructions per request (%+.1f%%)\n",
       $ir{replicated} - $ir{off}, ($ir{replicated} / $ir{off} - 1) * 100;

print "\n3b. one proxy (2 workers) with and without simhash_replicate under "
    . "wrk, every page new\n";
my $lua = StressNginx::write_file("$BASE/new-pages.lua", <<'EOF');
local n = 0
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("id", threads)
end
function init(args) math.randomseed(os.time() * 100 + id) end
function request()
    n = n + 1
    local r = math.random
    return wrk.format("GET", string.format(
        "/p?a=%d&b=%d&c=%d&d=%d&e=%d&f=%d&n=%d-%d",
        r(0, 999), r(0, 999), r(0, 999), r(0, 999), r(0, 999), r(0, 999),
        r(0, 1e9), n))
end
EOF
my %runs;
for my $round (1 .. 3) {
    for my $mode (qw(replicated off)) {
        my $ng = proxy("cost-$mode", $mode eq 'off' ? undef : 'pub', 2,
                       '64m');
        $ng->start;
        if ($mode eq 'replicated') {
            wait_until(sub { (repl($ng)->{connected} // 0) == 2 }, 20);
        }
        my $c0 = instance_cpu($ng);
        my $r0 = $redis->cpu;
        my $w = `wrk -t 2 -c $CONNS -d ${COST_S}s -s $lua http://127.0.0.1:$ng->{port}/ 2>&1`;
        if ($mode eq 'replicated') {
            wait_until(sub { (repl($ng)->{outbox} // 1) == 0 }, 30);
        }
        my $cpu = instance_cpu($ng) - $c0;
        my $rc = $redis->cpu - $r0;
        my ($req) = $w =~ /(\d+) requests in/;
        my ($non2xx) = $w =~ /Non-2xx or 3xx responses: (\d+)/;
        my $st = $ng->stats;
        push @{ $runs{$mode} }, {
            req => $req, rps => $req / $COST_S, cpu => $cpu / $req * 1e6,
            redis => $rc / $req * 1e6, errors => $non2xx // 0,
            new => $st->{responses}{new},
            published => $mode eq 'off' ? 0 : $st->{replication}{published},
        };
        $ng->stop;
    }
}
print "   mode         req/s   CPU us/req (nginx)   CPU us/req (Redis)   "
    . "new    published  errors\n";
my %med;
for my $mode (qw(replicated off)) {
    for my $r (@{ $runs{$mode} }) {
        printf "   %-10s  %6.0f   %18.0f   %18.1f   %5d  %9d  %6d\n", $mode,
               $r->{rps}, $r->{cpu}, $r->{redis}, $r->{new}, $r->{published},
               $r->{errors};
    }
    $med{$mode} = (sort { $a <=> $b } map { $_->{cpu} } @{ $runs{$mode} })[1];
}
printf "   median CPU per request: replicated %.0f us, off %.0f us: "
       . "%+.1f%%\n", $med{replicated}, $med{off},
       ($med{replicated} / $med{off} - 1) * 100;
printf "load: %s %s %s\n", (split ' ', `cat /proc/loadavg`)[0 .. 2];
$redis->stop;

# --- helpers ------------------------------------------------------------------

# The instance as one process under callgrind; returns its pid and a sub
# that reads its instruction count so far.
sub callgrind_start {
    my ($ng) = @_;
    StressNginx::write_file($ng->conf_file, $ng->{conf});
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', "$ng->{dir}/logs/valgrind.log");
        exec('valgrind', '--tool=callgrind',
             "--callgrind-out-file=$ng->{dir}/logs/callgrind.out",
             $StressNginx::NGINX, '-p', "$ng->{dir}/", '-c', $ng->conf_file,
             '-g', 'daemon off; master_process off;')
            or POSIX::_exit(127);
    }
    $ng->wait_port($ng->{port}, 120)
        or die "replicate: nginx under callgrind does not answer\n";
    my $count = sub {
        my $out = `callgrind_control -e Ir $pid 2>&1`;
        my ($n) = $out =~ /Th 1\s+([\d,]+)/ or die "callgrind: $out\n";
        $n =~ tr/,//d;
        return $n;
    };
    return ($pid, $count);
}

# Publish at `rate` entries/s for `secs` s from three emulated nodes; every
# 10 ms each sends what was stored since its last flush, each entry stamped
# with the moment it was stored.  Returns the count.
sub publish {
    my ($rate, $secs, $seed) = @_;
    my @socks = map {
        IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                              PeerPort => $redis->port, Proto => 'tcp')
            or die "redis: $!"
    } 1 .. 3;
    $_->blocking(0) for @socks;
    my @buf = ('') x 3;
    my @replies = (0) x 3;
    my @sent = (0) x 3;
    my $start = time;
    my $sent = 0;
    my $total = int($rate * $secs);
    my $run = int($start);
    while ($sent < $total) {
        my $now = time;
        my $due = int(($now - $start) * $rate);
        $due = $total if $due > $total;
        $due = $sent + 3000 if $due > $sent + 3000;     # flat out: batches
        $due = $sent if grep { length > (1 << 20) } @buf;
        while ($sent < $due) {
            my $t = int(($start + $sent / $rate) * 1000);
            my $n = $sent % 3;
            $buf[$n] .= resp('XADD', $stream, 'MAXLEN', '~', '1000000', '*',
                             'node', "f$n", 'key',
                             "https://www.example-news.com/articles/$run/$sent.html",
                             'fp', sprintf('%08x%08x', rand(2**32),
                                           rand(2**32)),
                             'digest', '0' x 16, 'time', $t, 'seed', $seed);
            $sent++;
            $sent[$n]++;
        }
        for my $i (0 .. 2) {
            while (length $buf[$i]) {
                my $w = syswrite($socks[$i], $buf[$i]);
                last unless $w;
                substr($buf[$i], 0, $w) = '';
            }
            my $in;
            $replies[$i] += ($in =~ tr/$//)
                while sysread($socks[$i], $in, 1 << 16);
        }
        my $next = $now + 0.010;
        my $left = $next - time;
        sleep $left if $left > 0 && $rate < 1e6;
    }
    # the rest, and every reply (ids only: a '$' each): a connection closed
    # while Redis writes replies loses the commands it has not read yet
    for my $i (0 .. 2) {
        $socks[$i]->blocking(1);
        print { $socks[$i] } $buf[$i];
        my $in;
        while ($replies[$i] < $sent[$i]
               && sysread($socks[$i], $in, 1 << 16))
        {
            $replies[$i] += ($in =~ tr/$//);
        }
        close $socks[$i];
    }
    return $sent;
}

sub resp {
    my $out = '*' . @_ . "\r\n";
    $out .= '$' . length($_) . "\r\n$_\r\n" for @_;
    return $out;
}

# The q-quantile of the lag histogram (cumulative buckets by upper bound in
# ms), interpolated linearly within its bucket.
sub quantile {
    my ($h, $q) = @_;
    my @b = sort { $a <=> $b } grep { /^\d+$/ } keys %$h;
    my $n = $h->{count} or return '-';
    my ($prev, $cum) = (0, 0);
    for my $le (@b) {
        if ($h->{$le} >= $q * $n) {
            my $in = $h->{$le} - $cum;
            my $f = $in ? ($q * $n - $cum) / $in : 1;
            return sprintf('%.1f', $prev + $f * ($le - $prev));
        }
        ($prev, $cum) = ($le, $h->{$le});
    }
    return "> $prev";
}

sub top_bucket {
    my ($h) = @_;
    my @b = sort { $a <=> $b } grep { /^\d+$/ } keys %$h;
    my $prev = 0;
    for my $le (@b) {
        return "<= $le ms" if $h->{$le} >= $h->{count};
        $prev = $le;
    }
    return "> $prev ms";
}

sub vocabulary {
    my %v;
    for my $f (glob("$TOP/t/fixtures/site/*.html")) {
        my $c = StressNginx::read_file($f) // next;
        $c =~ s/<[^>]*>/ /g;
        $v{lc $1}++ while $c =~ /([A-Za-z]{4,})/g;
    }
    return sort keys %v;
}
