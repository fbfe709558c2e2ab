#!/usr/bin/perl
# `make run-tier` works and shows what the cluster mode is for:
# demo/run-tier.sh starts a Redis Cluster of 6 redis-server processes
# (3 masters, 3 replicas), an origin and two nginx nodes, each its own
# zone, one cluster; a page fetched through node A is new, its copy under
# another URL fetched through node B is a duplicate of it, named by the id
# the cluster gives A's page; node B's cluster counters show the lookup
# found.  RUN_TIER_ONCE=1 runs the story and exits 0, leaving no process;
# without it the tier keeps serving (the two consoles answer) until a
# signal, which stops every process it started and removes its files.
#
# As t/demo.t: from a private copy of the tree in a 0700 directory, every
# file its owner's only, TMPDIR private too; run as root, nginx's workers
# are nobody and must not need to read any of it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Cwd qw(abs_path);
use File::Path qw(remove_tree);
use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);
use SimhashTest qw(wait_until);
use RedisCluster;

my $module = SimhashTest::module_path();
plan(skip_all => 'the demo runs the stock nginx without the sanitizer runtime')
    if $SimhashTest::PRELOAD;
plan(skip_all => 'the demo runs its own nginx, not under valgrind')
    if $SimhashTest::VALGRIND;
plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} && -x $ENV{SH_CLI} ? $ENV{SH_CLI} : undef;
plan(skip_all => 'SH_CLI not set (make itest sets it)') unless $cli;
my $top = abs_path("$FindBin::Bin/..");
plan(skip_all => 'not a git checkout (the test copies the files git knows)')
    unless -e "$top/.git";

my $private = tempdir('simhash-clone-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $clone = "$private/ngx_simhash";
mkdir $clone or die "$clone: $!";
my @files = grep { -e "$top/$_" } split /\0/,
    `git -C '$top' ls-files -z --cached --others --exclude-standard`;
open(my $tar, '|-', "tar -C '$top' -c --null -T - -f - | tar -C '$clone' -x")
    or die "tar: $!";
print $tar map { "$_\0" } @files;
close $tar or BAIL_OUT('copying the tree failed');
mkdir "$clone/build";
mkdir "$clone/build/nginx";
system('cp', $module, "$clone/build/nginx/") == 0 or die "cp $module";
system('cp', $cli, "$clone/build/simhash") == 0 or die "cp $cli";
system('chmod', '-R', 'go-rwx', $clone) == 0 or die 'chmod';
ok(-x "$clone/demo/run-tier.sh", 'the copy has demo/run-tier.sh');

local $ENV{TMPDIR} = $private;
my $lo = 20000 + 1000 * int(rand(8));
local $ENV{SH_PORTS} = "$lo-" . ($lo + 999);

# The processes of a run still alive: those whose command line (its
# nginx: -p PREFIX/...) or working directory (its redis-server, which
# runs in PREFIX/redis/N) names its prefix.  Not by port: another test's
# server may take a port this run has just let go.
sub leftovers {
    my ($prefix) = @_;
    return ('no prefix') unless $prefix;
    my @left;
    for my $p (glob '/proc/[0-9]*') {
        my $cwd = readlink("$p/cwd") // '';
        open(my $fh, '<', "$p/cmdline") or next;
        my $cmd = do { local $/; <$fh> } // '';
        $cmd =~ tr/\0/ /;
        push @left, "$cmd (in $cwd)"
            if index($cmd, $prefix) >= 0 || index($cwd, $prefix) == 0;
    }
    return @left;
}

# ---- RUN_TIER_ONCE=1: the story, then exit 0 with nothing left --------

my $out = do {
    local $ENV{RUN_TIER_ONCE} = 1;
    local $ENV{DEMO_KEEP} = 1;      # its logs, read below, then removed
    local $SimhashTest::AWAITING = 'demo/run-tier.sh with RUN_TIER_ONCE=1';
    `'$clone/demo/run-tier.sh' '$clone/build' 2>&1`;
};
is($?, 0, 'RUN_TIER_ONCE=1: the demo exits 0') or diag($out);

my ($rports) = $out =~ /^\s+3 replicas, ports ([\d ]+)$/m;
my @redis = split ' ', $rports // '';
is(scalar @redis, 6, 'six Redis nodes') or diag($out);
my ($origin) = $out =~ /^\s+origin\s+nginx at 127\.0\.0\.1:(\d+)/m;
my ($a_port) = $out =~ /^\s+node A\s+nginx at 127\.0\.0\.1:(\d+)/m;
my ($b_port) = $out =~ /^\s+node B\s+nginx at 127\.0\.0\.1:(\d+)/m;
ok($origin && $a_port && $b_port, 'the origin\'s and the nodes\' ports');
ok(!grep({ !$_ || $_ < $lo || $_ > $lo + 999 } @redis, $origin, $a_port,
         $b_port), "SH_PORTS=$ENV{SH_PORTS}: every port in it");

my ($one, $two, $three) = $out =~ /^== 1\.(.*)^== 2\.(.*)^== 3\.(.*)/ms;
like($one // '', qr{curl -si -x 127\.0\.0\.1:$a_port http://doc\.rust\.example/std/option/enum\.Option\.html$}m,
     'the std page, through node A');
like($one // '', qr/^\s+X-Simhash-Status: new$/m, '... new');
my ($id) = ($one // '') =~ /In the cluster:\s+document\s+([0-9a-f]{16})/;
ok($id, 'the cluster holds it, and the demo says under which id')
    or diag($out);
like($one // '', qr/bucket\s+sh:f[0-9a-f]{4}\s.*slot\s+\d+,\s+held\s+by\s+the\s+master\s+at\s+127\.0\.0\.1:\d+/s,
     '... in which bucket, slot and master');
like($two // '', qr{curl -si -x 127\.0\.0\.1:$b_port http://doc\.rust\.example/core/option/enum\.Option\.html$}m,
     'its copy under another URL, the core page, through node B');
like($two // '', qr/^\s+X-Simhash-Status: duplicate$/m, '... a duplicate')
    or diag($out);
# named by the id the cluster gives A's page, or by its URL where the
# cluster keeps key text
like($two // '', qr{^\s+X-Simhash-Duplicate-Of: (?:simhash-id:\Q${\($id // 'none')}\E|http://doc\.rust\.example/std/option/enum\.Option\.html)$}m,
     '... of A\'s page');
like($two // '', qr/^\s+X-Simhash-Distance: [1-9]$/m, '... a near-duplicate');
like($three // '', qr/^\s+lookups \d+: found 1, new \d+, incomplete 0$/m,
     'node B\'s counters: the lookup found, none incomplete') or diag($out);
like($three // '', qr/^\s+slot maps read [1-9]\d*, MOVED 0, ASK 0/m,
     '... the slot maps read');

my ($prefix) = $out =~ /kept in (\S+simhash-tier\.\w+)$/m;
ok($prefix && -d $prefix, 'DEMO_KEEP=1: the prefix kept') or diag($out);
is_deeply([leftovers($prefix)], [], 'no process of the run is left');
for my $n (qw(a b)) {
    my $log = $prefix ? `cat '$prefix/$n/logs/error.log' 2>&1` : '';
    like($log, qr/simhash zone "$n": cluster index of 3 nodes/,
         "node \u$n read the cluster's layout");
    unlike($log, qr/\[(alert|crit|emerg|error)\]/, "node \u$n: no error");
}
remove_tree($prefix) if $prefix && $prefix =~ m{/simhash-tier\.\w+$};

# ---- interactive: keeps serving, a signal stops all of it --------------

my $pid = open(my $fh, '-|', "$clone/demo/run-tier.sh", "$clone/build")
    // die "demo/run-tier.sh: $!";
# a test that dies on the way still stops the tier (its cleanup kills
# every process it started)
END { kill 'TERM', $pid if $pid && kill 0, $pid }
my $text = '';
{
    local $SimhashTest::AWAITING = 'demo/run-tier.sh to say where its logs are';
    while (defined(my $line = <$fh>)) {
        $text .= $line;
        last if $line =~ /^\s+logs\s/;
    }
}
like($text, qr/keeps running \(Ctrl-C stops it all/, 'without RUN_TIER_ONCE: '
     . 'the tier keeps running') or diag($text);
my @consoles = $text =~ m{(http://127\.0\.0\.1:\d+/simhash-stats\?format=html)}g;
is(scalar @consoles, 2, 'where each node\'s console is');
for my $url (@consoles) {
    my $r = SimhashTest::ua()->get($url);
    is($r->{status}, 200, "the console answers at $url");
    like($r->{headers}{'content-type'} // '', qr{^text/html}, '... as HTML');
}
($prefix) = $text =~ m{^\s+config\s+(\S+)/a/conf/nginx\.conf,}m;
ok($prefix && -d $prefix, 'its prefix');
my @running = leftovers($prefix);
is(scalar(grep { /^redis-server / } @running), 6,
   'its six redis-server processes run (in its prefix)');
is(scalar(grep { /^nginx: master process / } @running), 3,
   'and its three nginx');

# TERM, which the script handles as Ctrl-C's INT: a shell started with
# INT ignored (a background job of a non-interactive shell, as make test
# may be) cannot trap INT
kill 'TERM', $pid;
wait_until('demo/run-tier.sh to exit after TERM',
           sub { waitpid($pid, WNOHANG) != 0 });
is($? >> 8, 0, 'a signal: exit 0');
close $fh;
is_deeply([leftovers($prefix)], [], 'every process it started is stopped');
ok($prefix && !-e $prefix, 'its prefix is removed');
remove_tree($prefix) if $prefix && $prefix =~ m{/simhash-tier\.\w+$};

done_testing;
