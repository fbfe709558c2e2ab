#!/usr/bin/perl
# The zone across reload (same size: kept; other size: documents taken over;
# other seed: emptied), snapshots across restarts (periodic save by a worker,
# final save by the master), corrupt, truncated and foreign snapshots.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest qw(wait_until);

my $proxy = <<'EOF';
        simhash crawl;
        simhash_probes 4096;

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        location = /stats {
            simhash_stats;
        }
EOF
my $zone = 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap '
         . 'save=1s;';

my $t = SimhashTest->new(http => $zone, proxy => $proxy);
my $snap = $t->prefix . '/data/crawl.snap';
my $crawl = sub { $t->stats->{zones}{crawl} };

$t->start;
like($t->error_log, qr/no snapshot "\Q$snap\E" yet, starting empty/,
     'first start: no snapshot yet');

is($t->status_of('/sourdough.html'), 'new', 'sourdough: new');
is($t->status_of('/bicycle.html'), 'new', 'bicycle: new');

SKIP: {
    skip $SimhashTest::NO_RELOAD, 5 if $SimhashTest::NO_RELOAD;

    # reload, same zone: the index stays
    $t->reload;
    is($t->status_of('/sourdough.html?r=1'), 'duplicate',
       'after reload: duplicate of the page seen before');
    is($crawl->()->{entries}, 2, 'after reload: 2 entries');

    # reload with another size: the documents are taken over
    $t->set(http => $zone =~ s/crawl:1m/crawl:2m/r)->reload;
    like($t->error_log,
         qr/simhash zone "crawl" resized: 2 documents taken over/,
         'resize on reload: logged');
    is($crawl->()->{size}, 2 * 1024 * 1024, 'resize on reload: new size');
    is($t->status_of('/bicycle.html?r=2'), 'duplicate',
       'resize on reload: the index survived');
}

# a worker saves within about a second of a change
wait_until('the periodic save', sub { -s $snap });
ok(-s $snap, 'periodic save wrote the snapshot');
wait_until('a save counted', sub { $crawl->()->{snapshot}{saves} >= 1 });
cmp_ok($crawl->()->{snapshot}{saves}, '>=', 1, 'stats: saves counted');

# stop, start: restored
is($t->status_of('/council.html'), 'new', 'council: new (after the save)');
$t->stop;
$t->start;
like($t->error_log, qr/3 documents restored from "\Q$snap\E"/,
     'restart: 3 documents restored');
is($crawl->()->{snapshot}{restored}, 3, 'stats: restored 3');
is($t->status_of('/council.html?again=1'), 'duplicate',
   'restart: the page added just before the stop is known');
is($t->status_of('/sourdough.html'), 'unchanged',
   'restart: keys survive too');
$t->stop('quit');

# a graceful stop saves as well; then damage the keys' text: the records
# alone rebuild the zone (a document is found by its key's hash), and the
# damaged file is kept aside
my $good = $t->read_file($snap);
my ($text) = grep { $_->{type} eq 'TEXT' } SimhashTest::store_frames($good);
ok($text, 'the snapshot holds the keys\' text');
my $bad = $good;
substr($bad, $text->{at} + 8, 16) = 'corrupt snapshot';
$t->write_file('data/crawl.snap', $bad);
$t->start;
like($t->error_log, qr/\[error\].*snapshot "\Q$snap\E" is damaged: 1 of its frames fail their checksum or are cut off; the documents of the others were restored/,
     'damaged text: logged as an error, documents rebuilt from records');
is($crawl->()->{entries}, 3, 'damaged text: nothing lost');
my ($aside) = $t->error_log
             =~ /the damaged snapshot is kept as "(\Q$snap\E\.damaged-\d+)"/;
ok($aside && -f $aside, 'damaged text: the file is kept aside');
is($t->read_file($aside), $bad, '... byte for byte');
is($t->status_of('/council.html?x=2'), 'duplicate', 'damaged text: serving');
is($t->status_of('/council.html'), 'unchanged',
   'damaged text: a page whose key lost its text is still known');
$t->stop;
unlink $aside;

# truncated: unusable, refused, kept aside, never overwritten by a save
$t->write_file('data/crawl.snap', substr($good, 0, 100));
$t->start;
my @refused = $t->error_log =~ /snapshot "\Q$snap\E" refused/g;
is(scalar @refused, 1, 'truncated snapshot: refused');
is($crawl->()->{entries}, 0, 'truncated snapshot: empty');
($aside) = $t->error_log =~ /the refused snapshot is kept as "([^"]+)"/;
is($t->read_file($aside), substr($good, 0, 100),
   'truncated snapshot: kept aside as it was');
is($t->status_of('/tiny.html'), 'skipped', 'traffic after the refusal');
is($t->status_of('/council.html'), 'new', 'a change to save');
wait_until('the next periodic save', sub { -s $snap });
ok(-s $snap, 'the next save writes a new file');
is($t->read_file($aside), substr($good, 0, 100),
   'the damaged one is still there, untouched');
$t->stop;
unlink $aside;

# a snapshot built under another simhash_seed
$t->write_file('data/crawl.snap', $good);
$t->set(proxy => "simhash_seed another-secret-key-1234;\n$proxy")->start;
@refused = $t->error_log =~ /snapshot "\Q$snap\E" refused/g;
is(scalar @refused, 2, 'foreign seed: refused');
is($crawl->()->{entries}, 0, 'foreign seed: empty');
is($t->status_of('/council.html'), 'new', 'foreign seed: serving');
my $seeded = $t->get('/bicycle.html')->{headers}{'x-simhash'};

SKIP: {
    skip $SimhashTest::NO_RELOAD, 3 if $SimhashTest::NO_RELOAD;

    # the seed changes on reload: the zone is emptied (fingerprints differ)
    $t->set(proxy => $proxy)->reload;
    like($t->error_log, qr/simhash zone "crawl": simhash_seed changed, the index starts empty/,
         'seed change on reload: logged');
    my $r = $t->get('/bicycle.html');
    is($r->{headers}{'x-simhash-status'}, 'new',
       'seed change on reload: the index starts empty');
    isnt($r->{headers}{'x-simhash'}, $seeded,
         'the seed keys the fingerprint');
}

$t->stop;
$t->check_log;
done_testing;
