#!/usr/bin/perl
# `make run` works: demo/run.sh starts nginx, crawls the demo site through
# the proxy, prints one line per URL, keeps serving, and stops on a signal.
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
system('chmod', '-R', 'go-rwx', $clone) == 0 or die 'chmod';
ok(-x "$clone/demo/run.sh", 'the copy has demo/run.sh');

local $ENV{TMPDIR} = $private;
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
like($text, qr/keeps serving \(Ctrl-C to stop\)/, 'the demo says it keeps serving');

my @lines = grep { m{^\S.*\shttp://} } split /\n/, $text;
my $urls = () = grep { !/^\s*(#|$)/ } split /\n/,
                SimhashTest->can('read_file')->({}, "$top/demo/urls.txt");
is(scalar @lines, $urls, "one line per URL ($urls)");

my %seen = map { (/^(\S+)/)[0] => 1 } @lines;
for my $s (qw(new duplicate unchanged changed skipped)) {
    ok($seen{$s}, "the demo shows a \"$s\" page");
}
like($text, qr{^duplicate\s+0\s+http://gazette\.example/articles/night-trains\.html\?utm_source=newsletter -> http://gazette\.example/articles/night-trains\.html}m,
     'a copy under another URL: duplicate of the original, distance 0');
like($text, qr{^new\s+-\s+http://gazette\.example/nature/tide-pools\.html}m,
     'an unrelated page: new');
# content weighting (simhash_content auto) and the weighted match rule:
# the same article in another site's template is a duplicate of the
# original, its printer-friendly version too
like($text, qr{^duplicate\s+\d+\s+http://aggregator\.example/stories/night-train-revival\.html -> http://gazette\.example/articles/night-trains\.html}m,
     'a syndicated copy in another template: duplicate of the original');
like($text, qr{^duplicate\s+\d+\s+http://aggregator\.example/stories/rooftop-bees\.html -> http://gazette\.example/garden/urban-beekeeping\.html}m,
     'the other syndicated copy: duplicate of its original');
like($text, qr{^duplicate\s+\d+\s+http://gazette\.example/print/night-trains\.html -> http://gazette\.example/articles/night-trains\.html}m,
     'the printer-friendly version: duplicate of the article');

my ($port) = $text =~ m{proxy\s+http://127\.0\.0\.1:(\d+)/};
ok($port, 'the demo says where it serves');
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                              Proto => 'tcp');
ok($s, 'and it does');
close $s if $s;

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
