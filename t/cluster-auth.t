#!/usr/bin/perl
# A Redis Cluster with ACL users (the default user off), as an operator
# runs one: the nodes ask it as a user with the least rights the module
# needs (the line docs/reference.md gives: PING, GET, APPEND, ASKING,
# CLUSTER SLOTS on the prefix's keys), `simhash cluster load` writes as a
# user who may SET, and `simhash cluster query` reads, each with the
# credentials in the same redis://USER:PASSWORD@HOST:PORT URLs.  Loaded
# documents are found, a far page is new, a page new through the node is
# written (APPEND) with no write lost.  A wrong password: every lookup is
# incomplete, its cause ("denied") counted, the page passed through as
# skipped, never new, and the log says AUTH was refused (once, not at every
# retry); the password is never logged.  A user without APPEND: lookups
# answer, each write is lost, counted and logged with Redis's NOPERM.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use JSON::PP;
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;
no warnings qw(portable);

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-acl-cluster';
# the node's line of docs/reference.md, and the loader's (SET besides)
my $node_rules = 'resetchannels ~sh:* -@all +ping +get +append +asking '
               . '+cluster|slots';
my %users = (simhash => ['node p@ss:word', $node_rules],
             loader  => ['load-pass', "$node_rules +set"],
             reader  => ['read-pass', 'resetchannels ~sh:* -@all +ping '
                                      . '+get +asking +cluster|slots']);
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000,
                          users => \%users);
$c->start;
my @nodes = $c->nodes;
is(ref $nodes[0]->cmd('ACL', 'WHOAMI') ? '' : $nodes[0]->cmd('ACL', 'WHOAMI'),
   'admin', 'the harness is the administrator');

# the default user is off: no command without a user
{
    my $plain = RedisTest->new;
    $plain->{port} = $nodes[0]->port;
    my $r = eval { $plain->cmd('GET', 'sh:m') };
    like(ref $r ? $r->{error} : '', qr/^NOAUTH/, 'the default user is off');
}

# ---- the documents, by `simhash cluster load` as the loader ----
my $dir = File::Temp::tempdir('simhash-cauth-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my @known = RedisCluster::random_docs("$dir/docs.txt", 2000, 500, 4648);
my $one = (split /,/, $c->url_of('loader'))[0];
(my $wrong = $one) =~ s/load-pass/nope/;
my ($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                          '--redis', $wrong, "$dir/docs.txt");
isnt($rc, 0, 'load with a wrong password: fails');
like($err, qr/AUTH refused: WRONGPASS/, '... saying AUTH was refused');
unlike($err, qr/nope/, '... without the password');
my $reader_url = (split /,/, $c->url_of('reader'))[0];
($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                       '--redis', $reader_url, "$dir/docs.txt");
isnt($rc, 0, 'load as a user who may not SET: fails');
like($err, qr/NOPERM/, "... with Redis's NOPERM") or diag($err);
($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                       '--redis', $one, "$dir/docs.txt");
is($rc, 0, 'loaded as the loader, by a redis://USER:PASSWORD@ URL')
    or diag($err);
$_->cmd('WAIT', 1, 5000) for $c->masters;
my $flip = sub { sprintf '%016x', hex($_[0]) ^ $_[1] };
($rc, $out, $err) = sh($cli, 'cluster', 'query', '--seed', $seed,
                       '--redis', $reader_url, $flip->($known[0][1], 0x3));
is($rc, 0, 'simhash cluster query as the reader') or diag($err);
like($out, qr/\Q$known[0][0]\E/, '... finds the loaded document');
{
    local $ENV{REDISCLI_AUTH} = 'read-pass';
    ($rc, $out, $err) = sh($cli, 'cluster', 'query', '--seed', $seed,
                           '--redis', 'redis://reader@' . $c->addr,
                           $known[1][1]);
    isnt($rc, 0, 'USER@ without :PASSWORD is refused') ;
    like($err, qr/USER:PASSWORD@/, '... saying the form');
}

# ---- nginx nodes: the right user, a wrong password, no APPEND ----
sub node {
    my ($urls) = @_;
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m cluster=$urls "
               . "cluster_timeout=300ms;",
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

sub cq {
    my ($t, $fp) = @_;
    my $r = $t->get("/cq?zone=crawl&fp=$fp");
    my $j = eval { decode_json($r->{content}) } // { raw => $r->{content} };
    return $j;
}

my $A = node($c->url_of('simhash'));
wait_until('A to read the map and the layout as user simhash', sub {
    (cq($A, $known[0][1])->{status} // '') eq 'found'
});
for my $k (@known) {
    my $r = cq($A, $flip->($k->[1], 0x0c));
    is($r->{status}, 'found', "user simhash: 2 bits from $k->[1] found");
    is($r->{id}, $k->[0], '... with its id');
}
is(cq($A, 'ffffffffffffffff')->{status}, 'new', 'user simhash: far: new');
my $r = $A->get('/council.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a page through A: new');
my $pfp = $r->{headers}{'x-simhash'};
wait_until("A's page written (APPEND) and found", sub {
    (cq($A, $pfp)->{status} // '') eq 'found'
});
my $cs = $A->stats->{zones}{crawl}{cluster};
cmp_ok($cs->{writes}, '>=', 1, 'written');
is($cs->{write_errors}, 0, 'no write lost: the rights cover APPEND');
$A->check_log;
unlike($A->error_log, qr/NOPERM|WRONGPASS|NOAUTH/, 'no refusal logged');

# a wrong password
my $B = node($c->url_of('simhash', 'wrong password'));
# (until its first connection is refused, a lookup is "starting")
SimhashTest::wait_until('B to be refused', sub {
    (cq($B, $known[0][1])->{cause} // '') eq 'denied'
});
my $denied0 = $B->stats->{zones}{crawl}{cluster}{incomplete}{denied};
my %st;
my $cause = '';
for my $i (1 .. 10) {
    my $j = cq($B, $known[$i % @known][1]);
    $st{$j->{status} // 'none'}++;
    $cause = $j->{cause} // '';
}
is_deeply(\%st, { incomplete => 10 },
          'wrong password: every lookup incomplete, none new');
is($cause, 'denied', 'wrong password: cause denied (not starting, not '
   . 'unreachable: no failover mends it)');
$r = $B->get('/bicycle.html');
is($r->{status}, 200, 'a page through B: 200');
is($r->{headers}{'x-simhash-status'}, 'skipped', '... skipped');
is($r->{content}, $B->fixture('bicycle.html'), '... passed whole');
my $bz = $B->stats->{zones}{crawl};
is($bz->{skipped}{index_incomplete}, 1, '... counted as index_incomplete');
my $bs = $bz->{cluster};
cmp_ok($bs->{incomplete}{denied} - $denied0, '>=', 11,
       'counted, by cause: '
           . join(', ', map { "$_ $bs->{incomplete}{$_}" }
                        sort keys %{ $bs->{incomplete} }));
is($bs->{new}, 0, 'no lookup new');
my $log = $B->error_log;
like($log, qr/\[error\].*AUTH refused: WRONGPASS/,
     'the log says AUTH was refused');
my $said = () = $log =~ /AUTH refused/g;
cmp_ok($said, '<=', scalar @nodes, 'once a seed\'s connection, not at '
       . "every retry ($said lines, the connections retried meanwhile)");
unlike($log, qr/wrong password|wrong%20password/, 'no password in the log');
$B->stop;

# a user who may not APPEND: lookups answer, writes are lost and said
my $R = node($c->url_of('reader'));
wait_until('R to read the map', sub {
    (cq($R, $known[0][1])->{status} // '') eq 'found'
});
$r = $R->get('/bicycle.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'user reader: a page new');
wait_until('the write lost, counted', sub {
    $R->stats->{zones}{crawl}{cluster}{write_errors} >= 1
});
like($R->error_log, qr/NOPERM/, "the log has Redis's NOPERM");

$A->stop;
$R->stop;
$c->stop;
done_testing();
