#!/usr/bin/perl
# A Redis Cluster that speaks TLS only, as t/lib/RedisCluster.pm starts
# one (tls => 1): a CA made by openssl here, six nodes on their TLS ports
# alone (port 0), the cluster bus and the replication over TLS
# (tls-cluster, tls-replication), joined by redis-cli --tls --cluster
# create.  The cluster is real: it serves its slots and its replicas are
# in sync over TLS, a plain connection gets no answer, and a client that
# trusts another CA is refused.  The module asks it over TLS (rediss://
# seeds, cluster_tls_ca=, the client's certificate): the slot map and the
# layout are read, a page new through the node is written (APPEND) and
# found, a far one is new.  A CA that did not sign the nodes'
# certificates, or a name they do not give: every lookup incomplete,
# never new, the log saying why, nothing sent before the check.  nginx -t
# refuses rediss:// without a CA, TLS parameters without rediss://, and
# seeds that mix the two.  The CLI (hiredis 0.14: no TLS) refuses
# rediss:// saying so.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP ();
use SimhashTest;
use SimhashCli;
use RedisCluster;

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
plan(skip_all => 'no IO::Socket::SSL (tools/deps.sh installs it)')
    unless eval { require IO::Socket::SSL; 1 };
plan(skip_all => 'no openssl') unless system('openssl version >/dev/null 2>&1') == 0;
plan(skip_all => 'this redis-server has no TLS')
    unless `redis-server --help 2>&1; redis-cli --help 2>&1` =~ /--tls/;
plan(skip_all => 'TLS under valgrind reports OpenSSL itself')
    if $SimhashTest::VALGRIND;
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');

my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000,
                          tls => 1);
$c->start;
my @nodes = $c->nodes;
my $port = $nodes[0]->port;
my $tls = $c->tls_args;

like(scalar `redis-cli $tls -p $port CLUSTER INFO 2>&1`,
     qr/cluster_state:ok/, 'redis-cli --tls: the cluster is ok');
my @replicas = grep {
    my $role = $_->cmd('ROLE');
    ref $role eq 'ARRAY' && $role->[0] eq 'slave'
} @nodes;
is(scalar @replicas, 3, 'three replicas');
SimhashTest::wait_until('the replicas in sync over TLS', sub {
    !grep { $_->cmd('INFO', 'replication') !~ /master_link_status:up/ }
          @replicas
});
ok(1, 'every replica\'s link to its master is up (tls-replication)');
is(`redis-cli $tls -c -p $port SET sh:tls-probe 1 2>&1`, "OK\n",
   'a write through the cluster, over TLS');
unlike(scalar `timeout 5 redis-cli -p $port PING 2>&1`, qr/PONG/,
       'a plain connection to a TLS port: no answer');
my $d = $c->tls_dir;
unlike(scalar `timeout 5 redis-cli --tls --cacert $d/otherca.crt --cert $d/client.crt --key $d/client.key -p $port PING 2>&1`,
       qr/PONG/, 'a client that trusts another CA: refused');

# ---- the module ----
my $seed = 'tls-test-seed';
sub node_conf {
    my ($params) = @_;
    return SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m cluster_timeout=500ms $params;",
        proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
}
my $urls = $c->urls;
my $files = "cluster_tls_ca=$d/ca.crt cluster_tls_cert=$d/client.crt "
          . "cluster_tls_key=$d/client.key";

for my $bad (["cluster=$urls", qr/rediss:\/\/ needs cluster_tls_ca=PATH/,
              'rediss:// without a CA'],
             ["cluster=redis://127.0.0.1:$port cluster_tls_ca=$d/ca.crt",
              qr/cluster_tls_\*= without rediss:\/\/ seeds/,
              'a CA without rediss://'],
             ["cluster=rediss://127.0.0.1:$port,redis://127.0.0.1:$port "
              . "cluster_tls_ca=$d/ca.crt",
              qr/mix redis:\/\/ and rediss:\/\//, 'seeds that mix the two'],
             ["cluster=$urls cluster_tls_ca=$d/ca.crt "
              . "cluster_tls_cert=$d/client.crt",
              qr/cluster_tls_cert= and cluster_tls_key= go together/,
              'a certificate without its key'],
             ["cluster=$urls cluster_tls_ca=$d/nothing.crt",
              qr/nothing\.crt/, 'a CA file that is not there']) {
    my ($rc, $out) = node_conf($bad->[0])->nginx_t;
    isnt($rc, 0, "$bad->[2]: nginx -t fails");
    like($out, $bad->[1], '... saying why') or diag($out);
}

# the meta key the nodes read the layout from (simhash cluster load
# writes it; hiredis 0.14 cannot reach a TLS cluster)
my $slot = $nodes[0]->cmd('CLUSTER', 'KEYSLOT', 'sh:m');
is($c->master_of_slot($slot)->cmd('SET', 'sh:m', '16 14'), 'OK',
   'the layout key');

sub cq {
    my ($t, $fp) = @_;
    my $r = $t->get("/cq?zone=crawl&fp=$fp");
    return eval { JSON::PP::decode_json($r->{content}) }
           // { raw => $r->{content} };
}

my $t = node_conf("cluster=$urls $files");
my ($trc, $tout) = $t->nginx_t;
is($trc, 0, 'rediss:// with the CA and the client\'s certificate: nginx -t')
    or diag($tout);
$t->start;
SimhashTest::wait_until('the map and the layout read over TLS', sub {
    (cq($t, 'ffffffffffffffff')->{status} // '') eq 'new'
});
my $r = $t->get('/council.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a page through the node: new');
my $pfp = $r->{headers}{'x-simhash'};
SimhashTest::wait_until('the page written over TLS and found', sub {
    (cq($t, $pfp)->{status} // '') eq 'found'
});
my $cs = $t->stats->{zones}{crawl}{cluster};
cmp_ok($cs->{writes}, '>=', 1, 'written');
is($cs->{write_errors}, 0, 'no write lost');
is(scalar(grep { $_->{connected} } @{ $t->stats->{zones}{crawl}{cluster_nodes} }),
   6, 'connected to the six nodes over TLS');
$t->check_log;
unlike($t->error_log, qr/TLS:/, 'no TLS error logged');
$t->stop;

# a CA that did not sign them; a name they do not give
for my $case (["cluster_tls_ca=$d/otherca.crt cluster_tls_cert=$d/client.crt "
               . "cluster_tls_key=$d/client.key",
               qr/TLS: the server's certificate does not verify: \(\d+\) /,
               'another CA'],
              ["$files cluster_tls_name=redis.example",
               qr/TLS: the server's certificate does not name "redis\.example"/,
               'another name']) {
    my $u = node_conf("cluster=$urls $case->[0]");
    $u->start;
    my %st;
    for my $i (1 .. 5) {
        my $j = cq($u, sprintf('%016x', 0x1234567 * $i));
        $st{$j->{status} // 'none'}++;
    }
    is_deeply(\%st, { incomplete => 5 },
              "$case->[2]: every lookup incomplete, none new");
    my $p = $u->get('/bicycle.html');
    is($p->{headers}{'x-simhash-status'}, 'skipped',
       "$case->[2]: a page passed through, skipped");
    like($u->error_log, $case->[1], "$case->[2]: the log says why");
    unlike($u->error_log, qr/AUTH|PING refused/,
           "$case->[2]: nothing sent before the check");
    $u->stop;
}

# the CLI: the same
my ($lrc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', 'x',
                            '--redis', "rediss://127.0.0.1:$port",
                            '--random', 10);
isnt($lrc, 0, 'simhash cluster load --redis rediss://: fails');
like($err, qr/TLS \(rediss:\/\/\) is not supported/, '... saying so');

$c->stop;
done_testing();
