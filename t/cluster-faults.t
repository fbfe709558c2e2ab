#!/usr/bin/perl
# Changes of a real Redis Cluster (3 masters, 3 replicas) under traffic,
# seen through nginx: lookups (simhash_cluster_query) of loaded documents
# go on in a loop of their own while the cluster changes, and every answer
# is checked: a loaded document is found with its own id or, while no
# master answers for one of its buckets, incomplete; never new, never an
# error, never a 5xx.
#
# A replica promoted by CLUSTER FAILOVER (run on the replica): the old
# master hands over, answers MOVED, and the client reads the new slot map
# by itself; full answers after.
#
# Slots moved by `redis-cli --cluster reshard` (2000 slots of loaded
# buckets, from one master to another) while the loop looks up and pages
# are fetched through the proxy, each new page written to the cluster by
# the node: MOVED and ASK followed, every lookup right, no write lost, and
# every page written during the move found after it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use HTTP::Tiny;
use IO::Handle;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;
no warnings qw(portable);

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-faults';
my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000);
$c->start;
my @nodes = $c->nodes;

# ---- documents, loaded as a tier would from its snapshots ----
my $dir = File::Temp::tempdir('simhash-cfaults-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my @known = RedisCluster::random_docs("$dir/docs.txt", 20000, 400, 4613);
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, "$dir/docs.txt");
is($rc, 0, 'loaded') or diag($err);
$_->cmd('WAIT', 1, 5000) for $c->masters;

my $t = SimhashTest->new(
    workers => 2,
    http  => "simhash_zone zone=crawl:4m cluster=" . $c->urls
           . " cluster_timeout=300ms;",
    proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
my @pages = $t->random_pages(500, 120, 4613);
$t->write_file("html/p$_.html", $pages[$_]) for 0 .. $#pages;
$t->start;

# far fingerprints: none of them within 3 bits of a loaded one
my @far = map { sprintf '%08x%08x', int(rand(2**32)), int(rand(2**32)) }
          1 .. 64;

sub flip { sprintf '%016x', hex($_[0]) ^ $_[1] }

sub cq {
    my ($ua, $fp) = @_;
    my $r = $ua->get($t->url("/cq?zone=crawl&fp=$fp"));
    my $j = eval { decode_json($r->{content}) } // {};
    return { http => $r->{status}, %$j };
}

sub counts { $t->stats->{zones}{crawl}{cluster} }

# every worker has read its map and the layout
wait_until('the workers to read the cluster', sub {
    my $n = 0;
    for (1 .. 6) {
        $n++ if (cq($t->{ua}, flip($known[0][1], 1))->{status} // '') eq 'found';
    }
    return $n == 6;
});

# A loop of lookups in a process of its own, one line a lookup: "TIME
# EXPECTED HTTP STATUS ID CAUSE SECONDS".  A loaded document one bit away
# (found, with its id) or a far fingerprint (new).
sub lookups {
    my ($file) = @_;
    my $pid = fork // die "fork: $!";
    return $pid if $pid;
    my $ua = SimhashTest::ua();
    open(my $out, '>', $file) or POSIX::_exit(1);
    $out->autoflush(1);
    my $run = 1;
    local $SIG{TERM} = sub { $run = 0 };
    my $i = 0;
    while ($run) {
        my $k = $known[$i++ % @known];
        my ($fp, $want) = $i % 8 ? (flip($k->[1], 1 << ($i % 40)), $k->[0])
                                 : ($far[$i % @far], 'new');
        my $s = time;
        my $r = cq($ua, $fp);
        printf $out "%.3f %s %s %s %s %s %.3f\n", $s, $want, $r->{http},
               $r->{status} // '-', $r->{id} // '-', $r->{cause} // '-',
               time - $s;
    }
    close $out;
    POSIX::_exit(0);
}

sub stop_child {
    my ($pid) = @_;
    kill 'TERM', $pid;
    waitpid($pid, 0);
}

# The lines of a loop's file, judged: wrong answers, non-200, incomplete
# (by cause), the worst time, the last incomplete lookup's time.
sub judge {
    my ($file) = @_;
    my %j = (n => 0, wrong => [], http => 0, inc => {}, worst => 0,
             last_inc => 0, found => 0);
    open(my $in, '<', $file) or die "$file: $!";
    while (<$in>) {
        my ($at, $want, $http, $st, $id, $cause, $took) = split;
        next unless defined $took;
        $j{n}++;
        $j{worst} = $took if $took > $j{worst};
        if ($http != 200) {
            $j{http}++;
        } elsif ($st eq 'incomplete') {
            $j{inc}{$cause}++;
            $j{last_inc} = $at;
        } elsif ($want eq 'new' ? $st ne 'new'
                                : ($st ne 'found' || $id ne $want)) {
            push @{ $j{wrong} }, $_;
        } else {
            $j{found}++ if $st eq 'found';
        }
    }
    close $in;
    return \%j;
}

sub causes {
    my ($h) = @_;
    return join(', ', map { "$_ $h->{$_}" } sort keys %$h) || 'none';
}

# The table bucket of a fingerprint: its key.
sub bucket_key {
    my ($fp) = @_;
    my ($bits) = split / /, $c->master_of_slot(
        $nodes[0]->cmd('CLUSTER', 'KEYSLOT', 'sh:m'))->cmd('GET', 'sh:m');
    return sprintf 'sh:f%0*x', int(($bits + 3) / 4), hex($fp) >> (64 - $bits);
}

# ---- a master that stops answering, then dies, while pages go to it ----
# The node's writes (APPENDs, not waited for) to a master that stops
# answering pile up on its connection; the connection's reply timeout ends
# it, every awaited command is told it is lost, and a lost write asks for
# the slot map again and waits in the backlog for the promoted replica.
# That request must not go to the connection being ended (it was still
# taken for ready: a worker died of SIGSEGV).  Half the pages are new
# (each asked of the cluster: a page whose lookup reads the silent master
# is skipped, so it is never written there); the other half are pages the
# zone holds, changed since: answered by the zone, and each new version
# written to its buckets' masters, the silent one among them, whatever it
# answers.
{
    is(scalar(grep { $t->status_of("/p$_.html") eq 'new' } 400 .. 449), 50,
       'p400 to p449 stored in the zone (new)');
    my @changed = $t->random_pages(50, 120, 4614);
    $t->write_file("html/p$_.html", $changed[$_ - 400]) for 400 .. 449;
    my $victim = $nodes[0];
    my $role = $victim->cmd('ROLE');
    is($role->[0], 'master', 'the first seed is a master');
    my $before = counts();
    kill 'STOP', $victim->{pid};
    # eight clients at once, for writes to pile up before the connection's
    # reply timeout (1 s) ends it; until the cluster has failed the silent
    # master over (cluster-node-timeout 1 s)
    my @kids;
    for my $k (0 .. 7) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my $ua = SimhashTest::ua();
            open(my $out, '>', "$dir/silent.$k") or POSIX::_exit(1);
            my $t0 = time;
            for (my $i = 400 + $k; $i < 500 && time - $t0 < 2.5; $i += 8) {
                my $s = time;
                my $r = $ua->get($t->url("/p$i.html"));
                printf $out "%s %s %.3f\n", $r->{status},
                       $r->{headers}{'x-simhash-status'} // '-', time - $s;
            }
            close $out;
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    waitpid($_, 0) for @kids;
    my ($n, @bad, $worst) = (0);
    for my $k (0 .. 7) {
        open(my $in, '<', "$dir/silent.$k") or die;
        while (<$in>) {
            my ($http, $st, $took) = split;
            $n++;
            $worst = $took if !defined $worst || $took > $worst;
            push @bad, "$http $st" unless $http == 200
                                          && $st =~ /^(new|skipped|changed)$/;
        }
        close $in;
    }
    $victim->kill9;
    $c->wait_ok;
    ok(!@bad, "$n pages while the master was silent: each passed (200), "
       . 'new, skipped or changed')
        or diag(join ', ', grep { defined } @bad[0 .. 9]);
    cmp_ok($worst, '<', 1.5, sprintf('each bounded (worst %.3f s)', $worst));
    unlike($t->error_log, qr/exited on signal/, 'no worker died');
    my $after = counts();
    cmp_ok($after->{backlog_queued}, '>', $before->{backlog_queued},
           'the writes the silent master never acknowledged: kept in the '
           . 'backlog (' . ($after->{backlog_queued}
                            - $before->{backlog_queued}) . ')');
    # each worker finds the new master by itself (a lookup that reaches
    # the dead one reads the map again)
    wait_until('full answers from the promoted replica, in every worker',
               sub {
        !grep { (cq($t->{ua}, flip($_->[1], 1))->{status} // '') ne 'found' }
              @known
    });
    # and the kept writes reach the promoted replica
    wait_until('the backlog written to the new master', sub {
        my $now = counts();
        $now->{backlog_replayed} + $now->{backlog_dropped}
            == $now->{backlog_queued}
    });
    is(counts()->{backlog_dropped}, $before->{backlog_dropped},
       'none of them dropped');
    @nodes = grep { $_->{pid} } @nodes;
}

# ---- a replica promoted by CLUSTER FAILOVER ----
{
    my $before = counts();
    my ($old) = grep { $c->replica_of($_) } $c->masters;
    my $replica = $c->replica_of($old);
    my ($k) = grep {
        $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT',
                                          bucket_key($_->[1])))->port
            == $old->port
    } @known;
    ok($k, 'a master with a replica holds the bucket of a loaded document');

    my $file = "$dir/failover.txt";
    my $pid = lookups($file);
    wait_until('lookups under way', sub { -s $file });

    my $t0 = time;
    is($replica->cmd('CLUSTER', 'FAILOVER'), 'OK',
       'CLUSTER FAILOVER on the replica');
    wait_until('the replica to be master', sub {
        my $role = eval { $replica->cmd('ROLE') };
        ref $role eq 'ARRAY' && $role->[0] eq 'master'
    });
    my $promoted = time - $t0;
    $c->wait_ok;
    my $settled = time;
    # lookups go on after the cluster has settled: the client must find
    # the new master by itself and answer in full
    my $lines = 0;
    wait_until('lookups after the failover', sub {
        open(my $in, '<', $file) or return 0;
        my $n = 0;
        while (<$in>) { $n++ if (split)[0] > $settled + 0.5 }
        return $n >= 60;
    });
    stop_child($pid);

    my $j = judge($file);
    note(sprintf 'failover: promoted in %.2f s, settled in %.2f s; %d '
                 . 'lookups, %d found, incomplete: %s; worst %.3f s',
         $promoted, $settled - $t0, $j->{n}, $j->{found}, causes($j->{inc}),
         $j->{worst});
    ok(!@{ $j->{wrong} }, 'every lookup during and after the failover: '
       . 'found with its id, or new for a far page, or incomplete')
        or diag(grep { defined } @{ $j->{wrong} }[0 .. 9]);
    is($j->{http}, 0, 'no 5xx, no dropped lookup');
    ok(!$j->{last_inc} || $j->{last_inc} < $settled + 0.5,
       'no lookup incomplete once the cluster had settled');
    cmp_ok($j->{worst}, '<', 1.5, 'each lookup bounded');
    my $after = counts();
    cmp_ok($after->{refreshes}, '>', $before->{refreshes},
           'the slot map read again: ' . ($after->{refreshes}
                                          - $before->{refreshes}) . ' times');
    cmp_ok($after->{moved}, '>', $before->{moved},
           'the old master\'s MOVED followed');
    is(cq($t->{ua}, flip($k->[1], 4))->{id}, $k->[0],
       'the promoted replica answers');
    $t->{failover} = [$promoted, $j];
}

# ---- slots moved by redis-cli --cluster reshard, under traffic ----
{
    my $before = counts();
    my @masters = sort { $a->port <=> $b->port } $c->masters;
    my ($from, $to) = @masters[0, 1];
    my ($fid, $tid) = map { $_->cmd('CLUSTER', 'MYID') } $from, $to;
    my $keys = $from->cmd('DBSIZE');
    cmp_ok($keys, '>', 100, "the master giving slots holds $keys buckets");

    my $file = "$dir/reshard.txt";
    my $pid = lookups($file);

    # pages fetched through the proxy meanwhile: each new page is written
    # to the cluster by the node
    my $wfile = "$dir/written.txt";
    my $wpid = fork // die "fork: $!";
    if ($wpid == 0) {
        my $ua = SimhashTest::ua();
        open(my $out, '>', $wfile) or POSIX::_exit(1);
        $out->autoflush(1);
        my $run = 1;
        local $SIG{TERM} = sub { $run = 0 };
        for my $i (0 .. 399) {
            last unless $run;
            my $r = $ua->get($t->url("/p$i.html"));
            printf $out "%d %s %s %s\n", $r->{status},
                   $r->{headers}{'x-simhash-status'} // '-',
                   $r->{headers}{'x-simhash'} // '-', $i;
            sleep 0.02;
        }
        close $out;
        POSIX::_exit(0);
    }
    wait_until('lookups under way', sub { -s $file });

    my $t0 = time;
    my $out = `redis-cli --cluster reshard 127.0.0.1:${\ $from->port } --cluster-from $fid --cluster-to $tid --cluster-slots 2000 --cluster-yes 2>&1`;
    my $took = time - $t0;
    is($?, 0, sprintf('2000 slots resharded in %.1f s', $took))
        or diag(substr($out, -2000));
    $c->wait_ok;

    # ASK needs a lookup to reach a slot between the move of one of its
    # keys and the move of the slot: milliseconds a slot in a reshard,
    # which the loop's lookups seldom hit.  One slot moved by hand, as
    # redis-cli does it, held half-way while the loop goes on.
    my $asked = counts()->{asked};
    my $key = bucket_key($known[1][1]);
    my $slot = $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key);
    my $src = $c->master_of_slot($slot);
    my ($dst) = grep { $_->port != $src->port } $c->masters;
    my ($sid, $did) = map { $_->cmd('CLUSTER', 'MYID') } $src, $dst;
    $dst->cmd('CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $sid);
    $src->cmd('CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $did);
    is($src->cmd('MIGRATE', '127.0.0.1', $dst->port, '', 0, 5000, 'KEYS',
                 $key), 'OK', "slot $slot half-moved: $key on its new master");
    wait_until('a lookup to follow ASK', sub {
        cq($t->{ua}, flip($known[1][1], 8));
        counts()->{asked} > $asked
    });
    my $rest = $src->cmd('CLUSTER', 'GETKEYSINSLOT', $slot, 1000);
    $src->cmd('MIGRATE', '127.0.0.1', $dst->port, '', 0, 5000, 'KEYS', @$rest)
        if @$rest;
    $_->cmd('CLUSTER', 'SETSLOT', $slot, 'NODE', $did) for $c->masters;
    $c->wait_ok;

    my $settled = time;
    wait_until('lookups after the move', sub {
        open(my $in, '<', $file) or return 0;
        my $n = 0;
        while (<$in>) { $n++ if (split)[0] > $settled + 0.5 }
        return $n >= 40;
    });
    stop_child($pid);
    stop_child($wpid);

    my $j = judge($file);
    note(sprintf 'reshard: %.1f s; %d lookups, %d found, incomplete: %s; '
                 . 'worst %.3f s', $took, $j->{n}, $j->{found},
         causes($j->{inc}), $j->{worst});
    ok(!@{ $j->{wrong} }, 'every lookup during and after the move right')
        or diag(grep { defined } @{ $j->{wrong} }[0 .. 9]);
    is($j->{http}, 0, 'no 5xx, no dropped lookup');
    is(causes($j->{inc}), 'none', 'no lookup incomplete: a moving slot '
       . 'is always served by one of its two masters');

    my $after = counts();
    my %d = map { $_ => $after->{$_} - $before->{$_} }
            qw(moved asked refreshes writes write_errors);
    note(join ', ', map { "$_ $d{$_}" } sort keys %d);
    cmp_ok($d{moved}, '>', 0, "MOVED followed ($d{moved})");
    cmp_ok($d{asked}, '>', 0, "ASK followed ($d{asked})");
    is($d{write_errors}, 0, 'no write lost');

    my @written;
    open(my $in, '<', $wfile) or die;
    my ($bad, $n) = (0, 0);
    while (<$in>) {
        my ($http, $st, $fp) = split;
        $n++;
        $bad++ unless $http == 200;
        push @written, $fp if $st eq 'new';
    }
    close $in;
    cmp_ok(scalar @written, '>=', 50, "$n pages fetched during the move, "
           . scalar(@written) . ' new');
    is($bad, 0, 'every page passed (200)');
    cmp_ok($d{writes}, '>=', scalar @written, 'each written');
    my @lost;
    wait_until('the writes to land', sub {
        @lost = grep { (cq($t->{ua}, $_)->{status} // '') ne 'found' } @written;
        return !@lost;
    }) if @written;
    is(scalar @lost, 0, 'every page written during the move found after it');
    $t->{reshard} = [$took, $j, \%d];
}

$t->check_log;
$t->stop;
$c->stop;
done_testing();
