#!/usr/bin/perl
# The decision asks the zone's Redis Cluster on a local miss: two nginx
# nodes (A and B) with one real 6-process cluster (3 masters, 3 replicas)
# and documents loaded by `simhash cluster load` under the same
# simhash_seed.  A page fetched through B whose near-duplicate was loaded
# (without its key text) is a duplicate, Duplicate-Of naming the loaded
# document by its id, and a key text for it APPENDed by a client without
# the tier's secret is never named; a far
# page is new (the cluster read in full said so) and stored locally.  A
# master killed with kill -9: every page whose lookup probes it is passed
# through whole, 200, "skipped" with reason index_incomplete, counted;
# never new, never dropped, never a 5xx; once its replica is promoted the
# same pages are duplicates again, by themselves (asked through a
# read-only node: see C below).  A page new through A is written to the
# cluster (one chunk APPENDed to its record bucket, one to its key text's
# and one to its table bucket) and found through B, which never held it:
# Duplicate-Of names the URL fetched through A, and drop mode drops it as
# A's zone would (keys=path: the original's path).
# The client's counts (lookups, outcomes, incomplete by cause, times,
# map refreshes, writes) are in the statistics, JSON and Prometheus.  In
# drop mode a duplicate the cluster names by id is passed: keys=path (the
# default) drops only a page whose original has its path, unknown then.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use Time::HiRes qw(time);
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;
no warnings qw(portable);

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-decision';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000);
$c->start;
my @nodes = $c->nodes;
my $urls = join ',', map { 'redis://127.0.0.1:' . $_->port } @nodes[0, 1];

sub node {
    my ($insert) = @_;
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m distance=4 cluster=$urls "
               . "cluster_timeout=300ms;",
        proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        simhash_action drop;
        simhash_insert $insert;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
    $t->start;
    return $t;
}
# C is read-only (simhash_insert off): it stores nothing, the cluster's
# originals either, so that every copy it is asked is asked of the cluster
# (a duplicate the cluster finds puts its original in the zone, which then
# answers the next copy by itself: t/cluster-warm.t)
my ($A, $B, $C) = (node('on'), node('on'), node('off'));

# ---- the documents: the sourdough page, loaded as another node's ----
my $fp = $A->cli_fingerprint('sourdough.html', '--seed', $seed);
like($fp, qr/^[0-9a-f]{16}$/, "the page's fingerprint, by the CLI: $fp");
my $id = '00c0ffee0000cafe';

my $dir = File::Temp::tempdir('simhash-cdecide-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
srand(4747);
open(my $fh, '>', "$dir/docs.txt") or die;
print $fh "$id $fp 1 1700000000 0 0\n";
# four documents of one fingerprint: a lookup of it at radius 0 reads
# one bucket and four candidates' records and texts (8 GETs in a lookup
# of one probe)
printf $fh "00000000000000%02x 0123456789abcdef 3 1700000000 0 0 "
           . "http://four.example/%d\n", $_, $_ for 1 .. 4;
for my $i (1 .. 2000) {
    printf $fh "%08x%08x %08x%08x 2 1700000000 0 0\n",
           map { int(rand(2**32)) } 1 .. 4;
}
close $fh;
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, "$dir/docs.txt");
is($rc, 0, 'loaded') or diag($err);
$_->cmd('WAIT', 1, 5000) for $c->masters;

# a key text for the loaded document, made under another secret and
# APPENDed to its real bucket: never named
open($fh, '>', "$dir/forged.txt") or die;
print $fh "$id $fp 1 1700000000 0 0 http://forger.example/sourdough.html\n";
close $fh;
($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', 'not-the-secret',
                        '--out', "$dir/forged.resp", "$dir/forged.txt");
is($rc, 0, 'a forged key text') or diag($err);
{
    open(my $r, '<', "$dir/forged.resp") or die;
    my $resp = do { local $/; <$r> };
    my ($key, $val) = $resp =~ /\$3\r\nSET\r\n\$\d+\r\n(sh:k[0-9a-f]+)\r\n\$(\d+)\r\n/
        or die "no key text SET in the forged file";
    my $bytes = substr($resp, $+[0], $val);
    ok(!ref $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key))
              ->cmd('APPEND', $key, $bytes), "forged key text in $key");
}

my $n = 0;
sub fetch {
    my ($t, $page) = @_;
    my $r = $t->get("/$page?n=" . $n++);
    return $r;
}

# each worker reads its slot map and the layout at start: until then a
# miss is incomplete (skipped), never new
wait_until('B to read the cluster', sub {
    fetch($B, 'sourdough.html')->{headers}{'x-simhash-status'} eq 'duplicate'
});

my $r = fetch($B, 'sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'a copy through B of a loaded page: a duplicate');
is($r->{status}, 200,
   'passed, not dropped: drop needs the original\'s key (keys=path), and '
   . 'the cluster has none for it');
is($r->{headers}{'x-simhash-duplicate-of'}, "simhash-id:$id",
   'Duplicate-Of: the id the cluster gives (loaded without its key text; '
   . 'the forged one refused)');
is($r->{headers}{'x-simhash-distance'}, 0, 'at distance 0');

my $d = SimhashTest::distance($fp, $A->cli_fingerprint('sourdough-reprint.html',
                                                     '--seed', $seed));
$r = fetch($B, 'sourdough-reprint.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   "its near-duplicate (distance $d) through B: a duplicate");
is($r->{headers}{'x-simhash-distance'}, $d, 'at its distance');

$r = $B->get('/bicycle.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a far page: new');
is($r->{content}, $B->fixture('bicycle.html'), 'passed whole');
is($B->status_of('/bicycle.html'), 'unchanged',
   'stored in the zone: its re-fetch is answered locally');

$r = $B->get('/cq?zone=crawl&fp=0123456789abcdef&h=0');
like($r->{content}, qr{"status":"found".*"key":"http://four\.example/[1-4]"},
     'a lookup of one bucket and four candidates: found, with its key text');

# ---- A finds B's page: a node that calls a page new writes it ----
$r = $A->get('/council.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a page new through A');
my $cfp = $r->{headers}{'x-simhash'};
wait_until("A's page in the cluster", sub {
    ($A->get("/cq?zone=crawl&fp=$cfp")->{content} // '') =~ /"found"/
});
my $curl = $A->url('/council.html');
like($A->get("/cq?zone=crawl&fp=$cfp")->{content}, qr/"key":"\Q$curl\E"/,
     'simhash_cluster_query names it by its key text');
$r = $B->get('/council.html?from=b');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   "the same page through B: a duplicate of A's, which B never held");
is($r->{headers}{'x-simhash-duplicate-of'}, $A->url('/council.html'),
   'named by the URL fetched through A (its key text, from the cluster)');
is($r->{headers}{'x-simhash-distance'}, 0, 'at distance 0');
my $ra = $A->get('/council.html?from=a');
is($ra->{headers}{'x-simhash-duplicate-of'}, $A->url('/council.html'),
   'through A it is found in its zone, with its key');
is($r->{status}, $ra->{status},
   "B drops it as A does (keys=path: the original's path is known): "
   . $r->{status});
isnt($r->{status}, 200, 'dropped');

# ---- a master killed: incomplete, passed through, until its failover ----
my $meta = $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', 'sh:m'))
             ->cmd('GET', 'sh:m');
my ($bits) = split / /, $meta;
my $bkey = sprintf 'sh:f%0*x', int(($bits + 3) / 4), hex($fp) >> (64 - $bits);
wait_until('C to read the cluster', sub {
    fetch($C, 'sourdough.html')->{headers}{'x-simhash-status'} eq 'duplicate'
});
my $before = $C->stats->{zones}{crawl}{skipped}{index_incomplete} // 0;
$c->kill_master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', $bkey));

my (%seen, $bad, $recovered, $worst, $incomplete);
my $t0 = time;
while (time - $t0 < 60) {
    my $s = time;
    $r = fetch($C, 'sourdough.html');
    my $took = time - $s;
    $worst = $took if !defined $worst || $took > $worst;
    my $st = $r->{headers}{'x-simhash-status'} // 'none';
    my $why = $r->{headers}{'x-simhash-reason'} // '';
    $seen{"$r->{status} $st" . ($why ? " $why" : '')}++;
    if ($st eq 'skipped') {
        $incomplete++;
        $bad++ unless $r->{status} == 200
                      && $r->{content} eq $C->fixture('sourdough.html');
    } elsif ($st ne 'duplicate' || $r->{status} != 200) {
        $bad++;
    }
    if ($st eq 'duplicate' && $incomplete) {
        $recovered = 1;
        last;
    }
}
note(join ', ', map { "$_: $seen{$_}" } sort keys %seen);
ok($incomplete, 'lookups while the master is down: skipped');
ok(!$bad, 'each passed through whole (200, the body), never new, never '
        . 'dropped, never a 5xx');
ok($recovered, 'a duplicate again after the failover, by itself');
cmp_ok($worst, '<', 1.5, 'no response waited much past cluster_timeout');
my $st = $C->stats->{zones}{crawl};
cmp_ok($st->{skipped}{index_incomplete} - $before, '>=', $incomplete,
       'counted as skipped, index_incomplete');
ok(!grep({ /^5/ } keys %seen), 'no 5xx');

# ---- the client's counts, every worker's, in the statistics ----
my $cs = $st->{cluster};
ok($cs, 'the statistics of a zone with cluster= have its client');
cmp_ok($cs->{found}, '>=', 2, 'lookups found');
cmp_ok($B->stats->{zones}{crawl}{cluster}{new}, '>=', 1, 'lookups new');
my $inc = 0;
$inc += $_ for values %{ $cs->{incomplete} };
cmp_ok($inc, '>=', $incomplete, 'incomplete lookups, by cause: '
       . join(', ', map { "$_ $cs->{incomplete}{$_}" }
                    grep { $cs->{incomplete}{$_} } sort keys %{ $cs->{incomplete} }));
is($cs->{lookups}, $cs->{found} + $cs->{new} + $cs->{refetches} + $inc,
   'every lookup ended one way');
is($cs->{lookup_us}{count}, $cs->{lookups}, 'each one timed');
cmp_ok($cs->{refreshes}, '>=', 2, 'slot maps read: at start and after '
       . 'the failover');
is($B->stats->{zones}{crawl}{cluster}{write_errors}, 0,
   'no write lost before the outage');
cmp_ok($A->stats->{zones}{crawl}{cluster}{writes}, '>=', 1,
       "A's new page written");
my $prom = $C->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_cluster_incomplete_total\{zone="crawl",cause="\w+"\} [1-9]/m,
     'Prometheus: incomplete lookups by cause');
like($prom, qr/^simhash_cluster_lookup_seconds_count\{zone="crawl"\} [1-9]/m,
     'Prometheus: the lookups\' times');

$_->stop for $A, $B, $C;
$c->stop;
done_testing();
