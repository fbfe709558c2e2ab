#!/usr/bin/perl
# The tier's index in a Redis Cluster: what a document costs the cluster.
#
#   perl bench/cluster-memory.pl BUILD N [simhash cluster load options]
#
# Starts a cluster of 3 masters and no replicas (t/lib/RedisCluster.pm;
# replicas double the figure and are not counted), loads N documents of
# random fingerprints with `BUILD/simhash cluster load --random N` (every
# bucket one SET, unless --append: a chunk a document, as nodes add them
# one by one), and prints the masters' used_memory before and after, per
# document.  Not part of `make bench`: 2^26 documents take about 4 minutes
# and 4 GB.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use RedisCluster;
use Time::HiRes qw(time);

my ($build, $n, @opt) = @ARGV;
die "usage: $0 BUILD N [load options]\n" unless $build && $n;
my $c = RedisCluster->new(masters => 3, replicas => 0);
$c->start;
my $before = $c->used_memory;
my $t = time;
print `$build/simhash cluster load --redis @{[$c->addr]} --random $n @opt`;
die "load failed\n" if $?;
printf "load wall %.1f s\n", time - $t;
my $after = $c->used_memory;
printf "used_memory of the masters: before %d, after %d: %.1f B a document\n",
       $before, $after, ($after - $before) / $n;
for my $m ($c->masters) {
    my $i = $m->cmd('INFO', 'memory');
    my ($d) = $i =~ /used_memory_dataset:(\d+)/;
    my ($o) = $i =~ /used_memory_overhead:(\d+)/;
    printf "master %d: dataset %d, overhead %d, keys %d\n", $m->port, $d, $o,
           $m->cmd('DBSIZE');
}
$c->stop;
