#!/usr/bin/perl
# simhash_reveal and simhash_reveal_scope: a client learns about the
# documents of others only what the configuration allows (issue 26).  A
# victim opens a capability URL (/reset/TOKEN); an attacker fetches a guess
# whose page is the same (/reset/guess):
#  - status: the attacker sees "duplicate", never the victim's URL nor the
#    distance, in the headers or in $simhash_duplicate_of/$simhash_distance;
#  - off: not even the status;
#  - key with a scope of $scheme://$host/: the URL of a duplicate on another
#    host is hidden, one on the same host shown;
#  - the default (key) is today's behaviour: the URL is shown;
#  - conf-examples/reverse-proxy-tag.conf's server block hides the URL;
#  - nginx -t names a bad value.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $TOKEN = 'tok-5f0c9a7e1d2b4c68';

my $t = SimhashTest->new(
    http   => join("\n    ", map { "simhash_zone zone=$_:1m;" }
                                 qw(pub hidden scoped crawl)),
    origin => <<'EOF',
        location /tok/ { try_files /p.html =404; }
EOF
    proxy  => <<'EOF');
        add_header X-Dup-Var "$simhash_duplicate_of" always;
        add_header X-Dist-Var "$simhash_distance" always;
        add_header X-Status-Var "$simhash_status" always;

        location /pub/ {
            simhash pub;
            simhash_reveal status;
            proxy_pass http://%%ORIGIN%%/tok/;
        }
        location /hidden/ {
            simhash hidden;
            simhash_reveal off;
            proxy_pass http://%%ORIGIN%%/tok/;
        }
        location /scoped/ {
            simhash scoped;
            simhash_key $scheme://$host$uri;
            simhash_reveal key;
            simhash_reveal_scope $scheme://$host/;
            proxy_pass http://%%ORIGIN%%/tok/;
        }
        location /crawl/ {
            simhash crawl;
            proxy_pass http://%%ORIGIN%%/tok/;
        }
EOF
my ($page) = $t->random_pages(1, 300, 26);
$t->write_file('html/p.html', $page);
$t->start;

sub fetch {
    my ($path, $host) = @_;
    my ($code, $h) = $t->raw_get($path, Host => $host // 'www.example.org');
    is($code, 200, "$path: 200");
    return $h;
}

# status: membership is told, the victim's URL and the distance are not
fetch("/pub/$TOKEN");
my $h = fetch('/pub/guess');
is($h->{'x-simhash-status'}, 'duplicate', 'status: the status is told');
ok(!exists $h->{'x-simhash-duplicate-of'}, 'status: no Duplicate-Of header');
ok(!exists $h->{'x-simhash-distance'}, 'status: no distance');
ok(!exists $h->{'x-simhash-score'}, 'status: no score');
is($h->{'x-dup-var'} // '', '', 'status: $simhash_duplicate_of empty');
is($h->{'x-dist-var'} // '', '', 'status: $simhash_distance empty');
is($h->{'x-status-var'}, 'duplicate', 'status: $simhash_status set');
unlike(join(' ', values %$h), qr/\Q$TOKEN\E/, 'status: the token nowhere');

# off: nothing about others, not even the status
fetch("/hidden/$TOKEN");
$h = fetch('/hidden/guess');
ok(!exists $h->{'x-simhash-status'}, 'off: no status header');
is($h->{'x-status-var'} // '', '', 'off: $simhash_status empty');
ok(!exists $h->{'x-simhash-duplicate-of'}, 'off: no Duplicate-Of');
is($h->{'x-dup-var'} // '', '', 'off: $simhash_duplicate_of empty');
ok(exists $h->{'x-simhash'}, 'off: the page\'s own fingerprint is sent');
like($t->read_file('logs/access.log'), qr{/hidden/guess 200 - }, 'off: '
     . 'the access log has no status either');

# scope: another tenant's (host's) URL hidden, the same host's shown
fetch("/scoped/$TOKEN", 'victim.example');
$h = fetch('/scoped/guess', 'attacker.example');
is($h->{'x-simhash-status'}, 'duplicate', 'scope: other host: status told');
ok(!exists $h->{'x-simhash-duplicate-of'}, 'scope: other host: no URL');
is($h->{'x-dup-var'} // '', '', 'scope: other host: no variable either');
ok(!exists $h->{'x-simhash-distance'}, 'scope: other host: no distance');
$h = fetch('/scoped/guess', 'victim.example');
is($h->{'x-simhash-duplicate-of'}, "http://victim.example/scoped/$TOKEN",
   'scope: same host: the URL is shown');
is($h->{'x-dup-var'}, "http://victim.example/scoped/$TOKEN",
   'scope: same host: and the variable');
ok(exists $h->{'x-simhash-distance'}, 'scope: same host: the distance');

# default: a private crawler's proxy keeps today's behaviour
fetch("/crawl/$TOKEN");
$h = fetch('/crawl/guess');
like($h->{'x-simhash-duplicate-of'} // '', qr{/crawl/\Q$TOKEN\E$},
     'default: the URL is shown');
is($h->{'x-simhash-distance'}, 0, 'default: and the distance');

$t->stop;
$t->check_log;

# the public-facing example: its server block as it is, in front of the
# origin; the victim's URL never reaches the attacker
{
    open(my $fh, '<', "$FindBin::Bin/../conf-examples/reverse-proxy-tag.conf")
        or die "reverse-proxy-tag.conf: $!";
    my $text = do { local $/; <$fh> };
    close $fh;
    my ($zone) = $text =~ /^(simhash_zone [^\n]*)/m or die 'no zone';
    my ($map) = $text =~ /^(map .*?^\})/ms or die 'no map';
    my ($server) = $text =~ /^(server \{.*^\})/ms or die 'no server block';

    my $ex = SimhashTest->new(origin => <<'EOF');
        location /reset/ { try_files /p.html =404; }
EOF
    my $port = SimhashTest::free_port();
    my $origin = $ex->origin;
    $server =~ s/listen 80;/listen 127.0.0.1:$port;/ or die 'listen';
    $server =~ s/access_log [^;]*;/access_log off;/;
    $server =~ s{proxy_pass http://site_backend;}{proxy_pass http://$origin;}g
        or die 'proxy_pass';
    $ex->set(http => "$zone\n$map\n$server");
    $ex->write_file('html/p.html', $page);
    $ex->start;
    my ($vc) = $ex->raw_get("/reset/$TOKEN", Host => 'www.example.org',
                            _port => $port);
    my ($ac, $ah) = $ex->raw_get('/reset/guess', Host => 'www.example.org',
                                 _port => $port);
    is("$vc $ac", '200 200', 'reverse-proxy-tag.conf: both served');
    ok(exists $ah->{'x-simhash'}, 'reverse-proxy-tag.conf: fingerprinted');
    ok(!exists $ah->{'x-simhash-duplicate-of'},
       'reverse-proxy-tag.conf: no Duplicate-Of for the guess');
    unlike(join(' ', values %$ah), qr/\Q$TOKEN\E/,
           'reverse-proxy-tag.conf: the token nowhere');
    $ex->stop;
    $ex->check_log;
}

# nginx -t: a bad value is named
{
    my $bad = SimhashTest->new(http => 'simhash_zone zone=z:1m;',
                               proxy => "simhash z;\n simhash_reveal all;");
    my ($rc, $out) = $bad->nginx_t;
    isnt($rc, 0, 'simhash_reveal all: refused');
    like($out, qr/invalid value "all"/, '... naming the value');
}

done_testing;
