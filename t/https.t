#!/usr/bin/perl
# conf-examples/forward-proxy.conf as shipped (ports, paths and the CA file
# moved into the test), against a local HTTPS origin whose certificate a
# CA made here with openssl signed:
#  - "GET https://host/..." through the proxy port is fetched over TLS,
#    verified, and keyed https://;
#  - the gateway port: /fetch/https/HOST/PATH, its redirects mapped back
#    into it (absolute and root-relative Location), a root-relative link
#    of a gateway page sent back to its host by the Referer; the counters
#    on a port of their own, none on the gateway's;
#  - an origin whose certificate another CA signed is refused (502);
#  - a request that names the proxy is refused (508), the gateway never
#    proxies to itself;
#  - Debian's Scrapy crawls the site through the gateway with
#    contrib/scrapy's middleware: every page, keyed https://, the real URLs
#    back, the X-Simhash-* decision on each response.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $top = "$FindBin::Bin/..";
system('openssl version >/dev/null 2>&1') == 0
    or plan skip_all => 'no openssl';
# OpenSSL's assembly (the TLS the origin and the proxy speak) is reported
# by valgrind as jumps on uninitialised values: nothing of this module's
plan skip_all => 'TLS under valgrind reports OpenSSL itself'
    if $SimhashTest::VALGRIND;

my ($tls, $bad) = map { SimhashTest::free_port() } 1 .. 2;
my %port = map { $_ => SimhashTest::free_port() } 3126, 3127, 3128;

my $t = SimhashTest->new(http => "    include %%PREFIX%%/conf/example.conf;\n"
    . <<"EOF");
    # the HTTPS origin, and one whose certificate the test CA did not sign
    server {
        listen 127.0.0.1:$tls ssl;
        ssl_certificate %%PREFIX%%/ca/site.crt;
        ssl_certificate_key %%PREFIX%%/ca/site.key;
        root %%PREFIX%%/html;
        location = /moved-abs { return 301 https://127.0.0.1:$tls/a/b/p8.html; }
        location = /moved-root { return 302 /a/b/p7.html; }
    }
    server {
        listen 127.0.0.1:$bad ssl;
        ssl_certificate %%PREFIX%%/ca/other.crt;
        ssl_certificate_key %%PREFIX%%/ca/other.key;
        root %%PREFIX%%/html;
    }
EOF
my $p = $t->prefix;

# ---- a CA, the origin's certificate, and another CA's ---------------------

mkdir "$p/ca";
sub ossl { system("openssl @_ >/dev/null 2>&1") == 0 or die "openssl @_" }
$t->write_file('ca/ext', "subjectAltName=DNS:localhost,DNS:127.0.0.1,"
                         . "IP:127.0.0.1\nbasicConstraints=CA:FALSE\n");
for my $ca ('ca', 'otherca') {
    ossl("req -x509 -newkey rsa:2048 -nodes -keyout $p/ca/$ca.key"
         . " -out $p/ca/$ca.crt -days 2 -subj '/CN=simhash test $ca'");
}
for (['site', 'ca'], ['other', 'otherca']) {
    my ($name, $ca) = @$_;
    ossl("req -newkey rsa:2048 -nodes -keyout $p/ca/$name.key"
         . " -out $p/ca/$name.csr -subj /CN=127.0.0.1");
    ossl("x509 -req -in $p/ca/$name.csr -CA $p/ca/$ca.crt"
         . " -CAkey $p/ca/$ca.key -CAcreateserial -out $p/ca/$name.crt"
         . " -days 2 -extfile $p/ca/ext");
}
chmod 0644, glob("$p/ca/*");

# ---- the example, moved into the prefix ----------------------------------

my $c = $t->read_file("$top/conf-examples/forward-proxy.conf");
$c =~ s{/var/log/nginx/}{$p/logs/}g;
$c =~ s{/var/lib/nginx/simhash/}{$p/data/}g;
$c =~ s{/etc/ssl/certs/ca-certificates\.crt}{$p/ca/ca.crt}g;
$c =~ s{/etc/nginx/simhash-resolver\.conf}{$p/conf/resolver.conf}g;
$c =~ s{^(\s*listen\s+)(?:[\d.]+:)?(\d+)\b}{${1}127.0.0.1:$port{$2}}mg;
$t->write_file('conf/example.conf', $c);
# the source tree's script, else the one the package installed
my $resolver_conf = -x "$top/tools/resolver-conf.sh"
    ? "$top/tools/resolver-conf.sh"
    : '/usr/share/libnginx-mod-http-simhash/resolver-conf.sh';
$t->write_file('conf/resolver.conf',
               scalar `$resolver_conf /dev/null`);
mkdir "$p/data";

# a small site: relative, root-relative and absolute links, redirects
my @pages = $t->random_pages(9, 160, 2626);
my $abs = "https://127.0.0.1:$tls";
my %site = (
    'index.html' => qq{<a href="a/p1.html">rel</a> <a href="/a/p2.html">root</a>}
                  . qq{ <a href="$abs/a/b/p3.html">abs</a>}
                  . qq{ <a href="/moved-abs">r1</a> <a href="/moved-root">r2</a>},
    'a/p1.html'   => qq{<a href="b/p4.html">rel</a>},
    'a/p2.html'   => qq{<a href="/a/b/p5.html">root</a>},
    'a/b/p3.html' => qq{<a href="../../a/b/p6.html">up</a>},
    'a/b/p4.html' => '', 'a/b/p5.html' => '', 'a/b/p6.html' => '',
    # reached only through the redirects
    'a/b/p7.html' => '', 'a/b/p8.html' => '',
);
my $i = 0;
for my $f (sort keys %site) {
    (my $page = $pages[$i++ % @pages]) =~ s{</body>}{<p>$site{$f}</p></body>};
    $t->write_file("html/$f", $page);
}
$t->start;

my ($proxy, $gw) = ($port{3128}, $port{3127});

sub via {
    my ($port, $path, %h) = @_;
    return $t->raw_get($path, _port => $port, %h);
}

# ---- absolute-form https through the proxy port ---------------------------

my ($status, $h, $body) = via($proxy, "$abs/a/p1.html",
                              Host => "127.0.0.1:$tls");
is($status, 200, 'GET https://... through the proxy: 200');
is($h->{'x-simhash-status'}, 'new', 'fingerprinted');
like($t->read_file('logs/simhash-crawl.log'),
     qr{"\Q$abs\E/a/p1\.html" -> }, 'keyed https://');

SKIP: {
    skip 'no curl', 1 if system('curl --version >/dev/null 2>&1') != 0;
    my $out = `curl -s -D - --request-target $abs/a/b/p4.html \\
               -H 'Host: 127.0.0.1:$tls' http://127.0.0.1:$proxy/ 2>&1`;
    like($out, qr{^X-Simhash-Status: new}mi,
         "curl's absolute-form https request, as docs/module.md says");
}

($status, $h) = via($proxy, "https://127.0.0.1:$bad/a/p1.html",
                    Host => "127.0.0.1:$bad");
is($status, 502, "an origin the CAs do not vouch for: 502");
like($t->error_log, qr/upstream SSL certificate verify error/,
     'the log says why');

($status) = via($proxy, '/a/p1.html', Host => "127.0.0.1:$proxy");
is($status, 508, 'origin-form to the proxy port: 508, no loop');

# ---- the gateway --------------------------------------------------------

my $g = "/fetch/https/127.0.0.1:$tls";
($status, $h) = via($gw, "$g/a/p1.html", Host => "127.0.0.1:$gw");
is($status, 200, 'gateway: 200');
is($h->{'x-simhash-status'}, 'unchanged',
   "gateway: the same https:// key as the proxy port's fetch");

($status, $h) = via($gw, "$g/moved-abs", Host => "127.0.0.1:$gw");
is($status, 301, 'absolute redirect');
like($h->{location}, qr{^http://127\.0\.0\.1:$gw\Q$g\E/a/b/p8\.html$},
     'absolute redirect: mapped into the gateway');
($status, $h) = via($gw, "$g/moved-root", Host => "127.0.0.1:$gw");
like($h->{location}, qr{^http://127\.0\.0\.1:$gw\Q$g\E/a/b/p7\.html$},
     'root-relative redirect: mapped into the gateway');

($status, $h) = via($gw, '/a/b/p5.html', Host => "127.0.0.1:$gw",
                    Referer => "http://127.0.0.1:$gw$g/a/p2.html");
is($status, 307, 'root-relative link of a gateway page: 307');
like($h->{location}, qr{\Q$g\E/a/b/p5\.html$}, 'back to its host');
($status) = via($gw, '/a/b/p5.html', Host => "127.0.0.1:$gw");
is($status, 404, 'without a Referer: 404, never proxied');

($status) = via($gw, "/fetch/http/127.0.0.1:$gw/simhash-stats",
                Host => "127.0.0.1:$gw");
is($status, 508, 'the gateway asked for itself: 508');

($status, $h, $body) = via($port{3126}, '/simhash-stats',
                           Host => "127.0.0.1:$port{3126}");
is($status, 200, 'the counters on a port of their own');
($status) = via($gw, '/simhash-stats', Host => "127.0.0.1:$gw");
is($status, 404, 'none on the gateway port, beside crawled pages');
($status) = via($proxy, "http://127.0.0.1:$tls/simhash-stats",
                Host => "127.0.0.1:$tls");
isnt($status, 200, 'and not on the proxy port, for every site');

# ---- Scrapy through the gateway with the shipped middleware ---------------

SKIP: {
    # Debian's python3 (python3-scrapy), not one earlier in PATH
    my $py = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
    skip 'no python3-scrapy', 14
        if system("$py -c 'import scrapy' 2>/dev/null") != 0;

    # one crawl of two sites (Scrapy takes seconds to start): the https
    # one through the gateway, a plain http one through the forward proxy
    my $out = "$p/scrapy.jsonl";
    my $http = "http://127.0.0.1:$t->{origin_port}";
    my $log = `cd $top/contrib/scrapy && $py test_crawl.py \\
        --start $abs/index.html --start $http/index.html \\
        --gateway http://127.0.0.1:$gw --proxy http://127.0.0.1:$proxy \\
        --out $out 2>&1`;
    is($?, 0, 'scrapy crawl ran') or diag($log);
    my (%seen, %plain, @slots);
    for (split /\n/, $t->read_file($out) // '') {
        my ($url, $st, $shs) = /"url": "([^"]+)", "status": (\d+), "simhash_status": "([^"]*)"/
            or next;
        if (index($url, "$http/") == 0) {
            $plain{$url} = "$st $shs";
            next;
        }
        $seen{$url} = "$st $shs";
        push @slots, /"download_slot": "([^"]*)"/;
    }
    my @want = map { "$abs/$_" } grep { !/^moved/ } sort keys %site;
    is_deeply([ sort grep { exists $seen{$_} } @want ], [ sort @want ],
              'every page reached, by its real https:// URL')
        or diag(explain(\%seen));
    ok(!grep({ !m{^\Q$abs\E/} } keys %seen), 'no gateway URL comes back');
    ok(@slots && !grep({ $_ ne "127.0.0.1:$tls" } @slots),
       'per-host concurrency: the download slot is the real host')
        or diag("@slots");
    ok(!grep({ !/^200 \w/ } values %seen),
       'each with its X-Simhash-Status') or diag(explain(\%seen));
    my $keys = $t->read_file('logs/simhash-crawl.log');
    like($keys, qr{"\Q$abs\E/a/b/p6\.html"}, 'keyed https://');
    unlike($keys, qr{"http://127\.0\.0\.1:$tls/(?!simhash-stats)}, "never http://");

    # a site whose certificate the gateway refuses: the gateway answers
    # 502, RetryMiddleware retries and gives up; its log line and the
    # errback's request name the site's URL, not the gateway's
    my $badurl = "https://127.0.0.1:$bad/a/p1.html";
    $log = `cd $top/contrib/scrapy && $py test_crawl.py \\
        --start $badurl --gateway http://127.0.0.1:$gw --out $out 2>&1`;
    is($?, 0, 'scrapy crawl of a refused site ran') or diag($log);
    like($log, qr{Gave up retrying <GET \Q$badurl\E> .*502},
         "Scrapy's log names the site's URL") or diag($log);
    unlike($log, qr{/fetch/https}, 'and never the gateway URL') or diag($log);
    like($t->read_file($out) // '',
         qr{"failed": "<GET \Q$badurl\E>", "error": "HttpError},
         "the errback's error names the site's URL")
        or diag($t->read_file($out));

    # plain http through the forward proxy (SIMHASH_PROXY), crawled
    # above: the same decision in response.meta["simhash"] as through the
    # gateway
    my @http = map { "$http/$_" } qw(index.html a/p1.html a/p2.html
                                     a/b/p4.html a/b/p5.html);
    is_deeply([ sort grep { exists $plain{$_} } @http ], [ sort @http ],
              'http: every page reached') or diag(explain(\%plain));
    ok(!grep({ !/^200 (new|duplicate|unchanged|changed)$/ } values %plain),
       'http: each response has its decision in meta["simhash"]')
        or diag(explain(\%plain));
    like($t->read_file('logs/simhash-crawl.log'),
         qr{"\Q$http\E/a/b/p4\.html"}, 'http: through the proxy, keyed http://');
}

$t->check_log;
$t->stop;
done_testing();
