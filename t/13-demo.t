#!/usr/bin/perl
# `make run` works: demo/run.sh starts nginx, crawls the demo site through
# the proxy, prints one line per URL, keeps serving, and stops on a signal.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);
use SimhashTest;

my $module = SimhashTest::module_path();
plan(skip_all => 'the demo runs the stock nginx without the sanitizer runtime')
    if $SimhashTest::PRELOAD;
plan(skip_all => "the demo runs its own nginx, not under valgrind")
    if $SimhashTest::VALGRIND;
my $build = dirname(dirname($module));
my $prefix = tempdir('simhash-demo-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $prefix;

local $ENV{DEMO_PREFIX} = "$prefix/demo";
local $ENV{DEMO_MODULE} = $module;
my $pid = open(my $out, '-|', "$FindBin::Bin/../demo/run.sh", $build)
    // die "demo/run.sh: $!";

my $text = '';
my $end = time + 30;
while (time < $end) {
    my $line = <$out>;
    last unless defined $line;
    $text .= $line;
    last if $line =~ /^\s+logs\s/;
}
like($text, qr/keeps serving \(Ctrl-C to stop\)/, 'the demo says it keeps serving');

my @lines = grep { m{^\S.*\shttp://} } split /\n/, $text;
my $urls = () = grep { !/^\s*(#|$)/ } split /\n/,
                SimhashTest->can('read_file')->({}, "$FindBin::Bin/../demo/urls.txt");
is(scalar @lines, $urls, "one line per URL ($urls)");

my %seen = map { (/^(\S+)/)[0] => 1 } @lines;
for my $s (qw(new duplicate unchanged changed skipped)) {
    ok($seen{$s}, "the demo shows a \"$s\" page");
}
like($text, qr{^duplicate\s+0\s+http://gazette\.example/articles/night-trains\.html\?utm_source=newsletter -> http://gazette\.example/articles/night-trains\.html}m,
     'a copy under another URL: duplicate of the original, distance 0');
like($text, qr{^new\s+-\s+http://gazette\.example/nature/tide-pools\.html}m,
     'an unrelated page: new');

my ($port) = $text =~ m{proxy\s+http://127\.0\.0\.1:(\d+)/};
ok($port, 'the demo says where it serves');
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                              Proto => 'tcp');
ok($s, 'and it does');
close $s if $s;

kill 'TERM', $pid;
$end = time + 10;
sleep 0.05 while waitpid($pid, WNOHANG) == 0 && time < $end;
ok(!kill(0, $pid), 'a signal stops it');
close $out;

my $log = SimhashTest->can('read_file')->({}, "$prefix/demo/logs/error.log");
unlike($log // '', qr/\[(alert|crit|emerg)\]/, 'the demo error log is clean');

done_testing;
