#!/usr/bin/perl
# A damaged snapshot costs what is damaged, never the zone: a flipped byte
# in one frame of documents loses that frame's documents only, the rest is
# restored, and the file is kept aside.  A FIFO at the snapshot path never
# hangs nginx -t nor the start: it is not opened, nginx -t warns, the start
# moves it aside (issue 31: the workers' user could plant one to stop the
# next start; t/snapshot-links.t starts with one).  A snapshot written before
# extraction versions (format 1) is refused with one line, counted and kept
# aside, never mixed in: its fingerprints are not known to be comparable.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX qw(mkfifo);
use SimhashTest;

my $cli = $ENV{SH_CLI};

# simhash_content off: the format 1 snapshot below holds fingerprints of
# the previous release, which weighed the whole page's text.
my $proxy = <<'EOF';
        simhash crawl;
        simhash_content off;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
my $t = SimhashTest->new(
    http  => 'simhash_zone zone=crawl:4m file=%%PREFIX%%/data/crawl.snap '
           . 'save=off;',
    proxy => $proxy);
my $snap = $t->prefix . '/data/crawl.snap';
my $entries = sub { $t->stats->{zones}{crawl}{entries} };

# 400 different pages under long keys (about 1 KB each): two frames of
# records (256 a frame), the keys' text in frames of its own
my $n = 400;
my @pages = $t->random_pages($n, 120, 18);
$t->write_file("html/gen/$_.html", $pages[$_]) for 0 .. $n - 1;
my $pad = 'p' x 1000;
my $url = sub { "/gen/$_[0].html?pad=$pad" };

$t->start;
my $new = grep { $t->status_of($url->($_)) eq 'new' } 0 .. $n - 1;
is($new, $n, "$n different pages: all new");
$t->stop;

my $good = $t->read_file($snap);
my @recs = grep { $_->{type} eq 'RECS' } SimhashTest::store_frames($good);
cmp_ok(scalar @recs, '>=', 2, 'the documents span at least 2 frames');

# flip one byte in the first frame of documents (the oldest 256)
my $bad = $good;
substr($bad, $recs[0]{at} + 1000, 1) ^= "\x20";
$t->write_file('data/crawl.snap', $bad);

$t->start;
like($t->error_log, qr/snapshot "\Q$snap\E" is damaged: 1 of its frames fail their checksum or are cut off; the documents of the others were restored/,
     'one frame lost, logged');
my $read = $entries->();
cmp_ok($read, '>=', $n - 256, '... no more than one frame of documents');
cmp_ok($read, '<=', $n - 50, '... and that frame had documents');
is($t->status_of($url->($n - 1)), 'unchanged', 'the newest is known');
is($t->status_of($url->(300)), 'unchanged', 'one in the other frame too');
my @lost = grep { $t->status_of($url->($_)) eq 'new' } 0 .. 299;
is(scalar @lost, $n - $read, 'the lost ones are exactly one frame');
is($lost[0], 0, '... the oldest');
my ($aside) = $t->error_log
    =~ /the damaged snapshot is kept as "(\Q$snap\E\.damaged-\d+)"/;
ok($aside && $t->read_file($aside) eq $bad, 'the damaged file is kept aside');
$t->stop;

SKIP: {
    skip 'SH_CLI is not set', 2 unless $cli && -x $cli;
    my $out = `$cli index check $aside`;
    like($out, qr/^lost\t@{[ $n - $read ]}$/m,
         'simhash index check: the same documents lost');
    like($out, qr/^check\tDAMAGED: /m, '... and DAMAGED');
}

# a FIFO where the snapshot should be: nginx -t says so, nothing blocks
my $fifo = $t->prefix . '/data/fifo.snap';
mkfifo($fifo, 0600) or die "mkfifo: $!";
$t->set(http => "simhash_zone zone=crawl:4m file=$fifo;");
my ($rc, $out) = $t->nginx_t;
is($rc, 0, 'a FIFO as the snapshot: nginx -t passes, unblocked') or diag($out);
like($out, qr/\[warn\] .*not a snapshot: \Q$fifo\E: not a regular file; it will be moved aside at start in \S+:\d+/,
     '... saying it is not a regular file') or diag($out);

# a format 1 snapshot of an earlier release: refused, kept aside, counted;
# the zone starts empty and saves in format 4 (the store's) under its own
# version
my $old = $t->prefix . '/data/old.snap';
my $v1 = $t->read_file(
    "$FindBin::Bin/../tests/fixtures/snapshots/module-v1.snap");
$t->write_file('data/old.snap', $v1);
$t->set(http => "simhash_zone zone=crawl:4m file=$old;");
$t->start;
like($t->error_log, qr/snapshot "\Q$old\E" refused: written before extraction versions \(format 1\), its fingerprints are not known to be comparable with extraction version [0-9a-f]{8}; starting empty/,
     'format 1: refused with one line naming the version');
is($t->stats->{zones}{crawl}{snapshot}{refused}, 1, '... counted');
my @aside = glob("$old.refused-*");
is(scalar @aside, 1, '... and kept aside');
is(@aside && $t->read_file($aside[0]), $v1, '... unchanged');
my $r = $t->get('/sourdough.html?again=1');
is($r->{headers}{'x-simhash-status'}, 'new', 'its pages are not mixed in');
$t->stop;
SKIP: {
    skip 'SH_CLI is not set', 2 unless $cli && -x $cli;
    my $check = `$cli index check $old`;
    like($check, qr/^version\t4\nextraction\t[0-9a-f]{8}$/m,
         'saved again in format 4, with its extraction version');
    like($check, qr/^documents\t1$/m, '... holding the one new document');
}

$t->check_log;
done_testing;
