#!/usr/bin/perl
# simhash_dust_verify's default (issue 23): one prediction in 16 is
# fetched anyway, and that fetch is decided like any page (its decision is
# the rule's new evidence); the other 15 are answered without the origin.
# A rule far past its sequential test is verified less, down to a quarter
# of the rate (sh_dust_sample, issue 34).
# A pinned rule predicts from the first variant on, so every request after
# the first is a prediction; the origin's access log counts the fetches.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
    simhash_dust_rule zone=crawl host=w.test pattern=/doc/
                      drop_param=sid pin;
    simhash_dust_rule zone=crawl host=x.test pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        simhash crawl;
        simhash_dust on;
        simhash_action drop;

        location /doc/ {
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location ~ ^/sample(/doc/.*)$ {
            simhash_key http://w.test$1$is_args$args;
            simhash_dust_verify 50%;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        # x.test: its rule's evidence grown by fetching every prediction
        # (/train/), then sampled at 50% (/mature/)
        location ~ ^/train(/doc/.*)$ {
            simhash_key http://x.test$1$is_args$args;
            simhash_dust_verify 100%;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        location ~ ^/mature(/doc/.*)$ {
            simhash_key http://x.test$1$is_args$args;
            simhash_dust_verify 50%;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        location = /stats {
            simhash_stats;
        }
END
    origin => <<'END',
        access_log %%PREFIX%%/logs/origin.log;
END
);

my @pages = $t->random_pages(3, 150, 4141);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->write_file('html/doc/c.html', $pages[2]);
$t->start;

# the origin logs a request as it ends, which may be after the proxy
# answered: wait for n lines
my $hits_settled = sub { $t->wait_lines('logs/origin.log', $_[0]) };

my $r = $t->get('/doc/a.html?sid=first');
is($r->{headers}{'x-simhash-status'}, 'new', 'the first variant: fetched');

# 400 predictions: fetched ~ Binomial(400, 1/16), mean 25, sd 4.8; the
# bounds are 4 sd away (a false failure about once in 30,000 runs), and
# exclude both 0% and the 50% of the location below.  Their fetches give
# the pin about 50 pairs, short of the full test (115), and farther still
# from the hold past it after which its sample shrinks (below).  Under valgrind 160: mean 10, sd 3.1,
# bounds 1 and 30 (none fetched: 3 in 100,000 runs).
my $n = $SimhashTest::VALGRIND ? 160 : 400;
my ($lo, $hi) = $SimhashTest::VALGRIND ? (1, 30) : (6, 44);
my ($fetched, $answered, $other) = (0, 0, 0);
# counted from the first variant's line: its fetch ends at the origin
# when it logs it, which may be after the proxy answered
my $before = $t->lines_after('logs/origin.log', qr{ /doc/a\.html\?sid=first });
for my $i (1 .. $n) {
    my ($status, $h) = $t->raw_get("/doc/a.html?sid=v$i");
    if (($h->{'x-simhash-predicted'} // '') ne 'drop_param(sid)') {
        $other++;
    } elsif ($status == 204 && !exists $h->{'x-simhash'}) {
        $answered++;            # answered before the upstream: no body
    } elsif ($status == 204 && ($h->{'x-simhash-status'} // '') eq
             'duplicate') {
        $fetched++;             # fetched, decided a duplicate, dropped
    } else {
        $other++;
    }
}
my $origin = $hits_settled->($before + $fetched) - $before;
is($other, 0, 'every variant predicted');
is($fetched + $answered, $n, 'every prediction answered or verified');
is($origin, $fetched, 'the origin saw exactly the verification fetches');
cmp_ok($fetched, '>=', $lo, "the default rate: $fetched of $n fetched "
                            . '(1 in 16 expected)');
cmp_ok($fetched, '<=', $hi, "the default rate: at most $hi");

my $dust = $t->stats->{zones}{crawl}{dust};
is($dust->{saved}, $answered, 'stats: the fetches saved');

# a location's own rate, for a rule still short of the full test (w.test's
# pin has no pairs yet; 30 verifications give it about 60, under the 115
# of the full test, and the hold past it after which its sample shrinks): Binomial(60, 1/2), sd 3.9, bounds 4 sd
# away
my $m = 60;
($lo, $hi) = (14, 46);
$t->get('/sample/doc/b.html?sid=first');
my ($sampled, $predicted) = (0, 0);
$before = $t->lines_after('logs/origin.log', qr{ /doc/b\.html\?sid=first });
for my $i (1 .. $m) {
    my ($status, $h) = $t->raw_get("/sample/doc/b.html?sid=w$i");
    $predicted++ if ($h->{'x-simhash-predicted'} // '') eq 'drop_param(sid)';
    $sampled++ if exists $h->{'x-simhash'};
}
is($predicted, $m, 'simhash_dust_verify 50%: every variant predicted');
cmp_ok($sampled, '>=', $lo, "simhash_dust_verify 50%: $sampled of $m "
                            . 'fetched');
cmp_ok($sampled, '<=', $hi, "simhash_dust_verify 50%: at most $hi");
is($hits_settled->($before + $sampled) - $before, $sampled,
   'simhash_dust_verify 50%: the origin saw those');

# a rule far past the full test is verified at a quarter of the rate
# (sh_dust_sample's floor): x.test's pin is given its pairs by fetching
# every prediction, then sampled at 50%: Binomial(400, 1/8), mean 50, sd
# 6.6, bounds 4 sd away and far from the 200 of the whole rate (under
# valgrind 120: mean 15, sd 3.6, the whole rate's 60 excluded)
my $rule_x = sub {
    my ($x) = grep { $_->{host} eq 'x.test' && $_->{arg} eq 'sid' }
              @{ $t->stats->{zones}{crawl}{dust_rules} };
    return $x;
};
$t->get('/train/doc/c.html?sid=first');
is($rule_x->()->{sample}, 1, 'a pin without pairs: the whole rate');
for my $i (1 .. 160) {
    $t->get("/train/doc/c.html?sid=t$i");
}
my $x = $rule_x->();
cmp_ok($x->{test}, '>', $x->{need} + 3 + log(4),
       "the trained pin: its test $x->{test} past the bound by the hold "
       . "(3) and ln 4");
is($x->{sample}, 0.25, 'the trained pin: a quarter of the rate');
my $k = $SimhashTest::VALGRIND ? 120 : 400;
($lo, $hi) = $SimhashTest::VALGRIND ? (2, 29) : (24, 76);
$before = $t->lines_after('logs/origin.log', qr{ /doc/c\.html\?sid=t160 });
($sampled, $predicted) = (0, 0);
for my $i (1 .. $k) {
    my ($status, $h) = $t->raw_get("/mature/doc/c.html?sid=m$i");
    $predicted++ if ($h->{'x-simhash-predicted'} // '') eq 'drop_param(sid)';
    $sampled++ if exists $h->{'x-simhash'};
}
is($predicted, $k, 'a trained rule: every variant predicted');
cmp_ok($sampled, '>=', $lo, "a trained rule at 50%: $sampled of $k fetched "
                            . '(1 in 8 expected)');
cmp_ok($sampled, '<=', $hi, "a trained rule at 50%: at most $hi");
is($hits_settled->($before + $sampled) - $before, $sampled,
   'a trained rule: the origin saw those');

$t->stop;
$t->check_log;

done_testing;
