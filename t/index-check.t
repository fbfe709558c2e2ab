#!/usr/bin/perl
# `simhash index check` and `simhash index dump` on the snapshots the module
# writes (their user section holds the keys, not the tool's path table): the
# check passes, the dump lists every stored key with the fingerprint the
# response carried, oldest first; a damaged snapshot fails the check, as
# nginx refuses it.

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
my $snap = $t->prefix . '/data/crawl.snap';

$t->start;
my %fp;
for my $page (qw(sourdough.html bicycle.html council.html
                 sourdough-reprint.html)) {
    my $r = $t->get("/$page");
    is($r->{headers}{'x-simhash-status'},
       $page =~ /reprint/ ? 'duplicate' : 'new', "$page fetched");
    $fp{$t->url("/$page")} = $r->{headers}{'x-simhash'};
}
$t->stop;      # the master saves the zone at exit
ok(-s $snap, 'snapshot saved at exit');

my $out = `$cli index check $snap`;
is($? >> 8, 0, 'index check: exit 0');
like($out, qr/^entries\t3$/m, 'three documents (the reprint is a duplicate)');
like($out, qr/^format\tnginx module \(store\)$/m, 'the module\'s format');
like($out, qr/^documents\t3$/m, 'every document has its key');
like($out, qr/^check\tOK$/m, 'OK');

my @dump = split /\n/, `$cli index dump $snap`;
is($? >> 8, 0, 'index dump: exit 0');
is_deeply([map { (split /\t/)[2] } @dump],
          [map { $t->url("/$_") } qw(sourdough.html bicycle.html
                                      council.html)],
          'the keys, oldest first');
my @same = grep { my ($h, undef, $k) = split /\t/; $fp{$k} eq $h } @dump;
is(scalar @same, 3, 'each with the fingerprint its response carried');

# a damaged frame of documents: the check says what is lost, and nginx
# restores the rest and says the same
my $good = $t->read_file($snap);
my $bytes = $good;
my ($recs) = grep { $_->{type} eq 'RECS' } SimhashTest::store_frames($good);
my $nframes = grep { $_->{type} ne 'END' } SimhashTest::store_frames($good);
substr($bytes, $recs->{at} + 20, 4) = 'XXXX';
$t->write_file('data/crawl.snap', $bytes);
$out = `$cli index check $snap`;
is($? >> 8, 1, 'damaged frame: index check exits 1');
like($out, qr/^damaged_frames\t1 of $nframes$/m, '... the damaged frame');
like($out, qr/^lost\t3$/m, '... the documents lost with it');
like($out, qr/^check\tDAMAGED: 3 documents lost, 0 restorable$/m,
     '... in one line');
$t->start;
like($t->error_log, qr/snapshot "\Q$snap\E" is damaged: 1 of its frames fail their checksum/,
     'nginx: the same damage');
$t->stop;

# a damaged header: unusable, for both
$bytes = $good;
substr($bytes, 30, 4) = 'XXXX';
$t->write_file('data/crawl.snap', $bytes);
$out = `$cli index check $snap`;
is($? >> 8, 1, 'damaged header: index check exits 1');
my ($why) = $out =~ /^check\tFAILED: (.*)$/m;
ok($why, "... saying why ($why)");
$t->start;
like($t->error_log, qr/snapshot "\Q$snap\E" refused: \Q$why\E; starting empty/,
     'nginx refuses it for the same reason');
$t->stop;

$t->check_log;
done_testing;
