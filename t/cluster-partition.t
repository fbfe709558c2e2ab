#!/usr/bin/perl
# A network partition between the module's node and one master of a real
# Redis Cluster (3 masters, 3 replicas), made as Jepsen makes one: nginx
# runs in a network namespace of its own, joined to the cluster's by a
# veth pair, and nftables inside it drops every packet to and from that
# master's port (silence, not a refused connection).  The cluster itself
# sees nothing (its nodes talk among themselves on this side), so no
# failover comes to the rescue: the client alone must bound its wait.
#
# Lookups of loaded documents, each probing its own bucket only (h=0), so
# that which master a lookup needs is known: every lookup that needs the
# cut master is incomplete, with its cause, within the lookup's timeout;
# every other one is answered in full.  A page fetched through the proxy
# meanwhile is passed whole (200), never new from a partial read.  The
# link returns: everything is answered in full again, by itself.
#
# Needs root (ip netns, nftables); skipped otherwise.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use IO::Socket::INET;
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
if (my $why = RedisCluster::Netns::why_not()) {
    plan(skip_all => "a partition made with network namespaces: $why");
}

my $ns = RedisCluster::Netns->new;
my $inside = $ns->inside;

# nginx in the namespace: started by `ip netns exec`, reached at the
# namespace's address
package NsNode {
    our @ISA = ('SimhashTest');
    sub url { "http://$inside:$_[0]{port}$_[1]" }
    sub _wait_port {
        my ($self, $port) = @_;
        SimhashTest::wait_until("nginx to listen on $inside:$port", sub {
            IO::Socket::INET->new(PeerAddr => $inside, PeerPort => $port,
                                  Proto => 'tcp')
        });
    }
    sub start {
        my ($self) = @_;
        local $SimhashTest::NGINX = $ns->prefix . " $SimhashTest::NGINX";
        return $self->SUPER::start;
    }
}

my $seed = 'tier-secret-for-the-partition';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000,
                          host => $ns->host);
$c->start;
my @nodes = $c->nodes;

# ---- documents ----
my $dir = File::Temp::tempdir('simhash-cpart-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my @known = map { { id => $_->[0], fp => $_->[1] } }
    RedisCluster::random_docs("$dir/docs.txt", 3000, 50, 4614);
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, "$dir/docs.txt");
is($rc, 0, 'loaded') or diag($err);

my $t = NsNode->new(
    workers => 2,
    http  => "simhash_zone zone=crawl:4m cluster=" . $c->urls
           . " cluster_timeout=500ms;",
    proxy => <<"EOF");
        listen $inside:%%PORT%%;
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
my @pages = $t->random_pages(200, 120, 4614);
$t->write_file("html/p$_.html", $pages[$_]) for 0 .. $#pages;
$t->start;

sub cq {
    my ($fp) = @_;
    my $s = time;
    my $r = $t->get("/cq?zone=crawl&fp=$fp&h=0");
    my $j = eval { decode_json($r->{content}) } // {};
    return { http => $r->{status}, took => time - $s, %$j };
}

sub counts { $t->stats->{zones}{crawl}{cluster} }

# which master each lookup needs: its table bucket's, and (found) its
# record bucket's
my ($fpb, $recb) = split / /, $c->master_of_slot(
    $nodes[0]->cmd('CLUSTER', 'KEYSLOT', 'sh:m'))->cmd('GET', 'sh:m');
sub owner {
    my ($kind, $bits, $hex) = @_;
    my $key = sprintf 'sh:%s%0*x', $kind, int(($bits + 3) / 4),
                      hex($hex) >> (64 - $bits);
    return $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key))
             ->port;
}
my @far = map { { fp => sprintf('%08x%08x', int(rand(2**32)),
                                int(rand(2**32))) } } 1 .. 20;
for my $k (@known, @far) {
    $k->{ports} = [ owner('f', $fpb, $k->{fp}),
                    $k->{id} ? owner('r', $recb, $k->{id}) : () ];
}
my $cut = $known[0]{ports}[0];
my @needs = grep { grep { $_ == $cut } @{ $_->{ports} } } @known, @far;
my @free = grep { !grep { $_ == $cut } @{ $_->{ports} } } @known, @far;
ok(@needs >= 5 && @free >= 5, scalar(@needs) . ' lookups need the master '
   . "on port $cut, " . scalar(@free) . ' do not');

# the answer a lookup must give when its masters answer
sub right {
    my ($k, $r) = @_;
    return $r->{http} == 200 && ($k->{id}
        ? ($r->{status} // '') eq 'found' && $r->{id} eq $k->{id}
        : ($r->{status} // '') eq 'new');
}

wait_until('every lookup answered in full', sub {
    !grep { !right($_, cq($_->{fp})) } @known, @far
});

# ---- the link to one master cut ----
my $before = counts();
$ns->cut($cut);
my $t0 = time;
my (%causes, @wrong, $worst, $pages_worst, %pages, @new_pages);
my $skipped0 = $t->stats->{zones}{crawl}{skipped}{index_incomplete} // 0;
my $i = 0;
# past the connection's own reply timeout (1 s), when the client has
# given up the connection and reconnects into the silence
while (time - $t0 < 4) {
    # a page first: the first ones come while the connection stands
    my $s = time;
    my $r = $t->get('/p' . ($i++ % @pages) . '.html');
    my $took = time - $s;
    $pages_worst = $took if !defined $pages_worst || $took > $pages_worst;
    my $st = $r->{headers}{'x-simhash-status'} // '-';
    $pages{"$r->{status} $st"}++;
    push @new_pages, $r->{headers}{'x-simhash'} if $st eq 'new';
    for my $k (@needs) {
        my $r = cq($k->{fp});
        $worst = $r->{took} if !defined $worst || $r->{took} > $worst;
        if ($r->{http} == 200 && ($r->{status} // '') eq 'incomplete') {
            $causes{$r->{cause}}++;
        } else {
            push @wrong, "$k->{fp} needs $cut: $r->{http} "
                       . ($r->{status} // '-');
        }
    }
    for my $k (@free) {
        my $r = cq($k->{fp});
        push @wrong, "$k->{fp} does not need $cut: $r->{http} "
                   . ($r->{status} // '-') . ' ' . ($r->{cause} // '')
            unless right($k, $r);
    }
}
my $causes = join ', ', map { "$_ $causes{$_}" } sort keys %causes;
ok(!@wrong, 'while cut: every lookup that needs the master incomplete, '
   . 'every other answered in full') or diag(join "\n", grep { defined } @wrong[0 .. 9]);
ok(scalar(keys %causes), "incomplete by cause: $causes");
cmp_ok($worst, '<', 1.5, sprintf('the worst wait %.3f s: bounded by the '
       . 'lookup\'s timeout (500 ms), not by the silence', $worst));
note('pages through the proxy: '
     . join ', ', map { "$_: $pages{$_}" } sort keys %pages);
ok(!grep({ !/^200 / } keys %pages), 'pages passed (200)');
ok(!grep({ !/^200 (skipped|new)$/ } keys %pages),
   'each skipped, or new when its lookup needed only the other masters');
is(($t->stats->{zones}{crawl}{skipped}{index_incomplete} // 0) - $skipped0,
   $pages{'200 skipped'} // 0, 'skipped as index_incomplete');
# a page's lookup probes its own bucket and a few more (ranked by the
# page's weights, which only the node knows): its own at least is not the
# cut master's
ok(!grep({ owner('f', $fpb, $_) == $cut } @new_pages),
   scalar(@new_pages) . ' new pages, none whose bucket the cut master '
   . 'holds');
cmp_ok($pages_worst, '<', 1.5, sprintf('the worst response %.3f s',
                                      $pages_worst));
my $during = counts();
my $inc = 0;
$inc += $during->{incomplete}{$_} - ($before->{incomplete}{$_} // 0)
    for keys %{ $during->{incomplete} };
my $seen = 0;
$seen += $_ for values %causes;
cmp_ok($inc, '>=', $seen, "the statistics count them ($inc)");
cmp_ok($during->{incomplete}{timeout} - $before->{incomplete}{timeout}, '>',
       0, 'their cause: timeout (the GETs unanswered), '
       . join(', ', map { "$_ " . ($during->{incomplete}{$_}
                                   - $before->{incomplete}{$_}) }
                    sort keys %{ $during->{incomplete} }));

# ---- the link returns ----
$ns->heal;
my $h0 = time;
wait_until('every lookup answered in full again', sub {
    !grep { !right($_, cq($_->{fp})) } @known, @far
});
my $healed = time - $h0;
cmp_ok($healed, '<', 10, sprintf('healed by itself in %.1f s', $healed));
my $r = $t->get('/p0.html?again');
is($r->{status}, 200, 'a page through the proxy after');
like($r->{headers}{'x-simhash-status'}, qr/^(new|unchanged|duplicate)$/,
     'decided from a full read: ' . ($r->{headers}{'x-simhash-status'} // ''));
note(sprintf 'partition: worst lookup %.3f s, worst response %.3f s, '
             . 'healed in %.1f s', $worst, $pages_worst, $healed);

$t->check_log;
$t->stop;
$c->stop;
$ns->remove;
done_testing();
