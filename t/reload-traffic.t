#!/usr/bin/perl
# Reloads while requests are in flight (same size, then a resized zone, then
# back): every response is whole and tagged, the index survives, no alert.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use POSIX qw(:sys_wait_h);
use SimhashTest qw(wait_until);

SimhashTest::needs_master();

my $proxy = <<'EOF';
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
my $zone = 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/c.snap save=1s;';
my $t = SimhashTest->new(workers => 2, http => $zone, proxy => $proxy);

my @pages = $t->random_pages(20, 300, 77);
$t->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. 20;
$t->start;
is($t->status_of("/gen/$_.html"), 'new', "page $_ new") for 1 .. 3;

# three clients fetch copies of the pages until told to stop
my $out = $t->prefix . '/tmp/traffic';
mkdir $out;
my @kids;
for my $c (1 .. 3) {
    my $pid = fork // die;
    if ($pid == 0) {
        # a connection per request: an idle keep-alive connection to an old
        # worker may be reset by its graceful shutdown just as the client
        # reuses it (nginx's behaviour, which clients meet with a retry)
        my $ua = SimhashTest::ua();
        open(my $fh, '>', "$out/$c") or die;
        select((select($fh), $| = 1)[0]);
        my $n = 0;
        until (-e "$out/stop") {
            my $i = 1 + $n++ % 20;
            my $r = $ua->get($t->url("/gen/$i.html?c=$c&n=$n"));
            my $ok = $r->{status} == 200
                     && $r->{content} eq $pages[$i - 1]
                     && ($r->{headers}{'x-simhash-status'} // '')
                        =~ /^(new|duplicate)$/;
            my $why = $r->{status} == 599 ? $r->{content} =~ s/\s+/ /gr
                      : $r->{headers}{'x-simhash-status'} // '-';
            print $fh $ok ? "ok\n" : "bad $r->{status} $why\n";
        }
        close $fh;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}

# Between reloads, 40 more answers (was: 0.5 s, about 60 each on an idle
# machine, and fewer on a busy one): 160 at least, whatever the machine.
sub answers {
    my $n = 0;
    for my $c (1 .. 3) {
        $n += () = ($t->read_file("tmp/traffic/$c") // '') =~ /\n/g;
    }
    return $n;
}
sub traffic {
    my $want = answers() + 40;
    wait_until("$want answers to the clients", sub { answers() >= $want });
}
traffic();
$t->reload;
traffic();
$t->set(http => $zone =~ s/crawl:1m/crawl:2m/r)->reload;
traffic();
$t->set(http => $zone)->reload;
traffic();
open(my $stop, '>', "$out/stop") or die;
close $stop;
waitpid($_, 0) for @kids;

my ($ok, @bad) = (0);
for my $c (1 .. 3) {
    open(my $fh, '<', "$out/$c") or die;
    while (<$fh>) { /^ok/ ? $ok++ : push @bad, $_ }
}
cmp_ok($ok, '>', 100, "$ok responses during the reloads");
is(scalar @bad, 0, 'every one whole and tagged') or diag(@bad[0 .. 4]);

# the first pages are still known after three reloads (one resize each way)
is($t->status_of('/gen/1.html'), 'unchanged', 'the index survived');
is($t->stats->{zones}{crawl}{size}, 1024 * 1024, 'back to 1m');
my @taken = $t->error_log =~ /resized: \d+ documents taken over/g;
is(scalar @taken, 2, 'two resizes, documents taken over each time');

$t->stop;
$t->check_log;
done_testing;
