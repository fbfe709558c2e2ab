#!/usr/bin/perl
# What a writer of the stream can do to a node, bounded (every writer is
# trusted until entries are authenticated: docs/module.md, "Security"):
#   - rate=N: a flood of entries is read N a second at most;
#   - the digest of an entry is not kept: an entry with a real key, a bogus
#     fingerprint and the real body digest does not pin the page (the next
#     fetch is parsed, and takes the real fingerprint);
#   - an entry that claims this node's id is applied here as elsewhere;
#   - an entry too large for a reply (16 MB, 4096 fields) is refused and
#     read past, the entries after it applied, and the worker's memory
#     stays bounded; also when it is the stream's first, which XINFO
#     STREAM shows whole.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time);
use SimhashTest qw(wait_until);
use RedisTest;
no warnings qw(portable);

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
SimhashTest::needs_master();

my $ASAN = ($ENV{SANITIZE} // '') eq '1';
my $stream = 'simhash:crawl';
my $RATE = 80;

my $redis = RedisTest->new;
$redis->start;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:4m;\n"
           . "    simhash_replicate crawl ${\ $redis->url} node=a "
           . "rate=$RATE;",
    proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
$t->write_file('html/pinned.html', $t->read_file('html/sourdough.html'));
$t->start;

sub repl { $t->stats->{zones}{crawl}{replication} }
sub read_total {
    my $s = repl();
    return $s->{applied} + $s->{outdated} + $s->{refused}
           + $s->{skipped_own};
}

sub status_kb {
    my ($pid, $field) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return undef;
    while (<$fh>) { return $1 if /^\Q$field\E:\s+(\d+) kB/ }
    return undef;
}

ok(wait_until(sub { repl()->{connected} == 2 }), 'connected');
my $r = $t->get('/sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a page');
my $real = $r->{headers}{'x-simhash'};
ok(wait_until(sub { repl()->{skipped_own} == 1 }), 'published, read back');
my %own = @{ $redis->cmd('XRANGE', $stream, '-', '+')->[0][1] };

sub xadd {
    my (%e) = @_;
    my %d = (node => 'z', %e);
    my @extra = @{ delete $d{extra} // [] };
    return $redis->cmd('XADD', $stream, '*', RedisTest::entry(%d), @extra);
}

# --- no pinning through the digest ---------------------------------------------

my $bogus = sprintf('%016x', hex($real) ^ 0xffffffffffff);
xadd(key => 'site/pinned.html', fp => $bogus, digest => $own{digest});
ok(wait_until(sub { repl()->{applied} == 1 }),
   'an entry: a real body digest, a bogus fingerprint');
$r = $t->get('/pinned.html');
isnt($r->{headers}{'x-simhash-status'}, 'unchanged',
     'the page is parsed, not taken for the identical body');
is($r->{headers}{'x-simhash'}, $real, 'it has its real fingerprint');
is($t->get('/pinned.html')->{headers}{'x-simhash-status'}, 'unchanged',
   'and the next identical fetch is answered from the digest');

# --- an entry that claims this node's id ---------------------------------------

my $applied0 = repl()->{applied};
xadd(node => 'a', key => 'site/claims-a', fp => $bogus);
ok(wait_until(sub { repl()->{applied} == $applied0 + 1 }),
   "an entry under this node's id, not its own, is applied here too "
   . "(as on every other node)");

# --- rate= ---------------------------------------------------------------------

# $N distinct genuine entries, each signed with its own (rising) writer
# sequence: a replayed copy of one entry would be refused as a replay
# without charging the bucket (t/replicate-replay.t), which is how
# worker 0's budget stays for genuine entries.  All are signed first and
# written to the stream at once (signed and written one at a time, the
# reader kept up and the bound was never approached); the counters are
# then sampled until every one is read, and the bound holds at every
# sample.
my $before = read_total();
my $N = 240;
my @flood = RedisTest::entries({}, map { ['z', "site/flood$_",
                                           sprintf('%016x', 7919 + $_)] }
                                     1 .. $N);
my $t0 = time;
$redis->cmd('XADD', $stream, '*', @$_) for @flood;
my ($worst, $worst_at, $samples) = (-1e9, '', 0);
{
    # sampled every 10 ms at most
    local $SimhashTest::POLL_MAX = 0.01;
    wait_until("the $N entries of the flood read", sub {
        my $got = read_total() - $before;
        my $elapsed = time - $t0;
        $samples++;
        # the bucket holds $RATE entries and fills at $RATE a second
        my $over = $got - ($RATE + $RATE * $elapsed + 50);
        ($worst, $worst_at) = ($over, sprintf('%d in %.2f s', $got, $elapsed))
            if $over > $worst;
        return $got >= $N;
    });
}
cmp_ok($worst, '<=', 0, "a flood is read at rate=$RATE at most (closest "
       . "to the bound: $worst_at, of $samples samples)");
cmp_ok(time - $t0, '>=', ($N - $RATE) / $RATE - 0.1,
       'and all of it in the end, no sooner than the rate allows');

# --- entries over the reply bound ------------------------------------------------

my ($worker) = $t->children;
my $rss = status_kb($worker, 'VmRSS');
ok(wait_until(sub { read_total() - $before >= $N }), 'quiet');
my $refused = repl()->{refused};
my $applied = repl()->{applied};
xadd(key => 'site/huge-field', fp => $real,
     extra => [ pad => 'x' x (17 * 1024 * 1024) ]);
xadd(key => 'site/many-fields', fp => $real,
     extra => [ map { ("f$_" => 'v') } 1 .. 5000 ]);
xadd(key => 'site/after-huge', fp => $real);
ok(wait_until(sub { repl()->{refused} == $refused + 2 }),
   'two entries over the reply bound refused');
ok(wait_until(sub { repl()->{applied} == $applied + 1 }),
   'the entry after them applied');
my $log = $t->error_log;
like($log, qr/a reply larger than 16 MB: connection dropped/,
     'logged: a reply over 16 MB');
like($log, qr/an array of more than 4096 elements: connection dropped/,
     'logged: too many fields');
like($log, qr/stream entry \d+-\d+ refused: larger than a reply may be; read past/,
     'logged: the entry read past');
is(($t->children)[0], $worker, 'the worker did not die');
my $hwm = status_kb($worker, 'VmHWM');
# ASan keeps freed memory in quarantine: the bound is not its to keep
cmp_ok($ASAN ? 0 : $hwm - $rss, '<', 80 * 1024,
       'the worker grew by less than 80 MB (peak ' . int($hwm / 1024)
       . ' MB)');
ok(wait_until(sub { repl()->{connected} == 2 }), 'connected');

# the stream's first entry too large: XINFO STREAM shows it whole
$redis->cmd('DEL', $stream);
$refused = repl()->{refused};
$applied = repl()->{applied};
xadd(key => 'site/huge-first', fp => $real,
     extra => [ pad => 'x' x (17 * 1024 * 1024) ]);
xadd(key => 'site/after-huge-first', fp => $real);
ok(wait_until(sub { repl()->{applied} == $applied + 1 }),
   'a stream whose first entry is too large: the next one applied');
is(repl()->{refused}, $refused + 1, 'the first one refused');
# idle: the reader's XREAD BLOCK times out, and it would check the stream
# (XINFO STREAM, which shows the too large first entry whole) before it
# reads again.  A next XREAD after that proves it went on: Redis counts an
# XREAD when it ends, so one more XREAD ended while nothing was written
# (the reader's idle one timed out), and then the reader is blocked in an
# XREAD again (was: sleep 2.5).
sub redis_info {
    my ($section, $re) = @_;
    return ($redis->cmd('INFO', $section) =~ $re)[0] // 0;
}
sub xreads { redis_info('commandstats', qr/^cmdstat_xread:calls=(\d+)/m) }
sub blocked { redis_info('clients', qr/^blocked_clients:(\d+)/m) }
my $xreads = xreads();
wait_until("the reader's idle XREAD to time out, and its next XREAD",
           sub { xreads() > $xreads && blocked() >= 1 });
xadd(key => 'site/later', fp => $real);
ok(wait_until(sub { repl()->{applied} == $applied + 2 }),
   'and what comes later too: the check of the stream does not stop '
   . 'the reader');
ok(wait_until(sub { repl()->{connected} == 2 }), 'connected');

$t->stop;
$t->check_log;
done_testing;
