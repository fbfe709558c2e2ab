#!/usr/bin/perl
# A full zone evicts the oldest documents and keeps serving; long keys cost
# key text, not documents: their oldest are named by an id.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $pad = 'k' x 1500;
my $t = SimhashTest->new(
    http  => "simhash_zone zone=small:64k;\n"
           . "    simhash_zone zone=keys:64k keys=16k;",
    proxy => <<"EOF",
        simhash_probes 4096;

        location / {
            simhash small;
            proxy_pass http://%%ORIGIN%%;
        }

        # keys of 1.5 KB: the key text ring turns over long before the
        # zone is full of documents
        location /long/ {
            simhash keys;
            simhash_key "\$request_uri-$pad";
            proxy_pass http://%%ORIGIN%%/;
        }

        location = /stats {
            simhash_stats;
        }
EOF
);
$t->start;

my $zone = sub { $t->stats->{zones}{$_[0]} };
my $cap = $zone->('small')->{capacity};
cmp_ok($cap, '>=', 16, "a 64k zone holds $cap documents");
cmp_ok($cap, '<', 2000, 'and not implausibly many');

my $n = $cap + 40;
my @pages = $t->random_pages($n, 60, 99);
$t->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. $n;

my %status;
$status{ $t->status_of("/gen/$_.html") }++ for 1 .. $n;
is($status{new}, $n, "$n distinct pages: all new") or diag(explain \%status);

my $z = $zone->('small');
is($z->{entries}, $cap, 'the zone is full');
cmp_ok($z->{evictions}, '>=', 40, "evictions counted ($z->{evictions})");
is($t->status_of("/gen/1.html"), 'new', 'the oldest page was evicted');
is($t->status_of("/gen/$n.html"), 'unchanged', 'the newest is still known');
is($t->status_of("/gen/$n.html?copy"), 'duplicate',
   'and found as a near-duplicate');

# long keys: the zone's room for documents does not depend on their
# length; the key text ring keeps the newest keys, and a document whose key
# left it is still known, and named by its id
my $m = 120;
%status = ();
$status{ $t->status_of("/long/gen/$_.html") }++ for 1 .. $m;
is($status{new}, $m, "$m pages with long keys: all new")
    or diag(explain \%status);
$z = $zone->('keys');
cmp_ok($z->{capacity}, '>=', $m, "the zone holds $m documents");
is($z->{entries}, $m, 'long keys: every page stored');
is($z->{evictions}, 0, 'long keys: none evicted for its key length');
cmp_ok($z->{key_text_evictions}, '>', 0,
       "stats: keys that left the ring ($z->{key_text_evictions})");
cmp_ok($z->{key_texts}, '<', $m, "stats: keys kept ($z->{key_texts})");
is($z->{key_text_bytes}, 16384, 'stats: the ring\'s size, keys=16k');
is($t->status_of("/long/gen/1.html"), 'unchanged',
   'long keys: the oldest is still known');
my $r = $t->get("/long/gen/1.html?copy");
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'long keys: a copy of the oldest is a duplicate');
like($r->{headers}{'x-simhash-duplicate-of'} // '',
     qr/^simhash-id:[0-9a-f]{16}$/,
     '... of a document named by its id: its key left the ring');
$r = $t->get("/long/gen/$m.html?copy");
like($r->{headers}{'x-simhash-duplicate-of'} // '',
     qr{^/long/gen/$m\.html-k{1500}$},
     'a copy of the newest is named by its key');

unlike($t->error_log, qr/no room|ngx_slab_alloc\(\) failed/,
       'no allocation failure logged');

$t->stop;
$t->check_log;
done_testing;
