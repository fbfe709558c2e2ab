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
my $pins = <<"END";
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=ref pin;
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      index_file=index.html pin;
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=s\xc3\xa9 pin;
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_value=lang=en pin;
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=utm_* pin;
    simhash_dust_rule zone=crawl host=site.test pattern=/doc/
                      drop_param=utm forbid;
    simhash_dust_rule zone=crawl host=pinned.test pattern=/w/index.php
                      param_path=title=/wiki/ pin;
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
        add_header X-Var-Predicted "[$simhash_predicted]" always;

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
    . loc('pinned', 'pinned.test', '')
    . <<'END';
        # pinned.test's pages under a /lite/ prefix: the same files
        location ~ ^/lited/lite(/doc/.*)$ {
            simhash_key http://pinned.test/lite$1$is_args$args;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        # pinned.test's wiki: /wiki/T and /w/index.php?title=T, one file
        location /wiki/ {
            simhash_key http://pinned.test$request_uri;
            proxy_pass http://%%ORIGIN%%/doc/;
        }

        location = /w/index.php {
            simhash_key http://pinned.test$request_uri;
            proxy_pass http://%%ORIGIN%%/doc/$arg_title;
        }
END

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

my $hits = sub { $t->lines_of('logs/origin.log') };
# the origin logs a request when it ends: a POST it refuses only once it
# has read the body, which may be after the proxy answered
my $hits_at_least = sub { $t->wait_lines('logs/origin.log', $_[0]) };
# the count once the origin has logged the fetch of `uri` (a count taken
# right after that fetch may not have its line yet)
my $hits_after = sub {
    $t->lines_after('logs/origin.log', qr{ \Q$_[0]\E HTTP/});
};
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
     qr/\[notice\].*simhash zone "crawl": rule drop_param\(sid\) for site\.test \/doc\/ on \(was candidate\): \d+ pairs, 0 against, precision >= 0\.\d+, test [\d.]+ >= [\d.]+/,
     'the rule change is logged at info');
my @on = $t->error_log =~ /rule drop_param\(sid\) for site\.test \/doc\/ on/g;
is(scalar @on, 1, 'logged once');

# -- drop mode: a new session id of a known page, answered at once

my $before = $hits_after->('/doc/p80.html?sid=b80');
my ($status, $h, $body) = $t->raw_get('/doc/p3.html?sid=zzz');
is($status, 204, 'predicted: dropped with the location\'s drop status');
is($h->{'x-simhash-status'}, 'duplicate', 'predicted: X-Simhash-Status');
is($h->{'x-simhash-duplicate-of'}, 'http://site.test/doc/p3.html?sid=a3',
   'predicted: X-Simhash-Duplicate-Of names the original');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)',
   'predicted: X-Simhash-Predicted names the rule');
is($body, '', 'predicted: empty body');
is($hits->(), $before, 'predicted: the origin was not asked');
is($h->{'x-var-predicted'}, '[drop_param(sid)]', 'predicted: $simhash_predicted');

# HEAD too
my $r = $t->head('/doc/p4.html?sid=head');
is($r->{status}, 204, 'HEAD: predicted');
is($hits->(), $before, 'HEAD: the origin was not asked');

# a page never seen: fetched
($status, $h) = $t->raw_get('/doc/p95.html?sid=x');
is($status, 200, 'an unknown page: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'an unknown page: no prediction');
is($h->{'x-var-predicted'}, '[]', 'an unknown page: $simhash_predicted empty');
is($hits_at_least->($before + 1), $before + 1, 'an unknown page: reached the origin');

# -- tag mode: fetched and tagged, the prediction along
$before = $hits->();
$r = $t->get("/tag/doc/p5.html?sid=tag");
is($r->{status}, 200, 'tag mode: fetched');
is($r->{headers}{'x-simhash-predicted'}, 'drop_param(sid)',
   'tag mode: X-Simhash-Predicted');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'tag mode: decided');
is($r->{content}, $pages[4], 'tag mode: the whole page');
is($hits_at_least->($before + 1), $before + 1, 'tag mode: the origin was asked');

# -- verification: simhash_dust_verify 100% fetches every prediction
$before = $hits->();
($status, $h) = $t->raw_get('/verify/doc/p6.html?sid=v');
is($hits_at_least->($before + 1), $before + 1, 'verify 100%: fetched');
is($h->{'x-simhash-predicted'}, 'drop_param(sid)',
   'verify: the prediction is told');
is($h->{'x-simhash-status'}, 'duplicate', 'verify: the fetch decided');
is($status, 204, 'verify: then dropped as any duplicate');

# -- learn only: never predicted
$before = $hits->();
($status, $h) = $t->raw_get('/learn/doc/p7.html?sid=l');
is($hits_at_least->($before + 1), $before + 1, 'simhash_dust learn: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'simhash_dust learn: no prediction');

# -- POST is never predicted
$before = $hits->();
$r = $t->{ua}->request('POST', $t->url('/doc/p8.html?sid=post'),
                       { content => 'a=b' });
is($hits_at_least->($before + 1), $before + 1, 'POST: fetched');
ok(!exists $r->{headers}{'x-simhash-predicted'}, 'POST: no prediction');

# -- credentials
$before = $hits->();
($status, $h) = $t->raw_get('/doc/p9.html?sid=c1', Cookie => 'u=1');
is($hits_at_least->($before + 1), $before + 1, 'Cookie: fetched');
ok(!exists $h->{'x-simhash-predicted'}, 'Cookie: no prediction');
($status, $h) = $t->raw_get('/doc/p10.html?sid=c2',
                            Authorization => 'Basic dTpw');
is($hits_at_least->($before + 2), $before + 2, 'Authorization: fetched');
($status, $h) = $t->raw_get('/cred/doc/p11.html?sid=c3', Cookie => 'u=1');
is($status, 204, 'simhash_dust_credentials on: predicted');
is($hits_at_least->($before + 2), $before + 2, 'simhash_dust_credentials on: not fetched');

# -- the stats: the learner's counters and its rules

my $st = $t->stats->{zones}{crawl};
ok($st->{dust}{observations} >= 160, 'stats: observations counted');
ok($st->{dust}{predictions} >= 5, 'stats: predictions counted');
ok($st->{dust}{saved} >= 3, 'stats: fetches saved counted');
is($st->{dust}{activations}, 1, 'stats: one rule turned on');
my $sid = $rule->('site.test', 'drop_param', 'sid');
ok($sid, 'stats: the sid rule is listed');
is($sid->{state}, 'active', 'stats: active');
is($sid->{pattern}, '/doc/', 'stats: its pattern');
ok($sid->{support} >= 60, 'stats: its support');
is($sid->{against}, 0, 'stats: nothing against');
ok($sid->{precision_lower} >= 0.9, 'stats: its bound');
ok($sid->{need} > 0 && $sid->{test} >= $sid->{need},
   "stats: its sequential test reached its need ($sid->{test} >= "
   . "$sid->{need})");
ok($sid->{sample} >= 0.25 && $sid->{sample} <= 1,
   "stats: its verification share, 0.25 to 1 ($sid->{sample})");
ok($sid->{host_saved} >= 3, 'stats: fetches saved on its host');
my $prom = $t->get('/stats?format=prometheus')->{content};
like($prom, qr/^simhash_dust_saved_total\{zone="crawl"\} \d+$/m,
     'Prometheus: fetches saved');
like($prom, qr/^simhash_dust_rule_support\{zone="crawl",host="site\.test",pattern="\/doc\/",kind="drop_param",arg="sid",state="active"\} \d+$/m,
     'Prometheus: the rule');

# -- reload: a kept zone keeps its learner (rules and evidence); new
# thresholds keep the rules; a resized zone takes them over
SKIP: {
    skip $SimhashTest::NO_RELOAD, 4 if $SimhashTest::NO_RELOAD;

    $t->reload;
    ($status, $h) = $t->raw_get('/doc/p13.html?sid=reload');
    is($h->{'x-simhash-predicted'}, 'drop_param(sid)',
       'reload: the learner is kept, evidence and all');

    $t->set(http => ($zone =~ s/dust_precision=0\.9 /dust_precision=0.91 /r)
                    . "\n$pins")->reload;
    is($rule->('site.test', 'drop_param', 'sid')->{state}, 'active',
       'reload with another dust_precision: the rule kept');

    $t->set(http => ($zone =~ s/crawl:4m/crawl:5m/r) . "\n$pins")->reload;
    like($t->error_log, qr/simhash zone "crawl" resized/, 'resized');
    is($rule->('site.test', 'drop_param', 'sid')->{state}, 'active',
       'resize: the rules taken over');

    $t->set(http => "$zone\n$pins")->reload;
}

# -- pins: drop_param(ref) pinned on pinned.test predicts at once
$before = $hits->();
($status, $h) = $t->raw_get('/pinned/doc/p20.html?ref=a');
ok(!exists $h->{'x-simhash-predicted'},
   'pinned host: the first variant not predicted (nothing known)');
($status, $h) = $t->raw_get('/pinned/doc/p20.html?ref=b');
is($status, 204, 'pinned rule: predicted without any pair');
is($h->{'x-simhash-predicted'}, 'drop_param(ref)', 'pinned rule: named');
is($hits_at_least->($before + 1), $before + 1, 'pinned rule: one fetch in all');
is($rule->('pinned.test', 'drop_param', 'ref')->{state}, 'pinned',
   'stats: pinned');

# a rule's argument is spelled as URLs spell it: in a header, a byte that
# is not printable ASCII is percent-encoded
$t->raw_get("/pinned/doc/p21.html?s\xc3\xa9=1");
($status, $h) = $t->raw_get("/pinned/doc/p21.html?s\xc3\xa9=2");
is($h->{'x-simhash-predicted'}, 'drop_param(s%C3%A9)',
   'a non-ASCII argument: percent-encoded in X-Simhash-Predicted');
ok($rule->('pinned.test', 'drop_param', 's%C3%A9'),
   'a non-ASCII argument: percent-encoded in the stats');

# a pinned value rule drops that one value only: lang=en is the page,
# lang=fr is fetched
$t->raw_get('/pinned/doc/p22.html');
$before = $hits_after->('/doc/p22.html');
($status, $h) = $t->raw_get('/pinned/doc/p22.html?lang=en');
is($status, 204, 'pinned drop_value: the default value predicted');
is($h->{'x-simhash-predicted'}, 'drop_value(lang=en)',
   'pinned drop_value: named with its value');
is($hits->(), $before, 'pinned drop_value: not fetched');
($status, $h) = $t->raw_get('/pinned/doc/p22.html?lang=fr');
ok(!exists $h->{'x-simhash-predicted'},
   'pinned drop_value: another value is not predicted');
is($hits_at_least->($before + 1), $before + 1, 'pinned drop_value: another value fetched');

# a pinned family of parameters: every utm_* name, together or alone
$t->raw_get('/pinned/doc/p23.html');
$before = $hits_at_least->($before + 2);
($status, $h) = $t->raw_get('/pinned/doc/p23.html?utm_source=news'
                            . '&utm_medium=email&utm_campaign=x');
is($status, 204, 'pinned family: utm_source, utm_medium, utm_campaign');
is($h->{'x-simhash-predicted'}, 'drop_param(utm_*)',
   'pinned family: named as the family');
($status, $h) = $t->raw_get('/pinned/doc/p23.html?utm_term=q');
is($status, 204, 'pinned family: a member alone');
is($hits->(), $before, 'pinned family: not fetched');

# the canonical URL itself, asked for after a variant that two rules
# changed (no one rule maps the variant onto it): predicted, named by a
# rule that made the form (issue 34, seventh round)
$t->raw_get('/pinned/doc/p24.html?ref=a&lang=en');
$before = $hits_after->('/doc/p24.html?ref=a&lang=en');
($status, $h) = $t->raw_get('/pinned/doc/p24.html');
is($status, 204, 'the canonical form of a two-rule variant: predicted');
like($h->{'x-simhash-predicted'} // '',
     qr/^(?:drop_param\(ref\)|drop_value\(lang=en\))$/,
     'the canonical form: named by a rule that made it');
is($hits->(), $before, 'the canonical form: not fetched');

# -- keys=path (drop mode's default) and a path rule: the original must
# have the request's path once the rules rewrote both.  /doc/d1/index.html
# by index_file(index.html) is /doc/d1/: answered without a fetch.
my @items = $t->random_pages(1, 150, 5151);
mkdir $t->prefix . '/html/doc/d1';
$t->write_file('html/doc/d1/index.html', $items[0]);
($status, $h) = $t->raw_get('/pinned/doc/d1/');
is($h->{'x-simhash-status'}, 'new', 'path rule: the directory fetched');
$before = $hits_after->('/doc/d1/');
($status, $h) = $t->raw_get('/pinned/doc/d1/index.html');
is($status, 204, 'path rule, keys=path: the index file dropped');
is($h->{'x-simhash-predicted'}, 'index_file(index.html)',
   'path rule: named');
is($h->{'x-simhash-duplicate-of'}, 'http://pinned.test/doc/d1/',
   'path rule: a duplicate of the directory');
is($hits->(), $before, 'path rule, keys=path: not fetched');

# ... but a prediction whose document is another item's page is fetched:
# item.html is p96's text under another name (a fingerprint duplicate,
# tagged, not dropped: keys=path), so drop_param(ref) predicts its next
# variant as a duplicate of p96.html, which no rule gives item.html's path
$t->get('/pinned/doc/p96.html');
$t->write_file('html/doc/item.html', $pages[95]);
$r = $t->get('/pinned/doc/item.html?ref=a');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'another item: a fingerprint duplicate');
is($r->{status}, 200, 'another item: tagged, not dropped (keys=path)');
$before = $hits_after->('/doc/item.html?ref=a');
($status, $h) = $t->raw_get('/pinned/doc/item.html?ref=b');
is($h->{'x-simhash-predicted'}, 'drop_param(ref)',
   'another item: predicted');
is($status, 200, 'another item, keys=path: the prediction not answered');
is($hits_at_least->($before + 1), $before + 1, 'another item: fetched');

# ... and one whose original is under a path that a path rule, not yet on,
# relates: 14 pages fetched both as /doc/X and /lite/doc/X give
# drop_component(lite) 14 clean pairs, past the test at the cap (12 at
# dust_precision=0.9) and short of turning on (56).  A new page first
# fetched under /lite/ is then dropped when a ref variant of its /doc/ path
# is predicted from another one that was fetched.
for my $i (30 .. 43) {
    $t->get("/pinned/doc/p$i.html");
    $t->get("/lited/lite/doc/p$i.html");
}
my ($lite) = grep { $_->{host} eq 'pinned.test'
                   && $_->{kind} eq 'drop_component' && $_->{arg} eq 'lite' }
            @{ $t->stats('/stats?dust=candidates')->{zones}{crawl}
                 {dust_rules} };
is($lite && $lite->{state}, 'candidate', 'supported path rule: a candidate');
ok($lite && $lite->{test} > 1.1 && $lite->{test} < $lite->{need},
   'supported path rule: past the cap (1.10), short of its need');
is($lite && $lite->{sample}, 1, 'a candidate: no verification share');
$t->write_file('html/doc/fresh.html', ($t->random_pages(1, 150, 6161))[0]);
is($t->get('/lited/lite/doc/fresh.html?ref=a')->{headers}{'x-simhash-status'},
   'new', 'supported path rule: the original under /lite/');
$r = $t->get('/pinned/doc/fresh.html?ref=b');
is($r->{status}, 200, 'supported path rule: a fetched duplicate, passed on');
$before = $hits_after->('/doc/fresh.html?ref=b');
($status, $h) = $t->raw_get('/pinned/doc/fresh.html?ref=c');
is($h->{'x-simhash-predicted'}, 'drop_param(ref)',
   'supported path rule: predicted by the pinned rule');
is($status, 204, 'supported path rule, keys=path: dropped');
is($h->{'x-simhash-duplicate-of'}, 'http://pinned.test/lite/doc/fresh.html?ref=a',
   'supported path rule: a duplicate of the /lite/ original');
is($hits->(), $before, 'supported path rule: not fetched');

# ... and one whose document was first fetched under another path (a
# Drupal node and its path alias): the variant's canonical form was itself
# fetched, and passed on as a duplicate, so the crawler has it; the
# prediction is answered naming that URL.  ("another item" above: its
# canonical form was only fetched with a ref, and stays fetched.)
my $same = ($t->random_pages(1, 150, 6262))[0];
$t->write_file('html/doc/node7.html', $same);
$t->write_file('html/doc/news-a.html', $same);
is($t->get('/pinned/doc/node7.html')->{headers}{'x-simhash-status'}, 'new',
   'path alias: the original under its node path');
$r = $t->get('/pinned/doc/news-a.html');
is($r->{headers}{'x-simhash-duplicate-of'}, 'http://pinned.test/doc/node7.html',
   'path alias: the alias a duplicate of the node');
is($r->{status}, 200, 'path alias: passed on (keys=path)');
$before = $hits_after->('/doc/news-a.html');
($status, $h) = $t->raw_get('/pinned/doc/news-a.html?ref=feed');
is($h->{'x-simhash-predicted'}, 'drop_param(ref)', 'path alias: predicted');
is($status, 204, 'path alias, keys=path: dropped');
is($h->{'x-simhash-duplicate-of'}, 'http://pinned.test/doc/news-a.html',
   'path alias: named by its fetched canonical form');
is($hits->(), $before, 'path alias: not fetched');

# a pinned param_path: the script's URL of a page fetched under its path
# is a predicted duplicate, dropped without the upstream (keys=path: the
# rule makes the two paths one)
$t->write_file('html/doc/Main_Page.html',
               ($t->random_pages(1, 150, 6363))[0]);
is($t->get('/wiki/Main_Page.html')->{headers}{'x-simhash-status'}, 'new',
   'param_path: the article under its path');
$before = $hits_after->('/doc/Main_Page.html');
($status, $h) = $t->raw_get('/w/index.php?title=Main_Page.html');
is($h->{'x-simhash-predicted'}, 'param_path(title=/wiki/)',
   'param_path: the script URL predicted');
is($status, 204, 'param_path: dropped');
is($h->{'x-simhash-duplicate-of'},
   'http://pinned.test/wiki/Main_Page.html',
   'param_path: a duplicate of the article');
is($hits->(), $before, 'param_path: not fetched');
($status, $h) = $t->raw_get('/w/index.php?title=Other_Page.html');
ok(!exists $h->{'x-simhash-predicted'},
   'param_path: a title never fetched: no prediction');

# forbid: drop_param(utm) never turns on, whatever the evidence
for my $i (21 .. 90) {
    $t->get("/tag/doc/p$i.html?utm=x$i");
    $t->get("/tag/doc/p$i.html?utm=y$i");
}
$r = $t->get('/tag/doc/p22.html?utm=z');
ok(!exists $r->{headers}{'x-simhash-predicted'},
   'forbidden rule: no prediction');
my $utm = $rule->('site.test', 'drop_param', 'utm');
is($utm && $utm->{state}, 'forbidden', 'stats: forbidden');
ok($utm && $utm->{support} >= 60, 'forbidden: with the evidence to be on');

# -- a site without DUST: distinct pages, with parameters: no prediction
my $predicted = 0;
for my $i (1 .. 20) {
    for my $u ("/other/q$i.html", "/other/q$i.html?view=$i") {
        $r = $t->get($u);
        $predicted++ if exists $r->{headers}{'x-simhash-predicted'};
    }
}
is($predicted, 0, 'a site without DUST: no prediction');
my ($other) = grep { $_->{host} eq 'other.test' }
              @{ $t->stats->{zones}{crawl}{dust_rules} };
ok(!$other, 'a site without DUST: no rule');
# ... its candidates are listed when asked for: the view parameter's 20
# pairs (one page each, q$i and q$i?view=$i), far from the 60 needed
my ($view) = grep { $_->{host} eq 'other.test' && $_->{kind} eq 'drop_param'
                    && $_->{arg} eq 'view' }
             @{ $t->stats('/stats?dust=candidates')->{zones}{crawl}{dust_rules} };
is($view && $view->{state}, 'candidate', '?dust=candidates: a candidate');
ok($view && $view->{support} >= 10 && $view->{support} <= 20,
   '?dust=candidates: with its pairs (' . ($view ? $view->{support} : '-')
   . ')');
like($t->get('/stats?format=prometheus&dust=candidates')->{content},
     qr/^simhash_dust_rule_support\{zone="crawl",host="other\.test",pattern="\/other\/",kind="drop_param",arg="view",state="candidate"\} \d+$/m,
     '?dust=candidates: in Prometheus too');

# -- hostile URLs: passed through, the worker alive
my @workers = $t->children;
my $long = '/doc/p30.html?sid=' . ('a' x (64 * 1024));
($status) = $t->raw_get($long);
ok($status == 200 || $status == 204, "a 64 KB URL: answered ($status)");
my $many = '/doc/p31.html?' . join('&', map { "k$_=$_" } 1 .. 1000);
($status, $h) = $t->raw_get($many);
ok($status == 200 || $status == 204, "1,000 parameters: answered ($status)");
ok(!exists $h->{'x-simhash-predicted'}, '1,000 parameters: not predicted');
($status, $h) = $t->raw_get('/doc/p32.html?%73id=enc&%00=%ff&a%=b');
ok($status == 200 || $status == 204, "percent-encoded names: answered");
($status, $h) = $t->raw_get('/doc/p33.html?sid=1&sid=2&sid=3&sid=');
ok($status == 200 || $status == 204, "repeated parameters: answered");
is(join(',', $t->children), join(',', @workers), 'the worker is alive');
ok($t->stats->{zones}{crawl}{dust}{refused} >= 2,
   'stats: the refused URLs counted');
unlike($t->error_log, qr/exited on signal/, 'no worker died');

# -- restart: the rules come back with the snapshot
$t->stop;
my $snap = $t->prefix . '/data/crawl.snap';
SKIP: {
    skip 'no SH_CLI', 2 unless $ENV{SH_CLI} && -x $ENV{SH_CLI};
    my $out = `$ENV{SH_CLI} index rules $snap`;
    like($out, qr/^site\.test\t\/doc\/\tdrop_param\(sid\)\tactive\t\d+\t0\t0\.9\d+$/m,
         'simhash index rules: the learned rule');
    like($out, qr/^pinned\.test\t\/doc\/\tdrop_param\(ref\)\tpinned\t/m,
         'simhash index rules: the pinned rule');
}
# the configuration changed meanwhile: the utm forbid gone, a pin added
my $pins2 = <<'END';
    simhash_dust_rule zone=crawl host=pinned.test pattern=/doc/
                      drop_param=ref pin;
    simhash_dust_rule zone=crawl host=site.test pattern=/doc/
                      sort_params pin;
END
$t->set(http => "$zone\n$pins2");
$t->start;
like($t->error_log, qr/simhash zone "crawl": DUST rules restored/,
     'restart: rules restored');
is($rule->('site.test', 'sort_params', '')->{state}, 'pinned',
   'restart: a pin added to the configuration applies over the file');
my $utm2 = $rule->('site.test', 'drop_param', 'utm');
ok(!$utm2 || $utm2->{state} ne 'forbidden',
   'restart: a forbid gone from the configuration is lifted ('
   . ($utm2 ? $utm2->{state} : 'not listed') . ')');
is($rule->('site.test', 'drop_param', 'sid')->{state}, 'active',
   'restart: the sid rule is still on');
# the evidence refills: one fetch of a page, then its variants predicted
$t->get('/tag/doc/p40.html?sid=after1');
$before = $hits_after->('/doc/p40.html?sid=after1');
($status, $h) = $t->raw_get('/doc/p40.html?sid=after2');
is($status, 204, 'restart: predicted without learning again');
is($hits->(), $before, 'restart: not fetched');

# -- retirement: the session id starts to select the content
$t->write_file('html/flag', '');
my $off_at;
for my $i (1 .. 30) {
    $t->get("/tag/doc/p" . (60 + $i) . ".html?sid=s$i");
    $t->get("/tag/doc/p" . (60 + $i) . ".html?sid=s" . ($i + 20));
    if ($t->error_log =~ /rule drop_param\(sid\) for site\.test \/doc\/ off/) {
        $off_at = $i;
        last;
    }
}
ok($off_at, 'retirement: the rule is retired once pairs disagree (after '
            . ($off_at // 'never') . ')');
like($t->error_log, qr/\[notice\].*rule drop_param\(sid\) for site\.test \/doc\/ off \(was active\): \d+ pairs, [1-9]\d* against/,
     'retirement: logged');
is($rule->('site.test', 'drop_param', 'sid')->{state}, 'retired',
   'stats: retired');
$before = $off_at ? $hits_after->('/doc/p' . (60 + $off_at) . '.html?sid=s'
                                  . ($off_at + 20))
                  : $hits->();
($status, $h) = $t->raw_get('/doc/p12.html?sid=final');
ok(!exists $h->{'x-simhash-predicted'}, 'retired: no prediction');
is($hits_at_least->($before + 1), $before + 1, 'retired: fetched');
unlink $t->prefix . '/html/flag';

# -- a damaged rules section costs the rules, never the documents
$t->stop;
{
    open(my $fh, '+<', $snap) or die "$snap: $!";
    binmode $fh;
    my $size = -s $fh;
    seek($fh, $size - 32, 0);
    read($fh, my $footer, 32);
    is(substr($footer, 0, 8), 'SHZTAIL1', 'the snapshot ends with the tail');
    my $len = unpack('V', substr($footer, 8, 4));
    seek($fh, $size - 32 - int($len / 2), 0);
    read($fh, my $c, 1);
    seek($fh, $size - 32 - int($len / 2), 0);
    print $fh chr(ord($c) ^ 0x20);
    close $fh;
}
$t->start;
like($t->error_log, qr/snapshot "\Q$snap\E" is damaged: its DUST rules are damaged and were not restored; every document was/,
     'a damaged rules section: said');
ok($t->stats->{zones}{crawl}{snapshot}{restored} >= 100,
   'a damaged rules section: the documents restored');
ok(!$rule->('site.test', 'drop_param', 'sid'),
   'a damaged rules section: the learned rules are gone');
is($rule->('pinned.test', 'drop_param', 'ref')->{state}, 'pinned',
   'a damaged rules section: the configuration\'s pins are there');

# -- another simhash_seed: the learner starts empty (its hashes were keyed
# by the old one), the pins applied again
SKIP: {
    skip $SimhashTest::NO_RELOAD, 3 if $SimhashTest::NO_RELOAD;

    $t->get('/tag/doc/p50.html?sid=seed1');
    ok($t->stats->{zones}{crawl}{dust}{hosts} >= 1, 'hosts before');
    $t->set(http => "$zone\n$pins2\nsimhash_seed another-secret;")->reload;
    like($t->error_log, qr/simhash_seed changed, the DUST learner starts empty/,
         'another seed: the learner starts empty');
    is($rule->('pinned.test', 'drop_param', 'ref')->{state}, 'pinned',
       'another seed: the pins again');
}

$t->stop;
$t->check_log;

# -- nginx -t
my @bad = (
    [ 'simhash_zone zone=z:1m dust=10k;',
      qr/dust=10240 is too small for the DUST learner of zone "z": at least \d+ bytes \(16 hosts\) in \S+nginx\.conf:\d+/ ],
    [ 'simhash_zone zone=z:1m dust=1m dust_precision=1.5;',
      qr/invalid "dust_precision=1\.5"/ ],
    [ 'simhash_zone zone=z:1m dust=1m dust_evidence=0;',
      qr/invalid "dust_evidence=0"/ ],
    [ 'simhash_zone zone=z:1m dust_precision=0.9;',
      qr/"dust_precision" and "dust_evidence" need the "dust" parameter/ ],
    [ 'simhash_zone zone=z:1m; simhash_dust_rule zone=z host=a.test '
      . 'drop_param=sid pin;',
      qr/simhash zone "z" has no DUST learner .* in .*nginx\.conf:\d+/ ],
    [ 'simhash_zone zone=z:1m dust=1m; simhash_dust_rule zone=z '
      . 'host=a.test drop_params=sid pin;',
      qr/invalid rule "drop_params=sid"/ ],
    [ 'simhash_zone zone=z:1m dust=1m; simhash_dust_rule zone=z '
      . 'host=a.test drop_param=sid keep;',
      qr/invalid "keep": the last parameter is "pin" or "forbid"/ ],
    [ 'simhash_zone zone=z:1m dust=1m; simhash_dust_rule zone=y '
      . 'host=a.test sort_params pin;',
      qr/unknown simhash zone "y"/ ],
    [ 'simhash_zone zone=z:1m dust=1m; simhash_dust_rule zone=z '
      . 'host=a.test pattern=/a/b/ drop_param=sid pin;',
      qr{invalid "pattern=/a/b/": a first path component, "/dir/", "/" for root-level files, or a script, "/dir/page\.php"} ],
    # a dot in a document's name is no script: no such scope is learned
    [ 'simhash_zone zone=z:1m dust=1m; simhash_dust_rule zone=z '
      . 'host=a.test pattern=/doc/email.parser drop_param=sid pin;',
      qr{invalid "pattern=/doc/email\.parser"} ],
);
# a script's scope is a pattern too (docs/DUST.md, "Rules and their scope")
{
    my $n = SimhashTest->new(http => 'simhash_zone zone=z:1m dust=1m; '
                             . 'simhash_dust_rule zone=z host=a.test '
                             . 'pattern=/store/Cart.aspx drop_param=ref pin; '
                             . 'simhash_dust_rule zone=z host=a.test '
                             . 'pattern=/store/ drop_component=(S(*)) pin; '
                             . 'simhash_dust_rule zone=z host=a.test '
                             . 'pattern=/manual/ drop_value=v=(hex) pin; '
                             . 'simhash_dust_rule zone=z host=a.test '
                             . 'pattern=/w/index.php param_path=title=/wiki/ '
                             . 'pin;',
                             proxy => 'location / { simhash z; }');
    $n->write_config;
    my ($rc, $out) = $n->nginx_t;
    is($rc, 0, 'nginx -t takes pattern=/store/Cart.aspx, '
               . 'drop_component=(S(*)), drop_value=v=(hex) and '
               . 'param_path=title=/wiki/')
        or diag($out);
}
for my $b (@bad) {
    my $n = SimhashTest->new(http => $b->[0],
                             proxy => 'location / { simhash z; }');
    $n->write_config;
    my ($rc, $out) = $n->nginx_t;
    ok($rc != 0, "nginx -t refuses: $b->[0]");
    like($out, $b->[1], "nginx -t says why: $b->[0]");
}
for my $b (['simhash_dust on;', qr/simhash_dust needs a DUST learner: simhash zone "z" \(simhash in \S+:\d+\) has no dust=SIZE/],
           ['simhash_dust maybe;', qr/invalid value "maybe"/],
           ['simhash_dust_verify 120%;', qr/invalid rate "120%"/]) {
    my $n = SimhashTest->new(http => 'simhash_zone zone=z:1m;',
                             proxy => "location / { simhash z; $b->[0] }");
    $n->write_config;
    my ($rc, $out) = $n->nginx_t;
    ok($rc != 0, "nginx -t refuses: $b->[0]");
    like($out, $b->[1], "nginx -t says why: $b->[0]");
}

# nginx -t points at the simhash_dust line, the one to fix, not at the
# simhash line (which may be in another block or file)
{
    my $n = SimhashTest->new(http => 'simhash_zone zone=z:1m;',
                             proxy => "simhash z;\n"
                                    . "location / {\n"
                                    . "    simhash_dust on;\n"
                                    . "}\n");
    $n->write_config;
    my @conf = split /\n/, $n->read_file('conf/nginx.conf');
    my ($at) = grep { $conf[$_ - 1] =~ /simhash_dust on;/ } 1 .. @conf;
    my ($rc, $out) = $n->nginx_t;
    ok($rc != 0, 'nginx -t refuses simhash_dust on without dust=');
    like($out, qr/has no dust=SIZE, in \S+nginx\.conf:$at\b/,
         "... and points at the simhash_dust line ($at)");
}

done_testing;
