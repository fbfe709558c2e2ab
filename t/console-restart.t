#!/usr/bin/perl
# The console's figures across a restart (issue 36): a zone with file=
# keeps what the console shows in PATH.console beside its snapshot, and a
# restart starts from them: the responses by status, the rates, the top
# sites, what each rule's predictions came to, the last decisions ("why?"),
# since when the figures count; and says whose figures they are (the
# node).  A damaged file is not loaded: the figures start at zero.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use JSON::PP;
use Sys::Hostname;
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

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(2, 150, 6161);
mkdir $t->prefix . '/html/doc';
mkdir $t->prefix . '/data';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->start;

my ($st) = $t->raw_get('/doc/a.html');
is($st, 200, 'a.html: new');
($st) = $t->raw_get('/doc/copy.html');
is($st, 204, 'copy.html: dropped');
($st) = $t->raw_get('/doc/a.html?sid=1');
is($st, 204, 'a.html?sid=1: predicted');
$t->raw_get('/doc/b.html');

# what the console shows, less what moves by itself (the clock)
sub figures {
    my $z = $t->stats->{zones}{crawl};
    my ($rule) = grep { $_->{arg} eq 'sid' } @{ $z->{dust_rules} };
    my %rates = map { my $e = $_; ($e => eval {
                          my $n = 0; $n += $_ for @{ $z->{rates}{$e} }; $n
                      }) } qw(new duplicate dropped predicted);
    return {
        responses => $z->{responses},
        rates => \%rates,
        # the sites, less the hosts beneath each: PATH.console keeps a
        # site's figures, its hosts start afresh
        top => [ map { my %e = %$_; delete @e{qw(hosts hosts_seen)}; \%e }
                 @{ $z->{sites}{top} } ],
        outcomes => $z->{rule_outcomes},
        rule => { map { ($_ => $rule->{$_}) } qw(made verified failed) },
        since => $z->{figures}{since},
        node => $z->{figures}{node},
    };
}

my $before = figures();
is($before->{responses}{new}, 2, 'two new pages');
is($before->{rates}{predicted}, 1, 'one prediction in the rates');
is($before->{rule}{made}, 1, "the rule's prediction");
is($before->{node}, hostname(), 'the figures name their node');
is($t->stats->{zones}{crawl}{figures}{restored}, 0, 'nothing restored yet');

sub why {
    (my $q = shift) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    return $t->stats("/stats?explain=$q");
}

$t->stop('quit');
my $side = $t->prefix . '/data/crawl.snap.console';
ok(-s $side, 'the figures saved beside the snapshot');
is((stat $side)[2] & 0777, 0600, 'mode 0600, as the snapshot');

$t->start;
like($t->error_log, qr/the console's figures restored from "\Q$side\E"/,
     'the log says they were restored');
my $z;
my $after = figures();
is_deeply($after, $before, 'after the restart: the same figures')
    or diag(explain([$before, $after]));
ok($t->stats->{zones}{crawl}{figures}{restored} > 0,
   'the JSON says they were restored, and from when');
is(why('http://v.test/doc/copy.html')->{last_decision}{action}, 'dropped',
   '"why?" still remembers the drop');

# counting goes on from there (the learner predicts from documents it saw
# fetched since the start: this one is fetched, a duplicate, dropped)
($st) = $t->raw_get('/doc/copy.html?x=2');
is($st, 204, 'copy.html?x=2: dropped');
$z = $t->stats->{zones}{crawl};
is($z->{responses}{duplicate}, $before->{responses}{duplicate} + 1,
   'one more duplicate on top of the restored ones');
is($z->{responses}{new}, 2, 'still two new');

# a damaged file: not loaded, the figures start at zero
$t->stop('quit');
open my $fh, '+<', $side or die "$side: $!";
seek $fh, 4096, 0;
print $fh "\xff" x 16;
close $fh;
$t->start;
like($t->error_log, qr/the console's figures "\Q$side\E" not loaded: damaged/,
     'a damaged file: said');
$z = $t->stats->{zones}{crawl};
is($z->{responses}{new} // 0, 0, 'a damaged file: the figures start at zero');
is($z->{figures}{restored}, 0, '... and say nothing was restored');
is(why('http://v.test/doc/a.html')->{stored}{name}, 'http://v.test/doc/a.html',
   'the documents are restored all the same');

$t->check_log;
done_testing;
