#!/usr/bin/perl
# new / duplicate / unchanged, the Duplicate-Of key, the distance, agreement
# with the simhash CLI, variables, non-HTML and short pages.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    # distance 4: a margin over the fixture's near-duplicate (2 bits with
    # today's extraction defaults), which the tests compute with the CLI
    http  => 'simhash_zone zone=crawl:1m distance=4;',
    proxy => <<'EOF',
        simhash crawl;
        simhash_probes 4096;
        add_header X-Vars "$simhash_status|$simhash|$simhash_distance|$simhash_duplicate_of";

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        location /off/ {
            simhash off;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /copy/ {
            proxy_pass http://%%ORIGIN%%/;
        }

        location = /stats {
            simhash_stats;
        }
EOF
);
$t->start;

my $cli = $ENV{SH_CLI} && -x $ENV{SH_CLI};

# a first page is new, and carries its fingerprint
my $r = $t->get('/sourdough.html');
is($r->{status}, 200, 'original: 200');
is($r->{headers}{'x-simhash-status'}, 'new', 'original: new');
like($r->{headers}{'x-simhash'}, qr/^[0-9a-f]{16}$/, 'original: X-Simhash');
ok(!exists $r->{headers}{'x-simhash-distance'}, 'new: no distance');
ok(!exists $r->{headers}{'x-simhash-duplicate-of'}, 'new: no Duplicate-Of');
is($r->{content}, $t->fixture('sourdough.html'), 'original: body unchanged');
is($r->{headers}{'content-length'}, length $t->fixture('sourdough.html'),
   'original: Content-Length kept');
my $fp = $r->{headers}{'x-simhash'};

SKIP: {
    skip 'SH_CLI not set', 1 unless $cli;
    is($fp, $t->cli_fingerprint('sourdough.html'),
       'the module and the CLI agree on the fingerprint');
}

# the same bytes under another URL: a duplicate of the first key
$r = $t->get('/copy/sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'copy: duplicate');
is($r->{headers}{'x-simhash-duplicate-of'},
   $t->url('/sourdough.html'), 'copy: Duplicate-Of is the first key');
is($r->{headers}{'x-simhash-distance'}, '0', 'copy: distance 0');
is($r->{headers}{'x-simhash'}, $fp, 'copy: same fingerprint');
is($r->{content}, $t->fixture('sourdough.html'), 'copy: body unchanged');

# the same URL again: unchanged, not a duplicate of itself
$r = $t->get('/sourdough.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged', 're-fetch: unchanged');
is($r->{headers}{'x-simhash-distance'}, '0', 're-fetch: distance 0');
ok(!exists $r->{headers}{'x-simhash-duplicate-of'},
   're-fetch: not a duplicate of itself');

# a near-duplicate (other byline, other title) under another URL
SKIP: {
    skip 'SH_CLI not set', 4 unless $cli;
    my $d = SimhashTest::distance($t->cli_fingerprint('sourdough.html'),
                                  $t->cli_fingerprint('sourdough-reprint.html'));
    ok($d > 0 && $d <= 4, "fixture: the reprint is at distance $d (1..4)");

    $r = $t->get('/sourdough-reprint.html');
    is($r->{headers}{'x-simhash-status'}, 'duplicate', 'reprint: duplicate');
    is($r->{headers}{'x-simhash-duplicate-of'},
       $t->url('/sourdough.html'), 'reprint: Duplicate-Of');
    is($r->{headers}{'x-simhash-distance'}, $d,
       'reprint: distance as the CLI computes it');
}

# unrelated pages are new
for my $page (qw(bicycle.html council.html cafe-utf8.html)) {
    is($t->status_of("/$page"), 'new', "$page: new");
}

# the variables, through add_header (evaluated after our filter)
$r = $t->get('/copy/bicycle.html');
is($r->{headers}{'x-vars'},
   "duplicate|$r->{headers}{'x-simhash'}|0|${\ $t->url('/bicycle.html')}",
   'variables: $simhash_status|$simhash|$simhash_distance|'
   . '$simhash_duplicate_of');

# too short to fingerprint: skipped, no fingerprint
$r = $t->get('/tiny.html');
is($r->{headers}{'x-simhash-status'}, 'skipped', 'tiny: skipped');
ok(!exists $r->{headers}{'x-simhash'}, 'tiny: no X-Simhash');
is($r->{content}, $t->fixture('tiny.html'), 'tiny: body unchanged');

# not HTML: untouched, no headers at all
$r = $t->get('/notes.txt');
is($r->{status}, 200, 'text/plain: 200');
ok(!exists $r->{headers}{'x-simhash-status'}, 'text/plain: no headers');
is($r->{content}, $t->fixture('notes.txt'), 'text/plain: body unchanged');

# 404 from the origin: untouched
$r = $t->get('/missing.html');
is($r->{status}, 404, '404 passes');
ok(!exists $r->{headers}{'x-simhash-status'}, '404: no headers');

# simhash off
$r = $t->get('/off/council.html');
ok(!exists $r->{headers}{'x-simhash-status'}, 'simhash off: no headers');

# the access log has the variables
$t->stop('quit');
my $log = $t->read_file('logs/access.log');
my $port = $t->port;
like($log, qr{^\d+ /copy/sourdough\.html 200 duplicate $fp 0 http://127\.0\.0\.1:$port/sourdough\.html$}m,
     'log_format with the variables');
like($log, qr{^\d+ /notes\.txt 200 - - - -$}m, 'variables are empty when unset');

$t->check_log;
done_testing;
