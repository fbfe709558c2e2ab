#!/usr/bin/perl
# Clients that do not read: every response the module fingerprints is held
# in the worker's memory until its request ends, however slowly the client
# reads (nginx alone spills a slow client's response to temporary files).
# simhash_max_held bounds what one worker holds: past it, a response
# passes unfingerprinted ("skipped", counted as too_large), whole; when the
# held ones end, pages are fingerprinted again.  The worker's memory is
# measured from /proc: 12 clients that do not read a 6 MB page (more than
# the socket buffers take) add less than the bound and 16 MB of slack,
# where they added 72 MB.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Socket;
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);

SimhashTest::needs_master();

my $HELD = 16;      # MB, simhash_max_held
my $SIZE = 6;       # MB, the page
my $N = 12;

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m;\n    simhash_max_held ${HELD}m;",
    proxy => <<'EOF');
        simhash crawl;
        simhash_max_body 8m;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF

my @words = qw(alpha bravo charlie delta echo foxtrot golf hotel india
               juliet kilo lima mike november oscar papa quebec romeo);
my $body = "<html><head><title>big</title></head><body>\n";
my $i = 0;
while (length $body < $SIZE * 1024 * 1024) {
    $body .= '<p>' . join(' ', map { $words[($i * 7 + $_) % @words] . $i }
                                0 .. 12) . "</p>\n";
    $i++;
}
$body .= "</body></html>\n";
$t->write_file('html/big.html', $body);
$t->write_file("html/big$_.html", $body) for 1 .. 3;
$t->start;

sub status_kb {
    my ($pid, $field) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return undef;
    while (<$fh>) { return $1 if /^\Q$field\E:\s+(\d+) kB/ }
    return undef;
}

sub skipped { $t->stats->{zones}{crawl}{skipped}{too_large} }

my $r = $t->get('/big.html');
is($r->{headers}{'x-simhash-status'}, 'new', "a $SIZE MB page, fingerprinted");
my ($worker) = $t->children;
my $before = status_kb($worker, 'VmRSS');

# clients that ask and never read, with a small receive window
my @idle;
for my $n (1 .. $N) {
    socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096);
    connect($s, sockaddr_in($t->port, inet_aton('127.0.0.1')))
        or die "connect: $!";
    syswrite($s, "GET /big.html?$n HTTP/1.1\r\nHost: x\r\n\r\n");
    push @idle, $s;
}
my $held = int($HELD / $SIZE);
wait_until('the responses past the bound skipped',
           sub { skipped() >= $N - $held });
cmp_ok(skipped(), '>=', $N - $held,
       "past simhash_max_held ${HELD}m, responses pass unfingerprinted");
my $grown = (status_kb($worker, 'VmRSS') - $before) / 1024;
cmp_ok($grown, '<', $HELD + 16,
       "$N clients that do not read hold less than the bound and 16 MB "
       . sprintf('(%.1f MB)', $grown));

$r = $t->get('/big1.html');
is($r->{status}, 200, 'a page meanwhile');
is($r->{headers}{'x-simhash-status'}, 'skipped', '... skipped');
is(length $r->{content}, length $body, '... whole');

close $_ for @idle;
my $status = '';
wait_until('a page fingerprinted again', sub {
    $status = $t->status_of('/big2.html?again' . time);
    $status ne 'skipped';
});
isnt($status, 'skipped', 'the held ones gone, pages are fingerprinted again');

$t->stop;
$t->check_log;
done_testing;
