#!/usr/bin/perl
# The console (issue 36): simhash_stats ?format=html serves one page,
# self-contained (no URL of another server in it, a Content-Security-
# Policy that allows this server only), never cached, behind the
# statistics' access rules.  Then, with headless Chromium and Selenium
# (tools/deps.sh console; `make console-test` requires them, elsewhere
# they are skipped when missing): the page loads with no console errors,
# its figures equal the JSON's, its charts draw, its "why?" box answers
# for a dropped, a predicted and a new URL, and it keeps working while
# nginx reloads (t/lib/console_browser.py; SH_CONSOLE_SCREENSHOT=FILE.png
# keeps a picture of the page).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m file=%%PREFIX%%/data/crawl.snap;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=<i> pin;
END
    proxy => <<'END',
        location /doc/ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 0%;      # every prediction answered
            simhash_action drop keys=any;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /stats {
            simhash_stats;
        }

        # the console at a path of //evil.invalid/stats (nginx merges the
        # slashes to find the location; the page sees its path as sent)
        location = /evil.invalid/stats {
            simhash_stats;
        }

        location /private {
            simhash_stats;
            deny all;
        }
END
);

my @pages = $t->random_pages(3, 150, 7171);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->write_file('html/doc/c.html', $pages[2]);
$t->start;

my ($st) = $t->raw_get('/doc/a.html');
is($st, 200, 'a.html: new');
($st) = $t->raw_get('/doc/copy.html');
is($st, 204, 'copy.html: dropped');
($st) = $t->raw_get('/doc/a.html?sid=5');
is($st, 204, 'a.html?sid=5: predicted');
($st) = $t->raw_get('/doc/b.html');
is($st, 200, 'b.html: new');
$t->raw_get('/doc/c.html');

my $r = $t->get('/stats?format=html');
is($r->{status}, 200, 'the page: 200');
like($r->{headers}{'content-type'}, qr{^text/html}, 'as HTML');
is($r->{headers}{'cache-control'}, 'no-store', 'never cached');
like($r->{headers}{'content-security-policy'} // '',
     qr/default-src 'none'.*connect-src 'self'/,
     'a policy that allows this server only');
my $html = $r->{content};
like($html, qr/<title>simhash console<\/title>/, 'the console');
my @urls = $html =~ m{((?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s"']*)}g;
my @outside = grep { !m{^http://www\.w3\.org/2000/svg$} } @urls;
is_deeply(\@outside, [], 'no URL of another server (no CDN, no font)');
unlike($html, qr/<(?:script|link|img)[^>]+(?:src|href)="(?!data:)/i,
       'nothing loaded from a file');

# the page's one script runs by its hash, and no injected one: no
# 'unsafe-inline' for scripts, and the hash the policy names is the
# script's own
my ($script) = $html =~ m{<script>(.*?)</script>}s;
my ($csp) = ($r->{headers}{'content-security-policy'} // '')
            =~ /script-src ([^;]*)/;
require Digest::SHA;
is($csp, "'sha256-" . Digest::SHA::sha256_base64($script) . "='",
   'scripts: the page\'s own by its SHA-256, nothing inline besides');

# JSON and Prometheus text carry crawled hosts' and rules' texts: never
# sniffed for a page
for my $q ('', '?format=prometheus', '?explain=http://v.test/doc/a.html') {
    my $a = $t->get("/stats$q");
    is($a->{status}, 200, "/stats$q: 200");
    is($a->{headers}{'x-content-type-options'}, 'nosniff',
       "/stats$q: nosniff");
}

# the console's fetches are this location's, however the page was
# opened: at //host/... its path is not a protocol-relative URL
like($html, qr/var base = location\.origin \+ location\.pathname;/,
     'the fetches: to this origin\'s path, never protocol-relative');

# a parameter named with markup: X-Simhash-Predicted spells it
# percent-encoded, as the JSON does
my ($code, $h) = $t->raw_get('/doc/b.html?%3Ci%3E=1');
is($code, 204, 'b.html?<i>=1: predicted');
like($h->{'x-simhash-predicted'} // '', qr/drop_param\(%3Ci%3E\)/,
     'X-Simhash-Predicted: < and > percent-encoded') or diag(explain $h);
unlike($h->{'x-simhash-predicted'} // '', qr/[<>]/,
       'X-Simhash-Predicted: no < or >');
my $json = $t->get('/stats?dust=rules')->{content};
like($json, qr/"%3Ci%3E"/, 'the JSON: the same spelling');
unlike($json, qr/[<>]/, 'the JSON: no < or >');

is($t->get('/private?format=html')->{status}, 403,
   'behind the statistics\' access rules');
is($t->get('/private?explain=x')->{status}, 403, 'why? too');

SKIP: {
    my $have = -x '/usr/bin/chromium' && -x '/usr/bin/chromedriver'
               && system('/usr/bin/python3 -c "import selenium" 2>/dev/null') == 0;
    if (!$have) {
        fail('the browser test needs chromium, chromium-driver and '
             . 'python3-selenium (tools/deps.sh console)')
            if $ENV{SH_CONSOLE_BROWSER};
        skip 'no chromium, chromium-driver or python3-selenium', 1;
    }
    # nginx under valgrind answers the page's refreshes too slowly for the
    # browser's limits; `make console-test` runs it on a plain build
    skip 'the browser under valgrind (make console-test runs it)', 1
        if $SimhashTest::VALGRIND && !$ENV{SH_CONSOLE_BROWSER};

    # Debian's python3 (where python3-selenium is), whatever PATH says;
    # the browser runs as this user, HOME for its profile
    local $ENV{HOME} = $t->prefix . '/tmp';
    # and TMPDIR for its singleton socket directory, which it would
    # otherwise leave in /tmp
    local $ENV{TMPDIR} = $t->prefix . '/tmp';
    my @cmd = ('/usr/bin/python3', "$FindBin::Bin/lib/console_browser.py",
               $t->url('/stats'), $t->prefix . '/logs/nginx.pid',
               'http://v.test/doc/copy.html', 'http://v.test/doc/a.html?sid=5',
               'http://v.test/doc/b.html',
               $t->url('//evil.invalid/stats'));
    open(my $fh, '-|', @cmd) or die "@cmd: $!";
    my $n = 0;
    while (my $line = <$fh>) {
        chomp $line;
        if ($line =~ /^(not )?ok - (.*)$/) {
            ok(!$1, "browser: $2");
            $n++;
        } elsif ($line =~ /^# (.*)$/) {
            diag($1);
        }
    }
    close $fh;
    is($? >> 8, 0, 'browser: the script passed');
    ok($n >= 20, "browser: $n checks ran");
    like($t->error_log, qr/SIGHUP.*reconfiguring/,
         'browser: nginx did reload meanwhile');
}

$t->check_log;
done_testing;
