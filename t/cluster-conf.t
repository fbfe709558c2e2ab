#!/usr/bin/perl
# nginx -t says what is wrong with a bad cluster= address, and where: every
# bad form of the seed URLs and of the other cluster parameters fails with
# one message naming it and the configuration's file:line.  No Redis is
# needed: the addresses are read, and the names resolved, at configuration
# time, and nothing connects until a worker starts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $seed = 'tier-secret-for-the-cluster-conf';

# [cluster parameters, the message, what is wrong]
my @bad = (
    ['cluster=redis://127.0.0.1:',
     qr/invalid Redis URL "redis:\/\/127\.0\.0\.1:": invalid port/,
     'no port after the colon'],
    ['cluster=redis://127.0.0.1:99999',
     qr/invalid Redis URL "redis:\/\/127\.0\.0\.1:99999": invalid port/,
     'a port out of range'],
    ['cluster=redis://127.0.0.1:http',
     qr/invalid Redis URL "redis:\/\/127\.0\.0\.1:http": invalid port/,
     'a port that is not a number'],
    ['cluster=http://127.0.0.1:7000',
     qr/invalid Redis URL "http:\/\/127\.0\.0\.1:7000": redis:\/\/HOST\[:PORT\] or unix:\/PATH/,
     'an unknown scheme'],
    ['cluster=rediss://127.0.0.1:7000',
     qr/simhash zone "crawl": rediss:\/\/ needs cluster_tls_ca=PATH/,
     'TLS without the CA'],
    ['cluster=redis://127.0.0.1:7000 cluster_tls_ca=/etc/ssl/certs/ca-certificates.crt',
     qr/simhash zone "crawl": cluster_tls_\*= without rediss:\/\/ seeds/,
     'a TLS parameter without TLS'],
    ['cluster=rediss://127.0.0.1:7000 cluster_tls_ca=',
     qr/simhash zone "crawl": "cluster_tls_ca=" names nothing/,
     'cluster_tls_ca= empty'],
    ['cluster=127.0.0.1:7000',
     qr/invalid Redis URL "127\.0\.0\.1:7000": redis:\/\/HOST\[:PORT\]/,
     'no scheme'],
    ['cluster=',
     qr/simhash zone "crawl": cluster= names no address/,
     'empty'],
    ['cluster=redis://127.0.0.1:7000,,redis://127.0.0.1:7001',
     qr/simhash zone "crawl": an empty address in "cluster=/,
     'an empty address between two'],
    ['cluster=redis://127.0.0.1:7000,',
     qr/simhash zone "crawl": an empty address in "cluster=/,
     'an empty address at the end'],
    ['cluster=redis://',
     qr/invalid Redis URL "redis:\/\/"/,
     'no host'],
    ['cluster=redis://no-such-host.invalid:7000',
     qr/invalid Redis URL "redis:\/\/no-such-host\.invalid:7000": host not found/,
     'a host that does not resolve'],
    ['cluster=redis://127.0.0.1:7000/2',
     qr/a Redis Cluster has only database 0/,
     'a database'],
    ['cluster=unix:/tmp/redis.sock',
     qr/simhash zone "crawl": a Redis Cluster is reached over TCP, not "unix:\/tmp\/redis\.sock"/,
     'a unix socket'],
    ['cluster=redis://a:pw@127.0.0.1:7000,redis://b:pw@127.0.0.1:7001',
     qr/simhash zone "crawl": the seeds of cluster= name different users or passwords/,
     'two sets of credentials'],
    ['cluster=redis://user@127.0.0.1:7000',
     qr/invalid Redis URL "redis:\/\/\*\*\*\@127\.0\.0\.1:7000": the credentials are USER:PASSWORD@/,
     'credentials without a password, hidden in the message'],
    ['cluster=rediss://127.0.0.1:7000 cluster_tls_ca=/dev/null '
     . 'cluster_tls_key=/dev/null',
     qr/simhash zone "crawl": cluster_tls_cert= and cluster_tls_key= go together/,
     'a key without its certificate'],
    ['cluster=redis://127.0.0.1:7000 cluster_timeout=0',
     qr/simhash zone "crawl": invalid cluster_timeout "0" \(a time, e\.g\. 50ms\)/,
     'cluster_timeout=0'],
    ['cluster=redis://127.0.0.1:7000 cluster_timeout=soon',
     qr/simhash zone "crawl": invalid cluster_timeout "soon"/,
     'cluster_timeout=garbage'],
    ['cluster=redis://127.0.0.1:7000 cluster_timeout=',
     qr/simhash zone "crawl": invalid cluster_timeout ""/,
     'cluster_timeout= empty'],
    ['cluster=redis://127.0.0.1:7000 "cluster_prefix=sh{x}:"',
     qr/simhash zone "crawl": cluster_prefix: .*\{/,
     'cluster_prefix with a brace'],
    ['cluster=redis://127.0.0.1:7000 cluster_prefix=',
     qr/simhash zone "crawl": cluster_prefix: /,
     'cluster_prefix= empty'],
    ['cluster_timeout=50ms',
     qr/simhash zone "crawl": cluster_timeout= without cluster=/,
     'cluster_timeout without cluster='],
    ['cluster=redis://127.0.0.1:7000 cluster_backlog=many',
     qr/simhash zone "crawl": invalid cluster_backlog "many"/,
     'cluster_backlog=garbage'],
    ['cluster_backlog=10',
     qr/simhash zone "crawl": cluster_backlog= without cluster=/,
     'cluster_backlog without cluster='],
);

for my $b (@bad) {
    my ($params, $re, $what) = @$b;
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m $params;",
        proxy => "simhash crawl;\n        simhash_seed $seed;\n"
               . "        location / { proxy_pass http://%%ORIGIN%%; }");
    my ($rc, $out) = $t->nginx_t;
    isnt($rc, 0, "$what: nginx -t fails");
    my $line = $t->line_of('simhash_zone zone=crawl');
    my $conf = $t->conf_path;
    like($out, qr/\[emerg\] .*$re.* in \Q$conf\E:$line\n/,
         "$what: says so, at the file:line of simhash_zone")
        or diag($out);
    is(scalar(() = $out =~ /\[emerg\]/g), 1, "$what: once") or diag($out);
}

# the good forms pass: a seed without a port is Redis's 6379; a name that
# resolves; several seeds with one user
for my $good ('cluster=redis://127.0.0.1',
              'cluster=redis://localhost:7000 cluster_timeout=1s',
              'cluster=redis://u:p%40ss@127.0.0.1:7000,redis://u:p%40ss@127.0.0.1:7001 cluster_prefix=idx:') {
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m $good;",
        proxy => "simhash crawl;\n        simhash_seed $seed;\n"
               . "        location / { proxy_pass http://%%ORIGIN%%; }");
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, "$good: nginx -t passes") or diag($out);
    unlike($out, qr/p%40ss|p\@ss/, "$good: no password in the output");
}

# simhash_replicate reads its URL with the same reader: TLS is cluster='s
{
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:1m;\n"
               . "    simhash_replicate crawl rediss://127.0.0.1:7000;",
        proxy => "simhash crawl;\n        simhash_seed $seed;\n"
               . "        location / { proxy_pass http://%%ORIGIN%%; }");
    my ($rc, $out) = $t->nginx_t;
    isnt($rc, 0, 'simhash_replicate rediss://: nginx -t fails');
    like($out, qr/invalid Redis URL "rediss:\/\/127\.0\.0\.1:7000": TLS \(rediss:\/\/\) is not supported here \(only by cluster=\); reach Redis over a private network or a tunnel/,
         '... saying TLS is for cluster= only, and what to use') or diag($out);
}

done_testing;
