#!/usr/bin/perl
# Two listings of one template (issue 21): pages with the same markup whose
# links are other links are not duplicates of each other, even when the
# links sit in a sidebar that content weighting sets aside, so that their
# fingerprints agree (the listing veto, src/sh_sketch.h).  The same listing
# under another template is still a duplicate.  The sketches survive a
# restart (the snapshot), and the stats count the matches set aside.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=lists:1m file=%%PREFIX%%/data/lists.snap;',
    proxy => <<'EOF2',
        location / {
            simhash lists;
            # keys=any: drop whatever is a duplicate, whatever its path
            simhash_action drop keys=any;
            proxy_pass http://%%ORIGIN%%;
        }
        location = /stats {
            simhash_stats;
        }
EOF2
);

# tests/fixtures: listing.html and listing-other.html are one template
# (a short intro, a sidebar of 40 links in an <aside>) with other links;
# listing-retemplated.html has listing.html's links under another template
sub fixture_text {
    my ($name) = @_;
    my $path = "$FindBin::Bin/../tests/fixtures/$name";
    open my $fh, '<', $path or die "$path: $!";
    local $/;
    return scalar <$fh>;
}

my %page = (
    'a/topic.html'       => 'listing.html',
    'b/topic.html'       => 'listing-other.html',
    'c/topic.html'       => 'listing-retemplated.html',
    'd/topic.html'       => 'listing-other.html',
);
$t->write_file("html/$_", fixture_text($page{$_})) for keys %page;
$t->start;

my ($status, $h, $body) = $t->raw_get('/a/topic.html');
is($h->{'x-simhash-status'}, 'new', 'a listing: new');

($status, $h, $body) = $t->raw_get('/b/topic.html');
is($status, 200, 'another listing of the template: 200, not dropped');
is($h->{'x-simhash-status'}, 'new', '... new');
like($body, qr{<a href="/item/\d+\.html">}, '... its links are delivered');

($status, $h) = $t->raw_get('/c/topic.html');
is($status, 204, 'the first listing under another template: 204');
is($h->{'x-simhash-status'}, 'duplicate', '... a duplicate');
is($h->{'x-simhash-duplicate-of'}, 'http://127.0.0.1/a/topic.html',
   '... of the first');

my $stats = $t->stats->{zones}{lists};
cmp_ok($stats->{listings}, '>=', 1, 'stats: matches set aside counted');

# a restart: the zone comes back from its snapshot, sketches included
$t->stop;
$t->start;
is($t->stats->{zones}{lists}{snapshot}{restored}, 2,
   'restart: the two listings restored');

($status, $h) = $t->raw_get('/d/topic.html');
is($status, 204, 'after the restart, a copy of the second listing: 204');
is($h->{'x-simhash-duplicate-of'}, 'http://127.0.0.1/b/topic.html',
   '... a duplicate of the second, not of the first (vetoed)');

done_testing;
