#!/usr/bin/perl
# simhash_replicate, one node and a real redis-server: the directive's
# checks (nginx -t), what a node publishes (the entry's fields), what it
# applies from the stream (another node's document, a newer version, not an
# older one, not its own), what it refuses (garbage, another seed), the
# counters, and the last id applied kept in the snapshot: a restart goes on
# from there.  One nginx process is enough: this also runs under valgrind.

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

my $redis = RedisTest->new;
$redis->start;
my $url = $redis->url;
my $stream = 'simhash:crawl';

# --- the directive ----------------------------------------------------------

my $c = SimhashTest->new(proxy => 'location / { return 204; }');
my $zone = 'simhash_zone zone=crawl:1m;';
for my $case (
    [ "simhash_replicate crawl ftp://127.0.0.1;", qr/invalid Redis URL/ ],
    [ "simhash_replicate crawl redis://;", qr/invalid Redis URL/ ],
    [ "simhash_replicate crawl redis://127.0.0.1:99999;",
      qr/invalid Redis URL .*port/ ],
    [ "simhash_replicate crawl redis://secret\@127.0.0.1;",
      qr/USER:PASSWORD\@, or :PASSWORD\@/ ],
    [ "simhash_replicate crawl redis://127.0.0.1/x;",
      qr/the database is a number/ ],
    [ "simhash_replicate crawl unix:relative/path;", qr/path is absolute/ ],
    [ "simhash_replicate crawl unix:/tmp/r.sock?x=1;", qr/invalid Redis URL/ ],
    [ "simhash_replicate nosuch $url;", qr/unknown simhash zone "nosuch"/ ],
    [ "simhash_replicate crawl $url;\n    simhash_replicate crawl $url;",
      qr/is duplicate/ ],
    [ "simhash_replicate crawl $url node=a/b;", qr/invalid node/ ],
    [ "simhash_replicate crawl $url stream=a\\ b;", qr/invalid stream/ ],
    [ "simhash_replicate crawl $url maxlen=10;", qr/at least 1000/ ],
    [ "simhash_replicate crawl $url outbox=1k;", qr/at least 256k/ ],
    [ "simhash_replicate crawl $url timeout=1ms;", qr/invalid timeout/ ],
    [ "simhash_replicate crawl $url rate=x;", qr/invalid rate/ ],
    [ "simhash_replicate crawl $url bogus=1;", qr/invalid parameter/ ],
) {
    my ($conf, $re) = @$case;
    $c->set(http => "$zone\n    $conf");
    my ($rc, $out) = $c->nginx_t;
    (my $name = $conf) =~ s/\n\s*/ /g;
    isnt($rc, 0, "nginx -t refuses: $name");
    like($out, $re, '... saying why') or diag($out);
}
$c->set(http => "$zone\n    simhash_replicate crawl "
                . "redis://u:TOPSECRET\@127.0.0.1/x;");
my (undef, $said) = $c->nginx_t;
like($said, qr{"redis://\*\*\*\@127\.0\.0\.1/x"},
     'an invalid URL is shown without its credentials');
unlike($said, qr/TOPSECRET/, '... the password is not in the log');
for my $conf ("simhash_replicate crawl unix:///run/redis.sock;",
              "simhash_replicate crawl unix://u:p%40ss\@/run/r.sock?db=3;",
              "simhash_replicate crawl redis://:pw\@localhost:6380/2 "
              . "stream=crawl-v2 node=proxy-7.dc1 maxlen=50000 outbox=1m "
              . "timeout=500ms;") {
    $c->set(http => "$zone\n    $conf");
    my ($rc, $out) = $c->nginx_t;
    is($rc, 0, "nginx -t takes: $conf") or diag($out);
}
$c->set(http => "simhash_replicate crawl $url;\n    $zone");
is(($c->nginx_t)[0], 0, 'the zone may come after');

# --- one node ---------------------------------------------------------------

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;\n"
           . "    simhash_zone zone=plain:256k;\n"
           . "    simhash_replicate crawl $url node=a maxlen=1000;",
    proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location /look/ {
            simhash_insert off;
            proxy_pass http://%%ORIGIN%%/;
        }
        location = /stats { simhash_stats; }
EOF
$t->start;

sub repl { $t->stats->{zones}{crawl}{replication} }

# Wait until the replication counters satisfy `cond`.
sub wait_repl {
    my ($cond, $what) = @_;
    my $r;
    eval {
        wait_until("the replication counters: $what",
                   sub { $r = repl(); $cond->($r) });
    } or do { diag(explain $r); die $@ };
    return $r;
}

wait_repl(sub { $_[0]{connected} == 2 }, 'both connections');
like($t->error_log, qr/replicated through \Q$url\E, stream "$stream", as node "a"/,
     'the log says where and as whom');

# a new page: published with every field
my $r = $t->get('/sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'a new page');
my $fp = $r->{headers}{'x-simhash'};
my $now = time;
wait_repl(sub { $_[0]{published} == 1 && $_[0]{skipped_own} == 1 },
          'published, and read back as our own');
my $entries = $redis->cmd('XRANGE', $stream, '-', '+');
is(scalar @$entries, 1, 'one entry in the stream');
my %f = @{ $entries->[0][1] };
is($f{node}, 'a', 'node');
is($f{key}, 'site/sourdough.html', 'key');
is($f{fp}, $fp, 'fp: the X-Simhash of the response');
like($f{digest}, qr/^[0-9a-f]{16}$/, 'digest: 16 hex digits');
cmp_ok(abs($f{time} / 1000 - $now), '<', 30, 'time: ms since 1970, now');
like($f{seed}, qr/^[0-9a-f]{8}$/, 'seed: 8 hex digits');
my $seed = $f{seed};
is(repl()->{applied}, 0, 'our own entry is not applied again');

# another node's document: stored, and found as the original of a copy
my $bfp = $t->get('/look/bicycle.html')->{headers}{'x-simhash'};
like($bfp, qr/^[0-9a-f]{16}$/, 'a fingerprint looked up without storing');
# An entry as another node of the tier writes it: signed with the tier's
# key by `simhash entry` (the zone's options are the defaults).  `set`
# changes fields after the signing, `drop` leaves some out: a writer
# without the key, or a broken one.
sub entry {
    my (%e) = @_;
    my %d = (node => 'z', digest => '0' x 16, time => int(time * 1000), %e);
    my @args = map { ("--$_" => $d{$_}) } grep { defined $d{$_} }
               qw(node key fp digest time xv seq);
    my @pairs = map { split / /, $_, 2 }
                split /\n/, `$ENV{SH_CLI} entry @args`;
    die "simhash entry @args failed" unless @pairs == 20;
    return @pairs;
}
sub xadd {
    my (%e) = @_;
    my ($set, $drop) = (delete $e{set} // {}, delete $e{drop} // []);
    my @pairs = entry(%e);
    my @out;
    while (my ($k, $v) = splice @pairs, 0, 2) {
        next if grep { $_ eq $k } @$drop;
        push @out, $k, exists $set->{$k} ? $set->{$k} : $v;
    }
    return $redis->cmd('XADD', $stream, '*', @out);
}
xadd(key => 'site/elsewhere.html', fp => $bfp);
wait_repl(sub { $_[0]{applied} == 1 }, 'the entry of node z applied');
$r = $t->get('/bicycle.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'a page another node stored: duplicate here');
is($r->{headers}{'x-simhash-duplicate-of'}, 'site/elsewhere.html',
   '... of the key the other node stored');
my $s = repl();
is($s->{lag_ms}{count}, 1, 'lag: one entry of another node measured');
cmp_ok($s->{last_lag_ms}, '<', 30000, 'lag in ms');

# a newer version of a key held replaces its fingerprint; an older one not
my $far = sprintf('%016x', hex($fp) ^ 0xffff);
my $newer = int(time * 1000) + 5000;
xadd(key => 'site/sourdough.html', fp => $far, time => $newer);
wait_repl(sub { $_[0]{applied} == 2 }, 'a newer version applied');
$r = $t->get('/sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'changed',
   'the page against the newer fingerprint: changed');
wait_repl(sub { $_[0]{published} == 2 }, 'the change is published');
my $last = $redis->cmd('XREVRANGE', $stream, '+', '-', 'COUNT', '1')->[0];
%f = @{ $last->[1] };
is_deeply([@f{qw(node key fp)}], ['a', 'site/sourdough.html', $fp],
          'the change: our fingerprint again');
cmp_ok(int($f{time} / 1000), '>', int($newer / 1000),
       '... dated after the version it replaces, though that one is '
       . 'in the future');
my $len = $redis->cmd('XLEN', $stream);
is($t->status_of('/sourdough.html'), 'unchanged', 'an unchanged re-fetch');
# a new page after it, published in order: once it is on the stream, the
# re-fetch would be too (was: sleep 0.1, then the length)
is($t->status_of('/council.html'), 'new', 'then a new page');
wait_repl(sub { $_[0]{published} == 3 }, 'the new page published');
is($redis->cmd('XLEN', $stream), $len + 1, '... the re-fetch is not published');
$last = $redis->cmd('XREVRANGE', $stream, '+', '-', 'COUNT', '1')->[0];
is({ @{ $last->[1] } }->{key}, 'site/council.html',
   '... the new page is');
xadd(key => 'site/sourdough.html', fp => $far,
     time => int(time * 1000) - 86400000);
wait_repl(sub { $_[0]{outdated} == 1 }, 'an older version: outdated');
is($t->status_of('/sourdough.html'), 'unchanged',
   'the older version was not applied');

# garbage: refused, counted, logged; what follows still applies
my $other = $seed eq 'deadbeef' ? 'deadbeee' : 'deadbeef';
$redis->cmd('XADD', $stream, '*', 'foo', 'bar');
xadd(key => 'site/bad-fp', fp => $bfp, set => { fp => 'zz' });
xadd(key => 'site/no-time', fp => $bfp, drop => ['time']);
xadd(key => 'site/other-seed', fp => $bfp, set => { seed => $other });
xadd(key => 'site/future', fp => $bfp, time => int(time * 1000) + 2 * 86400000);
xadd(key => 'site/ancient', fp => $bfp, time => 1);
xadd(key => 'site/after-garbage', fp => sprintf('%016x', hex($bfp) ^ ~0));
$s = wait_repl(sub { $_[0]{refused} == 6 && $_[0]{applied} == 3 },
               'six refused, the next applied');
cmp_ok($s->{last_lag_ms}, '<', 30000,
       'an entry dated 1970 is refused: the lag is not 56 years');
is($s->{refused_version} + $s->{refused_mac}, 0,
   '... none of them for its version or MAC');
like($t->error_log, qr/stream entry \d+-\d+ refused: no "node" field/,
     'a refused entry is logged with its id and why');
my @refused = $t->error_log =~ /(stream entry \S+ refused)/g;
cmp_ok(scalar @refused, '<', 5, 'one line a second at most, with the count');
my $p = $t->get('/stats?format=prometheus')->{content};
like($p, qr/^simhash_replication_refused_total\{zone="crawl"\} 6$/m,
     'prometheus: refused');
like($p, qr/^simhash_replication_applied_total\{zone="crawl"\} 3$/m,
     'prometheus: applied');
like($p, qr/^simhash_replication_lag_seconds_bucket\{zone="crawl",le="\+Inf"\} \d+$/m,
     'prometheus: the lag histogram');
like($p, qr/^simhash_replication_lag_seconds_count\{zone="crawl"\} \d+$/m,
     'prometheus: its count');
unlike($p, qr/^simhash_replication_\w+\{zone="plain"/m,
       'prometheus: no replication metrics for a zone not replicated');
ok(!exists $t->stats->{zones}{plain}{replication},
   'JSON: no replication object for it');
my @bad = grep { !/^(# (HELP|TYPE) \w+ .+|\w+\{[^}]*\} \d+(\.\d+)?)$/ }
          split /\n/, $p;
ok(!@bad, 'prometheus: every line well-formed') or diag(explain \@bad);

# the snapshot keeps the last id applied: a restart goes on from there
$last = $redis->cmd('XREVRANGE', $stream, '+', '-', 'COUNT', '1')->[0][0];
$t->stop;
$t->start;
like($t->error_log, qr/the snapshot has the stream "$stream" up to \Q$last\E: replication goes on from there/,
     'restart: the snapshot says where it was in the stream');
wait_repl(sub { $_[0]{connected} == 2 }, 'connected again');
xadd(key => 'site/after-restart.html', fp => sprintf('%016x', hex($bfp) ^ 0xff));
$s = wait_repl(sub { $_[0]{applied} == 1 }, 'the next entry applied');
is($s->{outdated} + $s->{skipped_own} + $s->{refused}, 0,
   'and nothing before it was read again');
is($t->stats->{zones}{crawl}{entries}, 5, 'every document restored');

# away while the stream is trimmed to nothing: a gap, even before anything
# new is published
$t->stop;
xadd(key => "site/while-away-$_.html", fp => sprintf('%016x', hex($bfp) ^ $_))
    for 1 .. 2;
$redis->cmd('XTRIM', $stream, 'MAXLEN', '0');
$t->start;
$s = wait_repl(sub { $_[0]{gaps} == 1 }, 'a gap');
like($t->error_log, qr/\[warn\].*the stream "$stream" was trimmed past \d+-\d+, the last entry applied here: it is empty, its last entry was \d+-\d+/,
     'logged: the stream is empty, and had more');
xadd(key => 'site/after-gap.html', fp => sprintf('%016x', hex($bfp) ^ 0xf0f0));
wait_repl(sub { $_[0]{applied} == 1 }, 'what comes next is applied');

$t->stop;
$t->check_log;
done_testing;
