#!/usr/bin/perl
# tools/dust-eval/replay.c (build/dust-replay), the learner given a crawl's
# log again: on a small site written here, the fetched URLs only (a
# request answered without the upstream gives nothing), each as the
# truth's document; drop_param(sid) comes on at the request the sequential
# test allows, a page parameter whose pages differ never does (nor makes a
# candidate), the mobile host is joined by its pairs, and a URL outside
# the truth is counted, not learned.  A bad command line says how to call
# it.

use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);

my $replay = $ENV{SH_REPLAY};
plan skip_all => 'SH_REPLAY is not set to build/dust-replay (run through '
                 . '`make itest`)'
    unless $replay && -x $replay;

my $gen = tempdir(CLEANUP => 1);
sub put {
    my ($name, $text) = @_;
    open(my $fh, '>', "$gen/$name") or die "$name: $!";
    print $fh $text;
    close $fh;
}

put('hosts.tsv', "r.test\tsite\nm.r.test\tsite\nn.test\tnodust\n");

my (@truth, @log);
my $msec = 1800000000;
sub request {
    my ($url, $fetched) = @_;
    $msec += 0.01;
    push @log, join("\t", 'A', $msec, 200, 'new', '-', $fetched ? 200 : '-',
                    $url, '-');
}
for my $n (1 .. 150) {
    # two session ids of one page, fetched; a third answered unfetched
    for my $sid ("A$n", "B$n", "C$n") {
        push @truth, "site\t/d/$n.html?sid=$sid\tdoc:$n\tsess";
        request("http://r.test/d/$n.html?sid=$sid", $sid ne "C$n");
    }
    # a page parameter: another document each time
    for my $p (2, 3) {
        push @truth, "site\t/d/$n.html?page=$p\tdoc:$n/$p\tpage";
        request("http://r.test/d/$n.html?page=$p", 1);
    }
    # the page itself on the site and on its mobile host
    push @truth, "site\t/d/$n.html\tdoc:$n\tplain";
    request("http://r.test/d/$n.html", 1);
    request("http://m.r.test/d/$n.html", 1);
}
# a few pages also linked with a ref= that no rule has yet: a candidate
# the crawl brings near its test, not to it
for my $n (1 .. 5) {
    push @truth, "site\t/d/$n.html?ref=nav\tdoc:$n\tref";
    request("http://r.test/d/$n.html?ref=nav", 1);
}
request('http://r.test/elsewhere.html', 1);
put('truth.tsv', join("\n", @truth) . "\n");
put('proxy.log', "2026/11/28 [notice] a line of nginx's own\n"
                 . join("\n", @log) . "\n");

my $out = `$replay --pattern /d/ $gen $gen/proxy.log 2>&1`;
is($? >> 8, 0, 'dust-replay runs') or diag($out);
like($out, qr/^\s+(\d+)\s+on\s+drop_param\(sid\)\s+r\.test \/d\/\s+(\d+) for, 0 against$/m,
     'drop_param(sid) comes on, its pairs and none against') or diag($out);
my ($at, $pairs) = $out =~ /^\s+(\d+)\s+on\s+drop_param\(sid\)\s+r\.test \/d\/\s+(\d+) for/m;
ok(defined $pairs && $pairs >= 24 && $pairs <= 115,
   "at no fewer than the cap's 24 pairs, no more than the test's 115 ($pairs)");
ok(defined $at && $at > 100, "at request $at, after the pairs it needed");
unlike($out, qr/\bon\s+drop_param\(page\)/, 'drop_param(page) never on');
# a candidate is made by a pair of support: the page's pairs never make one
unlike($out, qr/drop_param\(page\)/, 'nor a candidate of it');
like($out, qr/^1056 requests, 905 fetched and observed, 1 fetched outside the truth$/m,
     'unfetched requests are not observed; the URL outside the truth is '
     . 'counted') or diag($out);
like($out, qr/^\s+\d+\s+on\s+host_alias\(/m, 'the mobile host is joined')
    or diag($out);

# --near: only the rules not on that reached a share of their need
$out = `$replay --near 0.01 $gen $gen/proxy.log 2>&1`;
like($out, qr/^rules not on at the end, at 1% of their test's need or more:$/m,
     '--near says what it lists') or diag($out);
unlike($out, qr/^\s+active\s/m, 'no rule that is on') or diag($out);
like($out, qr/^\s+candidate\s/m, 'the candidates that came near')
    or diag($out);

$out = `$replay $gen 2>&1`;
is($? >> 8, 2, 'a missing argument: exit 2');
like($out, qr/usage: dust-replay/, 'and the usage');
$out = `$replay $gen $gen/none.log 2>&1`;
is($? >> 8, 2, 'a missing log: exit 2');
like($out, qr/none\.log/, 'named');

done_testing();
