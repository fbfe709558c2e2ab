#!/usr/bin/perl
# A stream that Redis lost, or that was deleted, while a node had read it up
# to an id the new stream will not reach for years (an entry dated
# 9999999999999 ms, or a Redis restarted without persistence): the node
# notices it (XINFO, also while idle), logs it, counts it as "lost", and
# reads the new stream from its start, also after its own restart from a
# snapshot that holds the old id.  A stream created again after a restart
# of Redis is told apart from one trimmed past the node's id: "Redis lost
# it", not "a larger maxlen keeps more".

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);
use RedisTest;
no warnings qw(portable);

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
SimhashTest::needs_master();

my $stream = 'simhash:crawl';

my $redis = RedisTest->new(appendonly => 0);
$redis->start;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;\n"
           . "    simhash_replicate crawl ${\ $redis->url} node=a;",
    proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
$t->start;

sub repl { $t->stats->{zones}{crawl}{replication} }


ok(wait_until(sub { repl()->{connected} == 2 }), 'connected');
is($t->status_of('/sourdough.html'), 'new', 'a page');
ok(wait_until(sub { repl()->{skipped_own} == 1 }), 'published, read back');
my %own = @{ $redis->cmd('XRANGE', $stream, '-', '+')->[0][1] };

my $n = 0;
sub xadd {
    my ($id, $key) = @_;
    return $redis->cmd('XADD', $stream, $id,
                       RedisTest::entry(node => 'z', key => $key,
                           fp => sprintf('%016x', hex($own{fp}) ^ ++$n)));
}

# --- deleted while the node is up --------------------------------------------

xadd('9999999999999-0', 'site/far-future');
ok(wait_until(sub { repl()->{applied} == 1 }), 'an entry of id 9999999999999-0');
$redis->cmd('DEL', $stream);
xadd('*', 'site/after-delete');
ok(wait_until(sub { repl()->{applied} == 2 }),
   'the stream deleted and written again: its new entry is applied');
is(repl()->{lost}, 1, 'counted as lost');
is(repl()->{connected}, 2, 'connected');
like($t->error_log, qr/\[warn\].*the stream "$stream" is not the one read up to 9999999999999-0 here: .*reading it again from its start/,
     'logged');

# --- the old id in the snapshot ----------------------------------------------

xadd('9999999999999-1', 'site/far-future-2');
ok(wait_until(sub { repl()->{applied} == 3 }), 'another far id applied');
$t->stop('quit');
like($t->error_log, qr/saved to .*crawl\.snap/, 'saved in the snapshot');
$redis->cmd('DEL', $stream);
my $read_up_to = xadd('*', 'site/after-restart');
$t->start;
like($t->error_log, qr/the snapshot has the stream "$stream" up to 9999999999999-1/,
     'restarted from the snapshot, with the far id');
ok(wait_until(sub { repl()->{applied} == 1 }),
   'after the restart, the new stream is read');
is(repl()->{lost}, 1, 'counted as lost');

# --- Redis restarted without persistence: not a trimmed stream -----------------

$t->stop('quit');
$redis->kill9;
$redis->start;
is($redis->cmd('EXISTS', $stream), 0, 'Redis lost the stream');
# the new stream's first id in a later millisecond than the last id the
# node read (was: sleep 0.01)
my ($ms) = $read_up_to =~ /^(\d+)-/;
wait_until('the clock past the last id read', sub { time * 1000 > $ms + 1 });
xadd('*', 'site/after-redis-restart');
$t->start;
ok(wait_until(sub { repl()->{applied} == 1 }), 'the new stream is read');
is(repl()->{gaps}, 0, 'no gap counted');
is(repl()->{lost}, 1, 'lost counted');
my $log = $t->error_log;
like($log, qr/it never held it: Redis lost the stream and it was created again/,
     'logged: Redis lost it');
unlike($log, qr/a larger maxlen keeps more/, 'not: it was trimmed');

$t->stop;
$t->check_log;
done_testing;
