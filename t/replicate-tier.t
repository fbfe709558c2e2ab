#!/usr/bin/perl
# A tier of three proxies, 4 workers each, sharing one index through a real
# redis-server:
#   - a page fetched through A is a duplicate on B and C within 200 ms;
#   - a re-fetch on B of a key first seen on A is unchanged;
#   - kill -9 of redis under load: no 5xx, every response tagged from the
#     local zone; once redis is back, the backlog arrives and every node
#     ends with the same keys;
#   - a node restarted from its snapshot catches up on what it missed;
#   - a stream trimmed past a node's last id: a logged gap, not a failure.
# Whether a node holds a key is asked through a second server block with
# simhash_insert off: "unchanged" there means the key is stored.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use POSIX qw(:sys_wait_h);
use SimhashTest qw(wait_until);
use RedisTest;

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
SimhashTest::needs_master();

my $redis = RedisTest->new;
$redis->start;
my $stream = 'simhash:crawl';

my $npages = 160;
my @pages = SimhashTest->random_pages($npages, 120, 2222);

my (%node, %look);
for my $name (qw(a b c)) {
    my $look = SimhashTest::free_port();
    my $t = SimhashTest->new(
        workers => 4,
        http    => <<"EOF",
simhash_zone zone=crawl:2m file=%%PREFIX%%/data/crawl.snap;
    simhash_replicate crawl ${\ $redis->url} node=$name maxlen=1000;
    simhash_key "site\$request_uri";

    server {
        listen 127.0.0.1:$look;
        location / {
            simhash crawl;
            simhash_insert off;
            proxy_pass http://%%ORIGIN%%;
        }
    }
EOF
        proxy => <<'EOF');
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
    $t->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. $npages;
    $node{$name} = $t;
    $look{$name} = $look;
}
my ($A, $B, $C) = @node{qw(a b c)};
$_->start for values %node;

sub repl { $_[0]->stats->{zones}{crawl}{replication} }


ok(wait_until(sub { !grep { repl($_)->{connected} != 2 } values %node }),
   'every node connected twice');

# Whether node `n` holds the key of `path`, without changing anything.
sub holds {
    my ($n, $path) = @_;
    my ($st, $h) = $node{$n}->raw_get($path, _port => $look{$n});
    return ($h->{'x-simhash-status'} // '') eq 'unchanged';
}

# --- visible on the others within 200 ms -----------------------------------

my @took;
for my $i (1 .. 5) {
    # polled every 10 ms at most: the wait measures the time it took
    local $SimhashTest::POLL_MAX = 0.01;
    my $t0 = time;
    is($A->status_of("/gen/$i.html"), 'new', "page $i through A: new");
    my $seen = wait_until(sub { holds('b', "/gen/$i.html")
                                && holds('c', "/gen/$i.html") });
    push @took, time - $t0;
    ok($seen, "page $i: on B and C");
}
my @sorted = sort { $a <=> $b } @took;
my $median = $sorted[2];
cmp_ok($median, '<', 0.2, sprintf('on B and C in %.0f ms (median of 5; '
       . 'max %.0f ms)', $median * 1000, $sorted[-1] * 1000));

my $r = $B->get('/gen/1.html?mirror');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'a copy under another key through B: duplicate');
is($r->{headers}{'x-simhash-duplicate-of'}, 'site/gen/1.html',
   '... of the key A stored');
is($C->status_of('/gen/2.html?mirror'), 'duplicate', 'same through C');
is($B->status_of('/gen/3.html'), 'unchanged',
   'a re-fetch through B of a key first seen on A: unchanged');

# --- kill -9 of redis under load ---------------------------------------------

# clients fetch pages 11.. through every node; each writes a status line
# per response
my $out = $A->prefix . '/load';
my @clients;
my $next = 11;
for my $name (qw(a b c)) {
    my ($from, $to) = ($next, $next + 29);
    $next += 30;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(my $fh, '>', "$out.$name") or POSIX::_exit(1);
        select((select($fh), $| = 1)[0]);
        for my $i ($from .. $to) {
            my ($st, $h) = $node{$name}->raw_get("/gen/$i.html");
            print $fh "$i $st " . ($h->{'x-simhash-status'} // '-') . "\n";
            sleep 0.02;
        }
        POSIX::_exit(0);
    }
    push @clients, $pid;
}
# Redis is killed once every client is under way (was: sleep 0.3), and
# they go on without it (was: sleep 0.5; what follows waits for it)
wait_until('three lines from each client', sub {
    !grep { (() = ($A->read_file("$out.$_") // '') =~ /\n/g) < 3 } qw(a b c)
});
$redis->kill9;
ok(wait_until(sub { !grep { repl($_)->{connected} } values %node }),
   'redis gone: every node sees it');
my $waiting;
wait_until(sub { $waiting = 0; $waiting += repl($_)->{outbox} for values %node;
                 $waiting >= 6 });
cmp_ok($waiting, '>=', 6, "meanwhile the outboxes fill ($waiting documents)");
$redis->start;
waitpid($_, 0) for @clients;

my (%status, $lines, @bad);
for my $name (qw(a b c)) {
    for (split /\n/, $A->read_file("$out.$name") // '') {
        my (undef, $st, $tag) = split / /;
        $lines++;
        push @bad, "$name: $_" if $st != 200 || $tag eq '-';
        $status{$tag}++;
    }
}
is($lines, 90, '90 responses during the outage');
ok(!@bad, 'every one 200 and tagged') or diag(explain \@bad);
cmp_ok($status{new} // 0, '>=', 80, 'tagged from the local zone: new')
    or diag(explain \%status);

ok(wait_until(sub {
       !grep { my $s = repl($_); $s->{connected} != 2 || $s->{outbox} }
       values %node }),
   'redis back: every node connected, every outbox empty');
my @missing;
ok(wait_until(sub {
       @missing = ();
       for my $n (qw(a b c)) {
           for my $i (1 .. 5, 11 .. 100) {
               push @missing, "$n:$i" unless holds($n, "/gen/$i.html");
           }
       }
       !@missing }),
   'every node holds every key') or diag("missing: @missing");
my %entries = map { $_ => $node{$_}->stats->{zones}{crawl}{entries} } keys %node;
is(scalar(keys %{{ reverse %entries }}), 1, 'the same number of documents')
    or diag(explain \%entries);
cmp_ok(repl($A)->{reconnects}, '>', 0, 'reconnects counted');
like($A->error_log, qr/publisher, redis:\S+: connection lost/,
     'the loss is logged');

# --- a node restarted from its snapshot catches up ---------------------------

$C->stop('quit');
like($C->error_log, qr/saved to .*crawl\.snap/, 'C saved its snapshot');
is($A->status_of("/gen/$_.html"), 'new', "page $_ through A while C is down")
    for 101 .. 105;
$C->start;
like($C->error_log, qr/the snapshot has the stream "$stream" up to \d+-\d+/,
     'C restarts from its snapshot, where it was in the stream');
ok(wait_until(sub { !grep { !holds('c', "/gen/$_.html") } 101 .. 105 }),
   'C caught up on what it missed');
is(repl($C)->{gaps}, 0, 'no gap');

# --- a stream trimmed past a node's last id: a logged gap --------------------

$C->stop('quit');
is($A->status_of("/gen/$_.html"), 'new', "page $_ through A") for 106 .. 110;
ok(wait_until(sub { repl($A)->{outbox} == 0 }), 'published');
$redis->cmd('XTRIM', $stream, 'MAXLEN', '0');
is($redis->cmd('XLEN', $stream), 0, 'the stream trimmed to nothing');
is($A->status_of("/gen/$_.html"), 'new', "page $_ through A") for 111 .. 112;
ok(wait_until(sub { repl($A)->{outbox} == 0 }), 'published');
$C->start;
ok(wait_until(sub { holds('c', '/gen/112.html') }),
   'C reads on after the gap');
is(repl($C)->{gaps}, 1, 'one gap counted');
like($C->error_log, qr/\[warn\].*the stream "$stream" was trimmed past \d+-\d+, the last entry applied here/,
     'and logged');
ok(!holds('c', '/gen/106.html'), 'what was trimmed is missing there');
is($C->status_of('/gen/1.html?copy'), 'duplicate', 'C serves on');

$_->stop for values %node;
for my $name (qw(a b c)) {
    my @alerts = grep { /\[(alert|crit|emerg)\]/ || /exited on signal/ }
                 split /\n/, $node{$name}->error_log;
    ok(!@alerts, "node $name: no alert, no worker died")
        or diag(join "\n", @alerts);
}
done_testing;
