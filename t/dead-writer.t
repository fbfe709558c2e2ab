#!/usr/bin/perl
# A worker killed (SIGKILL) in the middle of an insert, inside the zone's
# lock: the master releases the lock, and the next worker to take it
# rebuilds the index and the key tree.  Before the repair the half-done
# insert (the age list had the document, the table not) left the zone
# refusing every new page ("no room") once full, and every snapshot saved
# afterwards was refused at the next start ("inconsistent index").
#
# gdb stops the only worker at the entry of the index's table insert
# (table_insert, a static function of src/sh_index.c) and kills it there.
# Skipped without gdb or when the symbol is not there.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest qw(wait_until);

plan(skip_all => 'gdb not installed')
    unless grep { -x "$_/gdb" } split /:/, $ENV{PATH};
SimhashTest::needs_master();
plan(skip_all => 'module built with sanitizers') if $ENV{SANITIZE};

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=crawl:128k file=%%PREFIX%%/data/crawl.snap;',
    proxy => <<'EOF');
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
EOF

my $n = 800;
my @pages = $t->random_pages($n, 120, 1717);
$t->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. $n;
$t->start;
my ($capacity) = $t->error_log =~ /capacity (\d+) documents/;
cmp_ok($capacity, '<', $n - 100, "zone capacity $capacity, below the pages");

is($t->status_of("/gen/$_.html"), 'new', "page $_: new") for 1 .. 10;

# stop the worker inside sh_index_insert, between the age list and the
# table, and kill it there
my ($worker) = `ps -o pid= --ppid ${\ $t->pid}` =~ /(\d+)/;
my $gdb_out = $t->prefix . '/logs/gdb.log';
my $gdb = fork // die "fork: $!";
if ($gdb == 0) {
    open(STDOUT, '>', $gdb_out);
    open(STDERR, '>&', \*STDOUT);
    exec('gdb', '-p', $worker, '-batch', '-ex', 'set breakpoint pending off',
         '-ex', 'break table_insert', '-ex', 'continue',
         '-ex', "shell kill -9 $worker") or POSIX::_exit(127);
}
wait_until('gdb to set its breakpoint, or to exit', sub {
    ($t->read_file($gdb_out) // '') =~ /Breakpoint 1 at/
        || waitpid($gdb, POSIX::WNOHANG()) != 0;
});
my $armed = ($t->read_file($gdb_out) // '') =~ /Breakpoint 1 at/;
SKIP: {
    skip('gdb cannot stop the worker at table_insert: '
         . ($t->read_file($gdb_out) // ''), 1) unless $armed;
    after_kill();
}
if (!$armed) {
    kill 'KILL', $gdb;
    waitpid($gdb, 0);
}
$t->stop;
done_testing;

sub after_kill {
# this request stops the worker in the insert and dies with it
my $r = $t->{ua}->get($t->url('/gen/11.html'));
# (was waitpid without a limit: a run for issue 32 hung here for good,
# the page stored and gdb never stopped in table_insert)
wait_until('gdb to see the worker stop in table_insert and kill it',
           sub { waitpid($gdb, POSIX::WNOHANG()) != 0 });
like($t->read_file($gdb_out), qr/hit Breakpoint 1, .*table_insert/,
     'the worker stopped inside the insert');
ok(!SimhashTest::alive($worker), 'and was killed there');
ok($t->wait_log(qr/shared memory zone "crawl" was locked by $worker/, 0),
   'the master released the lock it held');

# the next request repairs the zone, once the master has started a new
# worker (was: sleep 0.5)
wait_until('a new worker', sub { grep { $_ != $worker } $t->children });
is($t->status_of('/gen/12.html'), 'new', 'the next page: new');
like($t->error_log, qr/\[error\].*simhash zone "crawl": worker process $worker died while changing it; rebuilt with 10 documents, 0 lost \(the index was: .+\)/,
     'the zone was rebuilt, logged as an error');
is($t->status_of('/gen/5.html?copy'), 'duplicate',
   'the pages seen before are still found');

# past capacity: every new page is stored, the oldest evicted
my %st;
$st{ $t->status_of("/gen/$_.html") }++ for 13 .. $n;
is($st{new}, $n - 12, 'every other page: new') or diag(explain \%st);
my $s = $t->stats->{zones}{crawl};
is($s->{entries}, $capacity, 'the zone is full');
cmp_ok($s->{evictions}, '>', 0, 'the oldest were evicted');
unlike($t->error_log, qr/no room for/, 'no "no room" warning');

# the snapshot saved at exit loads again
$t->stop;
my $cli = $ENV{SH_CLI};
SKIP: {
    skip 'SH_CLI not set', 1 unless $cli && -x $cli;
    like(`$cli index check ${\ $t->prefix}/data/crawl.snap`, qr/^check\tOK$/m,
         'simhash index check: OK');
}
$t->start;
like($t->error_log, qr/$capacity documents restored/,
     'restart: the snapshot is restored');
$t->stop;

# the log's alerts are the kill and the lock the master released
my @bad = grep { /\[(alert|crit|emerg)\]/
                 && !/exited on signal 9|was locked by $worker/ }
          split /\n/, $t->error_log;
ok(!@bad, 'no other alert') or diag(join "\n", @bad);
}
