#!/usr/bin/perl
# The match rule of a zone (simhash_zone match=, distance=, threshold=):
# rust-doc's std and core pages of enum.Option (the same documentation under
# two URLs, 4 bits apart) are duplicates under the default (weighted) rule
# and not under match=hamming distance=3; a re-fetch follows the same rule;
# X-Simhash-Score and $simhash_score give the score the CLI computes; a
# snapshot taken under one rule loads under the other, which then decides.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Uncompress::Gunzip qw(gunzip $GunzipError);
use SimhashTest;

# t/fixtures/rust/README: the two pages, their origin and licence
sub rust_page {
    my ($name) = @_;
    my $gz = "$FindBin::Bin/fixtures/rust/$name.html.gz";
    my $html;
    gunzip($gz => \$html) or die "$gz: $GunzipError";
    return $html;
}

my $std = rust_page('std-enum.Option');
my $core = rust_page('core-enum.Option');

# simhash_content off: the pair's distance and score below are those of
# the whole pages (with content weighting their sidebars, where they differ
# most, weigh little and the pair comes closer: score 3.6)
my $proxy = <<'EOF';
        simhash crawl;
        simhash_content off;
        simhash_probes 4096;
        add_header X-Vars "$simhash_status|$simhash_distance|$simhash_score";

        location / {
            proxy_pass http://%%ORIGIN%%;
        }
EOF

sub serve_pair {
    my ($t) = @_;
    $t->write_file('html/std/option/enum.Option.html', $std);
    $t->write_file('html/core/option/enum.Option.html', $core);
    $t->write_file('html/std-copy.html', $std);
}

# What the CLI says of the pair, core's page as the query.
my ($d_cli, $score_cli);
{
    my $t = SimhashTest->new(http => 'simhash_zone zone=crawl:1m;',
                             proxy => $proxy);
    serve_pair($t);
    my $cli = $ENV{SH_CLI};
    my $p = $t->prefix;
    plan skip_all => 'SH_CLI (the simhash tool) is not set'
        unless $cli && -x $cli;
    my $cmd = "$cli distance --content off "
            . "$p/html/std/option/enum.Option.html "
            . "$p/html/core/option/enum.Option.html";
    my $out = `$cmd`;
    ($d_cli, $score_cli) = split ' ', $out;
    ok($d_cli == 4 || $d_cli == 5,
       "the pair is at H = $d_cli (4 or 5) under the default key");
    cmp_ok($score_cli, '<=', 12, "score $score_cli: within the default T");

    # 1. the default configuration: weighted
    $t->start;
    like($t->error_log,
         qr/simhash zone "crawl": .* match=weighted distance=10 threshold=12\.0000/,
         'default zone: weighted, cap 10, T = 12');
    my $r = $t->get('/std/option/enum.Option.html');
    is($r->{headers}{'x-simhash-status'}, 'new', 'std page: new');
    $r = $t->get('/core/option/enum.Option.html');
    is($r->{headers}{'x-simhash-status'}, 'duplicate',
       'core page: a duplicate under the default rule');
    like($r->{headers}{'x-simhash-duplicate-of'},
         qr{/std/option/enum\.Option\.html$}, '... of the std page');
    is($r->{headers}{'x-simhash-distance'}, $d_cli,
       'X-Simhash-Distance: the Hamming distance');
    is($r->{headers}{'x-simhash-score'}, $score_cli,
       'X-Simhash-Score: the score the CLI computes');
    is($r->{headers}{'x-vars'}, "duplicate|$d_cli|$score_cli",
       '$simhash_distance and $simhash_score');

    # a re-fetch: std's URL now serves core's text; the same rule says
    # unchanged
    $t->write_file('html/std/option/enum.Option.html', $core);
    $r = $t->get('/std/option/enum.Option.html');
    is($r->{headers}{'x-simhash-status'}, 'unchanged',
       're-fetch under the weighted rule: unchanged');
    is($r->{headers}{'x-simhash-distance'}, $d_cli, '... at H = 4 or 5');
    ok(defined $r->{headers}{'x-simhash-score'}, '... with its score');
    $r = $t->get('/std-copy.html');
    is($r->{headers}{'x-simhash-score'}, '0.0000',
       'an exact copy: score 0');
    $t->stop;
    $t->check_log;
}

# 1b. threshold= below the pair's score: new, and the re-fetch changed
# although H is far within the cap -- the re-fetch asks the rule, not H
{
    my $t = SimhashTest->new(
        http  => 'simhash_zone zone=crawl:1m match=weighted threshold=5;',
        proxy => $proxy);
    serve_pair($t);
    $t->start;
    like($t->error_log, qr/match=weighted distance=10 threshold=5\.0000/,
         'zone: weighted, T = 5');
    is($t->status_of('/std/option/enum.Option.html'), 'new', 'std: new');
    is($t->status_of('/core/option/enum.Option.html'), 'new',
       "core: new (score $score_cli > 5)");
    $t->write_file('html/std/option/enum.Option.html', $core);
    my $r = $t->get('/std/option/enum.Option.html');
    is($r->{headers}{'x-simhash-status'}, 'changed',
       're-fetch at H = 4 or 5 <= 10 but a score above 5: changed');
    $t->stop;
    $t->check_log;
}

# 2. match=hamming distance=3: the same pair is new, the re-fetch changed;
# the zone is saved with its rule
my $zone_h = 'simhash_zone zone=crawl:1m match=hamming distance=3 '
           . 'file=%%PREFIX%%/data/crawl.snap save=off;';
my $t = SimhashTest->new(http => $zone_h, proxy => $proxy);
serve_pair($t);
$t->start;
like($t->error_log, qr/match=hamming distance=3/, 'zone: hamming, h = 3');
is($t->status_of('/std/option/enum.Option.html'), 'new', 'std page: new');
my $r = $t->get('/core/option/enum.Option.html');
is($r->{headers}{'x-simhash-status'}, 'new',
   'core page: new under match=hamming distance=3');
ok(!exists $r->{headers}{'x-simhash-score'}, 'new: no score');
$t->write_file('html/std/option/enum.Option.html', $core);
$r = $t->get('/std/option/enum.Option.html');
is($r->{headers}{'x-simhash-status'}, 'changed',
   're-fetch under the hamming rule: changed');
is($r->{headers}{'x-simhash-distance'}, $d_cli, '... at H = 4 or 5');
$t->stop;       # the master saves
my $snap = $t->prefix . '/data/crawl.snap';
ok(-s $snap, 'snapshot saved');

# 3. the same snapshot under the default rule: it loads, the log says the
# rule changed, and lookups apply the weighted rule
$t->write_file('html/std/option/enum.Option.html', $std);
$t->set(http => 'simhash_zone zone=crawl:1m '
               . 'file=%%PREFIX%%/data/crawl.snap save=off;');
$t->start;
like($t->error_log, qr/\d+ documents restored from "\Q$snap\E"/,
     'a hamming snapshot loads under the weighted rule');
my $changed = 'was taken under match=hamming distance=3, lookups now '
            . 'apply match=weighted distance=10 threshold=12.0000';
like($t->error_log, qr/snapshot "\Q$snap\E" \Q$changed\E/,
     '... and the log says the rule changed');
$t->write_file('html/std-copy2.html', $std);
$r = $t->get('/std-copy2.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'after the restart the weighted rule decides');
$t->stop;
$t->check_log;

done_testing;
