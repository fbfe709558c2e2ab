#!/usr/bin/perl
# The tier's index in a Redis Cluster: what a document costs the cluster.
#
#   perl bench/cluster-memory.pl BUILD N [simhash cluster load options]
#   perl bench/cluster-memory.pl BUILD N --urls LIST [load options]
#
# Starts a cluster of 3 masters and no replicas (t/lib/RedisCluster.pm;
# replicas double the figure and are not counted), loads N documents of
# random fingerprints with `BUILD/simhash cluster load --random N` (every
# bucket one SET, unless --append: a chunk a document, as nodes add them
# one by one), and prints the masters' used_memory before and after, per
# document.  With --urls LIST (a file of URLs, one a line): N documents of
# random ids and fingerprints whose keys are LIST's URLs in turn, loaded
# from a FILE twice, without the keys and with them (the cluster emptied
# between), and what the key text costs a document.  Not part of `make
# bench`: 2^26 documents take about 4 minutes and 4 GB.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use RedisCluster;
use Time::HiRes qw(time);
use File::Temp ();

my ($build, $n, @opt) = @ARGV;
die "usage: $0 BUILD N [--urls LIST] [load options]\n" unless $build && $n;
my $c = RedisCluster->new(masters => 3, replicas => 0);
$c->start;
if (@opt && $opt[0] eq '--urls') {
    my (undef, $list, @rest) = @opt;
    exit(keys_cost($list, @rest));
}
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

# The key text's cost: the same documents loaded without and with keys.
sub keys_cost {
    my ($list, @rest) = @_;
    open(my $in, '<', $list) or die "$list: $!";
    chomp(my @urls = <$in>);
    die "$list: no URLs\n" unless @urls;
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my ($len, %mem) = (0);
    srand(46);
    for my $with (0, 1) {
        open(my $fh, '>', "$dir/docs") or die;
        for my $i (0 .. $n - 1) {
            my $u = $urls[$i % @urls];
            $len += length $u if $with;
            printf $fh "%08x%08x %08x%08x 1 1700000000 2 3%s\n",
                   (map { int(rand(2**32)) } 1 .. 4), $with ? " $u" : '';
        }
        close $fh;
        $_->cmd('FLUSHALL') for $c->masters;
        my $before = $c->used_memory;
        my $out = `$build/simhash cluster load --redis @{[$c->addr]} @rest $dir/docs`;
        die "load failed\n" if $?;
        print $out if $with;
        $mem{$with} = ($c->used_memory - $before) / $n;
        printf "%s key text: %.1f B a document\n", $with ? 'with' : 'without',
               $mem{$with};
    }
    printf "key text: %.1f B a document for URLs of %.1f bytes on average "
           . "(%d distinct)\n", $mem{1} - $mem{0}, $len / $n, scalar @urls;
    $c->stop;
    return 0;
}
