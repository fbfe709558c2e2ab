#!/usr/bin/perl
# Re-fetches of the same key: unchanged within the distance, changed beyond
# it (and the stored fingerprint follows); simhash_key; simhash_insert off.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    # distance 4: a margin over the small edit below (2 bits today)
    http  => 'simhash_zone zone=crawl:1m distance=4;',
    proxy => <<'EOF',
        simhash crawl;
        simhash_probes 4096;

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        # the identity ignores the query string
        location /q/ {
            simhash_key $scheme://$host$uri;
            proxy_pass http://%%ORIGIN%%/;
        }

        # lookups only: nothing enters the index
        location /ro/ {
            simhash_insert off;
            proxy_pass http://%%ORIGIN%%/;
        }

        location = /stats {
            simhash_stats;
        }
EOF
);
$t->start;

my $article = $t->fixture('sourdough.html');
my $reprint = $t->fixture('sourdough-reprint.html');
my $other = $t->fixture('bicycle.html');

$t->write_file('html/page.html', $article);
my $r = $t->get('/page.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'first fetch: new');
my $fp1 = $r->{headers}{'x-simhash'};

# a small edit of the same URL: unchanged, with its distance
$t->write_file('html/page.html', $reprint);
$r = $t->get('/page.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged', 'small edit: unchanged');
my $d = SimhashTest::distance($fp1, $r->{headers}{'x-simhash'});
ok($d > 0, "small edit: the fingerprint moved ($d bits)");
is($r->{headers}{'x-simhash-distance'}, $d, 'small edit: distance');
is($r->{content}, $reprint, 'small edit: new body passes');

# a different page under the same URL: changed, and the new fingerprint is
# what the next fetch compares with
$t->write_file('html/page.html', $other);
$r = $t->get('/page.html');
is($r->{headers}{'x-simhash-status'}, 'changed', 'rewrite: changed');
my $fp2 = $r->{headers}{'x-simhash'};
cmp_ok($r->{headers}{'x-simhash-distance'}, '>', 4,
       'rewrite: distance beyond 4');
ok(!exists $r->{headers}{'x-simhash-duplicate-of'},
   'rewrite: no Duplicate-Of');

$r = $t->get('/page.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged',
   'fetch after the rewrite: unchanged (the fingerprint was updated)');
is($r->{headers}{'x-simhash-distance'}, '0', 'and at distance 0');
is($r->{headers}{'x-simhash'}, $fp2, 'same fingerprint');

# the old content under another URL is no duplicate any more: the index
# holds the new fingerprint for page.html
is($t->status_of('/sourdough.html'), 'new',
   'the old content elsewhere: new (nothing left to match)');

# simhash_key without the query string: one document for every query
is($t->status_of('/q/council.html?utm_source=a'), 'new', 'key: first');
is($t->status_of('/q/council.html?utm_source=b'), 'unchanged',
   'key: another query string is the same document');

# simhash_insert off: lookups see the index, nothing is added or updated
is($t->status_of('/ro/cafe-utf8.html'), 'new', 'insert off: new');
is($t->status_of('/ro/cafe-utf8.html'), 'new',
   'insert off: still new (not inserted)');
is($t->status_of('/ro/bicycle.html'), 'duplicate',
   'insert off: duplicates are still found');
my $before = $t->stats->{zones}{crawl}{entries};
$t->get('/ro/tiny.html');
$t->get('/ro/council.html');
is($t->stats->{zones}{crawl}{entries}, $before,
   'insert off: entries unchanged');

$t->stop;
$t->check_log;
done_testing;
