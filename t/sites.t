#!/usr/bin/perl
# What the console reads (issue 36), in simhash_stats' JSON: the rates of
# the last minutes (10-second slots of every event: new, duplicate,
# unchanged, changed, skipped, dropped, predicted) and the sites that
# waste the crawl (a Space-Saving table of 64 entries: wasted =
# duplicates + predictions, its error, pages, drops, bytes and fetches
# saved).  In Prometheus: the top sites as bounded gauges, and the whole
# output passes `promtool check metrics` when promtool is installed
# (tools/deps.sh console).  The counts here are exact: fewer hosts than
# entries.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use List::Util qw(sum);
use SimhashTest qw(wait_until);

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m file=%%PREFIX%%/data/crawl.snap
                 save=1s;
    simhash_dust_rule zone=crawl host=a.test pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        location ~ ^/(?<site>[a-z]+)(?<path>/doc/.*)$ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 0%;      # every prediction answered
            simhash_action drop keys=any;
            simhash_key http://$site.test$path$is_args$args;
            proxy_pass http://%%ORIGIN%%$path$is_args$args;
        }

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(4, 150, 5151);
mkdir $t->prefix . '/html/doc';
$t->write_file("html/doc/p$_.html", $pages[$_]) for 0 .. 3;
$t->write_file('html/doc/copy.html', $pages[0]);
$t->start;

# a.test: 1 new, 3 duplicates dropped (the copy under three keys), 2
# predictions; b.test: 2 new, 1 duplicate (of a.test's page) dropped;
# c.test: 1 new.  A host enters the table with its first waste: its pages
# before it are not counted.
my @a = ('/a/doc/p0.html', '/a/doc/copy.html', '/a/doc/copy.html?x=1',
         '/a/doc/copy.html?x=2', '/a/doc/p0.html?sid=1',
         '/a/doc/p0.html?sid=2');
my @b = ('/b/doc/p1.html', '/b/doc/p2.html', '/b/doc/copy.html');
my @c = ('/c/doc/p3.html');

my $dropped_bytes = 0;
for my $p (@a, @b, @c) {
    my ($st, $h) = $t->raw_get($p);
    $dropped_bytes += length $pages[0]
        if $st == 204 && ($h->{'x-simhash-status'} // '') eq 'duplicate'
           && $p !~ /sid=/;     # a prediction saves a fetch, not bytes
}

my $z = $t->stats->{zones}{crawl};

ok($z->{rates}, 'rates');
is($z->{rates}{step}, 10, 'rates: 10-second slots');
is($z->{rates}{slots}, 36, 'rates: 36 of them');
is(scalar @{ $z->{rates}{new} }, 36, 'rates: one count a slot');
my %sum = map { $_ => sum(@{ $z->{rates}{$_} }) }
          qw(new duplicate unchanged changed skipped dropped predicted);
is($sum{new}, $z->{responses}{new}, 'rates: every new page');
is($sum{duplicate}, $z->{responses}{duplicate}, 'rates: every duplicate');
is($sum{predicted}, $z->{dust}{saved}, 'rates: every prediction answered');
is($sum{predicted}, 2, 'rates: 2 predictions');
is($sum{dropped}, 4, 'rates: 4 drops');

my $s = $z->{sites};
ok($s, 'sites');
is($s->{k}, 64, 'sites: 64 entries');
is($s->{tracked}, 2, 'sites: the two hosts that wasted anything');
is($s->{total}, 4 + 2, 'sites: N = duplicates + predictions');
is($s->{error_bound}, 0, 'sites: exact while the table has room');

my %top = map { $_->{site} => $_ } @{ $s->{top} };
is($s->{top}[0]{site}, 'a.test', 'sites: a.test first');
is($top{'a.test'}{wasted}, 5, 'a.test: 3 duplicates + 2 predictions');
is($top{'a.test'}{error}, 0, 'a.test: no error');
is($top{'a.test'}{duplicates}, 3, 'a.test: 3 duplicates');
is($top{'a.test'}{predicted}, 2, 'a.test: 2 predictions');
is($top{'a.test'}{fetches_saved}, 2, 'a.test: 2 fetches saved');
is($top{'a.test'}{dropped}, 3, 'a.test: 3 drops');
is($top{'a.test'}{pages}, 5, 'a.test: 5 pages since its first waste');
is($top{'b.test'}{wasted}, 1, 'b.test: 1 duplicate');
is($top{'b.test'}{pages}, 1, 'b.test: pages since its first waste');
is($top{'a.test'}{bytes_saved} + $top{'b.test'}{bytes_saved},
   $dropped_bytes, 'bytes saved: the dropped bodies');
ok(!$top{'c.test'}, 'c.test wasted nothing: not in the table');

# Prometheus: the top sites, bounded
my $r = $t->get('/stats?format=prometheus');
is($r->{status}, 200, 'prometheus: 200');
my $prom = $r->{content};
like($prom, qr/^simhash_site_wasted\{zone="crawl",site="a.test"\} 5$/m,
     'prometheus: a.test wasted');
like($prom, qr/^simhash_site_fetches_saved\{zone="crawl",site="a.test"\} 2$/m,
     'prometheus: a.test fetches saved');
like($prom, qr/^simhash_sites_error_bound\{zone="crawl"\} 0$/m,
     'prometheus: the error bound');
my @families = $prom =~ /^# TYPE (\S+)/mg;
my %seen;
is(scalar(grep { $seen{$_}++ } @families), 0,
   'prometheus: each family once');

SKIP: {
    my $promtool = `command -v promtool 2>/dev/null`;
    chomp $promtool;
    skip 'promtool not installed (tools/deps.sh console)', 1
        unless $promtool;
    my $file = $t->prefix . '/metrics.txt';
    open(my $fh, '>', $file) or die "$file: $!";
    print $fh $prom;
    close $fh;
    my $out = `$promtool check metrics < $file 2>&1`;
    is($?, 0, 'promtool check metrics: passes') or diag($out);
}

# the snapshot's last save: how long, the longest hold of the lock
my $snap;
wait_until('a periodic save',
           sub { ($snap = $t->stats->{zones}{crawl}{snapshot})->{saves} });
ok($snap->{saves} >= 1, 'a periodic save ran');
ok(defined $snap->{last_duration_ms} && defined $snap->{last_hold_ms},
   'the last save\'s duration and longest hold');
ok($snap->{last_hold_ms} <= $snap->{last_duration_ms},
   'its hold within its duration');
like($t->get('/stats?format=prometheus')->{content},
     qr/^simhash_snapshot_last_hold_seconds\{zone="crawl"\} \d+\.\d{3}$/m,
     'prometheus: the longest hold, in seconds');

$t->check_log;
done_testing;
