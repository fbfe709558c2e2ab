#!/usr/bin/perl
# "Why?" for one URL (issue 36): simhash_stats ?explain=KEY says what the
# module would do with the key now and why.  Here its answer is checked
# against the decision actually taken, for every status (new, duplicate
# dropped, duplicate passed, unchanged, changed, skipped) and for a
# prediction answered without a fetch: the last decision's status and
# action, the original, the distance and the score as the response's
# headers told them (the status as X-Simhash-Status, the score in nats as
# X-Simhash-Score prints it); the stored document; the rule that predicts,
# with its evidence.  The answer leads with the last decision in a
# sentence ("dropped 3 s ago as a duplicate of ..."), and gives the
# reason the code used when nothing is predicted: a URL fetched before is
# the store's to answer, whatever rule applies.  Asking leaves the
# statistics as they were.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m file=%%PREFIX%%/data/crawl.snap;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
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

        location /tag/ {
            simhash crawl;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%/doc/;
        }

        location /stats {
            simhash_stats;
            allow 127.0.0.1;
            deny all;
        }
END
);

my @pages = $t->random_pages(3, 150, 3636);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/copy2.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->write_file('html/doc/short.html', '<html><body><p>hi</p></body></html>');
$t->start;

sub why {
    my ($key) = @_;
    (my $q = $key) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    my $r = $t->get("/stats?explain=$q");
    is($r->{status}, 200, "explain $key: 200") or diag($r->{content});
    is($r->{headers}{'content-type'}, 'application/json', 'as JSON');
    my $j = decode_json($r->{content});
    # what was done comes first, before what a fetch would meet now
    ok(index($r->{content}, '"last":') >= 0
       && index($r->{content}, '"last":') < index($r->{content}, '"would":'),
       "explain $key: the last decision first");
    return $j;
}

my $r_raw;

sub uri {
    (my $q = $_[0]) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    return $q;
}

sub fetch {
    my ($path) = @_;
    my ($status, $h) = $t->raw_get($path);
    return ($status, $h);
}

# new
my ($st, $h) = fetch('/doc/a.html');
is($h->{'x-simhash-status'}, 'new', 'a.html: new');
my $x = why('http://v.test/doc/a.html');
is($x->{last_decision}{status}, 'new', 'new: the last decision');
is($x->{last_decision}{action}, 'passed', 'new: passed');
ok($x->{stored}, 'new: stored');
is($x->{stored}{name}, 'http://v.test/doc/a.html', 'new: its name');
is($x->{stored}{fingerprint}, $h->{'x-simhash'}, 'new: its fingerprint');
is($x->{would}, 'stored', 'new: a fetch is compared with its version');
is($x->{prediction}, undef, 'new: no prediction');

# duplicate, dropped (keys=any)
($st, $h) = fetch('/doc/copy.html');
is($st, 204, 'copy.html: dropped');
$x = why('http://v.test/doc/copy.html');
is($x->{last_decision}{status}, 'duplicate', 'dropped: a duplicate');
is($x->{last_decision}{action}, 'dropped', 'dropped: dropped');
is($x->{last_decision}{original}, 'http://v.test/doc/a.html',
   'dropped: its original');
is($x->{last_decision}{original}, $h->{'x-simhash-duplicate-of'},
   'dropped: the original the response named');
is($x->{last_decision}{distance}, $h->{'x-simhash-distance'},
   'dropped: the distance the response told');
is(sprintf('%.4f', $x->{last_decision}{score}), $h->{'x-simhash-score'},
   'dropped: the score the response told, in nats');
my ($hd, $hs) = @$h{qw(x-simhash-distance x-simhash-score)};
like($x->{last},
     qr{^dropped\x20\d+\x20s\x20ago\x20as\x20a\x20duplicate\x20of
        \x20http://v\.test/doc/a\.html\x20\(distance\x20\Q$hd\E,\x20score\x20\Q$hs\E\)$}x,
     'dropped: said first, in a sentence, with the response\'s figures');
is($x->{learner}, 'seen',
   'dropped: no prediction, for it was fetched (the store\'s to answer)');
like($x->{why}, qr/a URL already seen is the store's to answer/,
     '... and "why" says so');
is($x->{stored}, undef, 'dropped: not stored');
is($x->{would}, 'fetch', 'dropped: fetched, the body decides');

# duplicate, passed: the tag location does not drop
($st, $h) = fetch('/tag/copy.html');
is($h->{'x-simhash-status'}, 'duplicate', '/tag/copy.html: a duplicate');
$x = why('http://v.test/tag/copy.html');
is($x->{last_decision}{status}, 'duplicate', 'tagged: a duplicate');
is($x->{last_decision}{action}, 'passed', 'tagged: passed');

# unchanged
($st, $h) = fetch('/doc/a.html');
is($h->{'x-simhash-status'}, 'unchanged', 'a.html again: unchanged');
$x = why('http://v.test/doc/a.html');
is($x->{last_decision}{status}, 'unchanged', 'unchanged: the last decision');
is($x->{last_decision}{distance}, 0, 'unchanged: distance 0');

# changed
fetch('/doc/b.html');
$t->write_file('html/doc/b.html', $pages[2]);
($st, $h) = fetch('/doc/b.html');
is($h->{'x-simhash-status'}, 'changed', 'b.html rewritten: changed');
$x = why('http://v.test/doc/b.html');
is($x->{last_decision}{status}, 'changed', 'changed: the last decision');
is($x->{last_decision}{distance}, $h->{'x-simhash-distance'},
   'changed: the distance the response told');
cmp_ok($h->{'x-simhash-score'}, '>', 0, 'changed: a score above 0');
my $b_score = $h->{'x-simhash-score'};
is(sprintf('%.4f', $x->{last_decision}{score}), $h->{'x-simhash-score'},
   'changed: the score the response told, in nats');
like($r_raw = $t->get('/stats?explain=' . uri('http://v.test/doc/b.html'))
         ->{content}, qr/"score":\Q$h->{'x-simhash-score'}\E[,}]/,
     'changed: the score written as X-Simhash-Score writes it');
is($x->{stored}{fingerprint}, $h->{'x-simhash'},
   'changed: the stored fingerprint is the new one');

# skipped
($st, $h) = fetch('/doc/short.html');
is($h->{'x-simhash-status'}, 'skipped', 'short.html: skipped');
$x = why('http://v.test/doc/short.html');
is($x->{last_decision}{status}, 'skipped', 'skipped: the last decision');
is($x->{stored}, undef, 'skipped: not stored');

# predicted: the pinned rule, no fetch; asked before and after
my $before = $t->stats->{zones}{crawl}{dust}{predictions};
$x = why('http://v.test/doc/a.html?sid=7');
is($x->{would}, 'predicted', 'predicted before the request: would predict');
is($x->{prediction}{original}, 'http://v.test/doc/a.html',
   'the original it names');
like($x->{prediction}{rules}, qr/drop_param\(sid\)/, 'the rule');
is($x->{prediction}{fetched_form}, 'http://v.test/doc/a.html',
   'its canonical form, itself fetched as the document: what keys=path '
   . 'would name');
is($x->{prediction}{sample}, 1, 'a pin short of the test: the whole rate');
my ($ev) = @{ $x->{prediction}{evidence} };
ok($ev, 'the rule\'s evidence');
is($ev->{state}, 'pinned', 'its state');
ok(exists $ev->{support} && exists $ev->{against}, 'support and against');
is($t->stats->{zones}{crawl}{dust}{predictions}, $before,
   'asking predicted nothing');

($st, $h) = fetch('/doc/a.html?sid=7');
is($st, 204, 'a.html?sid=7: answered without a fetch');
$x = why('http://v.test/doc/a.html?sid=7');
is($x->{last_decision}{status}, $h->{'x-simhash-status'},
   'predicted: the status the response said');
is($x->{last_decision}{status}, 'duplicate', '... duplicate');
like($x->{last}, qr{^answered\x20\d+\x20s\x20ago\x20without\x20a\x20fetch:
                    \x20the\x20URL\x20rules\x20predicted\x20a\x20duplicate
                    \x20of\x20http://v\.test/doc/a\.html$}x,
     'predicted: said first, in a sentence');
is($x->{last_decision}{action}, 'predicted', 'predicted: not fetched');
is($x->{last_decision}{original}, 'http://v.test/doc/a.html',
   'predicted: its original');

# a URL with a session id the rule drops, fetched (its canonical form was
# never fetched: no prediction) and dropped as a duplicate: asked again, no
# prediction, because it was seen, not because no rule applies
($st, $h) = fetch('/doc/copy2.html?sid=9');
is($st, 204, 'copy2.html?sid=9: fetched, dropped');
is($h->{'x-simhash-predicted'}, undef, '... not predicted');
$x = why('http://v.test/doc/copy2.html?sid=9');
is($x->{would}, 'fetch', 'copy2.html?sid=9: would be fetched');
is($x->{learner}, 'seen', '... no prediction: it was seen');
like($x->{why}, qr/^a URL already seen is the store's to answer/,
     '... the reason the code used');
unlike($x->{why}, qr/no rule predicts it/, '... not "no rule predicts it"');
like($x->{last}, qr/^dropped \d+ s ago as a duplicate of /,
     '... and first, what was done');

# a URL never seen
$x = why('http://v.test/other/never.html');
like($x->{last}, qr/^no decision on it remembered/,
     'never seen: no decision, said first');
is($x->{last_decision}, undef, 'never seen: no decision');
is($x->{would}, 'fetch', 'never seen: fetched');
is($x->{learner}, 'no rule', 'never seen: no rule');

# the CLI asks the same endpoint
SKIP: {
    my $cli = $ENV{SH_CLI} // '';
    skip 'SH_CLI not set (make itest sets it)', 15 unless -x $cli;
    my $stats = $t->url('/stats');
    my $out = `$cli explain --json http://v.test/doc/copy.html $stats`;
    is($?, 0, 'simhash explain --json: exit 0');
    my $j = eval { decode_json($out) } // {};
    is($j->{last_decision}{action}, 'dropped', 'simhash explain: dropped');
    is($j->{last_decision}{original}, 'http://v.test/doc/a.html',
       'simhash explain: the original');
    `$cli explain --zone nope http://v.test/doc/copy.html $stats 2>/dev/null`;
    is($? >> 8, 1, 'simhash explain: an unknown zone fails');

    # the default: for a reader, aligned, times as dates and ages
    $out = `$cli explain http://v.test/doc/copy.html $stats`;
    is($?, 0, 'simhash explain: exit 0');
    like($out, qr{\Awhy\? http://v\.test/doc/copy\.html\n},
         'simhash explain: headed by the URL asked') or diag($out);
    like($out, qr{^  last decision\n(    .*\n)*?    action +dropped\n}m,
         'simhash explain: the last decision, its fields indented under it')
        or diag($out);
    like($out, qr{^    original +http://v\.test/doc/a\.html$}m,
         'simhash explain: the original') or diag($out);
    my $first = qr{\A.*\n  last +dropped \d+ s ago as a duplicate of };
    like($out, qr{$first\Qhttp://v.test/doc/a.html\E \(distance \d+, score \d+\.\d{4}\)\n},
         'simhash explain: first, what was done') or diag($out);
    $out = `$cli explain http://v.test/doc/b.html $stats`;
    like($out, qr{^    score +\Q$b_score\E$}m,
         'simhash explain: b.html\'s score as its X-Simhash-Score said it')
        or diag($out);
    like($out, qr{^    time +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ (s|min) ago\)$}m,
         'simhash explain: a time as a UTC date and an age') or diag($out);
    unlike($out, qr/\b1[6-9]\d{8}\b/, 'simhash explain: no Unix time left')
        or diag($out);
    my @cols = map { length $1 } $out =~ /^(  \w+(?: \w+)* +)\S/mg;
    my %cols = map { $_ => 1 } @cols;
    is(scalar keys %cols, 1, 'simhash explain: the values in one column')
        or diag($out);

    # a bad argument says what was wrong
    my $port = $t->{port};
    $out = `$cli explain http://v.test/doc/copy.html 127.0.0.1:$port/stats 2>&1`;
    is($? >> 8, 2, 'simhash explain: a statistics URL without http://: 2');
    like($out, qr{"127\.0\.0\.1:$port/stats" is not an http:// URL.*e\.g\. http://127\.0\.0\.1:$port/stats},
         '... saying so, and what to write') or diag($out);
    $out = `$cli explain http://v.test/doc/copy.html 2>&1`;
    is($? >> 8, 2, 'simhash explain: no statistics URL: 2');
    like($out, qr/no statistics URL after "http:\/\/v\.test\/doc\/copy\.html"/,
         '... saying so') or diag($out);
}

# bad requests
is($t->get('/stats?explain=')->{status}, 400, 'an empty key: 400');
is($t->get('/stats?explain=x&zone=nope')->{status}, 404,
   'an unknown zone: 404');

$t->check_log;

# the CLI on the snapshot written at shutdown: stored or not, the rules
SKIP: {
    my $cli = $ENV{SH_CLI} // '';
    skip 'SH_CLI not set (make itest sets it)', 8 unless -x $cli;
    $t->stop('quit');
    my $snap = $t->prefix . '/data/crawl.snap';
    ok(-s $snap, 'the snapshot written at shutdown');
    my $out = `$cli explain http://v.test/doc/a.html --snapshot $snap`;
    like($out, qr/^    fingerprint +[0-9a-f]{16}\n    version time +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/m,
         'simhash explain --snapshot: a.html stored, its version dated')
        or diag($out);
    like($out, qr{^      rule +drop_param\(sid\)\n      scope +v\.test/doc/\n      state +pinned\n}m,
         'simhash explain --snapshot: its host\'s rule') or diag($out);
    $out = `$cli explain http://v.test/doc/copy.html --snapshot $snap`;
    like($out, qr/^  stored +none$/m,
         'simhash explain --snapshot: a dropped duplicate is not stored')
        or diag($out);
    like($out, qr/^  would +fetch$/m, '... so it would be fetched');
    my $j = eval { decode_json(
        scalar `$cli explain --json http://v.test/doc/a.html --snapshot $snap`)
    } // {};
    like($j->{stored}{fingerprint} // '', qr/^[0-9a-f]{16}$/,
         'simhash explain --snapshot --json: the fingerprint');
    ok(($j->{stored}{version_time} // 0) > 1_600_000_000,
       '... the version\'s Unix time');
    is_deeply([ map { "$_->{rule} $_->{state}" } @{$j->{rules} // []} ],
              ['drop_param(sid) pinned'], '... and the rules');
}

done_testing;
