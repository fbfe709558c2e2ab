#!/usr/bin/perl
# The console's view of a zone's Redis Cluster: its lookups and their
# outcomes (found, new, incomplete by cause), their times in the
# histogram's buckets, MOVED, ASK, slot-map refreshes, writes and writes
# lost, and the slot map as the answering worker holds it (each node, the
# slots it serves, connected or not) in the JSON ("cluster",
# "cluster_nodes"), in Prometheus (simhash_cluster_*, which passes
# promtool) and on the page in Chromium, whose figures equal the JSON's.
# One nginx node, a real 6-process cluster named by all six seeds, a
# replica killed: the map shows it not connected and serving no slot.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-console';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000);
$c->start;
my $urls = $c->urls;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m cluster=$urls "
           . "cluster_timeout=300ms;",
    proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location /stats { simhash_stats; }
EOF

my $fp = $t->cli_fingerprint('sourdough.html', '--seed', $seed);
my $dir = File::Temp::tempdir('simhash-cconsole-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
open(my $fh, '>', "$dir/docs.txt") or die;
print $fh "00c0ffee0000cafe $fp 1 1700000000 0 0\n";
srand(4649);
printf $fh "%08x%08x %08x%08x 2 1700000000 0 0\n",
       map { int(rand(2**32)) } 1 .. 4 for 1 .. 500;
close $fh;
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, "$dir/docs.txt");
is($rc, 0, 'loaded') or diag($err);
$_->cmd('WAIT', 1, 5000) for $c->masters;

$t->start;
my $n = 0;
wait_until('the node to read the cluster', sub {
    ($t->get('/sourdough.html?n=' . $n++)->{headers}{'x-simhash-status'}
     // '') eq 'duplicate'
});
is($t->status_of('/bicycle.html'), 'new', 'a far page: new, written');

# a replica killed: its seed's connection is down, it serves no slot
my ($replica) = grep {
    my $role = $_->cmd('ROLE');
    ref $role eq 'ARRAY' && $role->[0] eq 'slave'
} $c->nodes;
my $gone = '127.0.0.1:' . $replica->port;
$replica->kill9;

sub zone { $t->stats->{zones}{crawl} }
my $z;
wait_until("the map to show $gone down", sub {
    $z = zone();
    my ($g) = grep { $_->{node} eq $gone } @{ $z->{cluster_nodes} };
    return $g && !$g->{connected} && $z->{cluster}{writes} >= 1;
});

# ---- JSON ----
my $cl = $z->{cluster};
my @nodes = @{ $z->{cluster_nodes} };
is(scalar @nodes, 6, 'the six nodes the seeds name');
my @masters = grep { $_->{slots} } @nodes;
is(scalar @masters, 3, 'three of them serve slots');
my $slots = 0;
$slots += $_->{slots} for @nodes;
is($slots, 16384, 'every slot once');
like($_->{ranges}, qr/^\d+(-\d+)?(,\d+(-\d+)?)*(,\.\.\.)?$/,
     "$_->{node}: its ranges ($_->{ranges})") for @masters;
my %conn = map { $_->{node} => $_->{connected} } @nodes;
is($conn{$gone}, 0, "$gone: not connected");
is(scalar(grep { $_ } values %conn), 5, 'the other five connected');
cmp_ok($cl->{found}, '>=', 1, 'found counted');
cmp_ok($cl->{new}, '>=', 1, 'new counted');
cmp_ok($cl->{refreshes}, '>=', 1, 'map refreshes counted');
is($cl->{lookup_us}{count}, $cl->{lookups}, 'each lookup timed');
is($cl->{lookup_us}{'+Inf'}, $cl->{lookups}, '... in the histogram');
is_deeply([sort keys %{ $cl->{incomplete} }],
          [sort qw(starting unreachable timeout unserved clusterdown error
                   denied)], 'incomplete lookups by each cause');

# ---- Prometheus ----
my $prom = $t->get('/stats?format=prometheus')->{content};
my $ps = 0;
$ps += $1 while $prom =~ /^simhash_cluster_node_slots\{zone="crawl",node="[^"]+"\} (\d+)$/mg;
is($ps, 16384, 'simhash_cluster_node_slots: every slot once');
like($prom, qr/^simhash_cluster_node_connected\{zone="crawl",node="\Q$gone\E"\} 0$/m,
     'simhash_cluster_node_connected: the killed replica 0');
like($prom, qr/^simhash_cluster_lookup_seconds_bucket\{zone="crawl",le="0\.001"\} \d+$/m,
     'the lookups\' histogram');
like($prom, qr/^simhash_cluster_incomplete_total\{zone="crawl",cause="denied"\} 0$/m,
     'incomplete by cause, denied among them');
is(scalar(() = $prom =~ /^# TYPE simhash_cluster_node_slots /mg), 1,
   'its family once');
SKIP: {
    my $promtool = `command -v promtool 2>/dev/null`;
    chomp $promtool;
    skip 'promtool not installed (tools/deps.sh console)', 1
        unless $promtool;
    my $file = $t->prefix . '/metrics.txt';
    open(my $mf, '>', $file) or die "$file: $!";
    print $mf $prom;
    close $mf;
    my $out = `$promtool check metrics < $file 2>&1`;
    is($?, 0, 'promtool check metrics: a zone with a cluster passes')
        or diag($out);
}

# ---- the page, in the browser (as t/console.t) ----
SKIP: {
    my $have = -x '/usr/bin/chromium' && -x '/usr/bin/chromedriver'
               && system('/usr/bin/python3 -c "import selenium" 2>/dev/null')
                  == 0;
    if (!$have) {
        fail('the browser test needs chromium, chromium-driver and '
             . 'python3-selenium (tools/deps.sh console)')
            if $ENV{SH_CONSOLE_BROWSER};
        skip 'no chromium, chromium-driver or python3-selenium', 1;
    }
    skip 'the browser under valgrind', 1 if $SimhashTest::VALGRIND;
    local $ENV{HOME} = $t->prefix . '/tmp';
    local $ENV{TMPDIR} = $t->prefix . '/tmp';
    my @cmd = ('/usr/bin/python3', "$FindBin::Bin/lib/console_browser.py",
               $t->url('/stats'), $t->prefix . '/logs/nginx.pid',
               '-', '-', '-');
    open(my $bh, '-|', @cmd) or die "@cmd: $!";
    my $checks = 0;
    while (my $line = <$bh>) {
        chomp $line;
        if ($line =~ /^(not )?ok - (.*)$/) {
            ok(!$1, "browser: $2");
            $checks++;
        } elsif ($line =~ /^# (.*)$/) {
            diag($1);
        }
    }
    close $bh;
    is($? >> 8, 0, 'browser: the script passed');
    ok($checks >= 8, "browser: $checks checks ran");
}

$t->stop;
$t->check_log;
$c->stop;
done_testing();
