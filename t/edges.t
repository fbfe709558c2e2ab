#!/usr/bin/perl
# simhash_max_body, HEAD, 304, 206 and Range, subrequests, client abort,
# upstream errors: each behaves and leaves no alert in the error log.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Compress::Gzip qw(gzip);
use IO::Uncompress::Gunzip qw(gunzip);
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);

my $t = SimhashTest->new(http => 'simhash_zone zone=crawl:1m;');

my ($big) = $t->random_pages(1, 2500, 7);
$t->write_file('html/big.html', $big);
$t->write_file('html/ssi.html', "<html><body><h1>Included</h1>\n"
    . '<!--# include virtual="/council.html" -->' . "\n</body></html>\n");
my $page = $t->fixture('council.html');

# a Perl origin: /short answers 5000 bytes of Content-Length and closes
# after 1000; /slow drips the page over a second; /ranged ignores Range
my $raw = $t->raw_origin(sub {
    my ($path) = @_;
    my $head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
             . "Connection: close\r\n";
    if ($path =~ m{^/short}) {
        return ($head . "Content-Length: 5000\r\n\r\n" . substr($big, 0, 1000),
                0.05);
    }
    if ($path =~ m{^/slow}) {
        return ($head . "\r\n", 0,
                map { (substr($page, $_ * 100, 100), 0.05) }
                0 .. int(length($page) / 100));
    }
    return ($head . 'Content-Length: ' . length($page) . "\r\n\r\n" . $page,
            0);
});

$t->set(proxy => <<"EOF");
        simhash crawl;
        simhash_probes 4096;
        proxy_http_version 1.1;

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        location /small/ {
            simhash_max_body 4k;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /small-chunked/ {
            simhash_max_body 4k;
            proxy_pass http://%%ORIGIN%%/chunked/;
        }

        location /small-gz/ {
            simhash_max_body 8k;
            proxy_set_header Accept-Encoding gzip;
            proxy_pass http://%%ORIGIN%%/gz/;
        }

        location /raw/ {
            proxy_read_timeout 5s;
            proxy_pass http://127.0.0.1:$raw/;
        }

        location /any/ {
            simhash_types *;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /plain-too/ {
            simhash_types text/plain;
            proxy_pass http://%%ORIGIN%%/;
        }

        location = /ssi.html {
            root %%PREFIX%%/html;
            ssi on;
        }

        location = /stats {
            simhash_stats;
        }
EOF
$t->start;

my $stats = sub { $t->stats->{zones}{crawl} };

# max_body: a Content-Length over the limit is skipped at once
my $r = $t->get('/small/big.html');
is($r->{headers}{'x-simhash-status'}, 'skipped', 'over max_body: skipped');
ok(!exists $r->{headers}{'x-simhash'}, 'over max_body: no fingerprint');
is($r->{content}, $big, 'over max_body: body intact');
is($t->status_of('/small/council.html'), 'new', 'under max_body: new');

# ... and a chunked one mid-stream: what was held, then the rest
my ($status, $h, $body) = $t->raw_get('/small-chunked/big.html');
is($h->{'x-simhash-status'}, 'skipped', 'chunked over max_body: skipped');
is($body, $big, 'chunked over max_body: body intact');

# gzip: the inflated size counts
my $gz = $t->raw_get('/gz/big.html', 'Accept-Encoding' => 'gzip');
($status, $h, $body) = $t->raw_get('/small-gz/big.html');
is($h->{'content-encoding'}, 'gzip', 'gzip over max_body: gzip');
cmp_ok(length $body, '<', 8192, 'gzip over max_body: compressed under 8k');
is($h->{'x-simhash-status'}, 'skipped', 'gzip over max_body inflated: skipped');
gunzip(\$body => \my $plain);
is($plain, $big, 'gzip over max_body: body intact');
is($stats->()->{skipped}{too_large}, 3, 'stats: 3 skipped as too large');

# simhash_types: text/plain only where asked; "*" for everything
ok(!exists $t->get('/notes.txt')->{headers}{'x-simhash-status'},
   'text/plain: not by default');
is($t->status_of('/plain-too/notes.txt'), 'skipped',
   'simhash_types text/plain: looked at (too short: skipped)');
is($t->status_of('/plain-too/council.html'), 'duplicate',
   'simhash_types text/plain: text/html still in');
is($t->status_of('/any/notes.txt'), 'skipped', 'simhash_types *: text/plain');

# HEAD: untouched
$r = $t->head('/bicycle.html');
is($r->{status}, 200, 'HEAD: 200');
ok(!exists $r->{headers}{'x-simhash-status'}, 'HEAD: no headers');
is($t->status_of('/bicycle.html'), 'new', 'HEAD did not insert the page');

# 304 from the origin: untouched
$r = $t->get('/council.html');
my $lm = $r->{headers}{'last-modified'};
$r = $t->get('/council.html', 'If-Modified-Since' => $lm);
is($r->{status}, 304, 'conditional: 304');
ok(!exists $r->{headers}{'x-simhash-status'}, '304: no headers');

# 206 from the origin (the proxy passes Range): untouched
$r = $t->get('/council.html', Range => 'bytes=0-99');
is($r->{status}, 206, 'Range: 206 from the origin');
ok(!exists $r->{headers}{'x-simhash-status'}, '206: no headers');
is($r->{content}, substr($page, 0, 100), '206: the range');

# an origin that ignores Range: a held response is sent whole, as 200
$r = $t->get('/raw/ranged.html', Range => 'bytes=0-99');
is($r->{status}, 200, 'Range ignored by the origin: 200');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'and fingerprinted');
is($r->{content}, $page, 'and whole');

# subrequests are not fingerprinted; the main request is (before SSI runs)
my $lookups = $stats->()->{lookups};
$r = $t->get('/ssi.html');
like($r->{content}, qr/Harbour Road closed/, 'SSI: the subrequest output');
is($stats->()->{lookups}, $lookups, 'SSI: no lookup for the subrequest');

# a slow origin, sent in 100-byte pieces: the same fingerprint
$r = $t->get('/raw/slow.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'dripped: duplicate');
is($r->{content}, $page, 'dripped: body intact');

# the client goes away while the body is held
my $before = $stats->();
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port,
                              Proto => 'tcp');
print $s "GET /raw/slow.html?abort=1 HTTP/1.0\r\nHost: a\r\n\r\n";
# closed once the origin has sent part of the body (was: sleep 0.2), and
# nginx is done with the request when it logs it: at once if it sees the
# client go, after the whole body if not (was: sleep 1.2)
wait_until('the origin to send 3 pieces of the slow page',
           sub { ($t->read_file('logs/raw-origin.log') // '')
                 =~ m{^/slow\.html\?abort=1 3$}m });
close $s;
wait_until('the aborted request in the access log',
           sub { $t->read_file('logs/access.log') =~ m{ /raw/slow\.html\?abort=1 } });
my $after = $stats->();
is($after->{lookups}, $before->{lookups}, 'client abort: no lookup');
is($t->status_of('/raw/slow.html?after=1'), 'duplicate',
   'client abort: the next request is served');

# the upstream closes early: the client gets no half-tagged response, the
# worker goes on
($status, $h, $body) = $t->raw_get('/raw/short.html');
ok(!exists $h->{'x-simhash-status'}, 'upstream error: nothing tagged');
isnt($status, 200, 'upstream error: no 200 with a truncated body')
    or diag("got $status, body " . length($body));
like($t->error_log, qr/upstream prematurely closed/,
     'upstream error: logged as an error');
is($t->status_of('/council.html?again=1'), 'duplicate',
   'upstream error: the next request is served');

$t->stop;
$t->check_log;
done_testing;
