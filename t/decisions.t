#!/usr/bin/perl
# The table of the last decisions ("why?"'s "last decision", the console's
# box) keeps a decision until four later keys of its set took their
# places: keys that share a slot of the table do not push one another out
# at once.  Before, the table was direct-mapped, and one later key on the
# same slot made "why?" answer "none remembered" for a page dropped a
# moment before (t/console.t failed so, one run in some: each run makes a
# new zone secret, and with it new slots).
#
# The zone's secret is given here (PATH.secret), so the slots are known:
# the k*.html keys below were found, offline, to share copy.html's slot
# under it (the key hash modulo the table's 4,096 entries).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap;
END
    proxy => <<'END',
        location /doc/ {
            simhash crawl;
            simhash_action drop keys=any;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /stats {
            simhash_stats;
        }
END
);

# the secret, and keys that share copy.html's slot under it
my $secret = '5eed0fdec1510a5ecafe5eed0fdec1510a5ecafe5eed0fdec1510a5ecafe0047';
my @same = qw(k748 k2231 k17281 k19652);

$t->write_file('data/crawl.snap.secret', "$secret\n");
chmod 0600, $t->prefix . '/data/crawl.snap.secret';

my @pages = $t->random_pages(2 + @same, 150, 4747);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file("html/doc/$same[$_].html", $pages[$_ + 1]) for 0 .. $#same;
$t->start;

sub why {
    my ($key) = @_;
    (my $q = $key) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    my $r = $t->get("/stats?explain=$q");
    return $r->{status} == 200 ? decode_json($r->{content}) : {};
}

sub last_of {
    my $d = why("http://v.test/doc/$_[0]")->{last_decision};
    return $d ? "$d->{status}, $d->{action}" : 'none remembered';
}

my ($st) = $t->raw_get('/doc/a.html');
is($st, 200, 'a.html: new');
($st) = $t->raw_get('/doc/copy.html');
is($st, 204, 'copy.html: dropped');
is(last_of('copy.html'), 'duplicate, dropped', 'why? copy.html: dropped');

# three later keys on its slot: it stays
for my $k (@same[0 .. 2]) {
    ($st) = $t->raw_get("/doc/$k.html");
    is($st, 200, "$k.html: new");
    is(last_of('copy.html'), 'duplicate, dropped',
       "why? copy.html after $k.html, on its slot: still remembered");
    is(last_of("$k.html"), 'new, passed', "why? $k.html: new");
}

# a fourth: the oldest of the set gives way, the four newest stay
($st) = $t->raw_get("/doc/$same[3].html");
is($st, 200, "$same[3].html: new");
is(last_of('copy.html'), 'none remembered',
   'why? copy.html after four later keys of its set: forgotten');
is(last_of("$_.html"), 'new, passed', "why? $_.html: still remembered")
    for @same;
is(last_of('a.html'), 'new, passed', 'why? a.html, another set: kept');

$t->check_log;
done_testing;
