#!/usr/bin/perl
# A hostile or broken Redis (t/lib/FakeRedis.pm on loopback) never ends or
# stalls the worker that replicates, which also serves requests: a reply
# nothing asked for, an array header of 2^31 elements, a bulk string that
# never ends, and a reply of many small objects each end the connection
# with one clear log line, and the worker's memory stays bounded (a reply
# costs at most about 2 x 16 MB; the bound asserted is 80 MB over what the
# worker had before).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);
use FakeRedis;

my $ASAN = ($ENV{SANITIZE} // '') eq '1';
plan(skip_all => 'a worker process is measured') if $SimhashTest::VALGRIND;

my $BOUND = 80 * 1024;      # kB of worker memory a hostile reply may add

sub node {
    my ($url) = @_;
    return SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m;\n"
               . "    simhash_replicate crawl $url node=n1 timeout=2s;",
        proxy => <<'EOF');
        simhash crawl;
        simhash_key "site$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF
}

sub status_kb {
    my ($pid, $field) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return undef;
    while (<$fh>) { return $1 if /^\Q$field\E:\s+(\d+) kB/ }
    return undef;
}


sub attack {
    my ($name, $expect, %on) = @_;

    my $fake = FakeRedis->new(on => \%on)->start;
    my $n = node($fake->url);
    $n->start;
    # the master may not have forked its worker yet on a busy machine
    my $worker;
    wait_until(sub { ($worker) = $n->children; defined $worker });
    ok($worker, "$name: the worker");
    my $before = status_kb($worker, 'VmRSS');

    ok(wait_until(sub { $n->error_log =~ /\Q$expect\E: connection dropped/ }),
       "$name: logged as \"$expect\"");

    # requests are served meanwhile, by the same worker
    my $ok = 0;
    $ok += ($n->get("/sourdough.html")->{status} == 200) for 1 .. 20;
    is($ok, 20, "$name: requests answered meanwhile");

    ok(wait_until(sub { $fake->connections >= 2 }),
       "$name: the worker connects again");

    is(($n->children)[0], $worker, "$name: the worker did not die");
    unlike($n->error_log, qr/exited on signal|assert/i,
           "$name: no crash in the log");
    my $hwm = status_kb($worker, 'VmHWM');
    # ASan keeps freed memory in quarantine: the bound is not its to keep
    ok($ASAN || (defined $hwm && $hwm - $before < $BOUND),
       "$name: worker memory stayed bounded (peak "
       . int(($hwm // 0) / 1024) . " MB, "
       . int($before / 1024) . " MB before)");

    $n->stop;
    $fake->stop;
}

# hiredis 0.14 asserts on a reply no callback waits for: SIGABRT
attack('an unsolicited reply', 'a reply that no command asked for',
       PING => sub { $_[0]->send("+PONG\r\n+PONG\r\n") });

# an array header of 2^31-1 elements: a 16 GB pointer array, then filled
attack('a huge array header', 'an array of more than 4096 elements',
       XINFO => sub {
           $_[0]->send("*2147483647\r\n");
           $_[0]->flood("\$1\r\na\r\n" x 4096, 40 * 1024 * 1024);
       });

# a bulk string that never ends: hiredis buffers it whole
attack('a huge bulk string', 'a reply larger than 16 MB',
       XINFO => sub {
           $_[0]->send("\$1000000000\r\n");
           $_[0]->flood('x' x 65536, 120 * 1024 * 1024);
       });

# arrays of arrays within the element bound: many small objects
my $row = '*4000' . "\r\n" . (":1\r\n" x 4000);
attack('a reply of many small objects', 'a reply larger than 16 MB',
       XINFO => sub {
           $_[0]->send("*4000\r\n");
           $_[0]->flood($row, 4000 * length $row);
       });

done_testing;
