#!/usr/bin/perl
# simhash_dust (issue 23): the DUST learner of a zone learns, from the
# module's own decisions, which URL differences do not change a page
# (here a session id) and then answers such URLs without fetching them.
# A real origin serves the pages; its own access log counts what reached
# it.  The locations key their documents as http://site.test/doc/...
# whatever the prefix they are asked under (/tag/, /verify/, ...), so they
# share one learner's host and scope.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SimhashTest;

# dust_precision=0.9: with no pair against, the Wilson bound at z = 2.58
# is n / (n + 6.656), so 60 clean pairs turn a rule on (src/sh_dust.h).
# dust=4m: at 1m (128 hosts, 8,192 evidence slots) the evidence of one of
# the first pages (p5) is evicted from its set by the time it is asked for
my $zone = 'simhash_zone zone=crawl:4m dust=4m dust_precision=0.9 '
         . 'dust_evidence=8 file=%%PREFIX%%/data/crawl.snap save=1s;';
my $pins = <<'END';
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=ref pin;
    simhash_dust_rule zone=crawl host=site.test pattern=/doc/
                      drop_param=utm forbid;
END

my $origin = <<'END';
        access_log %%PREFIX%%/logs/origin.log;
        large_client_header_buffers 4 80k;

        # the flag file makes the session id select the content
        location /doc/ {
            if (-f %%PREFIX%%/html/flag) {
                rewrite ^ /alt/$arg_sid.html break;
            }
        }
END

# a location per behaviour, each keying its documents on HOST/doc/...
sub loc {
    my ($prefix, $host, $body) = @_;
    return <<"END";
        location ~ ^/$prefix(/doc/.*)\$ {
            simhash_key http://$host\$1\$is_args\$args;
            proxy_pass http://%%ORIGIN%%\$1\$is_args\$args;
            $body
        }
END
}

my $proxy = <<'END'
        simhash crawl;
        simhash_probes 4096;
        large_client_header_buffers 4 80k;
        simhash_dust on;
        simhash_action drop;
        simhash_dust_verify 0%;

        location /doc/ {
            simhash_key http://site.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /other/ {
            simhash_key http://other.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location = /stats {
            simhash_stats;
        }
END
    . loc('tag', 'site.test', 'simhash_action tag;')
    . loc('verify', 'site.test', 'simhash_dust_verify 100%;')
    . loc('learn', 'site.test', 'simhash_dust learn;')
    . loc('cred', 'site.test', 'simhash_dust_credentials on;')
    . loc('pinned', 'pinned.test', '');

my $t = SimhashTest->new(http => "$zone\n$pins", proxy => $proxy,
                         origin => $origin);

my @pages = $t->random_pages(120, 150, 2323);
mkdir $t->prefix . "/html/$_" for qw(doc other alt);
$t->write_file("html/doc/p$_.html", $pages[$_ - 1]) for 1 .. 100;
$t->write_file("html/other/q$_.html", $pages[100 + $_ - 1]) for 1 .. 20;
my @alt = $t->random_pages(60, 150, 4747);
$t->write_file("html/alt/s$_.html", $alt[$_ - 1]) for 1 .. 59;
$t->write_file("html/alt/final.html", $alt[59]);

$t->start;

my $hits = sub { my $l = $t->read_file('logs/origin.log') // '';
                 scalar(() = $l =~ /\n/g) };
my $rule = sub {
    my ($host, $kind, $arg) = @_;
    for my $r (@{ $t->stats->{zones}{crawl}{dust_rules} // [] }) {
        return $r if $r->{host} eq $host && $r->{kind} eq $kind
                     && ($r->{arg} // '') eq ($arg // '');
    }
    return undef;
};

# -- learning: pairs of session-id variants of one page, fetched in tag
# mode; the second of each is a duplicate of the first

my $on_at;
for my $i (1 .. 80) {
    my $a = $t->get("/tag/doc/p$i.html?sid=a$i");
    my $b = $t->get("/tag/doc/p$i.html?sid=b$i");
    if ($i == 1) {
        is($a->{headers}{'x-simhash-status'}, 'new', 'first variant: new');
        is($b->{headers}{'x-simhash-status'}, 'duplicate',
           'second variant: duplicate');
    }
    if (!$on_at && $t->error_log =~ /rule drop_param\(sid\) for site\.test/) {
        $on_at = $i;
    }
}
ok($on_at && $on_at >= 55 && $on_at <= 65,
   "the rule turns on after about 60 pairs (at " . ($on_at // 'never') . ")");
like($t->error_log,
     qr/\[info\].*simhash zone "crawl": rule drop_param\(sid\) for site\.test \/doc\/ on \(was candidate\): \d+ pairs, 0 against, precision >= 0\.9/,
     'the rule change is logged at info');
my @on = $t->error_log =~ /rule drop_param\(sid\) for site\.test \/doc\/ on/g;
is(scalar @on, 1, 'logged once');

# -- drop mode: a new session id of a known page, answered at once

my $before = $hits->();
my ($status, $h, $body) = $t->raw_get('/doc/p3.html?sid=zzz');
is($status, 204, 'predicted: dropped with the location\'s drop status');
is($h->{'x-simhash-status'}, 'duplicate', 'predicted: X-Simhash-Status');
is($h->{'x-simhash-duplicate-of'}, 'http://site.test/doc/p3.html?sid=a3',
   'predicted: X-Simhash-Duplicate-Of names the original');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)',
   'predicted: X-Simhash-Predicted names the rule');
is($body, '', 'predicted: empty body');
is($hits->(), $before, 'predicted: the origin was not asked');

# HEAD too
my $r = $t->head('/doc/p4.html?sid=head');
is($r->{status}, 204, 'HEAD: predicted');
is($hits->(), $before, 'HEAD: the origin was not asked');

# a page never seen: fetched
($status, $h) = $t->raw_get('/doc/p95.html?sid=x');
is($status, 200, 'an unknown page: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'an unknown page: no prediction');
is($hits->(), $before + 1, 'an unknown page: reached the origin');

# -- tag mode: fetched and tagged, the prediction along
$before = $hits->();
$r = $t->get("/tag/doc/p5.html?sid=tag");
is($r->{status}, 200, 'tag mode: fetched');
is($r->{headers}{'x-simhash-predicted'}, 'drop_param(sid)',
   'tag mode: X-Simhash-Predicted');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'tag mode: decided');
is($r->{content}, $pages[4], 'tag mode: the whole page');
is($hits->(), $before + 1, 'tag mode: the origin was asked');

# -- verification: simhash_dust_verify 100% fetches every prediction
$before = $hits->();
($status, $h) = $t->raw_get('/verify/doc/p6.html?sid=v');
is($hits->(), $before + 1, 'verify 100%: fetched');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)',
   'verify: the prediction is told');
is($h->{'x-simhash-status'}, 'duplicate', 'verify: the fetch decided');
is($status, 204, 'verify: then dropped as any duplicate');

# -- learn only: never predicted
$before = $hits->();
($status, $h) = $t->raw_get('/learn/doc/p7.html?sid=l');
is($hits->(), $before + 1, 'simhash_dust learn: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'simhash_dust learn: no prediction');

# -- POST is never predicted
$before = $hits->();
$r = $t->{ua}->request('POST', $t->url('/doc/p8.html?sid=post'),
                       { content => 'a=b' });
is($hits->(), $before + 1, 'POST: fetched');
ok(!exists $r->{headers}{'x-simhash-predicted'}, 'POST: no prediction');

# -- credentials
$before = $hits->();
($status, $h) = $t->raw_get('/doc/p9.html?sid=c1', Cookie => 'u=1');
is($hits->(), $before + 1, 'Cookie: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'Cookie: no prediction');
($status, $h) = $t->raw_get('/doc/p10.html?sid=c2',
                            Authorization => 'Basic dTpw');
is($hits->(), $before + 2, 'Authorization: fetched');
($status, $h) = $t->raw_get('/cred/doc/p11.html?sid=c3', Cookie => 'u=1');
is($status, 204, 'simhash_dust_credentials on: predicted');
is($hits->(), $before + 2, 'simhash_dust_credentials on: not fetched');

$t->stop;
$t->check_log;

done_testing;
