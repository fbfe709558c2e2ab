#!/usr/bin/perl
# The console's replication view (issue 36): the lag of each other node of
# the tier, from the entries applied (simhash_stats' "replication_nodes",
# simhash_replication_node_lag_seconds{zone,node}); the node's own entries
# are not counted.  One node and a real redis-server; the other nodes'
# entries are signed by `simhash entry`, as in t/replicate.t.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use SimhashTest qw(wait_until);
use RedisTest;

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
plan(skip_all => 'SH_CLI not set (make itest sets it)')
    unless $ENV{SH_CLI} && -x $ENV{SH_CLI};

my $redis = RedisTest->new;
$redis->start;
my $url = $redis->url;
my $stream = 'simhash:crawl';

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m;\n"
           . "    simhash_replicate crawl $url node=a maxlen=1000;",
    proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
$t->start;

sub zone { $t->stats->{zones}{crawl} }

sub wait_zone {
    my ($cond, $what) = @_;
    my $z;
    wait_until($what, sub { $cond->($z = zone()) });
    return $z;
}

wait_zone(sub { $_[0]{replication}{connected} == 2 }, 'both connections');
is_deeply(zone()->{replication_nodes}, [], 'no other node yet');
is(zone()->{figures}{node}, 'a', 'the figures are node a\'s, as it is named');

# our own page: published, read back, not another node's lag
$t->get('/sourdough.html');
wait_zone(sub { $_[0]{replication}{skipped_own} == 1 }, 'our own entry');

sub xadd {
    my ($node, $key, $age_ms) = @_;
    my @args = ('--node', $node, '--key', $key, '--fp', '0123456789abcdef',
                '--digest', '0' x 16,
                '--time', int(time * 1000) - $age_ms);
    my @pairs = map { split / /, $_, 2 }
                split /\n/, `$ENV{SH_CLI} entry @args`;
    die "simhash entry @args failed" unless @pairs >= 18 && @pairs % 2 == 0;
    return $redis->cmd('XADD', $stream, '*', @pairs);
}

xadd('b', 'site/b1.html', 2000);
xadd('c', 'site/c1.html', 0);
xadd('b', 'site/b2.html', 3000);
my $z = wait_zone(sub { $_[0]{replication}{applied} == 3 },
                  'three entries of two nodes applied');

my %n = map { $_->{node} => $_ } @{ $z->{replication_nodes} };
is_deeply([sort keys %n], ['b', 'c'], 'two other nodes, not our own');
is($n{b}{entries}, 2, 'b: two entries');
is($n{c}{entries}, 1, 'c: one entry');
cmp_ok($n{b}{lag_ms}, '>=', 3000, 'b: the lag of its last entry');
cmp_ok($n{b}{lag_ms}, '<', 60000, 'b: ... not more');
cmp_ok($n{c}{lag_ms}, '<', 2000, 'c: its own lag');
cmp_ok($n{c}{age}, '<', 60, 'c: seen just now');

my $prom = $t->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_replication_node_lag_seconds\{zone="crawl",node="b"\} \d+\.\d{3}$/m,
     'prometheus: the lag of node b');
is(scalar(() = $prom =~ /^# TYPE simhash_replication_node_lag_seconds /mg),
   1, 'prometheus: its family once');

SKIP: {
    my $promtool = `command -v promtool 2>/dev/null`;
    chomp $promtool;
    skip 'promtool not installed (tools/deps.sh console)', 1
        unless $promtool;
    my $file = $t->prefix . '/metrics.txt';
    open(my $fh, '>', $file) or die "$file: $!";
    print $fh $prom;
    close $fh;
    my $out = `$promtool check metrics < $file 2>&1`;
    is($?, 0, 'promtool check metrics: a replicated zone passes')
        or diag($out);
}

# the console's replication view in the browser (as t/console.t)
SKIP: {
    my $have = -x '/usr/bin/chromium' && -x '/usr/bin/chromedriver'
               && system('/usr/bin/python3 -c "import selenium" 2>/dev/null')
                  == 0;
    skip 'no chromium, chromium-driver or python3-selenium', 1 unless $have;
    skip 'the browser under valgrind', 1 if $SimhashTest::VALGRIND;
    local $ENV{HOME} = $t->prefix . '/tmp';
    # and TMPDIR for its singleton socket directory, which it would
    # otherwise leave in /tmp
    local $ENV{TMPDIR} = $t->prefix . '/tmp';
    my @cmd = ('/usr/bin/python3', "$FindBin::Bin/lib/console_browser.py",
               $t->url('/stats'), $t->prefix . '/logs/nginx.pid',
               '-', '-', '-');
    open(my $fh, '-|', @cmd) or die "@cmd: $!";
    while (my $line = <$fh>) {
        chomp $line;
        if ($line =~ /^(not )?ok - (.*)$/) {
            ok(!$1, "browser: $2");
        } elsif ($line =~ /^# (.*)$/) {
            diag($1);
        }
    }
    close $fh;
    is($? >> 8, 0, 'browser: the script passed');
}

$t->check_log;
done_testing;
