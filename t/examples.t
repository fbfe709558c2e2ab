#!/usr/bin/perl
# Every file of conf-examples/ passes nginx -t, alone and all together
# (paths under /var are moved into the test prefix, and each listening
# port to a free loopback port: nginx -t binds them, and only root may bind
# port 80, which may be taken anyway; the resolver file is the one
# tools/resolver-conf.sh writes, as the package's postinst does).  Then
# wget crawls a small site through each forward proxy of the examples as
# shipped: every page arrives tagged; in drop mode the session-id copy is
# dropped and a page with another path is not; a root-relative request to
# the proxy itself is refused with 508; and a Host header that names
# another site than the request line changes neither the key nor the fetch
# (issue 31: the examples fetched $http_host and keyed the request line).
# Every server that serves simhash_stats proxies nothing, names its hosts,
# and has a default server that refuses every other Host: under its names
# the console answers, under a rebound name (DNS rebinding) it does not,
# and no proxy or gateway port serves it beside crawled pages.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest qw(wait_until);

# the forward-proxy examples load the system's CA bundle for upstream TLS:
# valgrind reports OpenSSL's assembly there as jumps on uninitialised
# values, nothing of this module's (t/https.t skips likewise)
plan skip_all => 'the examples load OpenSSL, which valgrind reports'
    if $SimhashTest::VALGRIND;

my $dir = "$FindBin::Bin/../conf-examples";
opendir(my $dh, $dir) or die "$dir: $!";
my @examples = sort grep { /\.conf$/ && !/^mod-/ } readdir $dh;
closedir $dh;
cmp_ok(scalar @examples, '>=', 5, 'the examples are there');

my $t = SimhashTest->new;
my $p = $t->prefix;

# the load_module snippet names the module Debian's way
like($t->read_file("$dir/mod-http-simhash.conf"),
     qr{^load_module modules/ngx_http_simhash_module\.so;$}m,
     'mod-http-simhash.conf loads the module');

my %port;    # the example's port => a free one
for my $e (@examples) {
    my $c = $t->read_file("$dir/$e");
    $c =~ s{/var/log/nginx/}{$p/logs/}g;
    $c =~ s{/var/lib/nginx/simhash/}{$p/data/}g;
    $c =~ s{/etc/nginx/simhash-resolver\.conf}{$p/conf/resolver.conf}g;
    $c =~ s{^(\s*listen\s+)(?:[\d.]+:)?(\d+)\b}
           {$1 . '127.0.0.1:' . ($port{$2} //= SimhashTest::free_port())}mge;
    $t->write_file("conf/$e", $c);
}

# nothing answers on 127.0.0.1:53 here; the crawl names hosts by address
# the source tree's script, else the one the package installed
my $resolver_conf = -x "$FindBin::Bin/../tools/resolver-conf.sh"
    ? "$FindBin::Bin/../tools/resolver-conf.sh"
    : '/usr/share/libnginx-mod-http-simhash/resolver-conf.sh';
$t->write_file('conf/resolver.conf',
               scalar `$resolver_conf /dev/null`);
like(scalar $t->read_file('conf/resolver.conf'), qr/^resolver 127\.0\.0\.1 /m,
     'resolver-conf.sh: a resolver line');

# from source: make install lays out what the package does, the resolver
# file included (tools/install.sh, here under DESTDIR)
SKIP: {
    skip 'an installed package: no tools/install.sh', 4
        unless -x "$FindBin::Bin/../tools/install.sh";
    (my $build = $t->{module}) =~ s{/nginx/[^/]+$}{};
    my $out = `DESTDIR=$p/root $FindBin::Bin/../tools/install.sh $build 2>&1`;
    is($?, 0, 'make install (DESTDIR): done') or diag($out);
    ok(-f "$p/root/usr/lib/nginx/modules/ngx_http_simhash_module.so",
       'make install: the module');
    like(scalar $t->read_file("$p/root/etc/nginx/modules-enabled/"
                              . '50-mod-http-simhash.conf') // '',
         qr/^load_module /m, 'make install: the load_module line');
    like(scalar $t->read_file("$p/root/etc/nginx/simhash-resolver.conf") // '',
         qr/^resolver \S+/m, 'make install: the resolver file the examples '
         . 'include');
}
mkdir "$p/data";

my $run = sub {
    my (@files) = @_;
    my $inc = join '', map { "    include $p/conf/$_;\n" } @files;
    $t->write_file('conf/nginx.conf', <<"EOF");
load_module $t->{module};
pid $p/logs/nginx.pid;
error_log $p/logs/error.log;
events { }
http {
    access_log off;
    client_body_temp_path $p/tmp/body;
    proxy_temp_path $p/tmp/proxy;
    fastcgi_temp_path $p/tmp/fastcgi;
    uwsgi_temp_path $p/tmp/uwsgi;
    scgi_temp_path $p/tmp/scgi;
$inc}
EOF
    my @args = $t->nginx_args('stderr');
    my $out = `${\ SimhashTest::nginx_cmd()} -t @args 2>&1`;
    return ($? >> 8, $out);
};

for my $e (@examples) {
    my ($rc, $out) = $run->($e);
    is($rc, 0, "$e: nginx -t passes") or diag($out);
    unlike($out, qr/\[(warn|emerg|alert)\]/, "$e: no warning") or diag($out);
}

my ($rc, $out) = $run->(@examples);
is($rc, 0, 'all examples together: nginx -t passes') or diag($out);

# ---- where the statistics are served -----------------------------------
#
# Every server that serves simhash_stats serves nothing else: no proxied
# page shares the console's origin (a page fetched through the proxy and
# rendered by a browser would read the statistics and script the console);
# it names the hosts it answers to, and its listen has a default server
# that refuses every other Host (421 or 444: DNS rebinding).

# the server { } blocks of a configuration, comments removed
sub servers {
    my ($conf) = @_;
    $conf =~ s/#[^\n]*//g;
    my @out;
    while ($conf =~ /\bserver\s*\{/g) {
        my ($start, $depth) = (pos($conf), 1);
        while ($depth && $conf =~ /([{}])/g) {
            $depth += $1 eq '{' ? 1 : -1;
        }
        push @out, substr($conf, $start, pos($conf) - $start - 1);
    }
    return @out;
}

my %stats_port;     # the example => the port of its statistics server
for my $e (@examples) {
    my @srv = servers($t->read_file("$dir/$e"));
    for my $s (grep { /^\s*simhash_stats\b/m } @srv) {
        my ($listen) = $s =~ /^\s*listen\s+([^;\s]+)/m;
        unlike($s, qr/^\s*(?:proxy_pass|fastcgi_pass|uwsgi_pass|scgi_pass|grpc_pass|simhash\s+(?!off\b)\w+)\b/m,
               "$e: the statistics on $listen: in a server that proxies "
               . 'nothing');
        my ($names) = $s =~ /^\s*server_name\s+([^;]*);/m;
        ok(defined $names && $names !~ /(?:^|\s)(?:_|"")(?:\s|$)/,
           "$e: the statistics on $listen: named hosts only ("
           . ($names // 'none') . ')');
        my @default = grep { /^\s*listen\s+\Q$listen\E\s+default_server\s*;/m }
                      @srv;
        is(scalar @default, 1, "$e: $listen has a default server");
        like($default[0] // '', qr/^\s*return\s+(?:421|444)\s*;/m,
             "$e: $listen: its default server refuses other hosts");
        ($stats_port{$e}) = $listen =~ /(\d+)$/;
    }
}
is_deeply([sort keys %stats_port],
          [qw(cluster.conf drop.conf forward-proxy.conf stats-prometheus.conf
              tier.conf)],
          'the examples that serve statistics');

# ---- a real crawl through each forward proxy ---------------------------

SKIP: {
    skip 'no wget', 1 if system('wget --version >/dev/null 2>&1') != 0;

    # the examples, with the test's origin in the same nginx, and another
    # site (the attacker's) that serves its own page on any path
    my $attacker = SimhashTest::free_port();
    my $o = SimhashTest->new(http => join('', map {
        "    include $p/conf/$_;\n" } grep { !/^(stats-|reverse-)/ } @examples)
        . <<"EOF");
    server {
        listen 127.0.0.1:$attacker;
        default_type text/html;
        location / {
            return 200 "<html><body><p>attacker's own page</p></body></html>";
        }
    }
EOF
    my @pages = $o->random_pages(5, 160, 1212);
    my $links = join '', map { qq{<p><a href="p$_.html">$_</a></p>} } 1 .. 4;
    $links .= qq{<p><a href="p1.html?sessionid=0123456789abcdef">s</a></p>}
            . qq{<p><a href="copy/p2.html">c</a></p>};
    (my $index = $pages[0]) =~ s{</body>}{$links</body>};
    $o->write_file('html/site/index.html', $index);
    $o->write_file("html/site/p$_.html", $pages[$_]) for 1 .. 4;
    $o->write_file('html/site/copy/p2.html', $pages[2]);
    my @own = $o->random_pages(4, 160, 3103);
    $o->write_file("html/site/own$_.html", $own[$_]) for 0 .. 3;
    $o->start;
    my $origin = $o->origin;

    for my $e (qw(forward-proxy.conf drop.conf persistence.conf tier.conf)) {
        my $port = { 'forward-proxy.conf' => 3128, 'drop.conf' => 3129,
                     'persistence.conf' => 3130, 'tier.conf' => 3131 }->{$e};
        my $proxy = $port{$port};
        my $dir = "$p/wget-$e";
        my $log = `cd $p && http_proxy=http://127.0.0.1:$proxy \\
            wget -S -r -l 2 -np -nH -P $dir \\
            http://$origin/site/index.html 2>&1`;
        my @st = $log =~ /X-Simhash-Status: (\w+)/g;
        my %n;
        $n{$_}++ for @st;
        cmp_ok(scalar @st, '>=', 7, "$e: wget gets every page tagged")
            or diag($log);
        ok(-s "$dir/site/p4.html", "$e: a page arrived whole");
        if ($e eq 'drop.conf') {
            like($log, qr{sessionid=0123456789abcdef.*?HTTP/1\.1 204}s,
                 "$e: the session-id copy is dropped");
            ok(-s "$dir/site/copy/p2.html",
               "$e: the copy under another path is not") or diag($log);
            unlike($log, qr/utime|Last-modified header/i,
                   "$e: no Last-Modified on a drop for wget to apply");

            # its access log says what was done, with the whole URL; nginx
            # logs a request as it ends, which may be after wget has it
            my $alog;
            wait_until("$e: the access log's line of p4.html", sub {
                $alog = $o->read_file("$p/logs/simhash-dedup.log") // '';
                $alog =~ m{/site/p4\.html } && $alog =~ m{/site/copy/p2\.html }
            });
            like($alog, qr{ 204 dropped duplicate http://\Q$origin\E/site/p1\.html\?sessionid=0123456789abcdef http://\Q$origin\E/site/p1\.html }m,
                 "$e: the access log: the session-id copy dropped")
                or diag($alog);
            like($alog, qr{ 200 passed duplicate http://\Q$origin\E/site/copy/p2\.html }m,
                 "$e: the access log: the copy under another path passed");
            like($alog, qr{ 200 passed new http://\Q$origin\E/site/p4\.html }m,
                 "$e: the access log: a new page passed");

            # and its statistics are served on the loopback
            my ($st) = $o->raw_get("/simhash-stats", _port => $port{3119});
            is($st, 200, "$e: the statistics on 127.0.0.1");
        }
        # the statistics, on a server of their own: under its names the
        # console, under a name rebound to this address nothing; and
        # nothing of them on the proxy's port
        if (my $sp = $stats_port{$e}) {
            my ($code, $h, $body) = $o->raw_get('/simhash-stats?format=html',
                _port => $port{$sp}, Host => "127.0.0.1:$port{$sp}");
            is($code, 200, "$e: the console under 127.0.0.1");
            like($body, qr/<title>simhash console</, "$e: the console");
            ($code, $h, $body) = $o->raw_get('/simhash-stats?format=html',
                _port => $port{$sp}, Host => "rebind.attacker.test:$port{$sp}");
            is($code, 421, "$e: Host rebind.attacker.test: 421");
            unlike($body, qr/simhash console/, "$e: no console for it");
            ($code, $h, $body) = $o->raw_get('/simhash-stats?explain=x',
                _port => $port{$sp}, Host => 'rebind.attacker.test');
            is($code, 421, "$e: no why? for it either");
            ($code, $h, $body) = $o->raw_get('/simhash-stats?format=html',
                _port => $proxy, Host => "127.0.0.1:$proxy");
            unlike($body, qr/simhash console/,
                   "$e: no console on the proxy's port");
        }
        if ($e eq 'forward-proxy.conf') {
            my ($code, $h, $body) = $o->raw_get('/simhash-stats?format=html',
                _port => $port{3127}, Host => "127.0.0.1:$port{3127}");
            is($code, 404, "$e: no statistics on the gateway's port");
            unlike($body, qr/simhash console/,
                   "$e: no console beside the gateway's pages");
        }

        my ($st) = $o->raw_get('/site/p1.html', _port => $proxy,
                               Host => "127.0.0.1:$proxy");
        is($st, 508, "$e: a root-relative request to the proxy: 508");

        # GET http://origin/site/ownN.html with Host: the attacker's site
        my $n = $port - 3128;
        my $url = "http://$origin/site/own$n.html";
        my ($code, $h, $body) = $o->raw_get($url, _port => $proxy,
                                    Host => "127.0.0.1:$attacker");
        is($code, 200, "$e: another site in Host: answered");
        is($body, $own[$n], "$e: another site in Host: the request line's "
           . 'page is fetched, not the Host header\'s');
        ($code, $h) = $o->raw_get($url, _port => $proxy);
        is($h->{'x-simhash-status'}, 'unchanged',
           "$e: the honest fetch finds the page the key names unchanged");
    }
    $o->stop;
}

done_testing;
