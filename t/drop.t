#!/usr/bin/perl
# simhash_action drop [CODE] [keys=path|any] [score=S]: a duplicate's
# response becomes CODE with an empty body, its headers kept but for those
# that described the dropped body (ETag, Last-Modified); originals and
# re-fetches pass whole.  keys=path (the default) drops only a duplicate of
# a key with the same path (a mirror, a query or ;jsessionid variant): a
# near-identical page under another path is a different item, tagged and
# passed whole.  score=S also caps the score.  The locations under other
# prefixes below use keys=any: their paths are another page's.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=crawl:1m;',
    proxy => <<'EOF',
        simhash crawl;
        simhash_probes 4096;
        proxy_http_version 1.1;
        # a location's own simhash_action has its own options: keys=path
        # below wherever a location says only "drop"
        simhash_action drop keys=any;

        location / {
            simhash_action drop;
            proxy_pass http://%%ORIGIN%%;
        }

        location /gone/ {
            simhash_action drop 410 keys=any;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /ok/ {
            simhash_action drop keys=any 200;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /gz/ {
            simhash_action drop keys=any;
            proxy_set_header Accept-Encoding gzip;
            proxy_pass http://%%ORIGIN%%/gz/;
        }

        # the key keeps ;jsessionid=..., the origin is asked without it
        location ~ ";" {
            simhash_action drop;
            rewrite "^([^;]*)" $1 break;
            proxy_pass http://%%ORIGIN%%;
        }

        location /path/ {
            simhash_action drop;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /strict/ {
            simhash_action drop score=0;
            proxy_pass http://%%ORIGIN%%/;
        }

        location /tag/ {
            simhash_action tag;
            proxy_pass http://%%ORIGIN%%/;
        }
EOF
);
$t->start;

my $page = $t->fixture('sourdough.html');

my $r = $t->get('/sourdough.html');
is($r->{status}, 200, 'original: 200');
is($r->{headers}{'x-simhash-status'}, 'new', 'original: new');
is($r->{content}, $page, 'original: whole body');

# a duplicate: 204, the tags, no body
my ($status, $h, $body) = $t->raw_get('/sourdough.html?copy=1');
is($status, 204, 'duplicate: 204');
is($h->{'x-simhash-status'}, 'duplicate', 'duplicate: status header kept');
is($h->{'x-simhash-duplicate-of'}, $t->url('/sourdough.html'),
   'duplicate: Duplicate-Of kept');
is($h->{'x-simhash-distance'}, '0', 'duplicate: distance kept');
like($h->{'x-simhash'} // '', qr/^[0-9a-f]{16}$/, 'duplicate: X-Simhash');
ok(defined $h->{server}, 'other headers kept');
is($body, '', 'duplicate: empty body');
ok(!exists $h->{'content-length'}, '204: no Content-Length');
ok(!exists $h->{'last-modified'}, '204: no Last-Modified');
ok(!exists $h->{etag}, '204: no ETag');

# ;jsessionid= and another query: the same path, dropped
($status) = $t->raw_get('/sourdough.html;jsessionid=0123456789abcdef?x=2');
is($status, 204, 'a ;jsessionid variant: dropped');

# keys=path: a duplicate under another path is tagged and passes whole
($status, $h, $body) = $t->raw_get('/path/sourdough.html');
is($status, 200, 'keys=path, another path: not dropped');
is($h->{'x-simhash-status'}, 'duplicate', 'keys=path, another path: tagged');
is($body, $page, 'keys=path, another path: whole body');
ok(exists $h->{'last-modified'}, 'keys=path: a passed page keeps its headers');

# a re-fetch of the original is not dropped
$r = $t->get('/sourdough.html');
is($r->{status}, 200, 're-fetch: 200');
is($r->{headers}{'x-simhash-status'}, 'unchanged', 're-fetch: unchanged');
is($r->{content}, $page, 're-fetch: whole body');

# drop 410: Content-Length 0, empty body, keep-alive still possible
($status, $h, $body) = $t->raw_get('/gone/sourdough.html');
is($status, 410, 'drop 410: status');
is($h->{'x-simhash-status'}, 'duplicate', 'drop 410: tagged');
is($h->{'content-length'}, '0', 'drop 410: Content-Length 0');
ok(!exists $h->{etag}, 'drop 410: no ETag (it described the dropped body)');
ok(!exists $h->{'last-modified'},
   'drop 410: no Last-Modified (wget would date an empty file by it)');
is($body, '', 'drop 410: empty body');

# drop 200: an empty 200
($status, $h, $body) = $t->raw_get('/ok/sourdough.html');
is($status, 200, 'drop 200: status');
is($h->{'x-simhash-status'}, 'duplicate', 'drop 200: tagged');
is($body, '', 'drop 200: empty body');

# a gzip duplicate: the empty body carries no Content-Encoding
($status, $h, $body) = $t->raw_get('/gz/sourdough.html');
is($status, 204, 'gzip duplicate: 204');
ok(!exists $h->{'content-encoding'}, 'gzip duplicate: no Content-Encoding');

# score=0: only a duplicate at score 0 (this one: the same body) and path
($status, $h) = $t->raw_get('/strict/sourdough.html');
is($status, 200, 'score=0 keys=path, another path: not dropped');
is($h->{'x-simhash-score'}, '0.0000', 'at score 0');

# new pages pass whole in drop mode
$r = $t->get('/gone/council.html');
is($r->{status}, 200, 'new page in drop mode: 200');
is($r->{content}, $t->fixture('council.html'), 'new page: whole body');

# tag mode in the same zone: the duplicate passes whole
$r = $t->get('/tag/council.html');
is($r->{status}, 200, 'tag: 200');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'tag: duplicate');
is($r->{content}, $t->fixture('council.html'), 'tag: whole body');
ok(exists $r->{headers}{etag}, 'tag: ETag kept');

# HTTP/1.1 keep-alive after a 204 and a 410 on one connection
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $t->port,
                              Proto => 'tcp', Timeout => 10);
print $s "GET /sourdough.html?k=1 HTTP/1.1\r\nHost: a\r\n\r\n"
       . "GET /gone/council.html?k=2 HTTP/1.1\r\nHost: a\r\n\r\n"
       . "GET /bicycle.html HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
local $/;
my $all = <$s>;
my @codes = $all =~ m{^HTTP/1\.1 (\d+)}mg;
is("@codes", '204 410 200', 'pipelined: 204, 410, 200 on one connection');
like($all, qr/\Q@{[ $t->fixture('bicycle.html') ]}\E\z/,
     'pipelined: the last body is whole');

$t->stop;
$t->check_log;
done_testing;
