#!/usr/bin/perl
# Replication faults that need no tier: AUTH with a password works; a wrong
# or a missing password fails with one clear log line, however often the
# node retries, and the node serves as if unreplicated (its outbox keeps
# what it could not publish); a Redis restart that loses the stream is
# logged and replication goes on.

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

sub node {
    my ($url, $name) = @_;
    return SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m;\n"
               . "    simhash_replicate crawl $url node=$name;",
        proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
}

sub repl { $_[0]->stats->{zones}{crawl}{replication} }


# --- AUTH --------------------------------------------------------------------

my $redis = RedisTest->new(password => 'p@ss:word');
$redis->start;
(my $url = $redis->url) =~ s/p\@ss:word/p%40ss%3Aword/;

my $good = node($url, 'good');
$good->start;
ok(wait_until(sub { repl($good)->{connected} == 2 }),
   'the right password (percent-encoded in the URL): connected');
is($good->status_of('/sourdough.html'), 'new', 'a page');
ok(wait_until(sub { repl($good)->{published} == 1 }), 'published');
is($redis->cmd('XLEN', 'simhash:crawl'), 1, 'the stream has it');
$good->stop;
$good->check_log;

for my $case (['wrong', $redis->url('nope'), qr/AUTH refused: WRONGPASS/],
              ['none', 'redis://127.0.0.1:' . $redis->port,
               qr/PING refused: NOAUTH/]) {
    my ($name, $u, $re) = @$case;
    my $t = node($u, $name);
    $t->start;
    my @st = map { $t->get("/$_") } qw(sourdough.html bicycle.html
                                       sourdough.html?copy council.html);
    is_deeply([map { $_->{status} } @st], [200, 200, 200, 200],
              "$name password: every response 200");
    is_deeply([map { $_->{headers}{'x-simhash-status'} } @st],
              [qw(new new duplicate new)], '... and tagged');
    ok(wait_until(sub { repl($t)->{reconnects} >= 4 }),
       '... retried a few times');
    my $s = repl($t);
    is($s->{connected}, 0, '... never connected');
    is($s->{outbox}, 3, '... the outbox keeps the three new documents');
    my @lines = grep { /$re/ } split /\n/, $t->error_log;
    ok(@lines >= 1 && @lines <= 2,
       "... one clear line per connection, not one per retry: $name")
        or diag($t->error_log);
    unlike($t->error_log, qr/exited on signal|\[(alert|crit|emerg)\]/,
           '... no worker died');
    $t->stop;
}

# --- the outbox overflows while Redis is away ----------------------------------

# 4 KB keys: a 256k outbox holds about 64 records
my $later = RedisTest->new;
my $pad = 'k' x 4000;
my $o = SimhashTest->new(
    http  => "simhash_zone zone=crawl:4m;\n"
           . "    simhash_replicate crawl ${\ $later->url} node=o outbox=256k;",
    proxy => <<"EOF");
        simhash crawl;
        simhash_key "site/$pad\$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
my @pages = $o->random_pages(80, 60, 3232);
$o->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. 80;
$o->start;
my @tags = map { $o->status_of("/gen/$_.html") } 1 .. 80;
is(scalar(grep { $_ eq 'new' } @tags), 80, 'Redis away: 80 new pages served');
my $s = repl($o);
cmp_ok($s->{outbox_dropped}, '>', 0,
       "the outbox overflowed: $s->{outbox_dropped} dropped");
is($s->{outbox} + $s->{outbox_dropped}, 80, '... the rest waits in it');
my @full = $o->error_log =~ /(the outbox is full)/g;
is(scalar @full, 1, 'logged once');
$later->start;
ok(wait_until(sub { repl($o)->{published} == $s->{outbox} }),
   'Redis back: what the outbox held is published');
ok(wait_until(sub { $o->error_log =~ /the outbox has room again; $s->{outbox_dropped} documents stored while it was full were not published/ }),
   'the end of the overflow is logged, with the count');
is($later->cmd('XLEN', 'simhash:crawl'), $s->{outbox}, 'the stream has them');
$o->stop;
$o->check_log;

# --- a reload that resizes the outbox keeps what it holds ----------------------

SKIP: {
    skip($SimhashTest::NO_RELOAD, 6) if $SimhashTest::NO_RELOAD;
    my $away = RedisTest->new;
    my $conf = "simhash_zone zone=crawl:1m;\n"
             . "    simhash_replicate crawl ${\ $away->url} node=r";
    my $t = node($away->url, 'r');
    $t->set(http => "$conf;");
    $t->start;
    is($t->status_of("/$_"), 'new', "Redis away: $_")
        for qw(sourdough.html bicycle.html council.html);
    $t->set(http => "$conf outbox=512k;");
    $t->reload;
    like($t->error_log, qr/the outbox was resized: 3 documents not yet published taken over, 0 did not fit/,
         'reload with another outbox=: its records taken over');
    $away->start;
    ok(wait_until(sub { repl($t)->{published} == 3 }), 'and published');
    $t->stop;
    $t->check_log;
}

# --- Redis restarts without its data ------------------------------------------

my $volatile = RedisTest->new(appendonly => 0);
$volatile->start;
my $t = node($volatile->url, 'a');
$t->start;
ok(wait_until(sub { repl($t)->{connected} == 2 }), 'connected');
is($t->status_of('/sourdough.html'), 'new', 'a page');
ok(wait_until(sub { repl($t)->{skipped_own} == 1 }),
   'published, and read back');
$volatile->kill9;
$volatile->start;
is($volatile->cmd('EXISTS', 'simhash:crawl'), 0, 'redis lost the stream');
ok(wait_until(sub { $t->error_log =~ /is not the one read up to \d+-\d+ here: it does not exist: Redis lost it/ }),
   'logged when the node reconnects');
my $fp = $t->get('/bicycle.html?x')->{headers}{'x-simhash'};
ok(wait_until(sub { $volatile->cmd('XLEN', 'simhash:crawl') == 1 }),
   'a new page is published');
my $entry = $volatile->cmd('XRANGE', 'simhash:crawl', '-', '+');
my %f = @{ $entry->[0][1] // [] };
is($f{key}, 'site/bicycle.html?x', 'what the node publishes recreates it');
# another node's entry, signed as it signs them (default options, no seed)
my @z = map { split / /, $_, 2 } split /\n/,
        `$ENV{SH_CLI} entry --node z --key site/from-z --fp ${\ sprintf('%016x', hex($fp) ^ 0xff)}`;
$volatile->cmd('XADD', 'simhash:crawl', '*', @z);
ok(wait_until(sub { repl($t)->{applied} == 1 }),
   "another node's entry is applied again");
$t->stop;
$t->check_log;

done_testing;
