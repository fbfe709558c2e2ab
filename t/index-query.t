#!/usr/bin/perl
# `simhash index query` and `simhash index stats` on a snapshot the module
# wrote: which stored URL does a page on disk duplicate?  The answer is the
# key the proxy stored, as X-Simhash-Duplicate-Of would name it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $cli = $ENV{SH_CLI};
plan(skip_all => 'SH_CLI is not set (run through `make itest`)')
    unless $cli && -x $cli;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;',
    proxy => <<'EOF');
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
EOF
my $p = $t->prefix;
my $snap = "$p/data/crawl.snap";

$t->start;
for my $page (qw(sourdough.html bicycle.html council.html)) {
    is($t->status_of("/$page"), 'new', "$page stored");
}
$t->stop;
ok(-s $snap, 'snapshot saved at exit');

my $fix = $SimhashTest::FIXTURES;
my $out = `$cli index query $snap $fix/sourdough-reprint.html 2>&1`;
is($? >> 8, 0, 'index query on the module\'s snapshot: exit 0') or diag($out);
like($out, qr{^\Q$fix\E/sourdough-reprint\.html\t\Q@{[ $t->url('/sourdough.html') ]}\E\t\d+$}m,
     'the reprint duplicates the stored URL');

$out = `$cli index query $snap $fix/council.html 2>&1`;
like($out, qr{\t\Q@{[ $t->url('/council.html') ]}\E\t0$}m,
     'a stored page finds its own key at distance 0');

$out = `$cli index stats $snap 2>&1`;
is($? >> 8, 0, 'index stats: exit 0') or diag($out);
like($out, qr/^entries\t3$/m, 'three entries');

# neither kind: a clear refusal
$t->write_file('data/junk.snap', "not a snapshot\n");
$out = `$cli index stats $p/data/junk.snap 2>&1`;
isnt($? >> 8, 0, 'junk: refused');

done_testing();
