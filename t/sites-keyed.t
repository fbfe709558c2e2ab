#!/usr/bin/perl
# The console's tables of what predictions came to cannot be aimed at:
# a host whose name was computed to land on another host's slot under an
# unkeyed hash (nginx's ngx_hash_key_lc, which placed the per-host outcome
# table and the per-rule 4-way sets) evicts nothing, because both tables
# are placed by hashes keyed by the zone's secret, as the sites are.
#  - the per-host outcomes: one host, evil, whose unkeyed slot is victim's,
#    makes a prediction; victim's "made" stays;
#  - the per-rule counts: four scopes of evil.test, computed to share
#    victim's rule's unkeyed set, each out-predict it; victim's rule keeps
#    its "made".
# The seed is fixed, so that the keyed placement is the same on every run.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

# nginx's ngx_hash_key(_lc), modulo 256 (the tables' 256 slots and sets):
# key * 31 + c, in which the low byte depends on low bytes only
sub nginx_hash_mod256 {
    my ($s, $lc) = @_;
    my $k = 0;
    for my $c (split //, $s) {
        $c = lc $c if $lc;
        $k = ($k * 31 + ord $c) % 256;
    }
    return $k;
}

# the host whose outcome slot, unkeyed, is victim.test's
my $want = nginx_hash_mod256('victim.test', 1);
my ($evil) = grep { nginx_hash_mod256($_, 1) == $want }
             map { "e$_.evil.test" } 1 .. 10000;
# four scopes whose rule set, unkeyed, is that of victim's rule in /doc/
my $scope = nginx_hash_mod256('doc', 0);
my @scopes = (grep { nginx_hash_mod256($_, 0) == $scope }
              map { "s$_" } 1 .. 100000)[0 .. 3];
ok($evil && @scopes == 4, "colliding names: $evil; @scopes");

my $rules = join '', map {
    "    simhash_dust_rule zone=crawl host=evil.test pattern=/$_/\n"
    . "                      drop_param=sid pin;\n" } @scopes;

my $t = SimhashTest->new(
    http => <<"END",
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=victim.test pattern=/doc/
                      drop_param=sid pin;
    simhash_dust_rule zone=crawl host=$evil pattern=/doc/
                      drop_param=sid pin;
$rules
END
    proxy => <<'END',
        location / {
            simhash crawl;
            simhash_seed "sites-keyed-test-seed-0123456789";
            simhash_dust on;
            simhash_dust_verify 0%;      # every prediction answered
            simhash_action drop keys=any;
            simhash_key http://$http_x_site$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(6, 150, 4545);
for my $d ('doc', @scopes) {
    mkdir $t->prefix . "/html/$d";
    $t->write_file("html/$d/a.html", shift @pages);
}
$t->start;

# a page, then n predictions of its session-id variants
sub predict {
    my ($site, $dir, $n) = @_;
    my ($st, $h) = $t->raw_get("/$dir/a.html", 'X-Site' => $site);
    like($h->{'x-simhash-status'} // '', qr/^(new|duplicate)$/,
         "$site/$dir/a.html: fetched");
    my $made = 0;
    for my $i (1 .. $n) {
        ($st, $h) = $t->raw_get("/$dir/a.html?sid=$i", 'X-Site' => $site);
        $made++ if ($h->{'x-simhash-predicted'} // '') eq 'drop_param(sid)';
    }
    is($made, $n, "$site/$dir: $n predictions");
}

predict('victim.test', 'doc', 5);
predict($evil, 'doc', 1);
predict('evil.test', $_, 6) for @scopes;

my $z = $t->stats->{zones}{crawl};
my ($o) = grep { $_->{host} eq 'victim.test' } @{ $z->{rule_outcomes} };
is($o && $o->{made}, 5,
   "per host: $evil, on victim.test's unkeyed slot, did not evict it");
my ($r) = grep { $_->{host} eq 'victim.test' } @{ $z->{dust_rules} };
is($r && $r->{made}, 5,
   'per rule: four scopes on its unkeyed set did not evict victim\'s rule');
my @evil = grep { $_->{host} eq 'evil.test' && $_->{made} == 6 }
           @{ $z->{dust_rules} };
is(scalar @evil, 4, 'and the four scopes have their own counts');

$t->check_log;
done_testing;
