#!/usr/bin/perl
# The whole cluster down, then back: two nginx nodes (A and B) on a real
# 6-process cluster (3 masters, 3 replicas, append-only files), all six
# redis-servers killed with kill -9.  Meanwhile a node serves from its
# zone: a page it held is answered as before (unchanged); a page it did
# not hold is passed whole (200, its body), "skipped" with reason
# index_incomplete, never new, never a 5xx, each response at once; the
# node keeps it in its zone (its re-fetch and its near copy are answered
# there) and its writes in its backlog (counted: queued), a backlog that
# is bounded (B's holds one write: the others are dropped, counted).  The
# six restarted on their ports, data and nodes.conf: A's backlog is
# written by itself (replayed, nothing dropped), and B finds the pages A
# kept during the outage, named by their URL.  The counters are in JSON
# and Prometheus.  Then the six frozen (kill -STOP: connections open,
# nothing answered): every response still comes within the timeout,
# skipped, never new, no 5xx; thawed, whatever was kept is written.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-outage';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000,
                          appendonly => 1);
$c->start;
my @nodes = $c->nodes;
my $urls = join ',', map { 'redis://127.0.0.1:' . $_->port } @nodes;

sub node {
    my ($backlog) = @_;
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m distance=4 cluster=$urls "
               . "cluster_timeout=300ms"
               . ($backlog ? " cluster_backlog=$backlog" : '') . ';',
        proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
    $t->start;
    return $t;
}

# the layout: a small load
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, '--random', 1000);
is($rc, 0, 'loaded') or diag($err);

my ($A, $B) = (node(), node(1));
sub cl { $_[0]->stats->{zones}{crawl}{cluster} }

# ---- before: A stores a page, in its zone and in the cluster ----
my $r;
wait_until('A to read the cluster', sub {
    $r = $A->get('/bicycle.html');
    ($r->{headers}{'x-simhash-status'} // '') eq 'new'
});
my $bfp = $r->{headers}{'x-simhash'};
wait_until("A's page in the cluster", sub {
    ($A->get("/cq?zone=crawl&fp=$bfp")->{content} // '') =~ /"found"/
});
wait_until('B to read the cluster', sub {
    ($B->get("/cq?zone=crawl&fp=$bfp")->{content} // '') =~ /"found"/
});

# ---- the whole cluster down ----
$_->kill9 for $c->nodes;
wait_until('A to see the cluster gone', sub {
    ($A->get("/cq?zone=crawl&fp=$bfp")->{content} // '') =~ /incomplete/
});

my (%seen, $worst);
sub timed {
    my ($t, $path) = @_;
    my $s = time;
    my $res = $t->get($path);
    my $took = time - $s;
    $worst = $took if !defined $worst || $took > $worst;
    $seen{$res->{status}}++;
    return $res;
}

my $before = $A->stats->{zones}{crawl}{skipped}{index_incomplete} // 0;
$r = timed($A, '/bicycle.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged',
   'a page A held: answered from its zone, as before');

for my $page ('council.html', 'sourdough.html') {
    $r = timed($A, "/$page");
    is($r->{headers}{'x-simhash-status'}, 'skipped',
       "$page, not held: skipped");
    is($r->{status}, 200, 'passed');
    is($r->{content}, $A->fixture($page), 'whole');
}
is(($A->stats->{zones}{crawl}{skipped}{index_incomplete} // 0) - $before, 2,
   'both counted as skipped, reason index_incomplete');
$r = timed($A, '/council.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged',
   'kept in the zone: its re-fetch through A is answered there');
$r = timed($A, '/sourdough-reprint.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'a near copy of a kept page through A: a duplicate, from the zone');
is($r->{headers}{'x-simhash-duplicate-of'}, $A->url('/sourdough.html'),
   'of the kept page');

$r = timed($B, '/cafe-utf8.html');
is($r->{headers}{'x-simhash-status'}, 'skipped', 'through B too: skipped');
ok(!grep({ /^5/ } keys %seen), 'no 5xx: ' . join ', ',
                               map { "$_ x$seen{$_}" } sort keys %seen);
cmp_ok($worst, '<', 1.5, 'every response at once (none waits for the '
       . 'cluster past its timeout)');

my $ca = cl($A);
is($ca->{backlog_queued}, 6, "A's two pages' writes (record, text, "
   . 'table) kept in its backlog');
is($ca->{backlog_dropped}, 0, 'none dropped');
my $cb = cl($B);
is($cb->{backlog_queued}, 1, "B's backlog holds one write "
   . '(cluster_backlog=1)');
is($cb->{backlog_dropped}, 2, "its page's two others: dropped, counted");

# ---- the cluster back: same ports, data and nodes.conf ----
$_->start for $c->nodes;
$c->wait_ok;
wait_until("A's backlog written", sub {
    my $s = cl($A);
    $s->{backlog_replayed} == $s->{backlog_queued}
});
$ca = cl($A);
is($ca->{backlog_replayed}, 6, 'replayed: every write A kept');
is($ca->{backlog_dropped}, 0, 'nothing dropped');
is($ca->{write_errors}, 0, 'no write lost');

for my $page ('council.html', 'sourdough.html') {
    wait_until("B to find A's $page", sub {
        $r = $B->get("/$page?from=b");
        ($r->{headers}{'x-simhash-status'} // '') eq 'duplicate'
    });
    is($r->{headers}{'x-simhash-duplicate-of'}, $A->url("/$page"),
       "B finds the $page A kept during the outage, by its URL");
}

my $prom = $A->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_cluster_backlog_queued_total\{zone="crawl"\} 6$/m,
     'Prometheus: queued');
like($prom, qr/^simhash_cluster_backlog_replayed_total\{zone="crawl"\} 6$/m,
     'Prometheus: replayed');
like($B->get('/stats?format=prometheus')->{content},
     qr/^simhash_cluster_backlog_dropped_total\{zone="crawl"\} 2$/m,
     'Prometheus: dropped');

# ---- the six frozen: nothing refused, nothing answered ----
kill 'STOP', map { $_->{pid} } $c->nodes;
%seen = ();
$worst = 0;
$before = $A->stats->{zones}{crawl}{skipped}{index_incomplete};
for my $page ('cafe-latin1.html', 'cafe-utf8.html') {
    $r = timed($A, "/$page");
    is($r->{headers}{'x-simhash-status'}, 'skipped',
       "$page with the cluster frozen: skipped, never new");
    is($r->{content}, $A->fixture($page), 'passed whole');
}
is($A->stats->{zones}{crawl}{skipped}{index_incomplete} - $before, 2,
   'reason index_incomplete');
ok(!grep({ /^5/ } keys %seen), 'no 5xx: ' . join ', ',
                               map { "$_ x$seen{$_}" } sort keys %seen);
cmp_ok($worst, '<', 1.5, 'every response within the timeout, the cluster '
       . 'frozen');
kill 'CONT', map { $_->{pid} } $c->nodes;
$c->wait_ok;
wait_until("A's backlog written after the thaw", sub {
    my $s = cl($A);
    $s->{backlog_replayed} + $s->{backlog_dropped} == $s->{backlog_queued}
});
is(cl($A)->{backlog_dropped}, 0, 'nothing dropped');

$A->stop;
$B->stop;
$c->stop;
done_testing();
