#!/usr/bin/perl
# Replays: a genuine entry of the tier (its MAC verifies) added to the
# stream again by someone who read it.  Every entry carries its writer's
# sequence number (seq, under the MAC); a node refuses an entry whose seq
# is not above the last it applied from that writer, counts it
# (refused_replay) and does not take its age for the lag.  The table of
# writers is bounded (256: the one applied from longest ago gives its slot
# up).  A writer's sequence goes on across a reload (kept in shared
# memory) and a restart (started from the clock): its entries are never
# taken for replays.

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
plan(skip_all => 'SH_CLI (the simhash tool) is not set')
    unless $ENV{SH_CLI} && -x $ENV{SH_CLI};
SimhashTest::needs_master();

my $stream = 'simhash:crawl';
my $secret = '00112233445566778899aabbccddeeff';

my $redis = RedisTest->new;
$redis->start;

sub node {
    my ($name) = @_;
    return SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m;\n"
               . "    simhash_replicate crawl ${\ $redis->url} "
               . "node=$name;",
        proxy => <<"EOF");
        simhash crawl;
        simhash_seed $secret;
        simhash_key "site\$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
}

my $t = node('a');
$t->start;

sub repl { ($_[0] // $t)->stats->{zones}{crawl}{replication} }

ok(wait_until(sub { repl()->{connected} == 2 }), 'connected');
my $fp = $t->get('/sourdough.html')->{headers}{'x-simhash'};

# entries of writer z, as a node of the tier signs them
sub signed {
    my (%e) = @_;
    return RedisTest::entry(seed => $secret, node => 'z', %e);
}
my $n = 0;
sub other_fp { sprintf('%016x', hex($fp) ^ (0xff00 + ++$n)) }

# the first was 40 s old when it was applied (it waited in z's outbox);
# the second is fresh
my @old = signed(key => 'site/old.html', fp => other_fp(),
                 time => int(time * 1000) - 40000);
my @fresh = signed(key => 'site/fresh.html', fp => other_fp());
$redis->cmd('XADD', $stream, '*', @old);
$redis->cmd('XADD', $stream, '*', @fresh);
ok(wait_until(sub { repl()->{applied} == 2 }), 'two entries of z applied')
    or diag(explain repl());
cmp_ok(repl()->{last_lag_ms}, '<', 30000, 'the lag: the fresh one\'s');

# both again, unchanged: replays (the old one last: its age would be the
# lag)
$redis->cmd('XADD', $stream, '*', @fresh);
$redis->cmd('XADD', $stream, '*', @old);
ok(wait_until(sub { (repl()->{refused_replay} // 0) == 2 }),
   'both replays refused as such') or diag(explain repl());
my $s = repl();
is($s->{refused}, 2, '... counted among the refused');
is($s->{applied}, 2, '... not applied');
is($s->{outdated}, 0, '... not even read as outdated versions');
is($s->{refused_mac} + $s->{refused_version}, 0,
   '... their MACs verify: genuine entries');
cmp_ok($s->{last_lag_ms}, '<', 30000,
       'the lag is not the replayed entry\'s age (was 41,273 ms)');
is($s->{lag_ms}{count}, 2, 'nor measured at all');
like($t->error_log, qr/refused: a replay: its seq \d+ is not above \d+, the last applied from node "z"/,
     'logged, with why');
my %f = @old;
my $seq = $f{seq};
like($seq, qr/^\d+$/, 'an entry has a seq');

# seq is under the MAC: the replay cannot be given a newer number
$f{seq} = $seq + 10 ** 9;
$redis->cmd('XADD', $stream, '*', %f);
ok(wait_until(sub { repl()->{refused_mac} == 1 }),
   'a replay with a larger seq: its MAC fails');
# nor have it stripped, to pass for an earlier release's entry
delete $f{seq};
$f{seq_} = $seq;
$redis->cmd('XADD', $stream, '*', %f);
ok(wait_until(sub { repl()->{refused_mac} == 2 }),
   'a replay without its seq: its MAC fails');

# an entry as an earlier release wrote it (no seq, its MAC of that form):
# genuine, but replayable for ever; refused, counted apart
my %older = signed(key => 'site/older-release.html', fp => other_fp(),
                   seq => 'none');
ok(!exists $older{seq}, 'an earlier release\'s entry: no seq');
$redis->cmd('XADD', $stream, '*', %older);
ok(wait_until(sub { (repl()->{refused_unsequenced} // 0) == 1 }),
   'refused, counted as unsequenced');
is(repl()->{refused_mac}, 2, '... not for its MAC');

# the next genuine entry of z goes on being applied
$redis->cmd('XADD', $stream, '*',
            signed(key => 'site/next.html', fp => other_fp()));
ok(wait_until(sub { repl()->{applied} == 3 }), 'z\'s next entry applied');

my $p = $t->get('/stats?format=prometheus')->{content};
like($p, qr/^simhash_replication_refused_replay_total\{zone="crawl"\} 2$/m,
     'prometheus: refused_replay');
like($p, qr/^simhash_replication_refused_unsequenced_total\{zone="crawl"\} 1$/m,
     'prometheus: refused_unsequenced');

# --- the table is bounded ---------------------------------------------------------

# 300 writers of the tier, one entry each: the table keeps the last 256;
# a replay of one of those is refused, one of the first ones (its slot
# given up) is taken as a writer's first entry
my (%first, $applied);
my @many = RedisTest::entries({ seed => $secret },
    map { ["w$_", "site/w/$_.html", other_fp()] } 1 .. 300);
%first = (1 => $many[0], 300 => $many[299]);
$applied = repl()->{applied};
$redis->cmd('XADD', $stream, '*', @$_) for @many;
ok(wait_until(sub { repl()->{applied} == $applied + 300 }),
   '300 writers, an entry each');
my $replays = repl()->{refused_replay};
$redis->cmd('XADD', $stream, '*', @{ $first{300} });
ok(wait_until(sub { repl()->{refused_replay} == $replays + 1 }),
   'a replay of the last writer\'s entry: refused');
$redis->cmd('XADD', $stream, '*', @{ $first{1} });
ok(wait_until(sub { repl()->{outdated} == 1 }),
   'a replay of the first writer\'s, whose slot went to another: read as '
   . 'its first entry (an outdated version), the bound of the table');

# --- a writer restarted or reloaded: not a replay ------------------------------

my $b = node('b');
my @pages = SimhashTest->random_pages(3, 120, 3636);
$b->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. 3;
$b->start;
ok(wait_until(sub { repl($b)->{connected} == 2 }), 'node b connected');
$applied = repl()->{applied};
is($b->status_of('/gen/1.html'), 'new', 'b: a page');
ok(wait_until(sub { repl()->{applied} == $applied + 1 }), 'a applies it');
$b->reload;
ok(wait_until(sub { repl($b)->{connected} == 2 }), 'b reloaded');
is($b->status_of('/gen/2.html'), 'new', 'b: a page');
ok(wait_until(sub { repl()->{applied} == $applied + 2 }),
   'a applies it: b\'s sequence went on across the reload');
$b->stop;
$b->start;
ok(wait_until(sub { repl($b)->{connected} == 2 }), 'b restarted');
is($b->status_of('/gen/3.html'), 'new', 'b: a page');
ok(wait_until(sub { repl()->{applied} == $applied + 3 }),
   'a applies it: b\'s sequence started above what b sent before');
is(repl()->{refused_replay}, 3, 'no entry of b taken for a replay');
my @seqs = map { my %e = @{ $_->[1] }; $e{node} eq 'b' ? $e{seq} : () }
           @{ $redis->cmd('XRANGE', $stream, '-', '+') };
is(scalar @seqs, 3, 'b published three entries');
ok($seqs[0] < $seqs[1] && $seqs[1] < $seqs[2], '... in increasing seq');
$b->stop;
$b->check_log;

# a restart: the writers' last seqs are saved with the zone's place in the
# stream, so a replay of what the snapshot holds is refused after a restart
# as after a reload (they lived in shared memory only: the first replay of
# each writer passed)
my $r = SimhashTest->new(
    http  => "simhash_zone zone=rs:1m file=%%PREFIX%%/data/rs.snap save=off;\n"
           . "    simhash_replicate rs ${\ $redis->url} node=r;",
    proxy => <<"EOF");
        simhash rs;
        simhash_seed $secret;
        simhash_key "site\$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
my $rrepl = sub { $r->stats->{zones}{rs}{replication} };
$r->start;
ok(wait_until(sub { $rrepl->()->{connected} == 2 }), 'r connected');
my @e = signed(key => 'site/restart.html', fp => other_fp());
$redis->cmd('XADD', 'simhash:rs', '*', @e);
ok(wait_until(sub { $rrepl->()->{applied} == 1 }), 'r applies an entry of z');
$r->stop;
like($r->error_log, qr/saved to/, 'r saved its snapshot at exit');
$r->start;
ok(wait_until(sub { $rrepl->()->{connected} == 2 }), 'r restarted');
like($r->error_log, qr/the snapshot has the stream "simhash:rs"/,
     'r goes on from the snapshot\'s place in the stream');
$redis->cmd('XADD', 'simhash:rs', '*', @e);
ok(wait_until(sub { ($rrepl->()->{refused_replay} // 0) == 1 }),
   'after a restart, the replay is refused as such')
    or diag(explain $rrepl->());
is($rrepl->()->{applied}, 0, '... and not applied');
$r->stop;
$r->check_log;

$t->stop;
$t->check_log;
done_testing;
