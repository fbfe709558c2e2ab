#!/usr/bin/perl
# simhash_stats: JSON by default, Prometheus text on ?format=prometheus or
# an Accept header; the counters follow the traffic.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use SimhashTest;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m distance=4;\n"
           . "    simhash_zone zone=other:256k;",
    proxy => <<'EOF',
        simhash_probes 4096;

        location / {
            simhash crawl;
            proxy_pass http://%%ORIGIN%%;
        }

        location /o/ {
            simhash other;
            proxy_pass http://%%ORIGIN%%/;
        }

        location = /stats {
            simhash_stats;
        }

        location = /stats/other {
            simhash_stats other;
        }
EOF
);
$t->start;

my $s = $t->stats->{zones};
is_deeply([sort keys %$s], [qw(crawl other)], 'both zones listed');
my $c = $s->{crawl};
is($c->{size}, 1048576, 'size');
cmp_ok($c->{capacity}, '>', 1000, "capacity ($c->{capacity})");
is($c->{entries}, 0, 'entries: 0');
is($c->{distance}, 4, 'distance');
is($c->{lookups}, 0, 'lookups: 0');
is_deeply($c->{responses},
          { new => 0, duplicate => 0, unchanged => 0, changed => 0,
            skipped => 0 }, 'responses by status: all 0');

my $bytes = 0;
for my $p (qw(sourdough.html bicycle.html council.html tiny.html)) {
    $t->get("/$p");
    $bytes += length $t->fixture($p);
}
$t->get('/sourdough.html?x=1');     # duplicate
$t->get('/sourdough.html?x=2');     # duplicate
$t->get('/bicycle.html');           # unchanged: the same bytes, not parsed
$t->get('/notes.txt');              # not HTML: not counted
$bytes += 2 * length($t->fixture('sourdough.html'));

$c = $t->stats->{zones}{crawl};
is($c->{entries}, 3, 'entries: 3');
is_deeply($c->{responses},
          { new => 3, duplicate => 2, unchanged => 1, changed => 0,
            skipped => 1 }, 'responses by status');
is($c->{skipped}{too_short}, 1, 'skipped by reason: too_short');
is($c->{identical}, 1, 'identical re-fetches: 1');
is($c->{lookups}, 5, 'lookups: the 5 pages of unknown keys');
cmp_ok($c->{probes}, '>=', $c->{lookups}, 'probes >= lookups');
is($c->{mean_probes}, sprintf('%.3f', $c->{probes} / $c->{lookups}) + 0,
   'mean probes per lookup');
is($c->{fingerprinted_bytes}, $bytes, 'bytes fingerprinted');
is($t->stats->{zones}{other}{entries}, 0, 'the other zone is separate');
ok(!exists $c->{snapshot}, 'no snapshot section without file=');

# one zone only
my $o = $t->stats('/stats/other')->{zones};
is_deeply([keys %$o], ['other'], 'simhash_stats NAME: that zone only');

# Prometheus
for my $how (['?format=prometheus'], ['', Accept => 'text/plain'],
             ['', Accept => 'application/openmetrics-text; version=1.0.0'])
{
    my ($q, %h) = @$how;
    my $r = $t->get("/stats$q", %h);
    like($r->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4},
         "prometheus via '$q@{[ %h ? qq(Accept: $h{Accept}) : '' ]}'");
}
my $p = $t->get('/stats?format=prometheus')->{content};
like($p, qr/^# TYPE simhash_entries gauge$/m, 'prometheus: TYPE lines');
like($p, qr/^simhash_entries\{zone="crawl"\} 3$/m, 'prometheus: entries');
like($p, qr/^simhash_capacity\{zone="crawl"\} $c->{capacity}$/m,
     'prometheus: capacity');
like($p, qr/^simhash_responses_total\{zone="crawl",status="duplicate"\} 2$/m,
     'prometheus: responses by status');
like($p, qr/^simhash_lookups_total\{zone="crawl"\} 5$/m, 'prometheus: lookups');
like($p, qr/^simhash_fingerprinted_bytes_total\{zone="crawl"\} $bytes$/m,
     'prometheus: bytes');
like($p, qr/^simhash_evictions_total\{zone="other"\} 0$/m,
     'prometheus: evictions, every zone');
my @bad = grep { !/^(# (HELP|TYPE) \w+ .+|\w+\{[^}]*\} \d+(\.\d+)?)$/ }
          split /\n/, $p;
ok(!@bad, 'prometheus: every line well-formed') or diag(explain \@bad);

# JSON stays the default for JSON clients
my $r = $t->get('/stats', Accept => 'application/json, text/plain');
like($r->{headers}{'content-type'}, qr{^application/json}, 'Accept json: JSON');
ok(eval { decode_json($r->{content}) }, 'valid JSON');

$r = $t->{ua}->request('POST', $t->url('/stats'));
is($r->{status}, 405, 'POST: 405');
is($r->{headers}{allow}, 'GET, HEAD', '405 names the methods in Allow');

# counters of the moment: not cacheable, never a conditional 304
$r = $t->get('/stats', 'If-None-Match' => '*');
is($r->{status}, 200, 'If-None-Match: * still gets the counters');
ok(eval { decode_json($r->{content}) }, '... with a body');
like($r->{headers}{'cache-control'} // '', qr/no-store/,
     'Cache-Control: no-store');
$r = $t->get('/stats', 'If-Modified-Since' => 'Thu, 01 Jan 2099 00:00:00 GMT');
is($r->{status}, 200, 'If-Modified-Since: still 200');

# the buffer is sized from the metric table: many zones, long names
my $many = join "\n    ", map { "simhash_zone zone=z${_}_" . ('n' x 60)
                                   . ":256k file=%%PREFIX%%/data/$_.snap;" }
                          1 .. 12;
my $t2 = SimhashTest->new(http => $many,
                          proxy => 'location = /stats { simhash_stats; }');
$t2->start;
my $all = $t2->stats->{zones};
is(scalar keys %$all, 12, 'twelve zones with long names: valid JSON');
my $p2 = $t2->get('/stats?format=prometheus')->{content};
my @z = $p2 =~ /^simhash_snapshot_restored\{zone="(z\d+_n+)"\} 0$/mg;
is(scalar @z, 12, 'and in Prometheus, every zone to the last metric');
# zones with file= that never saved: no time of a last save
my $snap = $all->{(sort keys %$all)[0]}{snapshot};
is($snap->{saves}, 0, 'never saved: saves 0');
is($snap->{last_save}, 0, 'never saved: last_save 0, not the start time');
like($p2, qr/^simhash_snapshot_last_save_seconds\{zone="[^"]+"\} 0$/m,
     'and in Prometheus');
$t2->stop;
$t2->check_log;

$t->stop;
$t->check_log;
done_testing;
