#!/usr/bin/perl
# Content-Encoding gzip/deflate (fingerprinted inflated, sent as received),
# other encodings skipped, chunked origins, the charset from Content-Type.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Compress::Gzip qw(gzip $GzipError);
use IO::Compress::Deflate qw(deflate);
use IO::Compress::RawDeflate qw(rawdeflate);
use IO::Uncompress::Gunzip qw(gunzip);
use SimhashTest;

my $t = SimhashTest->new(http => 'simhash_zone zone=crawl:1m;');

my $page = $t->fixture('council.html');
my $bike = $t->fixture('bicycle.html');
my (%body, %enc);

gzip(\$page => \$body{gzip}) or die $GzipError;
deflate(\$page => \$body{deflate});
rawdeflate(\$page => \$body{raw});
$body{br} = "\x0b\x02\x80" . $page;          # not really brotli: never read
$body{bad} = $body{gzip};
substr($body{bad}, 40, 20) = 'x' x 20;          # a corrupt gzip stream
$body{trunc} = substr($body{gzip}, 0, int(length($body{gzip}) / 2));
my $half = int(length($bike) / 2);
my ($h1, $h2) = (substr($bike, 0, $half), substr($bike, $half));
gzip(\$h1 => \my $g1);
gzip(\$h2 => \my $g2);
$body{multi} = $g1 . $g2;                       # two gzip members
%enc = (gzip => 'gzip', deflate => 'deflate', raw => 'deflate', br => 'br',
        bad => 'gzip', trunc => 'gzip', multi => 'gzip');

# an origin in Perl: /ENC/... answers with that body, in small pieces
my $raw = $t->raw_origin(sub {
    my ($path) = @_;
    my ($e) = $path =~ m{^/(\w+)/};
    my $b = $body{$e // ''} // '';
    my @chunks = map { (substr($b, $_ * 300, 300), 0.002) }
                 0 .. int(length($b) / 300);
    return ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            . "Content-Encoding: $enc{$e}\r\nContent-Length: "
            . length($b) . "\r\nConnection: close\r\n\r\n", 0, @chunks);
});

$t->set(proxy => <<"EOF");
        simhash crawl;
        simhash_probes 4096;
        proxy_http_version 1.1;

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        location /gz/ {
            proxy_set_header Accept-Encoding gzip;
            proxy_pass http://%%ORIGIN%%/gz/;
        }

        location /chunked/ {
            proxy_pass http://%%ORIGIN%%/chunked/;
        }

        location /latin1/ {
            proxy_pass http://%%ORIGIN%%/latin1/;
        }

        location /raw/ {
            proxy_pass http://127.0.0.1:$raw/;
        }

        location /unbuffered/ {
            proxy_buffering off;
            proxy_set_header Accept-Encoding gzip;
            proxy_pass http://%%ORIGIN%%/gz/;
        }
EOF
$t->start;

# plain first: the reference fingerprint
my $r = $t->get('/council.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'plain: new');
my $fp = $r->{headers}{'x-simhash'};

# gzip from nginx: same fingerprint, the client gets the gzip bytes
my ($status, $h, $body) = $t->raw_get('/gz/council.html');
is($h->{'content-encoding'}, 'gzip', 'gzip: still gzip for the client');
is($h->{'x-simhash'}, $fp, 'gzip: same fingerprint as plain');
is($h->{'x-simhash-status'}, 'duplicate', 'gzip: duplicate of the plain URL');
gunzip(\$body => \my $plain);
is($plain, $page, 'gzip: the body inflates to the page');

# unbuffered proxy, gzip
($status, $h, $body) = $t->raw_get('/unbuffered/council.html');
is($h->{'x-simhash'}, $fp, 'proxy_buffering off + gzip: same fingerprint');
gunzip(\$body => \$plain);
is($plain, $page, 'proxy_buffering off: body intact');

# chunked origin (no Content-Length)
($status, $h, $body) = $t->raw_get('/chunked/bicycle.html');
is($h->{'x-simhash-status'}, 'new', 'chunked: fingerprinted');
is($body, $bike, 'chunked: body intact');
my $bikefp = $h->{'x-simhash'};
is($h->{'content-length'}, length $bike,
   'chunked: the length is known once the body is complete');

# deflate, zlib-wrapped and raw, dripped in 300-byte pieces
for my $e (qw(deflate raw)) {
    ($status, $h, $body) = $t->raw_get("/raw/$e/council.html");
    is($h->{'x-simhash'}, $fp, "$e: same fingerprint as plain");
    is($h->{'content-encoding'}, 'deflate', "$e: encoding kept");
    is($body, $body{$e}, "$e: the client gets the original bytes");
}

# gzip in two members is one stream for the extractor
($status, $h, $body) = $t->raw_get('/raw/multi/x.html');
is($h->{'x-simhash'}, $bikefp,
   'gzip, two halves in two members: the whole page\'s fingerprint');
is($body, $g1 . $g2, 'gzip, two members: original bytes');

# other encodings, corrupt and truncated streams: skipped, bytes untouched
for my $e (qw(br bad)) {
    ($status, $h, $body) = $t->raw_get("/raw/$e/council.html");
    is($status, 200, "$e: 200");
    is($h->{'x-simhash-status'}, 'skipped', "$e: skipped");
    ok(!exists $h->{'x-simhash'}, "$e: no fingerprint");
    is($body, $body{$e}, "$e: original bytes");
}
($status, $h, $body) = $t->raw_get('/raw/trunc/council.html');
is($h->{'x-simhash-status'}, 'skipped', 'truncated gzip: skipped');
is($body, $body{trunc}, 'truncated gzip: original bytes');

# the charset of Content-Type reaches the extractor: ISO-8859-1 bytes
# labelled so fingerprint like the UTF-8 page
$r = $t->get('/cafe-utf8.html');
my $cafe = $r->{headers}{'x-simhash'};
ok($cafe, 'utf-8 page fingerprinted');
$r = $t->get('/latin1/cafe-latin1.html');
like($r->{headers}{'content-type'}, qr/charset=iso-8859-1/i,
     'the origin labels the page iso-8859-1');
is($r->{headers}{'x-simhash'}, $cafe,
   'latin1 bytes + charset label: the fingerprint of the UTF-8 page');
is($r->{content}, $t->fixture('cafe-latin1.html'), 'latin1: bytes untouched');

SKIP: {
    skip 'SH_CLI not set', 1 unless $ENV{SH_CLI};
    is($bikefp, $t->cli_fingerprint('bicycle.html'), 'chunked: CLI agrees');
}

# a page of several extraction batches (64 KB), plain, gzip and chunked
SKIP: {
    skip 'SH_CLI not set', 4 unless $ENV{SH_CLI};
    my ($huge) = $t->random_pages(1, 24000, 31);
    cmp_ok(length $huge, '>', 150_000, 'a page over 150 KB');
    $t->write_file('html/huge.html', $huge);
    my $want = $t->cli_fingerprint('huge.html');
    is($t->get('/huge.html')->{headers}{'x-simhash'}, $want,
       'large page: the CLI\'s fingerprint');
    ($status, $h, $body) = $t->raw_get('/gz/huge.html');
    is($h->{'x-simhash'}, $want, 'large page, gzip: the same');
    ($status, $h, $body) = $t->raw_get('/chunked/huge.html');
    is($h->{'x-simhash'}, $want, 'large page, chunked: the same');
}

$t->stop;
$t->check_log;
done_testing;
