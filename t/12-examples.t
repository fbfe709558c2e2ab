#!/usr/bin/perl
# Every file of conf-examples/ passes nginx -t, alone and all together
# (paths under /var are moved into the test prefix, and each listening
# port to a free loopback port: nginx -t binds them, and only root may bind
# port 80, which may be taken anyway).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $dir = "$FindBin::Bin/../conf-examples";
opendir(my $dh, $dir) or die "$dir: $!";
my @examples = sort grep { /\.conf$/ && !/^mod-/ } readdir $dh;
closedir $dh;
cmp_ok(scalar @examples, '>=', 5, 'the examples are there');

my $t = SimhashTest->new;
my $p = $t->prefix;

# the load_module snippet names the module Debian's way
like($t->read_file("$dir/mod-http-simhash.conf"),
     qr{^load_module modules/ngx_http_simhash_module\.so;$}m,
     'mod-http-simhash.conf loads the module');

my %port;    # the example's port => a free one
for my $e (@examples) {
    my $c = $t->read_file("$dir/$e");
    $c =~ s{/var/log/nginx/}{$p/logs/}g;
    $c =~ s{/var/lib/nginx/simhash/}{$p/data/}g;
    $c =~ s{^(\s*listen\s+)(?:[\d.]+:)?(\d+)\b}
           {$1 . '127.0.0.1:' . ($port{$2} //= SimhashTest::free_port())}mge;
    $t->write_file("conf/$e", $c);
}

my $run = sub {
    my (@files) = @_;
    my $inc = join '', map { "    include $p/conf/$_;\n" } @files;
    $t->write_file('conf/nginx.conf', <<"EOF");
load_module $t->{module};
pid $p/logs/nginx.pid;
error_log $p/logs/error.log;
events { }
http {
    access_log off;
    client_body_temp_path $p/tmp/body;
    proxy_temp_path $p/tmp/proxy;
    fastcgi_temp_path $p/tmp/fastcgi;
    uwsgi_temp_path $p/tmp/uwsgi;
    scgi_temp_path $p/tmp/scgi;
$inc}
EOF
    my @args = $t->nginx_args('stderr');
    my $out = `${\ SimhashTest::nginx_cmd()} -t @args 2>&1`;
    return ($? >> 8, $out);
};

for my $e (@examples) {
    my ($rc, $out) = $run->($e);
    is($rc, 0, "$e: nginx -t passes") or diag($out);
    unlike($out, qr/\[(warn|emerg|alert)\]/, "$e: no warning") or diag($out);
}

my ($rc, $out) = $run->(@examples);
is($rc, 0, 'all examples together: nginx -t passes') or diag($out);

done_testing;
