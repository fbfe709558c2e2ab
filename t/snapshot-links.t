#!/usr/bin/perl
# A snapshot is never written through a link (issue 26): a symbolic link
# or a hard link planted at PATH.tmp or at PATH, by someone who can write
# the snapshot's directory (the workers' user), leaves the file it points
# to untouched, for a worker's periodic save and for the master's save at
# exit (root, when started by root).  The snapshot is a regular file of
# mode 0600 owned by the workers' user; loading never follows a link at
# PATH; a directory every user may write is refused by nginx -t.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my @pages = SimhashTest->random_pages(6, 200, 27);

sub setup {
    my ($save) = @_;
    my $t = SimhashTest->new(
        http  => 'simhash_zone zone=crawl:1m '
               . "file=%%PREFIX%%/data/crawl.snap save=$save;",
        proxy => "simhash crawl;\n"
               . '        location / { proxy_pass http://%%ORIGIN%%; }');
    $t->write_file("html/p$_.html", $pages[$_]) for 0 .. $#pages;
    $t->write_file("victim$_", "precious $_\n") for 1 .. 4;
    chmod 0600, map { $t->prefix . "/victim$_" } 1 .. 4;
    return $t;
}

sub intact {
    my ($t, $n, $what) = @_;
    is($t->read_file("victim$n"), "precious $n\n", "$what: victim untouched");
    is((stat($t->prefix . "/victim$n"))[3], 1,
       "$what: the victim has its one name again");
}

sub snapshot_ok {
    my ($t, $what) = @_;
    my $f = $t->prefix . '/data/crawl.snap';
    ok(!-l $f && -f $f, "$what: crawl.snap is a regular file");
    my @st = stat $f;
    is($st[2] & 07777, 0600, "$what: mode 0600");
    # (one process under valgrind: nothing runs as the workers' user)
    is($st[4], $SimhashTest::WORKER[2], "$what: owned by the workers' user")
        if @SimhashTest::WORKER && !$SimhashTest::VALGRIND;
    ok(!-e "$f.tmp" && !-l "$f.tmp", "$what: no .tmp left");
}

# the workers' saves
{
    my $t = setup('1s');
    $t->start;
    my $d = $t->prefix . '/data';
    my $n = 0;

    symlink($t->prefix . '/victim1', "$d/crawl.snap.tmp") or die $!;
    is($t->get('/p0.html')->{status}, 200, 'page fetched');
    ok($t->wait_log(qr/saved to/, $n++), 'worker: saved');
    intact($t, 1, 'worker, symlink at .tmp');
    snapshot_ok($t, 'worker, symlink at .tmp');

    link($t->prefix . '/victim2', "$d/crawl.snap.tmp") or die $!;
    $t->get('/p1.html');
    ok($t->wait_log(qr/saved to/, $n++), 'worker: saved');
    intact($t, 2, 'worker, hard link at .tmp');

    unlink "$d/crawl.snap";
    symlink($t->prefix . '/victim3', "$d/crawl.snap") or die $!;
    $t->get('/p2.html');
    ok($t->wait_log(qr/saved to/, $n++), 'worker: saved');
    intact($t, 3, 'worker, symlink at the file');
    snapshot_ok($t, 'worker, symlink at the file');

    unlink "$d/crawl.snap";
    link($t->prefix . '/victim4', "$d/crawl.snap") or die $!;
    $t->get('/p3.html');
    ok($t->wait_log(qr/saved to/, $n++), 'worker: saved');
    intact($t, 4, 'worker, hard link at the file');
    snapshot_ok($t, 'worker, hard link at the file');

    $t->stop;
    $t->check_log;
}

# the master's save at exit (root when the tests run as root)
for my $at ('crawl.snap.tmp', 'crawl.snap') {
    for my $kind ('symlink', 'hard link') {
        my $t = setup('off');
        $t->start;
        my $d = $t->prefix . '/data';
        my $victim = $t->prefix . '/victim1';
        unlink "$d/$at";
        if ($kind eq 'symlink') {
            symlink($victim, "$d/$at") or die $!;
        } else {
            link($victim, "$d/$at") or die $!;
        }
        $t->get("/p$_.html") for 0 .. 2;
        $t->stop;
        ok($t->wait_log(qr/saved to/, 0), "master, $kind at $at: saved");
        intact($t, 1, "master, $kind at $at");
        snapshot_ok($t, "master, $kind at $at");
    }
}

# loading: a link (or a FIFO) at PATH is never read through, nor does it
# keep nginx from starting (issue 31: the workers' user could plant one and
# stop the next start); like a damaged file it is moved aside, itself
{
    my $t = setup('off');
    my $d = $t->prefix . '/data';
    symlink($t->prefix . '/victim1', "$d/crawl.snap") or die $!;
    my ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'load: nginx -t passes with a symlink at the snapshot')
        or diag $out;
    like($out, qr/\[warn\].*crawl\.snap: a symbolic link.*moved aside/,
         '... and warns that it will be moved aside');
    $t->start;
    is($t->get('/p0.html')->{status}, 200, 'load, symlink: nginx serves');
    like($t->error_log, qr/crawl\.snap: a symbolic link.*starting empty/,
         'load, symlink: refused, saying why');
    my @aside = glob("$d/crawl.snap.refused-*");
    is(scalar @aside, 1, 'load, symlink: the link is moved aside');
    ok(@aside && -l $aside[0]
       && readlink($aside[0]) eq $t->prefix . '/victim1',
       'load, symlink: ... as the link itself, not what it points to');
    ok(!-e "$d/crawl.snap", 'load, symlink: nothing left at the path');
    $t->stop;
    intact($t, 1, 'load, symlink');
    snapshot_ok($t, 'load, symlink: the next save');
    $t->check_log;

    $t = setup('off');
    $d = $t->prefix . '/data';
    require POSIX;
    POSIX::mkfifo("$d/crawl.snap", 0600) or die $!;
    ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'load: nginx -t passes with a FIFO at the snapshot')
        or diag $out;
    $t->start;
    is($t->get('/p0.html')->{status}, 200, 'load, FIFO: nginx serves');
    @aside = glob("$d/crawl.snap.refused-*");
    ok(@aside == 1 && -p $aside[0], 'load, FIFO: moved aside, unopened');
    $t->stop;
    $t->check_log;
}

# a directory every user may write: refused, unless sticky
{
    my $t = setup('off');
    my $d = $t->prefix . '/data';
    chmod 0777, $d;
    my ($rc, $out) = $t->nginx_t;
    isnt($rc, 0, 'a directory writable by every user is refused');
    like($out, qr/writable by every user \(mode 0777\)/, '... saying so');
    chmod 01777, $d;
    ($rc, $out) = $t->nginx_t;
    is($rc, 0, 'a sticky one is accepted') or diag $out;
}

# a symbolic link as the snapshot's directory: refused, saying so
{
    my $t = setup('off');
    my $d = $t->prefix . '/data';
    rename($d, "$d-real") or die $!;
    symlink("$d-real", $d) or die $!;
    my ($rc, $out) = $t->nginx_t;
    isnt($rc, 0, 'a symlink as the directory is refused');
    like($out, qr/data: a symbolic link; name the directory/, '... saying so')
        or diag $out;
}

done_testing;
