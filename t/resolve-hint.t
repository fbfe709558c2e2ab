#!/usr/bin/perl
# nginx's resolver asks DNS only, never /etc/hosts: a forward proxy's crawl
# of a local or internal name answers 502 where curl succeeds.  Beside
# nginx's "could not be resolved" line the module logs why and what to do
# (issue 36), once a minute per worker; a 502 for another reason (an
# address that refuses the connection) gets no such line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

# a resolver that never answers: nothing listens on that UDP port
my $dns = SimhashTest::free_port();
my $dead = SimhashTest::free_port();

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=z:1m;',
    proxy => <<"EOF");
        resolver 127.0.0.1:$dns ipv6=off;
        resolver_timeout 1s;
        location / {
            simhash z;
            proxy_pass http://\$arg_h/;
        }
EOF
$t->start;

my $hints = sub { scalar(() = $t->error_log =~ /never reads \/etc\/hosts/g) };

my ($st) = $t->raw_get('/?h=crawl-target.internal');
is($st, 502, 'a name the resolver cannot resolve: 502');
like($t->error_log, qr/"crawl-target\.internal" could not be resolved by nginx's resolver, which asks DNS only and never reads \/etc\/hosts: .*upstream block/,
     'the log says why, and what to do');

($st) = $t->raw_get("/?h=127.0.0.1:$dead");
is($st, 502, 'an address that refuses: 502');

# every worker logs it at most once a minute: a few more failures add at
# most one line per worker
my $before = $hints->();
$t->raw_get('/?h=other-target.internal') for 1 .. 3;
cmp_ok($hints->() - $before, '<=', 1,
       'at most once a minute per worker (the other worker may add one)');
unlike($t->error_log, qr/"127\.0\.0\.1:\d+" could not be resolved by nginx/,
       'no hint for a 502 that was not a resolution');

$t->stop;
$t->check_log;

done_testing;
