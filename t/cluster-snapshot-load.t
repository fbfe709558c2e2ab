#!/usr/bin/perl
# A tier moving from local zones to the Redis Cluster loads what its zones
# hold: node A crawls with a local zone (file=), its snapshot saved when it
# stops; `simhash cluster load --snapshot` writes that snapshot's documents
# into a real cluster (3 masters); node B, whose zone is empty and which
# asks the cluster, finds A's pages as duplicates, named by the ids A's
# zone gave them (its key hashes: ids of 16 hex digits, one a page) at
# the fingerprints A saved (`simhash index dump`), and a page A never saw
# is new.  A snapshot saved under another simhash_seed,
# and a file that is not a snapshot, are refused with a one-line reason
# and nothing loaded.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');

my $seed = 'tier-secret-for-the-move';
my $proxy = <<"EOF";
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF

# ---- node A: a local zone, its snapshot saved at stop ----
my $A = SimhashTest->new(
    http => 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;',
    proxy => $proxy);
my $snap = $A->prefix . '/data/crawl.snap';
$A->start;
my @pages = qw(sourdough.html council.html cafe-utf8.html);
is($A->status_of("/$_"), 'new', "A: $_ new") for @pages;
$A->stop;
ok(-s $snap, 'A stopped: its snapshot saved');

# what A saved: fingerprint and key, a line each
my ($rc, $dump, $err) = sh($cli, 'index', 'dump', $snap);
is($rc, 0, 'simhash index dump reads it') or diag($err);
my %fp_of = map { (split /\t/)[2] => (split /\t/)[0] } split /\n/, $dump;
is(scalar keys %fp_of, 3, 'three documents in it');

# ---- the cluster, loaded from the snapshot ----
my $c = RedisCluster->new(masters => 3, replicas => 0);
$c->start;

($rc, my $out, $err) = sh($cli, 'cluster', 'load', '--seed', 'another-tier',
                          '--redis', $c->addr, '--snapshot', $snap);
isnt($rc, 0, 'a snapshot of another simhash_seed: refused');
like($err, qr/another simhash_seed/, '... saying why');
is(scalar(map { $_->cmd('DBSIZE') } grep { $_->cmd('DBSIZE') } $c->masters),
   0, '... and nothing loaded');

($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                       '--redis', $c->addr, '--snapshot',
                       "$FindBin::Bin/fixtures/site/sourdough.html");
isnt($rc, 0, 'a file that is not a snapshot: refused');
like($err, qr/not a zone's snapshot/, '... saying so');

($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                       '--redis', $c->addr, '--snapshot', $snap);
is($rc, 0, 'simhash cluster load --snapshot') or diag($err);
like($out, qr/^documents 3$/m, "the snapshot's 3 documents loaded");
if ($rc) {
    # nothing to find: B would only wait for it
    $c->stop;
    done_testing();
    exit;
}

# ---- node B: an empty zone that asks the cluster ----
my $B = SimhashTest->new(
    http => 'simhash_zone zone=crawl:1m cluster=' . $c->urls
          . ' cluster_timeout=500ms;',
    proxy => $proxy);
$B->start;
is($B->stats->{zones}{crawl}{entries}, 0, "B's zone is empty");

# each worker reads its slot map and the layout at start: until then a
# miss is skipped, never new
my $n = 0;
wait_until('B to read the cluster', sub {
    ($B->get('/sourdough.html?w=' . $n++)->{headers}{'x-simhash-status'}
     // '') eq 'duplicate'
});
my %ids;
for my $p (@pages) {
    my $r = $B->get("/$p?from=b");
    is($r->{headers}{'x-simhash-status'}, 'duplicate',
       "B: $p a duplicate of A's, from the cluster");
    like($r->{headers}{'x-simhash-duplicate-of'}, qr/^simhash-id:[0-9a-f]{16}$/,
         '... named by its id');
    $ids{$r->{headers}{'x-simhash-duplicate-of'} // ''}++;
    is($r->{headers}{'x-simhash-distance'}, 0, '... at distance 0');
    is($r->{headers}{'x-simhash'}, $fp_of{$A->url("/$p")},
       '... the fingerprint A saved for it');
}
is(scalar keys %ids, 3, 'three documents, three ids');
is($B->status_of('/bicycle.html'), 'new', 'B: a page A never saw is new');

my $cs = $B->stats->{zones}{crawl}{cluster};
is($cs->{found}, $cs->{lookups} - $cs->{new}
                 - eval { my $s = 0; $s += $_ for values %{$cs->{incomplete}};
                          $s },
   'the statistics count every lookup');
is($cs->{lookup_us}{count}, $cs->{lookups}, 'each one timed, in us');
my $prom = $B->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_cluster_lookup_seconds_bucket\{zone="crawl",le="0.0003"\} \d+$/m,
     'Prometheus: the lookups\' times in buckets under a millisecond');
like($prom, qr/^simhash_cluster_lookup_seconds_sum\{zone="crawl"\} \d+\.\d{6}$/m,
     '... their sum in seconds, to the microsecond');

$B->stop;
$c->stop;
done_testing();
