#!/usr/bin/perl
# A stream whose last id is 18446744073709551615-18446744073709551615 (a
# writer added an entry of that id by hand) takes no more entries: every
# XADD fails with "The stream has exhausted the last possible ID".  The
# node does not drop its connection over it (that would not help); it
# shows the state (stream_exhausted, 1 while it lasts; exhausted, counted
# once per episode; both in Prometheus too), says once what to do, keeps
# its outbox and tries again a second later.  The operator's fix: rename
# (or delete) the stream; publishing goes on into the new one, and the
# node reads that one from its start.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);
use RedisTest;

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
SimhashTest::needs_master();

my $stream = 'simhash:crawl';
my $max = '18446744073709551615-18446744073709551615';

my $redis = RedisTest->new;
$redis->start;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m;\n"
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
is(repl()->{stream_exhausted}, 0, 'stream_exhausted: 0 at first');
is(repl()->{exhausted}, 0, 'exhausted: 0 at first');

# a writer of the stream takes its last id
is($redis->cmd('XADD', $stream, $max, 'foo', 'bar'), $max,
   'an entry of the largest id');
is(ref $redis->cmd('XADD', $stream, '*', 'foo', 'bar'), 'HASH',
   '... after which Redis takes no entry');

is($t->status_of('/sourdough.html'), 'new', 'a page');
ok(wait_until(sub { (repl()->{stream_exhausted} // 0) == 1 }),
   'stream_exhausted: 1') or diag(explain repl());
my $s = repl();
is($s->{exhausted}, 1, 'exhausted: counted once');
is($s->{published}, 0, 'nothing published');
is($s->{outbox}, 1, 'the outbox keeps the page');
is($s->{connected}, 2, 'both connections stay up: a reconnect would not help');
is($s->{reconnects}, 0, '... none made');

my $p = $t->get('/stats?format=prometheus')->{content};
like($p, qr/^# TYPE simhash_replication_stream_exhausted gauge$/m,
     'prometheus: a gauge to alert on');
like($p, qr/^simhash_replication_stream_exhausted\{zone="crawl"\} 1$/m,
     '... at 1');
like($p, qr/^simhash_replication_exhausted_total\{zone="crawl"\} 1$/m,
     'prometheus: the counter');

my $line = qr/\[error\].*the stream "\Q$stream\E" takes no more entries: its last id is the largest Redis has .*RENAME \Q$stream $stream\E:exhausted/;
like($t->error_log, $line, 'logged, with the fix');

# more pages wait in the outbox; the state is told once, not per try
is($t->status_of('/bicycle.html'), 'new', 'another page');
ok(wait_until(sub { repl()->{outbox} == 2 }), 'the outbox keeps both');
is(repl()->{exhausted}, 1, 'still one episode');

# the operator's fix: the stream renamed aside (nothing can be added to
# it, so every node has read it to its end); the node publishes into a
# new one and reads that from its start
is($redis->cmd('RENAME', $stream, "$stream:exhausted"), 'OK',
   'the operator renames the stream aside');
ok(wait_until(sub { my $r = repl();
                    $r->{published} == 2 && $r->{outbox} == 0 }),
   'the outbox is published into a new stream') or diag(explain repl());
is(repl()->{stream_exhausted}, 0, 'stream_exhausted: 0 again');
is(repl()->{exhausted}, 1, 'exhausted: still one episode');
is($redis->cmd('XLEN', $stream), 2, 'the new stream holds both pages');
like($t->error_log, qr/\[notice\].*the stream "\Q$stream\E" takes entries again/,
     'logged: publishing goes on');
my @lines = $t->error_log =~ /(takes no more entries)/g;
is(scalar @lines, 1, 'the state was told once');
ok(wait_until(sub { repl()->{skipped_own} == 2 }),
   'the reader reads the new stream from its start');
is(repl()->{lost}, 1, '... having found the old one gone');
is(repl()->{reconnects}, 0, 'no reconnect in all of it');

$t->stop;
$t->check_log;
done_testing;
