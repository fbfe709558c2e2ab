#!/usr/bin/perl
# `make run` works and shows what the module is for: demo/run.sh starts
# nginx, crawls a generated site with wget -r through the proxy in drop
# mode with DUST on, shows rules turning on, duplicates dropped and
# predicted, the ports (the console's its own), a "why?" answer and the
# snapshot; keeps serving, and stops on a signal.
#
# It runs from a private copy of the tree, as a new user's clone would be:
# in a directory of mode 0700 (what `mktemp -d` and most home directories
# give), every file readable by its owner only (a umask of 077), with the
# built module copied into the copy's build/, and TMPDIR private too (as
# libpam-tmpdir sets it).  Run as root, nginx's workers are nobody and
# cannot read any of it: the demo must serve from a copy they can read.
# The copy holds the files git knows (tracked, and untracked but not
# ignored), so uncommitted work is tested as it would be once committed.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Cwd qw(abs_path);
use File::Path qw(remove_tree);
use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);
use SimhashTest qw(wait_until);

my $module = SimhashTest::module_path();
plan(skip_all => 'the demo runs the stock nginx without the sanitizer runtime')
    if $SimhashTest::PRELOAD;
plan(skip_all => "the demo runs its own nginx, not under valgrind")
    if $SimhashTest::VALGRIND;
my $top = abs_path("$FindBin::Bin/..");
plan(skip_all => 'not a git checkout (the test copies the files git knows)')
    unless -e "$top/.git";

my $private = tempdir('simhash-clone-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $clone = "$private/ngx_simhash";
is((stat $private)[2] & 07777, 0700, 'the copy is in a 0700 directory');
mkdir $clone or die "$clone: $!";
my @files = grep { -e "$top/$_" } split /\0/,
    `git -C '$top' ls-files -z --cached --others --exclude-standard`;
open(my $tar, '|-', "tar -C '$top' -c --null -T - -f - | tar -C '$clone' -x")
    or die "tar: $!";
print $tar map { "$_\0" } @files;
close $tar or BAIL_OUT('copying the tree failed');
mkdir "$clone/build";
mkdir "$clone/build/nginx";
system('cp', $module, "$clone/build/nginx/") == 0 or die "cp $module";
# the simhash tool, for the demo's "why?" (make itest sets SH_CLI)
my $cli = $ENV{SH_CLI} && -x $ENV{SH_CLI} ? $ENV{SH_CLI} : undef;
system('cp', $cli, "$clone/build/simhash") == 0 or die "cp $cli" if $cli;
system('chmod', '-R', 'go-rwx', $clone) == 0 or die 'chmod';
ok(-x "$clone/demo/run.sh", 'the copy has demo/run.sh');

local $ENV{TMPDIR} = $private;
# SH_PORTS: the demo's ports come from the range asked for
my $lo = 20000 + 1000 * int(rand(8));
local $ENV{SH_PORTS} = "$lo-" . ($lo + 999);
my $pid = open(my $out, '-|', "$clone/demo/run.sh", "$clone/build")
    // die "demo/run.sh: $!";

my $text = '';
{
    # bounded by the file's limit (SimhashTest), as every wait
    local $SimhashTest::AWAITING = 'demo/run.sh to say where its logs are';
    while (defined(my $line = <$out>)) {
        $text .= $line;
        last if $line =~ /^\s+logs\s/;
    }
}
like($text, qr/keeps serving \(Ctrl-C to stop\)/, 'the demo says it keeps serving')
    or diag($text);

# the ports: the origin's printed, the console on a port of its own
my ($origin) = $text =~ /^\s+origin\s+nginx at 127\.0\.0\.1:(\d+)/m;
my ($proxy) = $text =~ /^\s+proxy\s+127\.0\.0\.1:(\d+), a forward proxy/m;
my ($console) = $text =~ m{^\s+console\s+(http://127\.0\.0\.1:(\d+)/simhash-stats\?format=html)$}m;
my ($stats) = $console && $console =~ m{:(\d+)/};
ok($origin && $proxy && $stats, 'the demo prints the origin\'s, the proxy\'s '
   . 'and the console\'s ports') or diag($text);
isnt($stats // 0, $proxy // 0, 'the console is not on the proxy\'s port');
ok(!grep({ !$_ || $_ < $lo || $_ > $lo + 999 } $origin, $proxy, $stats),
   "SH_PORTS=$ENV{SH_PORTS}: every port in it");
for ([$origin, 'the origin'], [$proxy, 'the proxy']) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $_->[0] // 1, Proto => 'tcp');
    ok($s, "$_->[1] answers on its port");
    close $s if $s;
}
my $r = SimhashTest::ua()->get($console // 'http://127.0.0.1:1/');
is($r->{status}, 200, 'the console answers at the URL the demo gives');
like($r->{headers}{'content-type'} // '', qr{^text/html}, '... as HTML');

# the headline features, as the crawl showed them
like($text, qr{^\s+>> DUST rule drop_param\(PHPSESSID\) on for www\.gazette\.example/articles/:}m,
     'a DUST rule turns on: the session id') or diag($text);
like($text, qr{^\s+>> DUST rule drop_param\(utm_source\) on for www\.gazette\.example/articles/:}m,
     'and the tracking parameter');
my %row;
while ($text =~ /^\s+(page|session id|tracking|print view|mirror|total)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$/mg) {
    @{$row{$1}}{qw(requests passed dropped predicted verified)} = ($2, $3, $4, $5, $6);
}
cmp_ok($row{page}{passed} // 0, '>=', 160, 'every article passed');
cmp_ok($row{'session id'}{dropped} // 0, '>', 0,
       'session-id duplicates fetched and dropped (204)');
cmp_ok($row{'session id'}{predicted} // 0, '>', $row{'session id'}{dropped} // 0,
       'then predicted without a fetch, once the rule is on');
cmp_ok($row{mirror}{dropped} // 0, '>', 0, 'the mirror\'s copies dropped');
cmp_ok($row{'print view'}{passed} // 0, '>', 0,
       'print views (another path) passed');
is($row{'print view'}{dropped} // -1, 0, '... never dropped (keys=path)');
my ($served, $asked) = $text =~ /the origin served (\d+) of the crawler's (\d+) requests/;
ok($served && $asked && $served < $asked,
   'fewer fetches from the origin than requests (' . ($served // '?') . ' of '
   . ($asked // '?') . ')');
is($asked, $row{total}{requests}, 'the table counts every request');
like($text, qr/wget saved \d+ pages/, 'what wget saved');

# "why?" for a URL that was not fetched, with the CLI
SKIP: {
skip 'SH_CLI not set (make itest sets it)', 2 unless $cli;
like($text, qr{^== "why\?".*\n\s+\$ simhash explain 'http://www\.gazette\.example/articles/a\d+\.html\?PHPSESSID=\w+'}m,
     '"why?": the command for a predicted URL');
like($text, qr{^\s+why\? http://www\.gazette\.example/articles/a\d+\.html\?PHPSESSID=\w+\n(\s+.*\n)*?\s+would\s+predicted$}m,
     '... and its answer: predicted') or diag($text);
}

# the snapshot
my ($snap) = $text =~ m{^\s+snapshot\s+(\S+\.snap) \(\d+ KB\)}m;
ok($snap && -s $snap, 'the snapshot is written where the demo says')
    or diag($text);

my ($prefix) = $text =~ m{^\s+config\s+(\S+)/conf/nginx\.conf$}m;
ok($prefix, 'the demo says where its prefix is');
my $log = $prefix && SimhashTest->can('read_file')->({}, "$prefix/logs/error.log");
unlike($log // '', qr/\[(alert|crit|emerg|error)\]/,
       'the demo error log has no error');

kill 'TERM', $pid;
wait_until('demo/run.sh to exit after TERM',
           sub { waitpid($pid, WNOHANG) != 0 });
ok(!kill(0, $pid), 'a signal stops it');
close $out;
ok($prefix && !-e $prefix, 'and its prefix is removed (Ctrl-C leaves nothing)');
remove_tree($prefix) if $prefix && $prefix =~ m{/simhash-demo\.\w+$};

done_testing;
