#!/usr/bin/perl
# `make stress`: load and faults through a real nginx with 4 workers.
#
#   perl stress/run.pl BUILD        (tools/stress.sh runs it)
#
# Two nginx instances in a fresh directory under /tmp (RUN, see below): an
# origin serving the corpus
# of stress/gen-corpus.pl, and the proxy with the module (worker_processes
# 4, a 1m zone of about 4,300 documents with file= and save=2s, drop mode on
# /drop/, tag mode elsewhere; a second server block on another port is the
# same proxy with `simhash_insert off`, used to look keys up without
# changing the zone).  wrk (stress/mix.lua) drives the proxy with 256
# connections.  Phases:
#
#   A  steady load, no faults, after a 20 s warm-up with the largest
#      bodies: zero 5xx, no worker signal, worker memory flat (RSS and PSS
#      sampled every 2 s; the medians of the first and last 10 s)
#   B  load with faults: kill -9 a worker every 3 s, nginx -s reload four
#      times, the zone filled past capacity; zero 5xx, every signal in the
#      log one of our SIGKILLs, workers respawned
#   C  the snapshot once the saves settle: `simhash index check` passes,
#      and every key of `simhash index dump` is found again (unchanged or
#      changed) through the lookup-only server
#   D  kill -9 of the master under load (and of its orphaned workers, as a
#      supervisor would): nginx starts from the snapshot, restores it, every
#      key of it is found, no crash loop; then a snapshot with a corrupt
#      block of documents: the other blocks restored, an [error] line, the
#      file kept aside; and a truncated one: refused with an [error] line,
#      the zone starts empty; nginx serves
#   E  one nginx process under valgrind with the same mix: 0 errors
#   F  DUST on and a Redis Cluster (3 masters, 3 replicas) behind the
#      zone, under load: kill -9 of a worker every 3 s, kill -9 of a Redis
#      master, nginx -s reload three times; zero 5xx, no socket timeout,
#      the slowest response bounded, the master's outage counted
#      (incomplete lookups) and the cluster answering in full again after
#      its failover, and nothing answered from a partial read: the access
#      log's new pages are no more than the lookups the cluster answered
#      in full, its skipped pages (index_incomplete) no more than the
#      incomplete ones.  Skipped without redis-server and redis-cli.
#
# Environment: STRESS_A / STRESS_B (seconds, default 60), STRESS_CONNS
# (default 256), STRESS_VALGRIND=0 skips phase E, STRESS_SEED,
# STRESS_PHASES (default ABCDEF; a subset for experiments), STRESS_KILL_EVERY
# (seconds between worker kills in B and F, default 3), STRESS_WARM (default
# 20), STRESS_F (seconds of phase F, default 40).
# Prints a summary table (also in BUILD/stress/summary.txt) and exits 1 if
# any criterion failed.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Copy qw(copy);
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use FindBin;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

use lib "$FindBin::Bin/lib";
use StressNginx;

my $TOP = abs_path("$FindBin::Bin/..");
my $BUILD = abs_path(shift // "$TOP/build");
my $BASE = "$BUILD/stress";
my $CORPUS = "$BASE/corpus";    # generated once, kept between runs

# Every nginx prefix, and the copy of the corpus the origin serves, live in
# RUN, not in BUILD: run as root, nginx's workers are nobody, and a checkout
# under ~root or `mktemp -d` (0700) is closed to them (see
# tools/nginx-tmpdir.sh).  What we write there must be readable by them
# whatever the caller's umask.  RUN is removed after a run that passed.
umask 022;
chomp(my $TMP = `$TOP/tools/nginx-tmpdir.sh`);
my $RUN = tempdir('simhash-stress-XXXXXX', DIR => $TMP);
chmod 0755, $RUN;
my $SERVED = "$RUN/corpus";

my $DUR_A = $ENV{STRESS_A} // 60;
my $DUR_B = $ENV{STRESS_B} // 60;
my $CONNS = $ENV{STRESS_CONNS} // 256;
my $SEED = $ENV{STRESS_SEED} // 1;
my $PHASES = $ENV{STRESS_PHASES} // 'ABCDEF';    # a subset, for experiments
my $WARM = $ENV{STRESS_WARM} // 20;

# glibc raises its mmap threshold each time a large block is freed, after
# which large blocks come from the heap and the heap keeps its high-water
# mark: the RSS of a worker then climbs in steps for minutes (measured:
# 12 -> 19 MB over 150 s of this mix, flat per-request otherwise).  A fixed
# threshold makes RSS follow the live memory, so that a leak shows within
# a minute.  The proxy runs with it (STRESS_MALLOC=default: without).
my %MALLOC = ($ENV{STRESS_MALLOC} // '') eq 'default' ? ()
           : (MALLOC_MMAP_THRESHOLD_ => 65536);
my $KILL_EVERY = $ENV{STRESS_KILL_EVERY} // 3;
my @RELOAD_AT = map { int($DUR_B * $_) } 0.15, 0.4, 0.65, 0.88;
my $DUR_F = $ENV{STRESS_F} // 40;
my $CLUSTER_SEED = 'stress-cluster-seed';

my @rows;       # [phase, what, figure, ok (1, 0, or undef: information)]
my %children;   # pid => what its command line starts with: wrk, valgrind

$| = 1;

# ---- setup --------------------------------------------------------------

sub say { print "stress: @_\n" }

sub row {
    my ($phase, $what, $figure, $ok) = @_;
    push @rows, [$phase, $what, $figure, $ok];
    printf "  %-2s %-44s %s%s\n", $phase, $what, $figure,
           !defined $ok ? '' : $ok ? '' : '   <-- FAILED';
}

sub copy_binaries {
    make_path("$RUN/bin");
    my $so = "$BUILD/nginx/ngx_http_simhash_module.so";
    my $cli = "$BUILD/simhash";
    -f $so && -x $cli or die "stress: $so or $cli missing: run make all\n";
    # copies: the shared build/ may be rebuilt while we run.  Each is a new
    # file renamed into place: rewriting a loaded .so in place changes the
    # code under whatever still maps it (a crash loop of its workers).
    for ([$so, "$RUN/bin/ngx_http_simhash_module.so"],
         [$cli, "$RUN/bin/simhash"])
    {
        my ($from, $to) = @$_;
        copy($from, "$to.new") or die "$from: $!";
        chmod 0755, "$to.new";
        rename("$to.new", $to) or die "$to: $!";
    }
    chmod 0755, "$RUN/bin";
}

sub ensure_corpus {
    my $want = `perl -ne 'print \$1 if /^our \\\$VERSION = (\\d+)/' $TOP/stress/gen-corpus.pl`;
    my $have = StressNginx::read_file("$CORPUS/.stamp") // '';
    chomp $have;
    if ($have ne $want) {
        say("generating the corpus in $CORPUS");
        system('perl', "$TOP/stress/gen-corpus.pl", $CORPUS) == 0
            or die "stress: corpus generation failed\n";
    }
    system('cp', '-R', $CORPUS, $SERVED) == 0
        && system('chmod', '-R', 'u=rwX,go=rX', $SERVED) == 0
        or die "stress: copying the corpus to $SERVED failed\n";
}

sub temp_paths {
    my ($d) = @_;
    return join '', map { "    ${_}_temp_path $d/tmp/$_;\n" }
                    qw(client_body proxy fastcgi uwsgi scgi);
}

sub origin_conf {
    my ($d, $port) = @_;
    return StressNginx::user_directive() . <<"EOF";
worker_processes 2;
worker_rlimit_nofile 16384;
pid $d/logs/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 4096; }
http {
    types { text/html html shtml; image/png png; application/json json; }
    default_type application/octet-stream;
    access_log off;
${\ temp_paths($d)}
    keepalive_requests 100000;
    gzip_http_version 1.0;
    gzip_proxied any;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $SERVED/html;
        location /gz/ { alias $SERVED/html/; gzip on; gzip_min_length 1; }
        location /gzs/ { gzip_static on; }
        location /bigz/ { gzip_static on; }
        location /badgz/ { gzip_static on; }
        location ~ \\.shtml\$ { ssi on; }
    }
}
EOF
}

# The proxy.  `probes` changes on each reload so that a reload is a real
# configuration change (the zone, same name and size, is kept).
sub proxy_conf {
    my ($d, $p, %opt) = @_;
    my $workers = $opt{workers} // 4;
    my $probes = $opt{probes} // 'recall=0.95';
    # phase F: DUST on and the cluster behind the zone, every decision in
    # the access log
    my ($zone, $more, $log) = ('', '', 'access_log off;');
    if ($opt{cluster}) {
        $zone = " dust=1m cluster=$opt{cluster} cluster_timeout=200ms";
        $more = "        simhash_seed $CLUSTER_SEED;\n"
              . "        simhash_dust on;\n";
        $log = "log_format decisions '\$status \$simhash_status "
             . "\$request_time';\n"
             . "    access_log $d/logs/access.log decisions;";
    }
    my $locations = <<"EOF";
        simhash crawl;
$more        simhash_probes $probes;
        location / { proxy_pass http://origin; }
        location /drop/ {
            simhash_action drop;
            proxy_pass http://origin/;
        }
EOF
    return StressNginx::user_directive() . <<"EOF";
load_module $RUN/bin/ngx_http_simhash_module.so;
worker_processes $workers;
worker_rlimit_nofile 16384;
worker_shutdown_timeout 10s;
pid $d/logs/nginx.pid;
error_log $d/logs/error.log info;
events { worker_connections 4096; }
http {
    types { text/html html shtml; image/png png; application/json json; }
    default_type application/octet-stream;
    $log
${\ temp_paths($d)}
    upstream origin {
        server 127.0.0.1:$p->{origin};
        keepalive 32;
    }
    proxy_http_version 1.1;
    proxy_set_header Connection "";

    simhash_zone zone=crawl:1m file=$d/data/crawl.snap save=2s$zone;
    simhash_max_body 256k;

    server {
        listen 127.0.0.1:$p->{proxy} backlog=4096;
$locations
        location = /simhash-stats { simhash_stats; }
    }
    server {
        listen 127.0.0.1:$p->{verify};
        simhash_insert off;
        # the keys the proxy server stores name its port
        simhash_key \$scheme://127.0.0.1:$p->{proxy}\$request_uri;
$locations
    }
}
EOF
}

# ---- wrk ----------------------------------------------------------------

sub wrk_start {
    my ($name, $secs, $conns, $port, $only) = @_;
    my $out = "$RUN/wrk-$name.txt";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDOUT, '>', $out) or die "$out: $!";
        open(STDERR, '>&', \*STDOUT);
        exec('wrk', '-t2', "-c$conns", "-d${secs}s", '--timeout', '10s',
             '-s', "$TOP/stress/mix.lua", "http://127.0.0.1:$port", '--',
             "$CORPUS/mix.tsv", $SEED + length $name, $only // ())
            or POSIX::_exit(127);
    }
    $children{$pid} = 'wrk';
    return { pid => $pid, out => $out, t0 => time, secs => $secs };
}

sub wrk_running { waitpid($_[0]{pid}, WNOHANG) == 0 }

sub wrk_wait { waitpid($_[0]{pid}, 0); return wrk_result($_[0]) }

# wrk's report and mix.lua's counters.
sub wrk_result {
    my ($w) = @_;
    my $txt = StressNginx::read_file($w->{out}) // '';
    my %r = (status => {}, simhash => {}, text => $txt);
    $r{status}{$1} = $2 while $txt =~ /^mix: status (\d+) (\d+)$/mg;
    $r{simhash}{$1} = $2 while $txt =~ /^mix: simhash (\S+) (\d+)$/mg;
    if ($txt =~ /^mix: errors connect (\d+) read (\d+) write (\d+) status (\d+) timeout (\d+)/m) {
        @r{qw(connect read write http_errors timeout)} = ($1, $2, $3, $4, $5);
    }
    if ($txt =~ /^mix: requests (\d+) duration_us (\d+) bytes (\d+)/m) {
        @r{qw(requests duration bytes)} = ($1, $2 / 1e6, $3);
    }
    die "stress: wrk failed:\n$txt" unless defined $r{requests};
    # wrk's own table: "Latency AVG STDEV MAX +/-"
    if ($txt =~ /^\s*Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s|m)\b/m) {
        $r{max_latency} = $1 * { us => 1e-6, ms => 1e-3, s => 1,
                                 m => 60 }->{$2};
    }
    $r{rps} = $r{duration} ? $r{requests} / $r{duration} : 0;
    $r{socket_errors} = $r{connect} + $r{read} + $r{write} + $r{timeout};
    ($r{s5xx}, $r{s4xx}, $r{s2xx}) = (0, 0, 0);
    for my $code (keys %{ $r{status} }) {
        my $n = $r{status}{$code};
        $r{s5xx} += $n if $code >= 500;
        $r{s4xx} += $n if $code >= 400 && $code < 500;
        $r{s2xx} += $n if $code < 400;
    }
    return \%r;
}

sub status_text {
    my ($h) = @_;
    return join ', ', map { "$_: $h->{$_}" } sort keys %$h;
}

# The rows every load phase reports: volume, statuses, no 5xx or 4xx.
sub load_rows {
    my ($phase, $r) = @_;
    row($phase, 'requests (req/s)',
        sprintf('%d (%.0f/s)', $r->{requests}, $r->{rps}),
        $r->{requests} > 0);
    row($phase, 'HTTP statuses', status_text($r->{status}));
    row($phase, 'X-Simhash-Status', status_text($r->{simhash}));
    row($phase, '5xx responses', $r->{s5xx}, $r->{s5xx} == 0);
    row($phase, '4xx responses', $r->{s4xx}, $r->{s4xx} == 0);
}

# ---- the error log ------------------------------------------------------

# Signals, respawns and other alarms in a piece of the log.  `killed`: the
# workers we sent SIGKILL to.
sub log_faults {
    my ($text, $killed) = @_;
    my %f = (sigkill => 0, other_signal => [], locked => 0, alarms => [],
             saves => 0, save_errors => 0, repaired => 0);
    for my $line (split /\n/, $text) {
        if ($line =~ /(\S+ process) (\d+) exited on signal (\d+)/) {
            if ($3 == 9 && $killed->{$2}) {
                $f{sigkill}++;
            } else {
                push @{ $f{other_signal} }, $line;
            }
            next;
        }
        if ($line =~ /shared memory zone "crawl" was locked by/) {
            $f{locked}++;           # a kill landed inside the zone's lock
            next;
        }
        if ($line =~ /simhash zone "crawl": worker process \d+ died while changing it/) {
            $f{repaired}++;         # the zone rebuilt after such a kill
            next;
        }
        $f{saves}++ if $line =~ /simhash zone "crawl" saved to/;
        $f{save_errors}++ if $line =~ /simhash zone "crawl": saving .* failed/;
        push @{ $f{alarms} }, $line
            if $line =~ /\[(alert|crit|emerg)\]/
               || $line =~ /\[(error|warn)\].*simhash/;
    }
    return \%f;
}

# ---- memory -------------------------------------------------------------

sub sample_memory {
    my ($ng, $series, $t0) = @_;
    for my $pid ($ng->workers) {
        my ($rss, $pss) = StressNginx::memory($pid);
        push @{ $series->{$pid} }, [time - $t0, $rss, $pss] if $rss;
    }
}

sub write_series {
    my ($file, $series) = @_;
    my $txt = "# seconds\tpid\trss_kb\tpss_kb\n";
    for my $pid (sort { $a <=> $b } keys %$series) {
        $txt .= sprintf("%.1f\t%d\t%d\t%d\n", @$_[0], $pid, @$_[1, 2])
            for @{ $series->{$pid} };
    }
    StressNginx::write_file($file, $txt);
}

sub median {
    my @v = sort { $a <=> $b } @_;
    return @v ? $v[$#v / 2] : 0;
}

# Per worker alive through the whole run: the median RSS and PSS of its
# first and of its last `win` seconds of samples, and its peak RSS.
sub memory_trend {
    my ($series, $secs, $win) = @_;
    my @t;
    for my $pid (sort { $a <=> $b } keys %$series) {
        my @s = @{ $series->{$pid} };
        next unless @s >= 3 && $s[0][0] < 3 && $s[-1][0] > $secs - 3;
        my @first = grep { $_->[0] < $win } @s;
        my @last = grep { $_->[0] >= $secs - $win } @s;
        push @t, { pid => $pid,
                   start => [median(map { $_->[1] } @first),
                             median(map { $_->[2] } @first)],
                   end => [median(map { $_->[1] } @last),
                           median(map { $_->[2] } @last)],
                   peak => (sort { $b <=> $a } map { $_->[1] } @s)[0] };
    }
    return @t;
}

# ---- a load run with a schedule of faults -------------------------------

sub run_load {
    my ($ng, %opt) = @_;
    my @events = sort { $a->[0] <=> $b->[0] } @{ $opt{events} || [] };
    my %series;
    my $w = wrk_start($opt{name}, $opt{secs}, $opt{conns} || $CONNS,
                      $ng->{port}, $opt{only});
    my $next_sample = 0;
    while (wrk_running($w)) {
        my $t = time - $w->{t0};
        while (@events && $events[0][0] <= $t) {
            (shift @events)->[1]->($t);
        }
        if ($t >= $next_sample) {
            sample_memory($ng, \%series, $w->{t0});
            $next_sample += 2;
        }
        sleep 0.1;
    }
    my $r = wrk_result($w);
    $r->{memory} = \%series;
    write_series("$BASE/memory-$opt{name}.tsv", \%series);
    return $r;
}

# ---- key verification through the lookup-only server --------------------

# The documents of a snapshot that have a key record, which are what a
# restart restores, and the count of the index copy's documents whose key
# was not written (`-`: changed between the copy and the write of its key,
# left for the next save): (\@docs, $keyless).
sub read_dump {
    my ($file) = @_;
    my @e;
    my $keyless = 0;
    open(my $fh, '-|', "$RUN/bin/simhash", 'index', 'dump', $file)
        or die "simhash: $!";
    while (<$fh>) {
        chomp;
        my ($hash, $ref, $key) = split /\t/, $_, 3;
        if (!defined $key || $key eq '-') {
            $keyless++;
            next;
        }
        push @e, { hash => $hash, key => $key };
    }
    close $fh;
    return (\@e, $keyless);
}

sub index_check {
    my ($file) = @_;
    my $out = `'$RUN/bin/simhash' index check '$file' 2>&1`;
    my %r = (rc => $? >> 8, text => $out);
    $r{$1} = $2 while $out =~ /^(\w+)\t(.*)$/mg;
    return \%r;
}

# Look every key up (GET through the simhash_insert-off server): found
# means "unchanged" or "changed"; also whether the fingerprint is the
# stored one (static pages: distance 0).  Four processes in parallel.
sub verify_keys {
    my ($ng, $entries) = @_;
    my $nproc = 4;
    my @kids;
    for my $k (0 .. $nproc - 1) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            open(my $out, '>', "$RUN/verify.$k") or POSIX::_exit(1);
            for (my $i = $k; $i < @$entries; $i += $nproc) {
                my $e = $entries->[$i];
                my ($path) = $e->{key} =~ m{^https?://[^/]*(/.*)$};
                my $r = $ng->get($path // '/', port => $ng->{verify});
                my $h = $r->{headers};
                print $out join("\t", $r->{status},
                                $h->{'x-simhash-status'} // '-',
                                $h->{'x-simhash-distance'} // '-',
                                ($h->{'x-simhash'} // '') eq $e->{hash}
                                ? 1 : 0, $e->{key}), "\n";
            }
            close $out;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid($_, 0) for @kids;
    my %v = (total => scalar @$entries, found => 0, same => 0, static => 0,
             static_same => 0, missing => []);
    for my $k (0 .. $nproc - 1) {
        open(my $in, '<', "$RUN/verify.$k") or die "verify.$k: $!";
        while (<$in>) {
            chomp;
            my ($code, $status, $dist, $same, $key) = split /\t/;
            if ($code == 200 && $status =~ /^(unchanged|changed)$/) {
                $v{found}++;
                $v{same} += $same;
            } else {
                push @{ $v{missing} }, "$key: $code $status";
            }
            # static files (not SSI) must give back the stored fingerprint
            if ($key !~ /\.shtml$/) {
                $v{static}++;
                $v{static_same} += $same;
            }
        }
        close $in;
        unlink "$RUN/verify.$k";
    }
    return \%v;
}

# Wait until the periodic saves have caught up: no save for 5 s (the zone
# does not change without traffic, so the file then holds everything).
sub settle_snapshot {
    my ($ng) = @_;
    my $end = time + 40;
    my ($saves, $since) = (-1, time);
    while (time < $end) {
        my $s = $ng->stats or return 0;
        my $n = $s->{snapshot}{saves};
        ($saves, $since) = ($n, time) if $n != $saves;
        return 1 if time - $since >= 5;
        sleep 0.5;
    }
    return 0;
}

# The same workers, serving, no signal in the log: not a crash loop.
sub stable {
    my ($ng, $secs, $from) = @_;
    my @before = $ng->workers;
    my $r = run_load($ng, name => "stable-" . int(time), secs => $secs,
                     conns => 32);
    my @after = $ng->workers;
    my $f = log_faults($ng->log_since($from), {});
    return { ok => ("@before" eq "@after" && @after
                    && !@{ $f->{other_signal} } && $r->{s5xx} == 0
                    && $r->{requests} > 0),
             workers => scalar @after, requests => $r->{requests},
             s5xx => $r->{s5xx}, signals => scalar @{ $f->{other_signal} } };
}

# ---- phases -------------------------------------------------------------

sub phase_a {
    my ($ng) = @_;
    say("phase A: ${WARM}s of warm-up (the largest bodies), then ${DUR_A}s "
        . "of the mix, $CONNS connections, no faults");
    my $from = $ng->log_size;
    my $warm = run_load($ng, name => 'warm-up', secs => $WARM,
                        only => 'big,bomb,bad,badgz,page');
    my $r = run_load($ng, name => 'A', secs => $DUR_A);
    my $f = log_faults($ng->log_since($from), {});
    my $s = $ng->stats;

    load_rows('A', $r);
    row('A', 'socket errors (connect/read/write/timeout)',
        "$r->{connect}/$r->{read}/$r->{write}/$r->{timeout}",
        $r->{socket_errors} == 0);
    row('A', 'worker signals in the log', scalar @{ $f->{other_signal} },
        !@{ $f->{other_signal} });
    row('A', 'alert/crit/emerg or module errors', scalar @{ $f->{alarms} },
        !@{ $f->{alarms} });
    diag_lines(@{ $f->{other_signal} }, @{ $f->{alarms} });

    my @trend = memory_trend($r->{memory}, $DUR_A, 10);
    my $flat = @trend == 4;
    for my $t (@trend) {
        my $grow = $t->{end}[0] - $t->{start}[0];
        my $ok = $grow <= ($t->{start}[0] * 0.05 > 2048
                           ? $t->{start}[0] * 0.05 : 2048);
        $flat &&= $ok;
        row('A', "worker $t->{pid} RSS KB first/last 10 s (peak)",
            sprintf('%d / %d (%d); PSS %d / %d', $t->{start}[0],
                    $t->{end}[0], $t->{peak}, $t->{start}[1],
                    $t->{end}[1]), $ok);
    }
    row('A', 'memory flat (each worker: <= +5% or +2 MB)',
        $flat ? 'yes' : 'no', $flat);
    my ($w0) = memory_trend($warm->{memory}, $WARM, 3);
    row('A', 'warm-up: requests, 5xx; a worker\'s RSS KB from/to',
        "$warm->{requests}, $warm->{s5xx}; "
        . ($w0 ? "$w0->{start}[0] / $w0->{end}[0]" : '?'),
        $warm->{s5xx} == 0);
    row('A', 'zone entries / capacity, evictions',
        "$s->{entries} / $s->{capacity}, $s->{evictions}");
    return $s;
}

sub phase_b {
    my ($ng, $before) = @_;
    say("phase B: ${DUR_B}s of load with kill -9 of a worker every "
        . "${KILL_EVERY}s and reloads at @RELOAD_AT s");
    my $from = $ng->log_size;
    my (%killed, @kill_log, @reloads);
    my $probes = 0;
    my @events;
    for (my $t = $KILL_EVERY; $t < $DUR_B - 1; $t += $KILL_EVERY) {
        push @events, [$t, sub {
            my @w = $ng->workers or return;
            my $pid = $w[int rand @w];
            kill 'KILL', $pid and $killed{$pid} = 1;
            push @kill_log, $pid;
        }];
    }
    for my $at (@RELOAD_AT) {
        push @events, [$at + 0.5, sub {
            $ng->set_conf(proxy_conf($ng->dir, $ng->{ports},
                                     probes => (++$probes % 2 ? 64
                                                : 'recall=0.95')));
            push @reloads, $ng->reload ? 1 : 0;
        }];
    }
    my $r = run_load($ng, name => 'B', secs => $DUR_B, events => \@events);
    my $respawned = $ng->wait_workers(4, 15);
    sleep 1;
    my $f = log_faults($ng->log_since($from), \%killed);
    my $s = $ng->stats;

    load_rows('B', $r);
    row('B', 'socket errors (connect/read/write/timeout)',
        "$r->{connect}/$r->{read}/$r->{write}/$r->{timeout}");
    row('B', 'workers killed (kill -9) / logged signal 9',
        scalar(@kill_log) . " / $f->{sigkill}",
        @kill_log > 0 && $f->{sigkill} == @kill_log);
    row('B', 'other signals in the log', scalar @{ $f->{other_signal} },
        !@{ $f->{other_signal} });
    row('B', 'kills inside the zone lock (master unlocked)', $f->{locked});
    row('B', 'zone rebuilt after a kill inside a change', $f->{repaired});
    row('B', 'reloads done', scalar(grep { $_ } @reloads) . ' of '
        . scalar @reloads, @reloads && !grep { !$_ } @reloads);
    row('B', 'workers after the phase', $ng->nworkers, $respawned);
    row('B', 'alert/crit/emerg or module errors (besides kills)',
        scalar @{ $f->{alarms} }, !grep { !/exited on signal 9/ }
                                        @{ $f->{alarms} });
    diag_lines(@{ $f->{other_signal} },
               grep { !/exited on signal 9/ } @{ $f->{alarms} });
    my $evicted = $s->{evictions} - $before->{evictions};
    row('B', 'zone full: entries / capacity, evictions in B',
        "$s->{entries} / $s->{capacity}, $evicted",
        $s->{entries} == $s->{capacity} && $evicted > 0);
    row('B', 'snapshots saved in B (errors)',
        "$f->{saves} ($f->{save_errors})", $f->{save_errors} == 0);
    my $maxrss = 0;
    for my $pid (keys %{ $r->{memory} }) {
        $maxrss = $_->[1] > $maxrss ? $_->[1] : $maxrss
            for @{ $r->{memory}{$pid} };
    }
    row('B', 'largest worker RSS seen (KB)', $maxrss);
}

sub phase_c {
    my ($ng) = @_;
    say('phase C: the snapshot after the load');
    my $settled = settle_snapshot($ng);
    row('C', 'periodic saves settled', $settled ? 'yes' : 'no', $settled);
    my $snap = "$RUN/snap-C.snap";
    unless (copy("$ng->{dir}/data/crawl.snap", $snap)) {
        row('C', 'snapshot', "none: $!", 0);
        return;
    }
    my $c = index_check($snap);
    my $s = $ng->stats;
    row('C', 'simhash index check', ($c->{check} // $c->{text}),
        $c->{rc} == 0);
    row('C', 'snapshot entries / zone entries',
        ($c->{entries} // '?') . " / $s->{entries}",
        ($c->{entries} // -1) == $s->{entries});
    my ($dump) = read_dump($snap);
    my $v = verify_keys($ng, $dump);
    row('C', 'snapshot keys found in the zone',
        "$v->{found} of $v->{total}",
        $v->{total} > 0 && $v->{found} == $v->{total});
    row('C', 'static pages: the stored fingerprint again',
        "$v->{static_same} of $v->{static}",
        $v->{static_same} == $v->{static});
    diag_lines(@{ $v->{missing} }[0 .. ($#{ $v->{missing} } < 9
                                        ? $#{ $v->{missing} } : 9)]);
}

sub phase_d_kill_master {
    my ($ng) = @_;
    say('phase D: kill -9 of the master under load, restart from the '
        . 'snapshot');
    my $w = wrk_start('D', 10, 64, $ng->{port});
    sleep 4;
    my @workers = $ng->workers;
    my $master = $ng->kill_master;
    sleep 1;
    my @orphans = grep { StressNginx::alive($_) } @workers;
    row('D', 'master killed; its workers left running', scalar @orphans);
    # a supervisor ends what is left of the service
    kill 'KILL', @orphans;
    sleep 0.5;
    my $r = wrk_wait($w);
    row('D', '5xx responses around the kill', $r->{s5xx}, $r->{s5xx} == 0);

    my $snap = "$RUN/snap-D.snap";
    unless (copy("$ng->{dir}/data/crawl.snap", $snap)) {
        row('D', 'snapshot left behind', "none: $!", 0);
        return;
    }
    my $c = index_check($snap);
    row('D', 'snapshot left behind: simhash index check',
        $c->{check} // $c->{text}, $c->{rc} == 0);
    my ($dump, $keyless) = $c->{rc} == 0 ? read_dump($snap) : ([], 0);

    my $from = $ng->log_size;
    my $t0 = time;
    eval { $ng->start; 1 } or do {
        row('D', 'restart after kill -9', "failed: $@", 0);
        return;
    };
    my $log = $ng->log_since($from);
    my ($restored) = $log =~ /(\d+) documents restored from/;
    my ($refused) = $log =~ /snapshot ".*" refused: (.*)/;
    my $s = $ng->stats;
    row('D', 'restart: up in', sprintf('%.1f s', time - $t0), 1);
    row('D', 'restart: snapshot', defined $restored
        ? "restored $restored documents" : "refused: " . ($refused // '?'),
        defined $restored || ($c->{rc} != 0 && defined $refused));
    row('D', 'restart: zone entries / snapshot keys (documents without one)',
        "$s->{entries} / " . scalar(@$dump) . " ($keyless)",
        $s->{entries} == @$dump);
    my $v = verify_keys($ng, $dump);
    row('D', 'snapshot keys found after the restart',
        "$v->{found} of $v->{total}", $v->{found} == $v->{total});
    row('D', 'static pages: the stored fingerprint again',
        "$v->{static_same} of $v->{static}",
        $v->{static_same} == $v->{static});
    diag_lines(@{ $v->{missing} }[0 .. ($#{ $v->{missing} } < 9
                                        ? $#{ $v->{missing} } : 9)]);
    my $st = stable($ng, 5, $from);
    row('D', 'no crash loop (same workers, no signal, 5 s load)',
        "$st->{workers} workers, $st->{requests} requests, "
        . "$st->{signals} signals", $st->{ok});
}

# Restart on a damaged snapshot, `damage` changing the file's bytes.  A
# file whose structure is broken (`refused`) is refused with an [error]
# line and the zone starts empty; one with a damaged block of documents
# (`partial`) loses that block only: the others are restored, as many as
# `simhash index check` says, with an [error] line.  Either way the file is
# kept aside, and nginx serves with no crash loop.
sub bad_snapshot {
    my ($ng, $name, $expect, $damage) = @_;
    $ng->stop or die "stress: nginx did not stop\n";
    my $file = "$ng->{dir}/data/crawl.snap";
    my $bytes = StressNginx::read_file($file) // '';
    StressNginx::write_file($file, $damage->($bytes));
    my $c = index_check($file);
    my ($restorable) = ($c->{check} // $c->{text}) =~ /(\d+) restorable/;
    row('D', "$name snapshot: simhash index check",
        $c->{check} // $c->{text},
        $c->{rc} == 1 && ($expect eq 'refused' || defined $restorable));
    my $from = $ng->log_size;
    eval { $ng->start; 1 } or do {
        row('D', "$name snapshot: start", "failed: $@", 0);
        return;
    };
    my $log = $ng->log_since($from);
    my $why = $expect eq 'refused'
        ? ($log =~ /\[error\].*snapshot ".*" refused: (.*); starting empty/)[0]
        : ($log =~ /\[error\].*snapshot ".*" is damaged: (.*)/)[0];
    row('D', "$name snapshot: [error] line", $why // 'no', defined $why);
    my ($kept) = $log =~ /snapshot is kept as "([^"]+)"/;
    row('D', "$name snapshot: kept aside", $kept // 'no',
        defined $kept && -f $kept);
    my $s = $ng->stats;
    my $want = $expect eq 'refused' ? 0 : $restorable // -1;
    row('D', "$name snapshot: zone entries at start (expected)",
        "$s->{entries} ($want)", $s->{entries} == $want);
    my $st = stable($ng, 3, $from);
    row('D', "$name snapshot: serving, no crash loop",
        "$st->{workers} workers, $st->{requests} requests", $st->{ok});
}

sub phase_d {
    my ($ng) = @_;
    phase_d_kill_master($ng);
    bad_snapshot($ng, 'corrupt', 'partial', sub {
        my $b = shift;
        substr($b, int(length($b) / 2), 16) = 'corrupt snapshot';
        return $b;
    });
    bad_snapshot($ng, 'truncated', 'refused', sub { substr(shift, 0, 4096) });
}

# One process under valgrind with the same mix.
sub phase_e {
    my ($ports) = @_;
    if (($ENV{STRESS_VALGRIND} // 1) eq '0'
        || !grep { -x "$_/valgrind" } split /:/, $ENV{PATH})
    {
        row('E', 'valgrind', 'skipped');
        return;
    }
    say('phase E: one nginx process under valgrind, 20 s of the mix');
    my %p = (%$ports, proxy => StressNginx::free_port(),
             verify => StressNginx::free_port());
    my $d = "$RUN/valgrind";
    my $vg = StressNginx->new(name => 'valgrind', dir => $d, port => $p{proxy},
                              conf => proxy_conf($d, \%p, workers => 1));
    StressNginx::write_file($vg->conf_file, $vg->{conf});
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', '/dev/null');
        exec('valgrind', "--log-file=$d/logs/valgrind.log",
             '--leak-check=full', '--show-leak-kinds=definite',
             '--errors-for-leak-kinds=definite', '--num-callers=30',
             "--suppressions=$TOP/tools/valgrind-nginx.supp", $StressNginx::NGINX,
             $vg->nginx_args, '-g', 'daemon off; master_process off;')
            or POSIX::_exit(127);
    }
    $children{$pid} = 'valgrind';
    unless ($vg->wait_port($p{proxy}, 90)) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        row('E', 'valgrind: nginx started', 'no', 0);
        return;
    }
    my $w = wrk_start('E', 20, 8, $p{proxy});
    my $r = wrk_wait($w);
    kill 'TERM', $pid;
    waitpid($pid, 0);
    my $report = StressNginx::read_file("$d/logs/valgrind.log") // '';
    my ($errors) = $report =~ /ERROR SUMMARY: (\d+) errors/;
    my ($lost) = $report =~ /definitely lost: ([\d,]+) bytes/;
    row('E', 'valgrind: requests (5xx)', "$r->{requests} ($r->{s5xx})",
        $r->{requests} > 0 && $r->{s5xx} == 0);
    row('E', 'valgrind: errors (definite leaks count)', $errors // '?',
        defined $errors && $errors == 0);
    row('E', 'valgrind: definitely lost (suppressed: tools/valgrind-nginx.supp)',
        ($lost // 0) . ' bytes');
}

# DUST on and a Redis Cluster behind the zone, under load with faults.
sub phase_f {
    my ($ports) = @_;
    require RedisCluster;
    unless (RedisCluster::available()) {
        row('F', 'cluster', 'skipped: no redis-server or redis-cli');
        return;
    }
    say("phase F: ${DUR_F}s of load, DUST on, a Redis Cluster behind the "
        . "zone; kill -9 of a worker every ${KILL_EVERY}s, of a Redis "
        . 'master, three reloads');
    my $c = RedisCluster->new(masters => 3, replicas => 1,
                              node_timeout => 1000);
    $c->start;
    # the index's layout and 100,000 documents of other nodes
    my $load = `'$RUN/bin/simhash' cluster load --seed $CLUSTER_SEED --redis ${\ $c->addr} --random 100000 2>&1`;
    if ($?) {
        row('F', 'simhash cluster load', "failed: $load", 0);
        $c->stop;
        return;
    }
    my %p = (%$ports, proxy => StressNginx::free_port(),
             verify => StressNginx::free_port());
    my $d = "$RUN/cluster";
    my $ng = StressNginx->new(name => 'cluster', dir => $d, port => $p{proxy},
                              workers => 4, verify => $p{verify},
                              ports => \%p, env => \%MALLOC);
    $ng->set_conf(proxy_conf($d, \%p, cluster => $c->urls))->start;
    my $end = time + 15;
    sleep 0.2 while time < $end && $ng->error_log !~ /cluster index of/;

    my (%killed, @kill_log, @reloads, $redis_killed, $failover);
    my $probes = 0;
    my @events;
    for (my $t = $KILL_EVERY; $t < $DUR_F - 1; $t += $KILL_EVERY) {
        push @events, [$t, sub {
            my @w = $ng->workers or return;
            my $pid = $w[int rand @w];
            kill 'KILL', $pid and $killed{$pid} = 1;
            push @kill_log, $pid;
        }];
    }
    for my $at (map { int($DUR_F * $_) } 0.3, 0.6, 0.85) {
        push @events, [$at + 0.5, sub {
            $ng->set_conf(proxy_conf($d, \%p, cluster => $c->urls,
                                     probes => (++$probes % 2 ? 64
                                                : 'recall=0.95')));
            push @reloads, $ng->reload ? 1 : 0;
        }];
    }
    push @events, [int($DUR_F * 0.2), sub {
        my $n = $c->kill_master_of_slot(0);
        $redis_killed = time;
        # its replica takes over after cluster-node-timeout
        my $pid = fork // return;
        if ($pid == 0) {
            my $ok = eval { $c->wait_ok; 1 };
            POSIX::_exit($ok ? 0 : 1);
        }
        $failover = $pid;
    }];
    my $from = $ng->log_size;
    my $before = $ng->stats;
    my $r = run_load($ng, name => 'F', secs => $DUR_F, events => \@events,
                     conns => 64);
    my $failed_over = $failover && waitpid($failover, 0) == $failover
                      && $? == 0;
    my $respawned = $ng->wait_workers(4, 15);
    sleep 1;
    my $after = $ng->stats;
    my $f = log_faults($ng->log_since($from), \%killed);

    load_rows('F', $r);
    row('F', 'socket errors (connect/read/write/timeout)',
        "$r->{connect}/$r->{read}/$r->{write}/$r->{timeout}",
        $r->{timeout} == 0);
    row('F', 'slowest response (wrk)', defined $r->{max_latency}
        ? sprintf('%.3f s', $r->{max_latency}) : '?',
        defined $r->{max_latency} && $r->{max_latency} < 5);
    row('F', 'workers killed (kill -9) / logged signal 9',
        scalar(@kill_log) . " / $f->{sigkill}",
        @kill_log > 0 && $f->{sigkill} == @kill_log);
    row('F', 'other signals in the log', scalar @{ $f->{other_signal} },
        !@{ $f->{other_signal} });
    row('F', 'reloads done', scalar(grep { $_ } @reloads) . ' of '
        . scalar @reloads, @reloads && !grep { !$_ } @reloads);
    row('F', 'workers after the phase', $ng->nworkers, $respawned);
    row('F', 'Redis master killed; its replica promoted',
        $redis_killed ? ($failed_over ? 'yes' : 'not promoted') : 'no',
        $redis_killed && $failed_over);
    my @alarms = grep { !/exited on signal 9/ } @{ $f->{alarms} };
    # a master gone is logged while it is: the connection's errors
    my @other = grep { !/cluster node|CLUSTERDOWN|TRYAGAIN|connection/i }
                @alarms;
    row('F', 'alert/crit/emerg or module errors (besides kills and the '
        . 'dead master)', scalar @other, !@other);
    diag_lines(@{ $f->{other_signal} }, @other);

    # the cluster's counts over the phase, every worker's (the zone's
    # shared state lives through kills and reloads)
    my ($cb, $ca) = ($before->{cluster}, $after->{cluster});
    my %d = map { $_ => ($ca->{$_} // 0) - ($cb->{$_} // 0) }
            qw(lookups found new refreshes writes write_errors);
    my $inc = 0;
    $inc += ($ca->{incomplete}{$_} // 0) - ($cb->{incomplete}{$_} // 0)
        for keys %{ $ca->{incomplete} || {} };
    row('F', 'cluster lookups: found / new / incomplete',
        "$d{found} / $d{new} / $inc ("
        . join(', ', map { "$_ " . (($ca->{incomplete}{$_} // 0)
                                    - ($cb->{incomplete}{$_} // 0)) }
                     grep { $ca->{incomplete}{$_} }
                     sort keys %{ $ca->{incomplete} || {} }) . ')',
        $d{lookups} > 0 && $inc > 0);
    row('F', 'cluster: map refreshes, writes (lost)',
        "$d{refreshes}, $d{writes} ($d{write_errors})");

    # nothing answered from a partial read
    my %log;
    my $lines = 0;
    if (open(my $al, '<', "$d/logs/access.log")) {
        while (<$al>) {
            my ($code, $st) = split;
            $lines++;
            $log{$st}++;
        }
        close $al;
    }
    row('F', 'access log: $simhash_status', status_text(\%log));
    my $new = $log{new} // 0;
    row('F', 'new pages (log) <= lookups read in full (found + new)',
        "$new <= " . ($d{found} + $d{new}), $new <= $d{found} + $d{new});
    my $skipped = ($after->{skipped}{index_incomplete} // 0)
                - ($before->{skipped}{index_incomplete} // 0);
    row('F', 'skipped index_incomplete <= incomplete lookups',
        "$skipped <= $inc", $skipped > 0 && $skipped <= $inc);

    # the cluster in full again once its replica serves
    my $st = stable($ng, 5, $ng->log_size);
    # (a lookup may still time out on a busy machine: counted apart)
    my $c2 = $ng->stats->{cluster};
    my %inc2 = map { $_ => ($c2->{incomplete}{$_} // 0)
                          - ($ca->{incomplete}{$_} // 0) }
               keys %{ $c2->{incomplete} || {} };
    my $lost = 0;
    $lost += $inc2{$_} for grep { $_ ne 'timeout' } keys %inc2;
    row('F', 'after the failover: 5 s of load, lookups incomplete for a '
        . 'master not found (timed out)',
        "$st->{requests} requests, $lost (" . ($inc2{timeout} // 0) . ')',
        $st->{ok} && $lost == 0);
    $ng->stop;
    $c->stop;
}

sub diag_lines {
    my @l = grep { defined } @_;
    my $n = 0;
    for (@l) {
        last if ++$n > 10;
        print "       | $_\n";
    }
}

sub summary {
    my @fail = grep { defined $_->[3] && !$_->[3] } @rows;
    my $txt = "make stress, " . localtime() . "\n\n"
            . "| phase | check | figure | |\n|---|---|---|---|\n";
    for my $r (@rows) {
        $txt .= sprintf("| %s | %s | %s | %s |\n", $r->[0], $r->[1], $r->[2],
                        !defined $r->[3] ? '' : $r->[3] ? 'ok' : 'FAILED');
    }
    $txt .= "\n" . (@fail ? scalar(@fail) . " FAILED" : 'all passed') . "\n";
    StressNginx::write_file("$BASE/summary.txt", $txt);
    print "\n$txt";
    return scalar @fail;
}

# ---- main ---------------------------------------------------------------

$SIG{INT} = $SIG{TERM} = sub { die "stress: interrupted\n" };
# On any exit: our wrk and valgrind children, then every nginx process we
# started (by pid, see StressNginx::cleanup).
END {
    local ($?, $!);
    for my $pid (keys %children) {
        next unless StressNginx::alive($pid)
                    && StressNginx::cmdline($pid) =~ /\Q$children{$pid}\E/;
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }
    StressNginx::cleanup_all();
}

sub main {
    my $t0 = time;
    say("nginx prefixes and the served corpus in $RUN");
    copy_binaries();
    ensure_corpus();

    my %ports = (origin => StressNginx::free_port(),
                 proxy => StressNginx::free_port(),
                 verify => StressNginx::free_port());
    my $origin = StressNginx->new(name => 'origin', dir => "$RUN/origin",
                                  port => $ports{origin}, workers => 2);
    $origin->set_conf(origin_conf($origin->dir, $ports{origin}))->start;
    my $proxy = StressNginx->new(name => 'proxy', dir => "$RUN/proxy",
                                 port => $ports{proxy}, workers => 4,
                                 verify => $ports{verify},
                                 ports => \%ports, env => \%MALLOC);
    $proxy->set_conf(proxy_conf($proxy->dir, \%ports))->start;
    my ($cap) = $proxy->error_log =~ /capacity (\d+) documents/;
    say("origin :$ports{origin}, proxy :$ports{proxy} (lookup-only "
        . ":$ports{verify}), zone capacity $cap");

    my $after_a = $PHASES =~ /A/ ? phase_a($proxy) : $proxy->stats;
    phase_b($proxy, $after_a) if $PHASES =~ /B/;
    phase_c($proxy) if $PHASES =~ /C/;
    phase_d($proxy) if $PHASES =~ /D/;
    $proxy->stop;
    phase_e(\%ports) if $PHASES =~ /E/;
    phase_f(\%ports) if $PHASES =~ /F/;
    $origin->stop;
    row('-', 'total time', sprintf('%.0f s', time - $t0));
    my $failed = summary();
    if ($failed) {
        say("logs kept in $RUN");
    } else {
        remove_tree($RUN);
    }
    return $failed ? 1 : 0;
}

exit main();
