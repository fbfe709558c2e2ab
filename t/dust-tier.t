#!/usr/bin/perl
# DUST rules travel through the replication stream (issue 23): two nodes
# with a learner (A, B) and one without (C) share a zone through a real
# redis-server.
#   - A learns drop_param(sid) from its own traffic; B, which never saw a
#     pair of those pages, gets the rule with A's evidence and predicts:
#     for a page it stored itself, and for a page only A fetched (B holds
#     A's documents through replication);
#   - C, without dust=, reads the rule records past: ignored, not refused;
#   - hostile DUST entries (a bad MAC, a record altered under a copied MAC,
#     a truncated record, one too long, a record with a key) are refused
#     and counted, and B serves on with its rules unchanged;
#   - B stops (its snapshot saved), A retires the rule, B restarts from its
#     snapshot, replays the stream and ends with A's rules: retired;
#   - pins are per node: A's pin does not reach B.
# dust_precision=0.9 (about 60 clean pairs turn a rule on, t/dust.t).

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

my $redis = RedisTest->new;
$redis->start;
my $stream = 'simhash:crawl';

my $origin = <<'END';
        access_log %%PREFIX%%/logs/origin.log;

        # the flag file makes the session id select the content
        location /doc/ {
            if (-f %%PREFIX%%/html/flag) {
                rewrite ^ /alt/$arg_sid.html break;
            }
        }
END

my $proxy = <<'END';
        simhash crawl;
        simhash_dust on;
        simhash_action drop;
        simhash_dust_verify 0%;

        location /doc/ {
            simhash_key http://site.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        # learning: fetched whatever, tagged
        location ~ ^/tag(/doc/.*)$ {
            simhash_key http://site.test$1$is_args$args;
            simhash_action tag;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        # pinned.test, a host A pins drop_param(ref) of
        location ~ ^/pin(/doc/.*)$ {
            simhash_key http://pinned.test$1$is_args$args;
            simhash_action tag;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        location = /stats { simhash_stats; }
END

# A pins a rule of its own; B has no pin
my $pin = <<'END';
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=ref pin;
END

my @pages = SimhashTest->random_pages(100, 150, 4040);
my @alt = SimhashTest->random_pages(80, 150, 4141);

my %node;
for my $name (qw(a b c)) {
    my $dust = $name eq 'c' ? ''
             : ' dust=4m dust_precision=0.9 dust_evidence=8';
    my $t = SimhashTest->new(
        workers => 2,
        http    => "simhash_zone zone=crawl:4m$dust "
                   . "file=%%PREFIX%%/data/crawl.snap save=1s;\n"
                   . "    simhash_replicate crawl ${\ $redis->url} "
                   . "node=$name;\n"
                   . ($name eq 'a' ? $pin : ''),
        proxy   => $name eq 'c' ? ($proxy =~ s/simhash_dust on;//r)
                                : $proxy,
        origin  => $origin);
    mkdir $t->prefix . "/html/$_" for qw(doc alt);
    $t->write_file("html/doc/p$_.html", $pages[$_ - 1]) for 1 .. 100;
    $t->write_file("html/alt/s$_.html", $alt[$_ - 1]) for 1 .. 80;
    $node{$name} = $t;
}
my ($A, $B, $C) = @node{qw(a b c)};
$_->start for values %node;

sub repl { $_[0]->stats->{zones}{crawl}{replication} }


sub hits { $_[0]->lines_of('logs/origin.log') }

sub rule {
    my ($t, $host, $kind, $arg) = @_;
    for my $r (@{ $t->stats->{zones}{crawl}{dust_rules} // [] }) {
        return $r if $r->{host} eq $host && $r->{kind} eq $kind
                     && ($r->{arg} // '') eq ($arg // '');
    }
    return undef;
}

sub state {
    my $r = rule(@_);
    return $r ? $r->{state} : 'none';
}

ok(wait_until(sub { !grep { repl($_)->{connected} != 2 } values %node }),
   'every node connected twice');

# -- before: B has no rule, and fetches a new session id of its own page

is($B->get('/tag/doc/p90.html?sid=b1')->{headers}{'x-simhash-status'}, 'new',
   'B: its own page, new');
# the origin logs a request as it ends, which may be after the proxy
# answered: count from its line, not from the answer
wait_until('the origin logged B\'s first fetch',
           sub { ($B->read_file('logs/origin.log') // '') =~ /sid=b1 / });
my $before = hits($B);
my ($status, $h) = $B->raw_get('/doc/p90.html?sid=b2');
ok(!exists $h->{'x-simhash-predicted'}, 'B without the rule: no prediction');
is($B->wait_lines('logs/origin.log', $before + 1), $before + 1,
   'B without the rule: fetched');
is(state($B, 'site.test', 'drop_param', 'sid'), 'none',
   'B without the rule: not in its stats');

# -- A learns the rule from its own traffic

my $on_at;
for my $i (1 .. 80) {
    $A->get("/tag/doc/p$i.html?sid=a$i");
    $A->get("/tag/doc/p$i.html?sid=b$i");
    if ($A->error_log =~ /rule drop_param\(sid\) for site\.test \/doc\/ on/) {
        $on_at = $i;
        last;
    }
}
ok($on_at, 'A: the rule turns on (after ' . ($on_at // 'never')
           . ' pairs)');
my $ra = rule($A, 'site.test', 'drop_param', 'sid');

ok(wait_until(sub { state($B, 'site.test', 'drop_param', 'sid') eq 'active' }),
   'B: the rule is active');
my $rb = rule($B, 'site.test', 'drop_param', 'sid');
cmp_ok($rb->{support}, '>=', $ra->{support},
       "B: with A's evidence ($rb->{support} pairs, A had $ra->{support})");
like($B->error_log,
     qr/\[notice\].*rule drop_param\(sid\) for site\.test \/doc\/ on \(was (candidate|none)\)/,
     'B: the change is logged there too');
# A counts a record when Redis answers its XADD, which B may read first
ok(wait_until(sub { repl($A)->{dust_published} >= 1 }),
   'A: a rule record published');
cmp_ok(repl($B)->{dust_applied}, '>=', 1, 'B: a rule record applied');

# -- B predicts: for its own page, and for a page only A fetched

$before = hits($B);
($status, $h) = $B->raw_get('/doc/p90.html?sid=b3');
is($status, 204, "B: a new session id of its own page: dropped");
is($h->{'x-simhash-predicted'}, 'drop_param(sid)', '... predicted by the rule');
is($h->{'x-simhash-duplicate-of'}, 'http://site.test/doc/p90.html?sid=b1',
   '... of the page B stored');
is(hits($B), $before, '... without a fetch');

ok(wait_until(sub { repl($B)->{applied} >= $on_at }),
   "B holds A's documents");
($status, $h) = $B->raw_get('/doc/p3.html?sid=zzz');
is($status, 204, "B: a new session id of a page only A fetched: dropped");
is($h->{'x-simhash-predicted'}, 'drop_param(sid)', '... predicted');
is($h->{'x-simhash-duplicate-of'}, 'http://site.test/doc/p3.html?sid=a3',
   "... of A's document");
is(hits($B), $before, '... without a fetch');

# -- C, without dust=, reads the records past

ok(wait_until(sub { repl($C)->{dust_ignored} >= 1 }), 'C: records ignored');
is(repl($C)->{refused}, 0, 'C: none refused');
is($C->get('/doc/p4.html?sid=c')->{headers}{'x-simhash-status'},
   'duplicate', "C: serves A's documents");

# -- pins are each node's: A's pin is not B's

is(state($A, 'pinned.test', 'drop_param', 'ref'), 'pinned', 'A: its pin');
$A->get("/pin/doc/p9$_.html?ref=r$_") for 1 .. 3;
$A->get("/pin/doc/p9$_.html?ref=q$_") for 1 .. 3;
ok(rule($A, 'pinned.test', 'drop_param', 'ref')->{support} >= 1,
   'A: the pinned rule has evidence');
# the sweep (every 10 s) sends it, as evidence alone
sub dust_records {
    my $e = $redis->cmd('XRANGE', $stream, '-', '+');
    return map { my %f = @{ $_->[1] }; exists $f{dust} ? $f{dust} : () } @$e;
}
my $pinned_hex = unpack('H*', 'pinned.test');
ok(wait_until(sub { grep { /$pinned_hex/ } dust_records() }),
   "A's pinned rule's record on the stream");
my @recs = dust_records();
ok(!grep({ /$pinned_hex/ && substr($_, 8, 2) ne '00' } @recs),
   '... as a candidate (its state byte), not a pin');
ok(wait_until(sub { repl($B)->{dust_applied} >= @recs }), 'B applied it');
is(state($B, 'pinned.test', 'drop_param', 'ref'), 'none',
   'B: not pinned (nor on: one pair is no rule)');

# -- hostile DUST entries: refused, counted, B serves on

my $entries = $redis->cmd('XRANGE', $stream, '-', '+');
my ($real) = grep { my %f = @{ $_->[1] }; exists $f{dust} } @$entries;
ok($real, 'a DUST entry on the stream');
my %f = @{ $real->[1] };
is(length $f{dust}, 352, 'its record: 176 bytes in hex');
my @order = qw(node dust time seed seq mac);
sub with {
    my (%set) = @_;
    return map { ($_ => exists $set{$_} ? $set{$_} : $f{$_}) } @order;
}
my $flip = sub { my ($s, $at) = @_;
                 substr($s, $at, 1) = substr($s, $at, 1) eq '0' ? '1' : '0';
                 $s };
# support (bytes 32..35 of the record) raised, the MAC copied
my $more = $f{dust};
substr($more, 64, 8) = 'ffffff7f';
my $rules_before = rule($B, 'site.test', 'drop_param', 'sid');
my $r0 = repl($B);
$redis->cmd('XADD', $stream, '*', with(mac => $flip->($f{mac}, 5)));
$redis->cmd('XADD', $stream, '*', with(dust => $more));
$redis->cmd('XADD', $stream, '*', with(dust => substr($f{dust}, 0, 350)));
$redis->cmd('XADD', $stream, '*', with(dust => $f{dust} . '00'));
$redis->cmd('XADD', $stream, '*', with(), key => 'site.test/doc/x');
$redis->cmd('XADD', $stream, '*', node => 'z', dust => $f{dust});
ok(wait_until(sub { repl($B)->{refused} >= $r0->{refused} + 6 }),
   'B: six hostile entries refused');
is(repl($B)->{refused_mac} - $r0->{refused_mac}, 2, '... two for their MAC');
is(repl($B)->{dust_applied}, $r0->{dust_applied}, '... none applied');
# a line a second at most: the first of them at least
like($B->error_log, qr/stream entry \d+-\d+ refused: (its MAC does not verify|bad "dust"|a DUST entry with a "key" field)/,
     '... logged with why');

# a record that passes the MAC and not the learner's checks: the raised
# support (its checksum now wrong) signed with the tier's key by
# `simhash entry --dust`, as a node of the tier with a broken learner
# would send it.  In a second of its own: the refusals log a line a second.
SKIP: {
    skip 'no SH_CLI', 4 unless $ENV{SH_CLI} && -x $ENV{SH_CLI};
    my @pairs = map { split / /, $_, 2 }
                split /\n/, `$ENV{SH_CLI} entry --node z --dust $more`;
    is(scalar(@pairs), 12, 'simhash entry --dust: six fields');
    # the limiter logs once a second of the clock (ngx_time()): the
    # refusals above were counted in this second or before (was: sleep 1.1)
    my $sec = int(time);
    wait_until('the next second of the clock', sub { int(time) > $sec });
    my $r1 = repl($B);
    $redis->cmd('XADD', $stream, '*', @pairs);
    ok(wait_until(sub { repl($B)->{refused} >= $r1->{refused} + 1 }),
       'a signed, damaged record: refused');
    is(repl($B)->{refused_mac}, $r1->{refused_mac},
       '... not for its MAC');
    like($B->error_log,
         qr/stream entry \d+-\d+ refused: a damaged DUST rule record/,
         '... logged as a damaged record');
}
is(repl($B)->{dust_applied}, $r0->{dust_applied}, 'none applied');
my $rules_after = rule($B, 'site.test', 'drop_param', 'sid');
is($rules_after->{support}, $rules_before->{support},
   'B: the rule is unchanged');
is($B->get('/tag/doc/p99.html?sid=x')->{headers}{'x-simhash-status'}, 'new',
   'B serves on');

# -- snapshot and stream: B restarts and replays what it missed

$B->stop('quit');
like($B->error_log, qr/saved to .*crawl\.snap/, 'B saved its snapshot');

$A->write_file('html/flag', '');
my $off_at;
for my $i (1 .. 30) {
    $A->get("/tag/doc/p" . (60 + $i) . ".html?sid=s$i");
    $A->get("/tag/doc/p" . (60 + $i) . ".html?sid=s" . ($i + 40));
    if ($A->error_log =~ /rule drop_param\(sid\) for site\.test \/doc\/ off/) {
        $off_at = $i;
        last;
    }
}
ok($off_at, 'A: the rule is retired (after ' . ($off_at // 'never') . ')');
is(state($A, 'site.test', 'drop_param', 'sid'), 'retired', 'A: retired');

$B->start;
like($B->error_log, qr/the snapshot has the stream "$stream" up to \d+-\d+/,
     'B restarts from its snapshot');
ok(wait_until(sub { state($B, 'site.test', 'drop_param', 'sid') eq 'retired' }),
   'B: the retirement reached it');
$ra = rule($A, 'site.test', 'drop_param', 'sid');
$rb = rule($B, 'site.test', 'drop_param', 'sid');
cmp_ok($rb->{against}, '>=', 1, "B: with A's pairs against ($rb->{against})");

sub rules {
    my ($t) = @_;
    return join ' ', sort map { "$_->{host}$_->{pattern}$_->{kind}("
                                . ($_->{arg} // '') . ")=$_->{state}" }
                          grep { $_->{state} ne 'pinned' }
                          @{ $t->stats->{zones}{crawl}{dust_rules} // [] };
}
is(rules($B), rules($A), 'B ends with the same rules as A: ' . rules($A));

$before = hits($B);
($status, $h) = $B->raw_get('/doc/p90.html?sid=b4');
ok(!exists $h->{'x-simhash-predicted'}, 'B: retired, no prediction');
is($B->wait_lines('logs/origin.log', $before + 1), $before + 1,
   'B: retired, fetched');

$_->stop for values %node;
for my $name (qw(a b c)) {
    my @alerts = grep { /\[(alert|crit|emerg)\]/ || /exited on signal/ }
                 split /\n/, $node{$name}->error_log;
    ok(!@alerts, "node $name: no alert, no worker died")
        or diag(join "\n", @alerts);
}
done_testing;
