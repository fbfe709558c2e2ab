#!/usr/bin/perl
# Under valgrind: no invalid access and nothing of ours leaked, across the
# normal paths, gzip, drop, skips, client aborts and upstream errors, a
# snapshot saved at exit.  Skipped when valgrind is not installed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Compress::Gzip qw(gzip);
use SimhashTest qw(wait_until);

plan(skip_all => 'valgrind not installed')
    unless grep { -x "$_/valgrind" } split /:/, $ENV{PATH};
plan(skip_all => 'module built with sanitizers') if $ENV{SANITIZE};

my $t = SimhashTest->new(
    http => 'simhash_zone zone=crawl:256k file=%%PREFIX%%/data/c.snap;');
my $page = $t->fixture('council.html');
gzip(\$page => \my $gz);

my $raw = $t->raw_origin(sub {
    my ($path) = @_;
    my $head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
             . "Connection: close\r\n";
    return ($head . "Content-Length: 5000\r\n\r\n" . substr($page, 0, 900),
            0.05) if $path =~ /short/;
    return ($head . "Content-Encoding: gzip\r\n\r\n" . $gz, 0)
        if $path =~ /gzip/;
    return ($head . "\r\n", 0,
            map { (substr($page, $_ * 200, 200), 0.1) } 0 .. 8);
});

$t->set(proxy => <<"EOF");
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location /drop/ {
            simhash_action drop keys=any;   # another path: any key
            proxy_pass http://%%ORIGIN%%/;
        }
        location /small/ {
            simhash_max_body 1k;
            proxy_pass http://%%ORIGIN%%/chunked/;
        }
        location /raw/ { proxy_pass http://127.0.0.1:$raw/; }
        location = /stats { simhash_stats; }
EOF
$t->start_valgrind($t->valgrind_options);

is($t->status_of('/sourdough.html'), 'new', 'new');
is($t->status_of('/sourdough.html?2'), 'duplicate', 'duplicate');
is($t->status_of('/sourdough.html'), 'unchanged', 'unchanged');
is($t->get('/drop/sourdough.html')->{status}, 204, 'dropped');
is($t->status_of('/tiny.html'), 'skipped', 'too short');
is($t->status_of('/small/bicycle.html'), 'skipped', 'too large, chunked');
is($t->status_of('/raw/gzip.html'), 'new', 'gzip');
ok($t->get('/stats?format=prometheus')->{success}, 'stats');

# a client that leaves while the body is held
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port,
                              Proto => 'tcp');
print $s "GET /raw/slow.html HTTP/1.0\r\nHost: a\r\n\r\n";
# closed once the origin has sent part of the body, and nginx done with
# the request when it logs it (was: sleep 0.3, then 1.2)
wait_until('the origin to send 3 pieces of the slow page',
           sub { ($t->read_file('logs/raw-origin.log') // '')
                 =~ m{^/slow\.html 3$}m });
close $s;
wait_until('the aborted request in the access log',
           sub { ($t->read_file('logs/access.log') // '')
                 =~ m{ /raw/slow\.html } });

my ($status) = $t->raw_get('/raw/short.html');
isnt($status, 200, 'upstream error');

my $report = $t->stop_valgrind;
unlike($report, qr/Invalid (read|write|free)|uninitialised|Mismatched free/,
       'valgrind: no invalid access') or diag($report);
my @ours = grep { /definitely lost/ && /\bsh_|simhash/ }
           split /\n==\d+== \n/, $report;
ok(!@ours, 'valgrind: nothing of the module or library definitely lost')
    or diag(join "\n\n", @ours);
like($report, qr/ERROR SUMMARY: 0 errors/, 'valgrind: 0 errors')
    or diag($report);
ok(-s $t->prefix . '/data/c.snap', 'the snapshot was saved at exit');
$t->check_log;
done_testing;
