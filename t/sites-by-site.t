#!/usr/bin/perl
# "Sites that waste the crawl" counts by site, the registrable domain
# (libpsl, as the DUST aliases take it), with the hosts beneath it: one
# site spread over many subdomains, each of which wastes little, outranks
# an honest host that wastes more than any one of them, in the JSON and in
# Prometheus.  And a host name longer than its slot is cut in its middle
# with a visible mark, its site kept whole at the end, the same in the
# sites' hosts, in the rules' outcomes and in Prometheus.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

# the percent-encoding of names in the JSON, undone (no URI::Escape: the
# tests need nothing outside perl-base and the project's own t/lib)
sub uri_unescape { (my $s = shift) =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge; $s }

my $long = 'www.bigbank.example.com.cdn-edge-cache-global-prod-region-1.'
         . 'node-7.evil.test';
my $mark = "\xe2\x80\xa6";      # U+2026 in UTF-8, as the module writes it
# the longest host a rule may name (64 bytes), one more than a slot holds
my $rule_host = 'www.bigbank.example.com.cdn-edge-cache-global-x.node-7.evil.test';

my $t = SimhashTest->new(
    http => <<"END",
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=$rule_host pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        location ~ ^/(?<h>[^/]+)(?<path>/doc/.*)$ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 0%;      # every prediction answered
            simhash_action drop keys=any;
            simhash_key http://$h$path$is_args$args;
            proxy_pass http://%%ORIGIN%%$path$is_args$args;
        }

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(1, 150, 6161);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/p.html', $pages[0]);
$t->start;

# honest.test: its page, then 20 copies under other queries (20 wasted);
# evil.test: 15 subdomains, 2 copies each (30 wasted, 2 a host); the long
# host: 1 copy; the rule's host: 1 copy, then 1 prediction
my $dups = 0;
my $get = sub {
    my ($st, $h) = $t->raw_get($_[0]);
    $dups++ if ($h->{'x-simhash-status'} // '') eq 'duplicate';
    return $h;
};
$get->('/honest.test/doc/p.html');
$get->("/honest.test/doc/p.html?x=$_") for 1 .. 20;
for my $n (1 .. 15) {
    $get->("/h$n.evil.test/doc/p.html?x=$_") for 1 .. 2;
}
$get->("/$long/doc/p.html");
$get->("/$rule_host/doc/p.html");
my $h = $get->("/$rule_host/doc/p.html?sid=1");
is($h->{'x-simhash-predicted'}, 'drop_param(sid)', 'the rule\'s host: predicted');
is($dups, 20 + 30 + 3, 'every copy a duplicate');

my $s = $t->stats->{zones}{crawl}{sites};
my %top = map { (uri_unescape($_->{site}) => $_) } @{ $s->{top} };
is(uri_unescape($s->{top}[0]{site}), 'evil.test',
   'evil.test first: its 15 subdomains are one site');
is($top{'evil.test'}{wasted}, 30 + 3, 'evil.test: 33 wasted');
is($top{'honest.test'}{wasted}, 20, 'honest.test: 20, second');
is($top{'evil.test'}{hosts_seen}, 17, 'evil.test: 17 hosts took a place');
is(scalar @{ $top{'evil.test'}{hosts} }, 4, 'the 4 that wasted most shown');
ok(!grep({ uri_unescape($_->{site}) =~ /^h\d+\./ } @{ $s->{top} }),
   'no subdomain listed as a site of its own');
is_deeply([ map { uri_unescape($_->{host}) } @{ $top{'honest.test'}{hosts} } ],
          ['honest.test'], 'honest.test: its one host');

# the long host beneath evil.test: cut, marked, evil.test whole
# (the last of them to waste: its place is the newest, so it is shown)
my ($cut) = grep { /\Q$mark\E/ } map { uri_unescape($_->{host}) }
            map { @{ $_->{hosts} } } @{ $s->{top} };
$cut //= '';
ok($cut =~ /^www\.bigbank\.example\.com\./, "cut: its start ($cut)");
ok($cut =~ /\Q$mark\Enode-7\.evil\.test$/,
   'cut: the mark, then its labels before the site, the site whole');
ok(length($cut) <= 63, 'cut: within the 63 bytes of the slot');

# the rules' outcomes: a 64-byte host in their 63, cut the same way
my $z = $t->stats->{zones}{crawl};
my ($o) = grep { $_->{rules} eq 'drop_param(sid)' } @{ $z->{rule_outcomes} };
my $ocut = uri_unescape($o->{host} // '');
ok($ocut =~ /^www\.bigbank\.example\.com\.cdn-edge-cache-.*\Q$mark\E(?:[\w-]+\.)?node-7\.evil\.test$/,
   "rule_outcomes: cut, marked, the site whole ($ocut)");
ok(length($ocut) <= 63, 'rule_outcomes: within 63 bytes');

# Prometheus: by site
my $prom = $t->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_site_wasted\{zone="crawl",site="evil\.test"\} 33$/m,
     'Prometheus: evil.test, by site');
like($prom, qr/^simhash_site_wasted\{zone="crawl",site="honest\.test"\} 20$/m,
     'Prometheus: honest.test');
unlike($prom, qr/site="h\d+\.evil/, 'Prometheus: no subdomain as a site');

$t->check_log;
done_testing;
