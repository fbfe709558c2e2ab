#!/usr/bin/perl
# The zone's client of a real Redis Cluster (3 masters, 3 replicas):
# documents loaded by `simhash cluster load` are found from nginx
# (simhash_cluster_query) near their fingerprints, with their whole id; a
# far page is new; a bad cluster address fails nginx -t saying which.  A
# master killed with kill -9: every lookup that probes it is incomplete,
# with its cause, never new, each within the lookup's timeout; once its
# replica is promoted, the client finds the new master by itself (a new
# slot map) and answers in full again.  A slot moved by hand while nginx
# runs: ASK while it migrates, MOVED once it has moved, both followed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use JSON::PP;
use Time::HiRes qw(time);
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;
no warnings qw(portable);

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-cluster-46';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000);
$c->start;
my @nodes = $c->nodes;

# ---- documents, loaded as a tier would from its snapshots ----
my $dir = File::Temp::tempdir('simhash-cluster-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my @known = RedisCluster::random_docs("$dir/docs.txt", 5000, 500, 4646);
my ($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                          '--redis', $c->addr, "$dir/docs.txt");
is($rc, 0, 'loaded') or diag($err);
$_->cmd('WAIT', 1, 5000) for $c->masters;

# ---- nginx -t on bad addresses ----
for my $bad (['redis://127.0.0.1:1,', qr/an empty address in "cluster=/,
              'an empty address'],
             ['redis://127.0.0.1:1/2', qr/only database 0/, 'a database'],
             ['http://x', qr/invalid Redis URL/, 'not a Redis URL']) {
    my $b = SimhashTest->new(
        http => "simhash_zone zone=crawl:1m cluster=$bad->[0];",
        proxy => "simhash crawl;\nsimhash_seed $seed;\n"
               . "location / { proxy_pass http://%%ORIGIN%%; }");
    my ($code, $msg) = $b->nginx_t;
    isnt($code, 0, "$bad->[2] in cluster= fails nginx -t");
    like($msg, $bad->[1], 'and says what is wrong');
}

my $urls = join ',', map { 'redis://127.0.0.1:' . $_->port } @nodes[0, 1];
my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m cluster=$urls "
           . "cluster_timeout=300ms;",
    proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /cq { simhash_cluster_query; }
EOF
$t->start;

sub cq {
    my ($fp, %a) = @_;
    my $r = $t->get("/cq?zone=crawl&fp=$fp" . ($a{h} ? "&h=$a{h}" : ''));
    my $j = eval { decode_json($r->{content}) } // { raw => $r->{content} };
    return { http => $r->{status}, %$j };
}

sub flip { sprintf '%016x', hex($_[0]) ^ $_[1] }

# the workers read the map and the layout on their own: wait for them
wait_until('the client to have its slot map and layout', sub {
    my $r = cq($known[0][1]);
    return ($r->{status} // '') eq 'found';
});

for my $k (@known) {
    my $r = cq(flip($k->[1], 0x30));
    is($r->{status}, 'found', "2 bits from $k->[1]: found");
    is($r->{id}, $k->[0], 'with its whole id');
    is($r->{distance}, 2, 'at distance 2');
}
is(cq('ffffffffffffffff')->{status}, 'new', 'a far page: new');
is(cq(flip($known[0][1], 0xf), h => 3)->{status}, 'new',
   'beyond the radius: new');
is(cq('xyz')->{http}, 400, 'a bad fingerprint: 400');

# ---- a slot moved by hand while nginx runs: ASK, then MOVED ----
{
    my $k = $known[5];
    my $meta = $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT',
                                                  'sh:m'))->cmd('GET', 'sh:m');
    my ($bits) = split / /, $meta;
    my $key = sprintf 'sh:f%0*x', int(($bits + 3) / 4),
                      hex($k->[1]) >> (64 - $bits);
    my $slot = $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key);
    my $from = $c->master_of_slot($slot);
    my ($to) = grep { $_->port != $from->port } $c->masters;
    my ($fid, $tid) = map { $_->cmd('CLUSTER', 'MYID') } $from, $to;

    is($to->cmd('CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $fid), 'OK',
       "slot $slot importing");
    is($from->cmd('CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $tid), 'OK',
       'and migrating');
    is($from->cmd('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000, 'KEYS',
                  $key), 'OK', "$key migrated: its old master answers ASK");
    like(ref $from->cmd('GET', $key) ? $from->cmd('GET', $key)->{error} : '',
         qr/^ASK /, 'ASK it is');
    my $r = cq(flip($k->[1], 0x2));
    is($r->{status}, 'found', 'ASK followed: found');
    is($r->{id}, $k->[0], 'with its id');

    for my $n ($c->masters) {
        $n->cmd('CLUSTER', 'SETSLOT', $slot, 'NODE', $tid);
    }
    like($from->cmd('GET', $key)->{error}, qr/^MOVED /,
         'the slot moved: its old master answers MOVED');
    $r = cq(flip($k->[1], 0x2));
    is($r->{status}, 'found', 'MOVED followed: found');
    is($r->{id}, $k->[0], 'with its id');
    $c->wait_ok;
}

# ---- a wide table: every bucket PSM names is read, past 64 ----
# A layout of 2^22 table buckets (one for about 2^28 documents) beside
# the first, under a prefix of its own, and a node that reads it: a
# lookup within 7 bits (a weighted rule's radius) names over a hundred
# buckets there, and reads them all; within 3 bits, a few.
{
    open(my $none, '>', "$dir/none.txt") or die;
    close $none;
    my ($rc2, undef, $err2) = sh($cli, 'cluster', 'load', '--seed', $seed,
                                 '--redis', $c->addr, '--prefix', 'wide:',
                                 '--fp-bits', 22, '--rec-bits', 14,
                                 "$dir/none.txt");
    is($rc2, 0, 'a wide layout loaded') or diag($err2);
    my $w = SimhashTest->new(
        http  => "simhash_zone zone=wide:1m cluster=$urls "
               . "cluster_prefix=wide: cluster_timeout=300ms;",
        proxy => <<"EOF");
        simhash wide;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /cq { simhash_cluster_query; }
EOF
    $w->start;
    my $wq = sub {
        my $r = $w->get("/cq?zone=wide&fp=$known[0][1]&h=$_[0]");
        return eval { decode_json($r->{content}) } // {};
    };
    wait_until('the wide node to have its layout',
               sub { ($wq->(3)->{status} // '') eq 'new' });
    my ($r3, $r7) = ($wq->(3), $wq->(7));
    is($r7->{status}, 'new', 'within 7 bits of 2^22 buckets: new');
    cmp_ok($r7->{buckets}, '>', 64, "and $r7->{buckets} buckets read");
    cmp_ok($r3->{buckets}, '<', $r7->{buckets},
           "within 3 bits, fewer: $r3->{buckets}");
    $w->stop;
}

# ---- a master killed ----
my $fp = $known[3][1];
my $meta = $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', 'sh:m'))
             ->cmd('GET', 'sh:m');
my ($bits) = split / /, $meta;
my $bkey = sprintf 'sh:f%0*x', int(($bits + 3) / 4), hex($fp) >> (64 - $bits);
$c->kill_master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', $bkey));

my (%causes, $worst, $recovered, $new);
my $t0 = time;
while (time - $t0 < 60) {
    my $s = time;
    my $r = cq($fp);
    my $took = time - $s;
    $worst = $took if !defined $worst || $took > $worst;
    my $st = $r->{status} // 'none';
    $new++ if $st eq 'new';
    $causes{$r->{cause}}++ if $st eq 'incomplete';
    if ($st eq 'found') {
        $recovered = 1;
        last;
    }
}
ok(!$new, 'never new while the master of a probed bucket is down');
ok(scalar(keys %causes), 'incomplete meanwhile, with causes: '
   . join(', ', map { "$_ $causes{$_}" } sort keys %causes));
ok($recovered, 'found again after the failover, by itself');
cmp_ok($worst, '<', 1.5, 'no lookup waited much past its timeout');
is(cq(flip($known[3][1], 0x1))->{id}, $known[3][0],
   'the promoted replica answers with the id');

$t->stop;
$c->stop;
done_testing();
