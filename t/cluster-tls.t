#!/usr/bin/perl
# A Redis Cluster that speaks TLS only, as t/lib/RedisCluster.pm starts
# one (tls => 1): a CA made by openssl here, six nodes on their TLS ports
# alone (port 0), the cluster bus and the replication over TLS
# (tls-cluster, tls-replication), joined by redis-cli --tls --cluster
# create.  The cluster is real: it serves its slots and its replicas are
# in sync over TLS, a plain connection gets no answer, and a client that
# trusts another CA is refused.  The module and the CLI do not speak TLS:
# a rediss:// seed fails nginx -t saying so (and naming the tunnel to use),
# and simhash cluster load refuses it the same way; never a plain
# connection to a TLS port.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
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

# the module: rediss:// seeds fail nginx -t, saying why
my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m cluster=" . $c->urls . ";",
    proxy => "simhash crawl;\n        simhash_seed tls-test-seed;\n"
           . "        location / { proxy_pass http://%%ORIGIN%%; }");
my ($rc, $out) = $t->nginx_t;
isnt($rc, 0, 'cluster=rediss://...: nginx -t fails');
like($out, qr/TLS \(rediss:\/\/\) is not supported; reach Redis over a private network or a tunnel/,
     '... saying TLS is not supported, and what to use');

# the CLI: the same
my ($lrc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', 'x',
                            '--redis', "rediss://127.0.0.1:$port",
                            '--random', 10);
isnt($lrc, 0, 'simhash cluster load --redis rediss://: fails');
like($err, qr/TLS \(rediss:\/\/\) is not supported/, '... saying so');

$c->stop;
done_testing();
