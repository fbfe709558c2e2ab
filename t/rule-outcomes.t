#!/usr/bin/perl
# What the predictions of the learned URL rules came to (issue 36's rules
# view): per host and set of rules, the predictions made, and of those
# fetched to check them (simhash_dust_verify), the ones that were
# duplicates indeed (verified) and the ones that were not (failed), in
# simhash_stats' "rule_outcomes".  The origin answers f.html?sid=...
# with another page: the pinned rule's prediction fails there.
#
# Then per learned rule (issue 36's "predictions made, verified, failed per
# rule"): a second rule of the scope, a prediction by both at once, and the
# same rule pinned in another scope that predicted nothing; each rule's
# counts in "dust_rules", in "why?" and in Prometheus.

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
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=ref pin;
    simhash_dust_rule zone=crawl host=v.test pattern=/other/
                      drop_param=sid pin;
END
    origin => <<'END',
        location = /doc/f.html {
            if ($arg_sid) {
                rewrite ^ /doc/g.html break;
            }
        }
END
    proxy => <<'END',
        location /doc/ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 100%;
            simhash_action drop keys=any;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(3, 150, 8282);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/f.html', $pages[1]);
$t->write_file('html/doc/g.html', $pages[2]);
$t->start;

my ($st, $h) = $t->raw_get('/doc/a.html');
is($h->{'x-simhash-status'}, 'new', 'a.html: new');
($st, $h) = $t->raw_get('/doc/f.html');
is($h->{'x-simhash-status'}, 'new', 'f.html: new');

($st, $h) = $t->raw_get('/doc/a.html?sid=1');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)', 'a.html?sid=1: predicted');
is($h->{'x-simhash-status'}, 'duplicate', '... fetched: a duplicate indeed');
($st, $h) = $t->raw_get('/doc/a.html?sid=2');
is($h->{'x-simhash-status'}, 'duplicate', 'a.html?sid=2: the same');
($st, $h) = $t->raw_get('/doc/f.html?sid=3');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)', 'f.html?sid=3: predicted');
isnt($h->{'x-simhash-status'}, 'duplicate', '... fetched: another page');

my $z = $t->stats->{zones}{crawl};
my @o = @{ $z->{rule_outcomes} };
is(scalar @o, 1, 'one host and set of rules');
is($o[0]{host}, 'v.test', 'its host');
is($o[0]{rules}, 'drop_param(sid)', 'its rules');
is($o[0]{made}, 3, 'three predictions made');
is($o[0]{verified}, 2, 'two verified');
is($o[0]{failed}, 1, 'one failed');

# ---- per rule ------------------------------------------------------------

($st, $h) = $t->raw_get('/doc/a.html?ref=x');
is($h->{'x-simhash-predicted'}, 'drop_param(ref)', 'a.html?ref=x: predicted');
is($h->{'x-simhash-status'}, 'duplicate', '... verified');
($st, $h) = $t->raw_get('/doc/a.html?sid=4&ref=y');
like($h->{'x-simhash-predicted'} // '', qr/^drop_param\((sid|ref)\) /,
     'a.html?sid=4&ref=y: predicted by the two rules');
is($h->{'x-simhash-status'}, 'duplicate', '... verified');

$z = $t->stats->{zones}{crawl};
my %rule = map { ("$_->{pattern} $_->{kind}($_->{arg})" => $_) }
           @{ $z->{dust_rules} };
my $sid = $rule{'/doc/ drop_param(sid)'};
my $ref = $rule{'/doc/ drop_param(ref)'};
my $other = $rule{'/other/ drop_param(sid)'};
is_deeply([ map { $sid->{$_} } qw(made verified failed) ], [4, 3, 1],
          '/doc/ drop_param(sid): 4 made, 3 verified, 1 failed');
is_deeply([ map { $ref->{$_} } qw(made verified failed) ], [2, 2, 0],
          '/doc/ drop_param(ref): 2 made, 2 verified');
is_deeply([ map { $other->{$_} } qw(made verified failed) ], [0, 0, 0],
          'the same rule in /other/ predicted nothing: its own counts');

(my $q = 'http://v.test/doc/a.html?sid=9')
    =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
my $x = $t->stats("/stats?explain=$q");
my ($ev) = grep { $_->{arg} eq 'sid' } @{ $x->{prediction}{evidence} || [] };
is(scalar(grep { $_->{pattern} eq '/other/' }
           @{ $x->{prediction}{evidence} || [] }), 0,
   '"why?": not the same rule of another scope');
is_deeply([ map { $ev->{$_} } qw(made verified failed) ], [4, 3, 1],
          '"why?" gives the predicting rule\'s counts');

my $prom = $t->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_dust_rule_predictions\{zone="crawl",host="v\.test",
               pattern="\/doc\/",kind="drop_param",arg="sid",
               outcome="failed"\}\s1$/mx, 'Prometheus: the rule\'s failed');
like($prom, qr/^simhash_dust_rule_predictions\{[^}]*arg="ref",
               outcome="made"\}\s2$/mx, 'Prometheus: the other rule\'s made');
unlike($prom, qr/^simhash_dust_rule_predictions\{[^}]*pattern="\/other\/"/m,
       'a rule that predicted nothing is no series');

$t->check_log;
done_testing;
