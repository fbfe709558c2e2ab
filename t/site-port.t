#!/usr/bin/perl
# An origin with a port is its own host, in every table the operator reads:
# wget -r crawls a small site at 127.0.0.1:PORT through a forward proxy in
# drop mode with DUST on, its pages linked with and without a session id.
# The rule that drops the session id (pinned for the origin's host, port
# included) makes predictions, each fetched to check it; its figures are
# the same, and not 0, in the rules table (dust_rules), in what the rules'
# predictions came to (rule_outcomes), in the sites that waste the crawl,
# in "why?"'s evidence and in Prometheus, each naming 127.0.0.1:PORT.
# (Before, the sites and outcome tables dropped the port and the rules
# kept it: the rule showed predictions 0, verified 0.)

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp qw(tempdir);
use JSON::PP;
use SimhashTest;

plan skip_all => 'wget not installed'
    unless grep { -x "$_/wget" } split /:/, $ENV{PATH};

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=%%ORIGIN%% pattern=/site/
                      drop_param=PHPSESSID pin;
END
    proxy => <<'END',
        # a forward proxy: wget sends GET http://127.0.0.1:PORT/...
        location / {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 100%;    # every prediction fetched
            simhash_action drop;
            proxy_pass http://$http_host$request_uri;
        }

        location = /stats {
            simhash_stats;
        }
END
);

# index.html links each page, then each page again with a session id; the
# origin's files ignore the query: the same page
my $n = 4;
my @pages = $t->random_pages($n, 150, 1960);
$t->write_file("html/site/p$_.html", $pages[$_ - 1]) for 1 .. $n;
$t->write_file('html/site/index.html', "<!DOCTYPE html>\n<html><head>"
    . "<title>A site with session ids</title></head><body><h1>Contents</h1>\n"
    . join('', map { "<p><a href=\"p$_.html\">Page $_</a></p>\n" } 1 .. $n)
    . join('', map { "<p><a href=\"p$_.html?PHPSESSID=s$_\">Page $_ "
                     . "again</a></p>\n" } 1 .. $n)
    . "<p>" . join(' ', ('An index page with enough words of its own to be'
                         . ' fingerprinted like any other page.') x 4)
    . "</p>\n</body></html>\n");
$t->start;

my $origin = $t->origin;
like($origin, qr/^127\.0\.0\.1:\d+$/, "the origin: $origin, a port");

my $dir = tempdir(CLEANUP => 1);
system('wget', '-r', '-l', '1', '-np', '-q', '-e', 'robots=off',
       '-e', 'use_proxy=yes', '-e', 'http_proxy=' . $t->url('/'),
       '-P', $dir, "http://$origin/site/index.html");

# the proxy counts a decision before it answers: every one is in once
# wget is done
my $z = $t->stats->{zones}{crawl};

my ($rule) = grep { $_->{kind} eq 'drop_param' } @{ $z->{dust_rules} };
ok($rule, 'the rule is listed') or diag(explain($z->{dust_rules}));
is($rule->{host}, $origin, 'rules: its host with the port');
is($rule->{made}, $n, "rules: $n predictions made (each page's session "
                      . 'id variant)');
is($rule->{verified}, $n, "rules: $n verified (fetched: duplicates indeed)");
is($rule->{failed}, 0, 'rules: none failed');
is($rule->{host_predictions}, $n, 'rules: the host\'s predictions too');

my @o = @{ $z->{rule_outcomes} };
is(scalar @o, 1, 'outcomes: one host and set of rules');
is($o[0]{host}, $origin, 'outcomes: the same host, with the port');
is($o[0]{made}, $rule->{made}, 'outcomes: made, as the rule\'s');
is($o[0]{verified}, $rule->{verified}, 'outcomes: verified, as the rule\'s');

my @top = @{ $z->{sites}{top} };
is(scalar @top, 1, 'sites: one site');
(my $site = $origin) =~ s/:\d+$//;
is($top[0]{site}, $site, 'sites: the site, its registrable name (no port)');
is($top[0]{hosts}[0]{host}, $origin, 'sites: the host beneath, with the port');
is($top[0]{duplicates}, $n, "sites: its $n duplicates (the predictions, "
                            . 'fetched)');

# why? for one of the variants: the rule's evidence, the same counts
(my $q = "http://$origin/site/p1.html?PHPSESSID=s9")
    =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
my $x = decode_json($t->get("/stats?url=$q")->{content});
is($x->{would}, 'predicted', 'why? another session id: would be predicted');
my ($ev) = @{ $x->{prediction}{evidence} // [] };
ok($ev, 'why?: the rule\'s evidence');
is($ev->{host}, $origin, 'why?: its host, with the port');
is($ev->{made}, $rule->{made}, 'why?: made, as the rules table\'s');
is($ev->{verified}, $rule->{verified}, 'why?: verified, as the table\'s');

# Prometheus: the rule's series, the site's gauge
my $prom = $t->get('/stats?format=prometheus')->{content};
my %series;
$series{$1} = $2 while $prom =~ m!^simhash_dust_rule_predictions\{[^\}]*
                                   host="\Q$origin\E"[^\}]*outcome="(\w+)"\}
                                   \s+(\d+)$!mgx;
is($series{made}, $rule->{made}, 'Prometheus: made, with the port')
    or diag($prom);
is($series{verified}, $rule->{verified}, 'Prometheus: verified');
like($prom, qr/^simhash_site_duplicates\{zone="crawl",site="\Q$site\E"\} $n$/m,
     'Prometheus: the site, as in the JSON') or diag($prom);

$t->check_log;
done_testing;
