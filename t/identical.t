#!/usr/bin/perl
# A re-fetch of a key with byte-for-byte the same body is "unchanged" at
# distance 0 with the stored fingerprint, without parsing it; a different
# body is parsed as before and its digest replaces the stored one; gzip
# bodies are compared as received; the digests survive a restart.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;',
    proxy => <<'EOF');
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
my ($page, $other) = $t->random_pages(2, 300, 20);
$t->write_file('html/p.html', $page);
$t->write_file('html/q.html', $other);
$t->start;
my $z = sub { $t->stats->{zones}{crawl} };

my $r1 = $t->get('/p.html');
is($r1->{headers}{'x-simhash-status'}, 'new', 'first fetch: new');
my $bytes = $z->()->{fingerprinted_bytes};
is($bytes, length $page, 'parsed once');

my $r2 = $t->get('/p.html');
is($r2->{headers}{'x-simhash-status'}, 'unchanged', 'same bytes: unchanged');
is($r2->{headers}{'x-simhash-distance'}, 0, '... at distance 0');
is($r2->{headers}{'x-simhash'}, $r1->{headers}{'x-simhash'},
   '... with the stored fingerprint');
is($r2->{content}, $page, '... and the body as it came');
is($z->()->{fingerprinted_bytes}, $bytes, '... not parsed');
is($z->()->{identical}, 1, 'counted as identical');

# one more word: parsed, unchanged within the distance, digest replaced
(my $edited = $page) =~ s{</h1>}{ edited</h1>};
$t->write_file('html/p.html', $edited);
my $r3 = $t->get('/p.html');
is($r3->{headers}{'x-simhash-status'}, 'unchanged', 'a small edit: unchanged');
is($z->()->{fingerprinted_bytes}, $bytes + length $edited, '... parsed');
is($z->()->{identical}, 1, '... not identical');
my $r4 = $t->get('/p.html');
is($r4->{headers}{'x-simhash-distance'}, 0, 'the edited bytes again: 0');
is($z->()->{identical}, 2, '... identical to the new digest');

# gzip: the body as received
my $g1 = $t->get('/gz/q.html', 'Accept-Encoding' => 'gzip');
is($g1->{headers}{'content-encoding'}, 'gzip', 'gzip from the origin');
is($g1->{headers}{'x-simhash-status'}, 'new', '... a new page');
my $g2 = $t->get('/gz/q.html', 'Accept-Encoding' => 'gzip');
is($g2->{headers}{'x-simhash-status'}, 'unchanged', 'gzip again: unchanged');
is($z->()->{identical}, 3, '... identical, without inflating');

# a restart keeps the digests
$t->stop;
$t->start;
my $r5 = $t->get('/p.html');
is($r5->{headers}{'x-simhash-distance'}, 0, 'after a restart: distance 0');
is($z->()->{identical}, 1, '... answered from the restored digest');
is($z->()->{fingerprinted_bytes}, 0, '... without parsing');

$t->stop;
$t->check_log;
done_testing;
