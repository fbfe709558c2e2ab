#!/usr/bin/perl
# simhash_loop_guard: a forward proxy that passes to $http_host never sends
# a request to itself.  A request that is not an absolute URL (a
# root-relative link, the target of "Location: /path", a crafted Host)
# names this proxy: it is refused at once with 508 and one log line, and
# nothing is proxied.  A loop the names cannot show (a host name that is
# not in server_name) ends at its second visit, by the hop token the guard
# adds (X-Simhash-Via).  $simhash_request_scheme is the scheme of an
# absolute-form request line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest qw(wait_until);

my $other = SimhashTest::free_port();

my $t = SimhashTest->new(origin => <<'EOF', http => <<"EOF", proxy => <<'EOF');
        location = /via { return 200 "via=$http_x_simhash_via\n"; }
        location = /moved { return 302 /p1.html; }
EOF
    simhash_zone zone=z:1m;

    # proxies everything to the first proxy, whatever the Host says: the
    # names show no loop, the hop token does
    server {
        listen 127.0.0.1:$other;
        server_name proxy-two;
        simhash z;
        simhash_loop_guard http://\$http_host;
        location / { proxy_pass http://127.0.0.1:%%PORT%%; }
    }
EOF
        server_name proxy.example proxy-alias.example *.wild.example;
        simhash z;
        simhash_loop_guard $simhash_request_scheme://$http_host;
        location / {
            proxy_pass $simhash_request_scheme://$http_host$request_uri;
        }
        location = /scheme {
            simhash_loop_guard off;
            return 200 "$simhash_request_scheme\n";
        }
EOF

$t->write_file('html/p1.html', ($t->random_pages(1, 200, 25))[0]);
$t->start;

my $port = $t->port;
my $origin = $t->origin;

sub refusals { scalar(() = $t->error_log =~ /simhash: loop refused/g) }
sub proxied { scalar(() = ($t->read_file('logs/access.log') // '') =~ /\n/g) }

# ---- a page through the proxy: passes, with our hop token ---------------

my ($status, $h, $body) = $t->raw_get("http://$origin/p1.html",
                                      Host => $origin);
is($status, 200, 'an absolute URL to the origin passes');
is($h->{'x-simhash-status'}, 'new', 'and is fingerprinted');
($status, $h, $body) = $t->raw_get("http://$origin/via", Host => $origin);
like($body, qr/^via=[0-9a-f]{16}$/m, 'the origin sees the hop token');
my ($token) = $body =~ /^via=(\S+)/m;

($status, $h, $body) = $t->raw_get("http://$origin/via", Host => $origin,
                                   'X-Simhash-Via' => '0123456789abcdef');
is($status, 200, "another proxy's token passes");

# ---- requests that name this proxy: refused at once ----------------------

my @cases = (
    [ '/p1.html', "127.0.0.1:$port", 'root-relative link (Host = proxy)' ],
    [ '/p1.html', "localhost:$port", 'Host: localhost' ],
    [ '/p1.html', "PROXY.example.:$port", 'Host: a server name' ],
    [ '/p1.html', "proxy-alias.example:$port",
      'Host: a second name of a lone server' ],
    [ '/p1.html', "127.0.0.2:$port", 'Host: another local address' ],
    [ '/p1.html', "0.0.0.0:$port", 'Host: 0.0.0.0' ],
    [ "http://127.0.0.1:$port/p1.html", "127.0.0.1:$port",
      'absolute URL of the proxy itself' ],
);

for my $c (@cases) {
    my ($path, $host, $name) = @$c;
    my $before = refusals();
    my $lines = proxied();
    my ($st, $hh, $b) = $t->raw_get($path, Host => $host);
    is($st, 508, "$name: 508");
    like($b, qr/Loop Detected/, "$name: says why");
    is(refusals() - $before, 1, "$name: one log line");
    is(proxied() - $lines, 1, "$name: one request, nothing proxied");
}

# the follow-up of an origin's "Location: /p1.html" sent to the proxy as if
# it were the origin
($status, $h) = $t->raw_get("http://$origin/moved", Host => $origin);
is($status, 302, 'the origin redirects root-relative');
($status) = $t->raw_get($h->{location} =~ s{^https?://[^/]+}{}r,
                        Host => "127.0.0.1:$port");
is($status, 508, 'following it at the proxy is refused');

# a port that is not ours, on our address: not us (the origin)
($status) = $t->raw_get('/p1.html', Host => $origin);
is($status, 200, 'origin-form with the Host of another port passes');

# ---- the hop token: a loop through a name the guard cannot know ---------

my $before = refusals();
my $lines = proxied();
($status, $h, $body) = $t->raw_get('/p1.html', _port => $other,
                                   Host => 'elsewhere.example');
is($status, 508, 'a loop through another server comes back refused');
is(refusals() - $before, 1, 'one log line');
like($t->error_log, qr/came back through this proxy/,
     'the log line says the request came back');
is(proxied() - $lines, 2, 'after one hop (two requests in all)');

# our token in another case is still ours
($status) = $t->raw_get("http://$origin/p1.html", Host => $origin,
                        'X-Simhash-Via' => "other, \U$token");
is($status, 508, 'our token anywhere in the line, in any case');

# ---- $simhash_request_scheme ---------------------------------------------

($status, $h, $body) = $t->raw_get('https://example.org/scheme',
                                   Host => 'example.org');
is($body, "https\n", 'absolute-form https: "https"');
($status, $h, $body) = $t->raw_get('HTTP://example.org/scheme',
                                   Host => 'example.org');
is($body, "http\n", 'absolute-form HTTP: lowercased');
($status, $h, $body) = $t->raw_get('/scheme');
is($body, "http\n", "origin-form: the connection's scheme");

# ---- the log line: an [error] an operator sees, rate-limited ------------

like($t->error_log, qr/\[error\] .*simhash: loop refused/,
     'a refusal is logged at [error], the level Debian shows');
$before = refusals();
my $n = 60;
my $refused = grep { ($t->raw_get('/p1.html', Host => "127.0.0.1:$port"))[0]
                     == 508 } 1 .. $n;
is($refused, $n, "a flood of $n loops: every one refused");
cmp_ok(refusals() - $before, '<', $n, '... but not every one logged');
# a refusal a second later says how many went unlogged (each worker keeps
# its own count: a few tries reach the workers that have one)
# (was 20 tries 0.25 s apart: a limit of its own, about 5 s, on a busy
# machine; now a try every 0.1 s until the file's limit)
ok(wait_until('a refusal that says how many were not logged', sub {
       $t->raw_get('/p1.html', Host => "127.0.0.1:$port");
       $t->error_log =~ /(\d+) more refused and not logged/;
   }), '... and a later line says how many were not');

$t->check_log;
$t->stop;

# ---- configuration ---------------------------------------------------------

my $c = SimhashTest->new(proxy => <<'EOF');
        simhash_loop_guard http://$http_host;
        simhash_loop_guard off;
EOF
my ($rc, $out) = $c->nginx_t;
isnt($rc, 0, 'simhash_loop_guard twice: nginx -t fails');
like($out, qr/"simhash_loop_guard" directive is duplicate/, 'and says so');

done_testing();
