#!/usr/bin/perl
# The index in a Redis Cluster under wrk: a lookup's latency, and new
# pages through the module with the cluster against the same module with a
# local-only zone, side by side in one run.
#
#   perl bench/cluster.pl BUILD
#
# A cluster of 6 redis-server processes (3 masters, 3 replicas;
# t/lib/RedisCluster.pm) loaded with BENCH_CLUSTER_DOCS documents of random
# fingerprints (`simhash cluster load --random`, default 2^20), and one
# nginx (a worker a core) with an origin and two proxies under one
# simhash_seed: `local` (a zone of its own, no cluster) and `cluster` (a
# zone of its own that asks the cluster on every local miss and writes the
# pages it calls new to it).  The pages are the real-web corpus (npm's
# htmlparser-benchmark, bench/webpages.sh), each request a random page
# under a unique query string, made new by the origin: sub_filter writes
# the request's id into the page's text in several places, so that its
# fingerprint is far from every other response's and the local zone misses
# (the case the cluster is asked about; a copy of a page the zone already
# holds is answered locally, without the cluster).  The runs alternate,
# local then cluster, ROUNDS times, with the same wrk settings; then one
# light run through the cluster proxy (LIGHT_CONNECTIONS connections), the
# lookup's latency when the worker is not busy with other pages; and 400
# lookups by hand (simhash_cluster_query), one at a time, on the idle
# worker: the lookup without a page's parse around it.
#
# Latency: the cluster zone's own histogram (`lookup_us` in the
# statistics: from a lookup's start, right after the page was fingerprinted
# and missed in the zone, to the decision made on its outcome), the
# difference over the runs, p50 and p99 by linear interpolation within
# its buckets (as Prometheus's histogram_quantile).  Throughput: wrk's
# req/s, summed over the rounds, cluster / local.  CPU per request of
# nginx's workers and of the redis-servers, from /proc.
#
# Recall, before the runs: pairs of near-duplicate pages, rust-doc's std
# pages beside the same pages under core and alloc (`make eval`'s aligned
# pairs, a sample of RECALL_PAIRS, default 2000): one side fingerprinted
# and APPENDed to the loaded cluster (`simhash cluster load --append`, the
# layout's bits kept) and built into a local index (`simhash index
# build`), the other side queried in both at h = 3 (`simhash cluster query
# --pages`, its buckets ranked by each page's own weights as a node's are;
# `simhash index query --match hamming --h 3`), both at the default
# relative recall target 0.95; the local index also with the cluster's
# table bits (--t FP_BITS: a zone of the cluster's size has about as
# many, and fewer bits find more at one k).  Recall: the pairs whose other
# side was found, over the pairs within h = 3 by their fingerprints.
#
# Why 4 connections: they keep both workers busy (the runs are CPU-bound)
# without a queue; at 32, each worker holds 16 pages at a few ms of parse
# each, a lookup's replies wait behind them in the event loop for tens of
# ms, and past cluster_timeout (50 ms) the page is skipped as incomplete
# (CONNECTIONS=32 shows it).
#
# Last, the bulk load from a zone's snapshot: `simhash store-bench` fills
# a store of 2^SNAPSHOT_LOG2N documents (real rust-doc fingerprints,
# relocated) and saves it as a zone's snapshot; the cluster is emptied
# (FLUSHALL) and `simhash cluster load --snapshot` loads it: its wall time.
#
# Environment: BENCH_NICE (a nice value for this run's redis-servers and
# nginx, e.g. -10 as root: on a shared machine, the tier's processes
# scheduled first, as on a machine of their own; default: not changed),
# BENCH_CLUSTER_DOCS (2^20), DURATION (seconds a run, 10),
# ROUNDS (2), CONNECTIONS (4), THREADS (2), LIGHT_CONNECTIONS (1),
# CLUSTER_TIMEOUT (cluster_timeout=, 50ms), RECALL_PAIRS (2000; 0: no
# recall phase), SNAPSHOT_LOG2N (20; 0: no snapshot phase).  Figures to
# stdout.
use strict;
use warnings;
no warnings qw(portable);
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use File::Path qw(make_path remove_tree);
use File::Temp ();
use HTTP::Tiny;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use RedisCluster;

my $top = "$FindBin::Bin/..";
my $build = shift // 'build';
$build = "$top/$build" unless $build =~ m{^/};
my $docs = $ENV{BENCH_CLUSTER_DOCS} // 2**20;
my $dur = $ENV{DURATION} // 10;
my $rounds = $ENV{ROUNDS} // 2;
my $conns = $ENV{CONNECTIONS} // 4;
my $threads = $ENV{THREADS} // 2;
my $light = $ENV{LIGHT_CONNECTIONS} // 1;
my $timeout = $ENV{CLUSTER_TIMEOUT} // '50ms';
my $module = "$build/nginx/ngx_http_simhash_module.so";
my $cli = "$build/simhash";
my $nginx = -x '/usr/sbin/nginx' ? '/usr/sbin/nginx' : 'nginx';
my $seed = 'bench-cluster-tier-secret';

sub have { my $c = shift; return !system("command -v $c >/dev/null 2>&1") }
unless (have('wrk') && RedisCluster::available()) {
    print "cluster: wrk, redis-server or redis-cli not installed, skipped\n";
    exit 0;
}
die "cluster: $module missing: run make module\n" unless -f $module;

chomp(my $web = `sh '$top/bench/webpages.sh' '$build'`);
if ($? || !-d $web) {
    print "cluster: the real-web corpus is out of reach, skipped\n";
    exit 0;
}

# nginx's prefix outside the build directory (its workers may be nobody;
# tools/nginx-tmpdir.sh)
chomp(my $tmp = `sh '$top/tools/nginx-tmpdir.sh'`);
my $prefix = File::Temp::tempdir("simhash-cluster-bench.XXXXXX",
                                 DIR => $tmp, CLEANUP => 1);
make_path(map { "$prefix/$_" } qw(conf logs tmp html/w));
opendir(my $dh, $web) or die "$web: $!";
my @pages = sort grep { /\.html$/ } readdir $dh;
closedir $dh;
my $bytes = 0;
for my $p (@pages) {
    local $/;
    open(my $i, '<:raw', "$web/$p") or die "$web/$p: $!";
    my $c = <$i>;
    $bytes += length $c;
    open(my $o, '>:raw', "$prefix/html/w/$p") or die $!;
    print $o $c;
}
open(my $lf, '>', "$prefix/pages") or die $!;
print $lf "/w/$_\n" for @pages;
close $lf;
system('chmod', '-R', 'a+rX', $prefix);

# ---- the cluster ----------------------------------------------------------

my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 5000);
$c->start;
my $t0 = time;
my $load = `'$cli' cluster load --seed '$seed' --redis @{[$c->addr]} --random $docs`;
die "cluster load failed\n" if $?;
my $load_s = time - $t0;
my ($fp_bits) = $load =~ /^fp_bits (\d+)/m;
my ($rec_bits) = $load =~ /^rec_bits (\d+)/m;
$_->cmd('WAIT', 1, 60000) for $c->masters;
my $mem = $c->used_memory;
# the buckets a lookup reads at h = 3 (k + 1: the calibrated k at 0.95)
my ($buckets) = `'$cli' cluster query --seed '$seed' --redis @{[$c->addr]} 0123456789abcdef` =~ /new \((\d+) buckets\)/;

# ---- recall, the cluster's lookup beside the local index's ----------------

my $recall = recall_phase();

# ---- nginx ----------------------------------------------------------------

my @ports = split ' ', `sh '$top/tools/free-ports.sh' 3`;
my ($origin, $local, $clp) = @ports;
chomp(my $workers = `nproc 2>/dev/null` || 2);
my $urls = $c->urls;

# the request's id in the page's visible text, in several places: each
# response a page of its own (far from every other one's fingerprint)
my $mark = join ' ', map { "bench\${request_id}x$_" } 1 .. 4;
open(my $cf, '>', "$prefix/conf/nginx.conf") or die $!;
print $cf <<"EOF";
load_module $module;
worker_processes $workers;
pid $prefix/logs/nginx.pid;
error_log $prefix/logs/error.log warn;
events { worker_connections 4096; }
http {
    types { text/html html; }
    access_log off;
    client_body_temp_path $prefix/tmp/body;
    proxy_temp_path       $prefix/tmp/proxy;
    fastcgi_temp_path     $prefix/tmp/fastcgi;
    uwsgi_temp_path       $prefix/tmp/uwsgi;
    scgi_temp_path        $prefix/tmp/scgi;
    keepalive_requests    100000;
    simhash_seed $seed;

    simhash_zone zone=local:256m;
    simhash_zone zone=cluster:256m cluster=$urls cluster_timeout=$timeout;

    server {
        listen 127.0.0.1:$origin;
        root $prefix/html;
        open_file_cache max=2000;
        sub_filter_once off;
        sub_filter '<p>' '<p>$mark ';
        sub_filter '<li>' '<li>$mark ';
        sub_filter '</title>' ' $mark</title>';
        sub_filter '</a>' ' $mark</a>';
        sub_filter '</body>' '<p>$mark $mark $mark</p></body>';
    }
    server {
        listen 127.0.0.1:$local;
        location / { simhash local; proxy_pass http://127.0.0.1:$origin; }
        location = /stats { simhash_stats; }
    }
    server {
        listen 127.0.0.1:$clp;
        location / { simhash cluster; proxy_pass http://127.0.0.1:$origin; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
    }
}
EOF
close $cf;

my @nginx = ($nginx, '-p', "$prefix/", '-c', "$prefix/conf/nginx.conf",
             '-e', "$prefix/logs/error.log");
system(@nginx) == 0 or die "nginx did not start\n";
my $http = HTTP::Tiny->new(timeout => 10);
END {
    if (@nginx && $prefix && -f "$prefix/logs/nginx.pid") {
        my $pid = do { local $/; open(my $p, '<', "$prefix/logs/nginx.pid");
                       <$p> };
        system(@nginx, '-s', 'stop');
        for (1 .. 100) { last unless $pid && kill(0, $pid); sleep 0.1 }
        system('cp', "$prefix/logs/error.log", "$build/bench/cluster-error.log")
            if -d "$build/bench";
    }
    $c->stop if $c;
}
sub stats {
    my ($port) = @_;
    my $r = $http->get("http://127.0.0.1:$port/stats");
    die "stats: $r->{status}\n" unless $r->{success};
    return decode_json($r->{content})->{zones};
}
for (1 .. 600) {
    last if eval { stats($clp)->{cluster}{cluster}{lookups} // 1 };
    sleep 0.05;
}
# BENCH_NICE=-10: this run's own processes (the redis-servers, nginx's
# master and workers, by their pids) ahead of the rest of a shared
# machine, as on one that runs the tier alone
if (my $nice = $ENV{BENCH_NICE}) {
    system('renice', '-n', $nice, '-p', (map { $_->{pid} } grep { $_->{pid} } $c->nodes),
           nginx_pids()) == 0 or warn "renice failed\n";
}

# ---- wrk ------------------------------------------------------------------

open(my $lua, '>', "$prefix/new.lua") or die $!;
print $lua <<'EOF';
local nthreads = 0
function setup(thread)
    nthreads = nthreads + 1
    thread:set("tid", nthreads)
end
function init(args)
    run = args[2]
    math.randomseed(tid * 7919)
    counter = 0
    paths = {}
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
end
function request()
    counter = counter + 1
    return wrk.format("GET", paths[math.random(#paths)] .. "?r=" .. run
                             .. "&t=" .. tid .. "&n=" .. counter)
end
EOF
close $lua;

# CPU seconds of nginx's workers and of the redis-servers
sub cpu_of {
    my @pids = @_;
    my $t = 0;
    for my $p (@pids) {
        open(my $s, '<', "/proc/$p/stat") or next;
        my $l = <$s>;
        $l =~ s/^.*\) //;
        my @f = split ' ', $l;
        $t += $f[11] + $f[12];
    }
    return $t / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}
sub nginx_pids {
    my $m = do { local $/; open(my $p, '<', "$prefix/logs/nginx.pid") or die;
                 <$p> };
    chomp $m;
    return split ' ', `pgrep -P $m`;
}
my @redis = map { $_->{pid} } grep { $_->{pid} } $c->nodes;

my $run = 0;
sub wrk {
    my ($port, $t, $cn, $secs) = @_;
    $run++;
    my ($n0, $r0) = (cpu_of(nginx_pids()), cpu_of(@redis));
    my $out = `wrk -t$t -c$cn -d${secs}s --latency -s '$prefix/new.lua' http://127.0.0.1:$port/ -- '$prefix/pages' $run 2>&1`;
    my ($n1, $r1) = (cpu_of(nginx_pids()), cpu_of(@redis));
    my %r = (out => $out, ncpu => $n1 - $n0, rcpu => $r1 - $r0);
    ($r{rps}) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    ($r{requests}) = $out =~ /(\d+) requests in/;
    ($r{p50}) = $out =~ /^\s+50%\s+(\S+)/m;
    ($r{p99}) = $out =~ /^\s+99%\s+(\S+)/m;
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    my @se = $out =~ /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/;
    $r{errors} = ($non2xx // 0) + eval { my $s = 0; $s += $_ for @se; $s };
    die "wrk:\n$out" unless $r{rps};
    return \%r;
}

sub delta {
    my ($a, $b) = @_;
    return { map { $_ => ($a->{$_} // 0) - ($b->{$_} // 0) } keys %$a };
}
sub responses { my ($z) = @_; return { %{ $z->{responses} } } }

# p-quantile of a cumulative histogram (keys: upper bounds in us, +Inf)
sub quantile {
    my ($h, $q) = @_;
    my @b = sort { $a <=> $b } grep { /^\d+$/ } keys %$h;
    my $n = $h->{count} or return 'n/a';
    my ($lo, $below) = (0, 0);
    for my $ub (@b) {
        if ($h->{$ub} >= $q * $n) {
            my $in = $h->{$ub} - $below;
            return $ub if $in <= 0;
            return $lo + ($ub - $lo) * ($q * $n - $below) / $in;
        }
        ($lo, $below) = ($ub, $h->{$ub});
    }
    return "> $lo";
}
sub hist { my ($z) = @_; return { %{ $z->{cluster}{lookup_us} } } }

# warm-up: the page cache, the stemmer's cache, every worker's connections
wrk($local, $threads, $conns, 2);
wrk($clp, $threads, $conns, 2);

my (@loc, @clu);
my $s0 = stats($clp)->{cluster};
my $l0 = stats($local)->{local};
my ($h_load, $c_load, $st_clu, $st_loc) = ({}, {}, {}, {});
for my $i (1 .. $rounds) {
    push @loc, wrk($local, $threads, $conns, $dur);
    push @clu, wrk($clp, $threads, $conns, $dur);
}
my $s1 = stats($clp)->{cluster};
my $l1 = stats($local)->{local};
my $hl = delta(hist($s1), hist($s0));
my %cl = map { $_ => $s1->{cluster}{$_} - $s0->{cluster}{$_} }
         qw(lookups found new writes write_errors);
my $inc = 0;
$inc += $s1->{cluster}{incomplete}{$_} - $s0->{cluster}{incomplete}{$_}
    for keys %{ $s1->{cluster}{incomplete} };
my $rc = delta(responses($s1), responses($s0));
my $rl = delta(responses($l1), responses($l0));

my $lt = wrk($clp, 1, $light, $dur);
my $s2 = stats($clp)->{cluster};
my $hq = delta(hist($s2), hist($s1));

# a lookup by hand on an idle worker (simhash_cluster_query), one at a
# time: the lookup without a page's parse around it
my @hand;
for my $i (1 .. 400) {
    my $r = $http->get(sprintf "http://127.0.0.1:$clp/cq?zone=cluster&fp=%08x%08x",
                       int(rand(2**32)), int(rand(2**32)));
    my ($us) = ($r->{content} // '') =~ /"status":"(?:new|found)".*"us":(\d+)/;
    push @hand, $us if defined $us;
}
@hand = sort { $a <=> $b } @hand;

# the floor on this machine: one round trip to a master, alone
# (redis-benchmark, one connection, PING)
my $floor = '';
if (have('redis-benchmark')) {
    my $port = ($c->masters)[0]->port;
    my $csv = `timeout 120 redis-benchmark -p $port -t ping -n 20000 -c 1 --csv 2>/dev/null`;
    my ($l) = grep { /^"PING_MBULK"/ } split /\n/, $csv;
    if ($l) {
        my @f = map { s/"//gr } split /,/, $l;
        # test, rps, avg, min, p50, p95, p99, max (ms)
        $floor = sprintf "one round trip to a master alone (redis-benchmark "
            . "-t ping -c 1): p50 %.0f us, p99 %.0f us", 1000 * $f[4],
            1000 * $f[6];
    }
}

# ---- the load from a zone's snapshot --------------------------------------

sub snapshot_phase {
    my $log2n = $ENV{SNAPSHOT_LOG2N} // 20;
    return "snapshot load: SNAPSHOT_LOG2N=0, skipped" unless $log2n;
    my ($idx) = grep { -f } map { "$_/std/index.html" }
                </usr/share/doc/rust-doc/html>;
    return "snapshot load: rust-doc not installed, skipped" unless $idx;
    (my $rust = $idx) =~ s{/std/index\.html$}{};
    my $dir = "$prefix/snap";
    make_path($dir, "$build/bench");
    system("find '$rust' -name '*.html' -type f | LC_ALL=C sort > '$dir/pages'");
    my $out = `'$cli' store-bench --list '$dir/pages' --cache '$build/bench/store-pages.cache' --log2n $log2n --queries 1000 --image-dir '$dir' --keep yes 2>&1`;
    my ($file) = glob("$dir/*.snap");
    return "snapshot load: store-bench wrote no snapshot:\n$out" unless $file;
    $_->cmd('FLUSHALL') for $c->masters;
    my $t = time;
    my $l = `'$cli' cluster load --redis @{[$c->addr]} --snapshot '$file' 2>&1`;
    my $wall = time - $t;
    return "snapshot load failed:\n$l" if $?;
    my ($n) = $l =~ /^documents (\d+)/m;
    return sprintf "load from a zone's snapshot (2^%d documents, %.0f MB "
        . "file, store-bench's): %d documents in %.1f s (%.1f us a "
        . "document), simhash cluster load --snapshot", $log2n,
        (-s $file) / 1e6, $n, $wall, 1e6 * $wall / ($n || 1);
}

# ---- the recall phase -----------------------------------------------------

sub recall_phase {
    my $n = $ENV{RECALL_PAIRS} // 2000;
    return "recall: RECALL_PAIRS=0, skipped" unless $n;
    my ($idx) = grep { -f } map { "$_/std/index.html" }
                </usr/share/doc/rust-doc/html>;
    return "recall: rust-doc not installed (tools/deps.sh eval), skipped"
        unless $idx;
    (my $rust = $idx) =~ s{/std/index\.html$}{};
    my @pairs;
    for my $other (qw(core alloc)) {
        for my $f (split /\n/, `cd '$rust/std' && find . -name '*.html' -type f | LC_ALL=C sort`) {
            $f =~ s{^\./}{};
            push @pairs, ["$rust/std/$f", "$rust/$other/$f"]
                if -f "$rust/$other/$f";
        }
    }
    srand(46);
    for (my $i = $#pairs; $i > 0; $i--) {
        my $j = int rand($i + 1);
        @pairs[$i, $j] = @pairs[$j, $i];
    }
    splice(@pairs, $n) if @pairs > $n;
    my $dir = "$prefix/recall";
    make_path($dir);
    open(my $a, '>', "$dir/a.lst") or die $!;
    print $a "$_->[0]\n" for @pairs;
    close $a;
    # side A: fingerprints, as documents of their own ids
    my %fp_a;
    my $i = 0;
    open(my $d, '>', "$dir/a.docs") or die $!;
    for (split /\n/, `'$cli' fingerprint --seed '$seed' --list '$dir/a.lst'`) {
        my ($fp, undef, $path) = split /\t/;
        next if $fp eq '-';
        $fp_a{$path} = $fp;
        printf $d "%016x %s 1 1700000000 0 0\n", 0x5eed0000 + $i++, $fp;
    }
    close $d;
    system("'$cli' cluster load --seed '$seed' --redis @{[$c->addr]} "
           . "--append --fp-bits $fp_bits --rec-bits $rec_bits '$dir/a.docs' "
           . ">/dev/null") == 0 or die "cluster load --append failed\n";
    $_->cmd('WAIT', 1, 60000) for $c->masters;
    system("'$cli' index build --seed '$seed' --list '$dir/a.lst' "
           . "-o '$dir/a.idx' >/dev/null") == 0 or die "index build failed\n";
    my @b = map { $_->[1] } grep { $fp_a{$_->[0]} } @pairs;
    my %a_of = map { $_->[1] => $_->[0] } @pairs;
    # side B in the cluster: "page PATH FP", then "FP near FP2 id ..."
    my (%fp_b, %cl_found, $page);
    my $t = time;
    for (split /\n/, `'$cli' cluster query --seed '$seed' --redis @{[$c->addr]} --pages --h 3 @b`) {
        if (/^page (\S+) ([0-9a-f]{16})$/) {
            ($page, $fp_b{$1}) = ($1, $2);
        } elsif ($page && /^\S+ near ([0-9a-f]{16}) /) {
            $cl_found{$page} = 1 if $1 eq $fp_a{$a_of{$page}};
        }
    }
    my $cl_s = time - $t;
    # side B in the local index: "PAGE\tSTORED\tDISTANCE" a match; and
    # in one of the cluster's table bits (--t), as a zone of the cluster's
    # size would have about as many
    my (%ix_found, %ixt_found);
    for (split /\n/, `'$cli' index query --seed '$seed' --match hamming --h 3 '$dir/a.idx' @b`) {
        my ($p, $stored) = split /\t/;
        $ix_found{$p} = 1 if defined $stored && $stored eq $a_of{$p};
    }
    system("'$cli' index build --seed '$seed' --list '$dir/a.lst' --t $fp_bits "
           . "-o '$dir/a-t.idx' >/dev/null 2>&1") == 0
        or die "index build --t failed\n";
    for (split /\n/, `'$cli' index query --seed '$seed' --match hamming --h 3 '$dir/a-t.idx' @b`) {
        my ($p, $stored) = split /\t/;
        $ixt_found{$p} = 1 if defined $stored && $stored eq $a_of{$p};
    }
    my ($within, $cl, $ix, $ixt) = (0, 0, 0, 0);
    for my $p (@b) {
        next unless $fp_b{$p};
        my $dist = unpack('%32b*', pack('Q>', hex($fp_b{$p}) ^ hex($fp_a{$a_of{$p}})));
        next if $dist > 3;
        $within++;
        $cl++ if $cl_found{$p};
        $ix++ if $ix_found{$p};
        $ixt++ if $ixt_found{$p};
    }
    my $all_cl = grep { $cl_found{$_} } @b;
    my $all_ix = grep { $ix_found{$_} } @b;
    return sprintf "recall at h = 3, %d rust-doc pairs (std beside core/alloc), "
        . "%d of them within h = 3 by their fingerprints: cluster %d (%.4f), "
        . "local index %d (%.4f; with the cluster's %d table bits, --t %d: "
        . "%d, %.4f); of all pairs: cluster %d (%.4f), local %d (%.4f); the "
        . "cluster's %d queries took %.1f s (the CLI, blocking, "
        . "fingerprinting included)", scalar @b, $within, $cl,
        $within ? $cl / $within : 0, $ix, $within ? $ix / $within : 0,
        $fp_bits, $fp_bits, $ixt, $within ? $ixt / $within : 0,
        $all_cl, @b ? $all_cl / @b : 0, $all_ix, @b ? $all_ix / @b : 0,
        scalar @b, $cl_s;
}

# ---- the report -----------------------------------------------------------

sub sum { my $s = 0; $s += $_ for @_; return $s }
my $rps_l = sum(map { $_->{rps} } @loc) / @loc;
my $rps_c = sum(map { $_->{rps} } @clu) / @clu;
my $req_l = sum(map { $_->{requests} } @loc);
my $req_c = sum(map { $_->{requests} } @clu);
my $errors = sum(map { $_->{errors} } @loc, @clu, $lt);
sub status_line {
    my ($r) = @_;
    return join ', ', map { "$r->{$_} $_" } grep { $r->{$_} } sort keys %$r;
}
sub us { my $v = shift; return $v =~ /^[\d.]+$/ ? sprintf('%.0f us', $v) : "$v us" }

printf "cluster: 3 masters + 3 replicas on this machine, %d documents "
     . "loaded in %.1f s (fp_bits %d, rec_bits %d), used_memory of the "
     . "masters %.1f MB; a lookup reads %s table buckets at h = 3\n",
     $docs, $load_s, $fp_bits, $rec_bits, $mem / 1e6, $buckets // '?';
printf "pages: %d real-web pages (%.1f MB), each response made new by the "
     . "origin; wrk -t%d -c%d -d%ds, %d rounds alternated, nginx %d "
     . "workers\n\n", scalar @pages, $bytes / 1e6, $threads, $conns, $dur,
     $rounds, $workers;
printf "%-8s %-6s %9s %9s %9s %12s %12s\n", 'zone', 'round', 'req/s',
       'p50', 'p99', 'nginx us/req', 'redis us/req';
for my $i (0 .. $#loc) {
    for my $x (['local', $loc[$i]], ['cluster', $clu[$i]]) {
        my $r = $x->[1];
        printf "%-8s %-6d %9.0f %9s %9s %12.0f %12.0f\n", $x->[0], $i + 1,
               $r->{rps}, $r->{p50}, $r->{p99},
               1e6 * $r->{ncpu} / $r->{requests},
               1e6 * $r->{rcpu} / $r->{requests};
    }
}
printf "\nthroughput, new pages: cluster %.0f req/s, local-only %.0f req/s: "
     . "ratio %.2f (target >= 0.7: %s)\n", $rps_c, $rps_l, $rps_c / $rps_l,
     $rps_c / $rps_l >= 0.7 ? 'met' : 'NOT MET';
printf "nginx CPU a request: cluster %.0f us, local %.0f us; redis CPU a "
     . "cluster lookup %.0f us\n",
     1e6 * sum(map { $_->{ncpu} } @clu) / $req_c,
     1e6 * sum(map { $_->{ncpu} } @loc) / $req_l,
     1e6 * sum(map { $_->{rcpu} } @clu) / ($cl{lookups} || 1);
print "responses through local: ", status_line($rl), "\n";
print "responses through cluster: ", status_line($rc), "\n";
printf "cluster lookups: %d (%d new, %d found, %d incomplete), writes %d "
     . "(%d lost)\n", $cl{lookups}, $cl{new}, $cl{found}, $inc, $cl{writes},
     $cl{write_errors};
printf "lookup latency under load (-c%d, %d lookups, the zone's lookup_us): "
     . "p50 %s, p99 %s, mean %s (target p99 <= 300 us: %s)\n", $conns,
     $hl->{count}, us(quantile($hl, 0.5)), us(quantile($hl, 0.99)),
     us($hl->{count} ? $hl->{sum} / $hl->{count} : 0),
     (quantile($hl, 0.99) =~ /^[\d.]+$/ && quantile($hl, 0.99) <= 300)
         ? 'met' : 'NOT MET';
printf "lookup latency light (-t1 -c%d, %.0f req/s, %d lookups): p50 %s, "
     . "p99 %s, mean %s (target p99 <= 300 us: %s)\n", $light, $lt->{rps},
     $hq->{count}, us(quantile($hq, 0.5)), us(quantile($hq, 0.99)),
     us($hq->{count} ? $hq->{sum} / $hq->{count} : 0),
     (quantile($hq, 0.99) =~ /^[\d.]+$/ && quantile($hq, 0.99) <= 300)
         ? 'met' : 'NOT MET';
for my $x (['under load', $hl], ['light', $hq]) {
    my $h = $x->[1];
    my ($prev, @b) = (0);
    for my $ub (sort { $a <=> $b } grep { /^\d+$/ } keys %$h) {
        push @b, "<=$ub: " . ($h->{$ub} - $prev) if $h->{$ub} > $prev;
        $prev = $h->{$ub};
    }
    push @b, '+Inf: ' . ($h->{'+Inf'} - $prev) if $h->{'+Inf'} > $prev;
    print "  lookup_us $x->[0]: @b\n";
}
printf "a lookup by hand on an idle worker (simhash_cluster_query, %d in a "
     . "row): p50 %d us, p99 %d us\n", scalar @hand, $hand[@hand / 2],
     $hand[int(@hand * 0.99)] if @hand;
print "$floor\n" if $floor;
print snapshot_phase(), "\n";
print "$recall\n";
if (open(my $la, '<', '/proc/loadavg')) {
    printf "load average at the end: %s", scalar <$la>;
}
print "errors: ", ($errors ? "$errors (see wrk's output)" : 'none'), "\n";
