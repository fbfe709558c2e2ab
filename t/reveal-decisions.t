#!/usr/bin/perl
# What simhash_reveal hides from the client never changes what the module
# decides (issue 31, item 1).  Hiding used to blank the original's key
# before the drop decision read it: under simhash_reveal status or off, or
# with the original out of simhash_reveal_scope, every duplicate in drop
# mode killed its worker (SIGSEGV in keys=path's comparison).
#
# Every combination of the action (tag; drop keys=path; drop keys=any), of
# simhash_reveal (key, status, off) and of the scope (none; the original in
# scope; out of scope): the first page on host a.example, then the same
# page under ?sid=b, on a.example (in scope) or on b.example (out of
# scope).  Each second request gets the answer its action promises (drop:
# 204 and no body; tag: 200 and the body), and exactly the headers and
# variables its reveal setting allows.  No worker dies: check_log fails on
# nginx's "exited on signal" alert, and SANITIZE=1 on any ASan report.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my @actions = (['tag',  'simhash_action tag;'],
               ['path', 'simhash_action drop;'],
               ['any',  'simhash_action drop keys=any;']);
my @reveals = qw(key status off);
my @scopes  = qw(none in out);

my (@combos, $locations);
for my $a (@actions) {
    for my $rv (@reveals) {
        for my $sc (@scopes) {
            my $n = @combos;
            push @combos, { n => $n, action => $a->[0], reveal => $rv,
                            scope => $sc };
            my $scope = $sc eq 'none' ? ''
                      : 'simhash_reveal_scope $scheme://$host/;';
            $locations .= <<EOF;
        location /c$n/ {
            simhash z;
            $a->[1]
            simhash_reveal $rv;
            $scope
            rewrite ^ /c$n.html break;
            proxy_pass http://%%ORIGIN%%;
        }
EOF
        }
    }
}

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=z:4m;',
    proxy => <<EOF . $locations);
        add_header X-Dup-Var "\$simhash_duplicate_of" always;
        add_header X-Dist-Var "\$simhash_distance" always;
        add_header X-Status-Var "\$simhash_status" always;
EOF

# one page a combination, each unlike the others
my @pages = $t->random_pages(scalar @combos, 300, 31);
$t->write_file("html/c$_->{n}.html", $pages[$_->{n}]) for @combos;
$t->start;

for my $c (@combos) {
    my $n = $c->{n};
    my $name = "$c->{action}/$c->{reveal}/$c->{scope}";
    my $drops = $c->{action} ne 'tag';
    my $host = $c->{scope} eq 'out' ? 'b.example' : 'a.example';

    my ($code, $h) = $t->raw_get("/c$n/p.html", Host => 'a.example');
    is($code, 200, "$name: the original is fetched");

    my $body;
    ($code, $h, $body) = $t->raw_get("/c$n/p.html?sid=b", Host => $host);

    if ($drops) {
        is($code, 204, "$name: the duplicate is dropped");
        is($body, '', "$name: with no body");
    } else {
        is($code, 200, "$name: the duplicate is passed");
        is($body, $pages[$n], "$name: with its body");
    }

    my $status = $c->{reveal} ne 'off';
    my $original = $c->{reveal} eq 'key' && $c->{scope} ne 'out';

    is($h->{'x-simhash-status'}, $status ? 'duplicate' : undef,
       "$name: the status header " . ($status ? 'told' : 'hidden'));
    is($h->{'x-status-var'} // '', $status ? 'duplicate' : '',
       "$name: \$simhash_status likewise");

    my $url = 'http://a.example/c' . $n . '/p.html';
    is($h->{'x-simhash-duplicate-of'}, $original ? $url : undef,
       "$name: the original's URL " . ($original ? 'told' : 'hidden'));
    is($h->{'x-dup-var'} // '', $original ? $url : '',
       "$name: \$simhash_duplicate_of likewise");
    is(exists $h->{'x-simhash-distance'} ? 1 : 0, $original ? 1 : 0,
       "$name: the distance header likewise");
    is($h->{'x-dist-var'} // '', $original ? '0' : '',
       "$name: \$simhash_distance likewise");
}

$t->stop;
$t->check_log;
unlike($t->error_log, qr/exited on signal/, 'no worker died');

done_testing;
