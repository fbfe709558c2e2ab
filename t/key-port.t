#!/usr/bin/perl
# The default key carries the port when it is not the scheme's default:
# two origins on one host, on different ports, are different documents, in
# a forward proxy (absolute-URI requests) and in a reverse proxy (the Host
# header).  $simhash_host gives the authority the default key uses.  And
# docs/module.md's recipe, wget -r through the proxy in drop mode: a second
# origin's copy of a site is dropped at its first page, and wget follows
# none of its links.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Find;
use File::Temp qw(tempdir);
use SimhashTest;

my ($second, $rev1, $rev2, $drop) = map { SimhashTest::free_port() } 1 .. 4;

# the second origin serves the same files as the first
my $t = SimhashTest->new(http => <<"EOF", proxy => <<'EOF');
    simhash_zone zone=z:1m;

    server {
        listen 127.0.0.1:$second;
        root %%PREFIX%%/html;
    }

    # a reverse proxy for each origin, sharing the zone
    server {
        listen 127.0.0.1:$rev1;
        simhash z;
        location / { proxy_pass http://%%ORIGIN%%; }
    }
    server {
        listen 127.0.0.1:$rev2;
        simhash z;
        location / { proxy_pass http://127.0.0.1:$second; }
    }

    # docs/module.md's forward proxy in drop mode, for wget
    log_format crawl '\$scheme://\$simhash_host\$request_uri \$status '
                     '\$simhash_status \$simhash_distance '
                     '\$simhash_duplicate_of';
    server {
        listen 127.0.0.1:$drop;
        access_log %%PREFIX%%/logs/crawl.log crawl;
        simhash z;
        simhash_action drop;
        location / { proxy_pass http://\$http_host\$request_uri; }
    }
EOF
        simhash z;
        location / { proxy_pass http://$http_host$request_uri; }
        location = /host { return 200 "$simhash_host"; }
EOF

my $n = 4;
my @pages = $t->random_pages($n, 150, 2020);
$t->write_file("html/site/p$_.html", $pages[$_ - 1]) for 1 .. $n;
$t->write_file('html/site/index.html', "<!DOCTYPE html>\n<html><head>"
    . "<title>A small site</title></head><body><h1>Contents</h1>\n"
    . join('', map { "<p><a href=\"p$_.html\">Page $_</a></p>\n" } 1 .. $n)
    . "<p>" . join(' ', ('An index page with enough words of its own to be'
                         . ' fingerprinted like any other page.') x 4)
    . "</p>\n</body></html>\n");
$t->start;

my $first = $t->{origin_port};

# ---- a forward proxy: "GET http://host:port/path" ------------------------

sub fetch {
    my ($port, $path) = @_;
    my ($status, $h) = $t->raw_get("http://127.0.0.1:$port$path",
                                   Host => "127.0.0.1:$port");
    return ($h->{'x-simhash-status'} // "($status)",
            $h->{'x-simhash-duplicate-of'} // '');
}

is((fetch($first, '/sourdough.html'))[0], 'new',
   'forward proxy: a page from the first origin: new');
my ($status, $dup) = fetch($second, '/sourdough.html');
is($status, 'duplicate',
   'the same page from the second origin (other port): duplicate');
is($dup, "http://127.0.0.1:$first/sourdough.html",
   '... of the first origin\'s, its port in the key');
is((fetch($first, '/sourdough.html'))[0], 'unchanged',
   'the first origin\'s again: unchanged');

# ---- a reverse proxy per origin: "Host: host:port" -----------------------

my $ua = SimhashTest::ua(max_redirect => 5, keep_alive => 1);
my $r = $ua->get("http://127.0.0.1:$rev1/bicycle.html");
is($r->{headers}{'x-simhash-status'}, 'new',
   'reverse proxy: a page through the first');
$r = $ua->get("http://127.0.0.1:$rev2/bicycle.html");
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'the same page through the second (Host with its port): duplicate');
is($r->{headers}{'x-simhash-duplicate-of'},
   "http://127.0.0.1:$rev1/bicycle.html", '... of the first\'s');

# ---- $simhash_host --------------------------------------------------------

sub host_of {
    my ($path, $host) = @_;
    my ($status, $h, $body) = $t->raw_get($path, Host => $host);
    return $status == 200 ? $body : "($status)";
}

# nginx 1.29.4 checks the Host header's port as RFC 3986 says and answers
# 400 itself to a port that is no number or out of range: the request
# never reaches the module there.  Before it, nginx passes such a Host
# on, and the module drops the port that is none.
my $bad_port = SimhashTest::nginx_version() >= 1029004
             ? '(400)' : 'example.org';

my @cases = (
    # request target, Host header, $simhash_host
    ['/host', 'example.org', 'example.org', 'no port'],
    ['/host', 'Example.ORG:8080', 'example.org:8080',
     'a port: kept; the host lowercased as in $host'],
    ['/host', 'example.org:80', 'example.org', 'port 80 of http: dropped'],
    ['/host', 'example.org:0080', 'example.org', '... also as 0080'],
    ['/host', 'example.org:443', 'example.org:443', 'port 443 of http: kept'],
    ['/host', 'example.org.:8080', 'example.org:8080',
     'a trailing dot: dropped as in $host'],
    ['/host', 'example.org:', 'example.org', 'an empty port'],
    ['/host', 'example.org:8x', $bad_port, 'a port that is no number'],
    ['/host', 'example.org:65536', $bad_port, 'a port out of range'],
    ['/host', '[::1]:8080', '[::1]:8080', 'an IPv6 literal and a port'],
    ['/host', '[::1]', '[::1]', 'an IPv6 literal alone'],
    ['http://Example.org:8081/host', 'other.example:9', 'example.org:8081',
     'an absolute URI: its host and port, not the Host header\'s'],
    ['http://example.org/host', 'example.org:8081', 'example.org',
     '... no port in it: none, whatever Host says'],
    ['http://example.org:80/host', 'example.org', 'example.org',
     '... port 80 of http: dropped'],
    ['https://example.org:443/host', 'example.org', 'example.org',
     '... port 443 of https: dropped'],
    ['http://[::1]:8082/host', '[::1]', '[::1]:8082',
     '... an IPv6 literal and a port'],
);
for my $c (@cases) {
    my ($target, $host, $want, $what) = @$c;
    is(host_of($target, $host), $want, "\$simhash_host, $what: "
                                       . "$target, Host: $host");
}

# ---- wget -r through the proxy in drop mode (docs/module.md's recipe) --------

SKIP: {
    skip 'wget not installed', 4
        unless grep { -x "$_/wget" } split /:/, $ENV{PATH};
    my $dir = tempdir(CLEANUP => 1);
    my $crawl = sub {
        my ($port, $to) = @_;
        system('wget', '-r', '-np', '-q', '-e', 'robots=off',
               '-e', 'use_proxy=yes', '-e', "http_proxy=http://127.0.0.1:$drop/",
               '-P', "$dir/$to", "http://127.0.0.1:$port/site/index.html");
        my @got;
        find(sub { push @got, $_ if -f $_ && -s _ }, "$dir/$to")
            if -d "$dir/$to";
        return join ' ', sort @got;
    };
    is($crawl->($first, 'a'), join(' ', 'index.html', map { "p$_.html" } 1 .. $n),
       'wget -r, the first origin: every page');
    is($crawl->($second, 'b'), '',
       'wget -r, the second origin\'s copy: its first page dropped (204), '
       . 'no link followed');
    # the proxy logs a request as it ends, which may be after wget has
    # the 204 and has exited
    $t->lines_after('logs/crawl.log',
                    qr{^http://127\.0\.0\.1:$second/site/index\.html }m);
    my $log = $t->read_file('logs/crawl.log');
    my @b = $log =~ m{^http://127\.0\.0\.1:$second(/\S*) }mg;
    is("@b", '/site/index.html', '... one request to the second origin');
    like($log, qr{^http://127\.0\.0\.1:$second/site/index\.html 204 duplicate 0 http://127\.0\.0\.1:$first/site/index\.html$}m,
         '... a duplicate of the first origin\'s page, at distance 0')
        or diag($log);
}

$t->stop;
$t->check_log;
done_testing;
