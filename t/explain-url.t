#!/usr/bin/perl
# "Why?" from a URL (issue 36): simhash_stats ?url=URL makes the key as the
# statistics location's simhash_key makes it for a request of that URL (a
# forward proxy's absolute-form request: host lowercased, the scheme's
# default port dropped, the location's own template), then answers as
# ?explain=KEY does.  Checked against the decisions actually taken on
# absolute-form requests: new, dropped, predicted; a location with another
# simhash_key is asked through a statistics location with the same one.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        location /doc/ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 0%;      # every prediction answered
            simhash_action drop keys=any;
            proxy_pass http://%%ORIGIN%%;
        }

        # a site whose arguments do not matter: keyed without them
        location /q/ {
            simhash crawl;
            simhash_key $simhash_request_scheme://$simhash_host$uri;
            proxy_pass http://%%ORIGIN%%/doc/;
        }

        location /stats {
            simhash_stats;
        }

        location /stats-q {
            simhash_stats;
            simhash_key $simhash_request_scheme://$simhash_host$uri;
        }

        # the keys a real request of a URL makes, under both templates
        location /k/ {
            return 200 "$simhash_request_scheme://$simhash_host$request_uri
$simhash_request_scheme://$simhash_host$uri";
        }
END
);

my @pages = $t->random_pages(2, 150, 5151);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->start;

sub esc {
    (my $q = shift) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    return $q;
}

sub why_url {
    my ($url, $where) = @_;
    my $r = $t->get(($where // '/stats') . '?url=' . esc($url));
    is($r->{status}, 200, "why $url: 200") or diag($r->{content});
    return eval { decode_json($r->{content}) } // {};
}

sub fetch {
    my ($url) = @_;
    my ($host) = $url =~ m{^\w+://([^/]+)};
    return $t->raw_get($url, Host => $host);
}

# new
my ($st, $h) = fetch('http://v.test/doc/a.html');
is($h->{'x-simhash-status'}, 'new', 'a.html: new');
my $x = why_url('http://V.Test:80/doc/a.html');
is($x->{url}, 'http://V.Test:80/doc/a.html', 'the URL asked');
is($x->{key}, 'http://v.test/doc/a.html',
   'its key: host lowercased, the default port dropped');
is($x->{last_decision}{status}, 'new', 'new: the last decision');
is($x->{last_decision}{action}, 'passed', 'new: passed');
is($x->{stored}{fingerprint}, $h->{'x-simhash'}, 'new: its fingerprint');
is($x->{would}, 'stored', 'new: a fetch is compared with its version');

# dropped
($st, $h) = fetch('http://v.test/doc/copy.html');
is($st, 204, 'copy.html: dropped');
$x = why_url('http://v.test/doc/copy.html');
is($x->{last_decision}{status}, 'duplicate', 'dropped: a duplicate');
is($x->{last_decision}{action}, 'dropped', 'dropped: dropped');
is($x->{last_decision}{original}, $h->{'x-simhash-duplicate-of'},
   'dropped: the original the response named');

# predicted: before (what it would do), then the decision taken
$x = why_url('http://v.test/doc/a.html?sid=3');
is($x->{would}, 'predicted', 'a.html?sid=3: would be predicted');
like($x->{prediction}{rules}, qr/drop_param\(sid\)/, '... by the rule');
($st, $h) = fetch('http://v.test/doc/a.html?sid=3');
is($st, 204, 'a.html?sid=3: answered without a fetch');
$x = why_url('http://v.test/doc/a.html?sid=3');
is($x->{last_decision}{status}, $h->{'x-simhash-status'},
   'predicted: the last decision\'s status, as the response said it');
is($x->{last_decision}{status}, 'duplicate', '... duplicate');
is($x->{last_decision}{action}, 'predicted', 'predicted: not fetched');
is($x->{last_decision}{original}, 'http://v.test/doc/a.html',
   'predicted: its original');

# another location's template, asked where the same template is set
($st, $h) = fetch('http://v.test/q/b.html?page=2');
is($h->{'x-simhash-status'}, 'new', '/q/b.html?page=2: new');
$x = why_url('http://v.test/q/b.html?page=9', '/stats-q');
is($x->{key}, 'http://v.test/q/b.html', "/stats-q: its template's key");
is($x->{last_decision}{status}, 'new', '/stats-q: the decision taken');
is($x->{stored}{fingerprint}, $h->{'x-simhash'}, '/stats-q: stored');
$x = why_url('http://v.test/q/b.html?page=9');
is($x->{key}, 'http://v.test/q/b.html?page=9', '/stats: the default key');
is($x->{last_decision}, undef, '/stats: so no decision on it');

# the key made of ?url= is the key a real absolute-form request of the URL
# makes: scheme, port, case, a trailing dot, dot segments, escapes, merged
# slashes, a fragment, IPv6 (nginx's own parser and normalisation on one
# side, the module's request of documented fields on the other)
for my $url ('http://V.Test:80/k/a.html', 'http://v.test:8080/k/a?b=1#f',
             'https://v.test:443/k/x', 'HTTPS://v.test:8443/k/x',
             'http://v.test./k/./a/../b//c%7e?q=%20#x',
             'http://v.test/k/%2e%2e/k/b%2fc', 'http://[::1]:9/k/a',
             'http://v.test/k/a#frag?x', 'http://v.test/k/d/..',
             'http://v.test/k/e.tar.gz?') {
    my ($st, $h, $body) = fetch($url);
    is($st, 200, "$url: the request's keys") or next;
    my ($raw, $norm) = split /\n/, $body;
    is(why_url($url)->{key}, $raw, "$url: ?url= makes the same key");
    is(why_url($url, '/stats-q')->{key}, $norm,
       "$url: ... with \$uri in the template too");
}

# the CLI: an http(s) URL is asked as the crawl requests it (url=), so
# the statistics location's template makes the key; anything else is a
# stored key (explain=)
SKIP: {
    my $cli = $ENV{SH_CLI} // '';
    skip 'SH_CLI not set (make itest sets it)', 3 unless -x $cli;
    my $q = $t->url('/stats-q');
    my $j = eval { decode_json(
        scalar `$cli explain --json http://v.test/q/b.html?page=9 $q`) } // {};
    is($j->{key}, 'http://v.test/q/b.html',
       'simhash explain URL: the location\'s template made the key');
    is($j->{last_decision}{status}, 'new',
       'simhash explain URL: the decision taken under it');
    $j = eval { decode_json(scalar `$cli explain --json v.test/q/b.html $q`) } // {};
    is($j->{key}, 'v.test/q/b.html',
       'simhash explain KEY: a key that is no URL is asked as stored');
}

# the stored-key form still answers
my $r = $t->get('/stats?explain=' . esc('http://v.test/doc/copy.html'));
is(eval { decode_json($r->{content})->{last_decision}{action} }, 'dropped',
   '?explain=KEY still answers');

# not a URL
is($t->get('/stats?url=' . esc('/doc/a.html'))->{status}, 400,
   'a path, not a URL: 400');
is($t->get('/stats?url=' . esc('http://v.test/a b'))->{status}, 400,
   'a URL with a space: 400');
is($t->get('/stats?url=')->{status}, 400, 'an empty URL: 400');
for my $bad ('http:///a', 'http://v.test/a%zz', 'http://v.test/a%00',
             'http://v.test/../a', 'http://v_t\x01/a', '1http://v.test/',
             'http://v.test:123456/a', 'http://[::1/a') {
    is($t->get('/stats?url=' . esc($bad))->{status}, 400,
       "not a URL a request line carries: $bad: 400");
}

$t->check_log;
done_testing;
