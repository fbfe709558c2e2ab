#!/usr/bin/perl
# The local zone is the hot set; the cluster answers what it does not
# hold.  One real Redis Cluster (3 masters) and three nginx nodes of one
# tier (one simhash_seed, one simhash_key for a URL whichever node fetches
# it): A stores pages; B starts with an empty zone (no snapshot) and
# answers a re-fetch of A's page from the cluster's record of that key,
# as A answers it from its zone (unchanged, or changed: the same status,
# fingerprint, distance and score), never `new`; the document is then in
# B's zone, and the next fetch is answered there (the cluster's lookup
# counter does not move).  A duplicate the cluster finds puts its original
# in the zone: the next copy is found locally.  A changed page is written
# to the cluster as the key's newest version: a third node calls it
# unchanged.  A node whose zone is full evicts its oldest document; a
# re-fetch of an evicted page is answered from the cluster, not `new`.  A
# re-fetch whose record cannot be read (its master killed) is skipped,
# reason index_incomplete: never new; one whose record was read is
# answered, whatever became of the probes.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SimhashTest qw(wait_until);
use SimhashCli;
use RedisCluster;
no warnings qw(portable);

plan(skip_all => 'redis-server or redis-cli not installed (tools/deps.sh)')
    unless RedisCluster::available();
my $cli = $ENV{SH_CLI} or plan(skip_all => 'SH_CLI not set (make itest)');
SimhashTest::needs_master();

my $seed = 'tier-secret-for-the-hot-set';
# no replicas, and the masters left serve their slots when one is down
my $c = RedisCluster->new(masters => 3, replicas => 0,
                          extra => "cluster-require-full-coverage no\n");
$c->start;
my $urls = join ',', map { 'redis://127.0.0.1:' . $_->port } $c->nodes;

# the layout (and a few documents of nobody's) in the cluster
my $dir = File::Temp::tempdir('simhash-cwarm-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my ($rc, undef, $err) = sh($cli, 'cluster', 'load', '--seed', $seed,
                           '--redis', $c->addr, '--random', 64);
is($rc, 0, 'the layout loaded') or diag($err);

sub node {
    my ($size) = @_;
    # one key for a URL whichever node fetches it: the tier's
    my $t = SimhashTest->new(
        http  => "simhash_zone zone=crawl:$size distance=4 cluster=$urls "
               . "cluster_timeout=500ms;",
        proxy => <<"EOF");
        simhash crawl;
        simhash_seed $seed;
        simhash_key http://tier.test\$request_uri;
        simhash_probes 4096;
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
        location = /cq { simhash_cluster_query; }
EOF
    $t->start;
    # the worker reads the slot map and the layout at start
    wait_until('the node to read the cluster', sub {
        ($t->get('/cq?zone=crawl&fp=0123456789abcdef')->{content} // '')
            !~ /incomplete/
    });
    return $t;
}
my ($A, $B) = (node('1m'), node('1m'));

sub cl { $_[0]->stats->{zones}{crawl}{cluster} }
sub h {
    my ($r) = @_;
    return join ' ', map { $r->{headers}{"x-simhash$_"} // '-' }
                     ('-status', '', '-distance', '-score');
}
# A page new through $t, waited for in the cluster (its two APPENDs)
sub stored {
    my ($t, $path) = @_;
    my $r = $t->get($path);
    is($r->{headers}{'x-simhash-status'}, 'new', "$path new through it");
    my $fp = $r->{headers}{'x-simhash'};
    wait_until("$path in the cluster", sub {
        ($t->get("/cq?zone=crawl&fp=$fp")->{content} // '') =~ /"found"/
    });
    return $r;
}

# the record buckets' lengths: which one a page's record went to
my @nodes = $c->nodes;
sub master_of { $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT', $_[0])) }
my (undef, $rbits) = split / /, master_of('sh:m')->cmd('GET', 'sh:m');
sub rec_lengths {
    my %len;
    for my $b (0 .. 2**$rbits - 1) {
        my $key = sprintf 'sh:r%0*x', int(($rbits + 3) / 4), $b;
        $len{$key} = master_of($key)->cmd('STRLEN', $key);
    }
    return \%len;
}

# ---- a re-fetch of A's page through B, whose zone is empty ----
my $lens = rec_lengths();
stored($A, '/council.html');
my $grown = rec_lengths();
my ($council_rec) = grep { $grown->{$_} > $lens->{$_} } sort keys %$grown;
ok($council_rec, "the page's record is in $council_rec");
my $local = h($A->get('/council.html'));
like($local, qr/^unchanged /, "A's own answer to the re-fetch: $local");
is($B->stats->{zones}{crawl}{entries}, 0, "B's zone is empty");

my $before = cl($B);
my $r = $B->get('/council.html');
is(h($r), $local, 'through B, answered from the cluster as A answers it');
is($r->{content}, $B->fixture('council.html'), 'passed whole');
my $after = cl($B);
is($after->{lookups} - $before->{lookups}, 1, 'one lookup of the cluster');
is($after->{refetches} - $before->{refetches}, 1,
   "counted as the key's own record (refetches)");
is($after->{found} - $before->{found}, 0,
   'not a duplicate of itself');
is($B->stats->{zones}{crawl}{entries}, 1, 'the document now in B\'s zone');
is(h($B->get('/council.html')), $local, 'the second time: the same answer');
is(cl($B)->{lookups}, $after->{lookups},
   'from the zone: the cluster not asked');

# another body of the same page (a reprint: near, not identical)
$A->write_file('html/page.html', $A->fixture('sourdough.html'));
$B->write_file('html/page.html', $B->fixture('sourdough-reprint.html'));
stored($A, '/page.html');
$before = cl($B);
my $via = h($B->get('/page.html'));
like($via, qr/^unchanged \w+ [1-9]/,
     "a near body through B: unchanged at its distance ($via)");
$A->write_file('html/page.html', $A->fixture('sourdough-reprint.html'));
is($via, h($A->get('/page.html')), 'as A answers it from its zone');
is(cl($B)->{refetches} - $before->{refetches}, 1, 'from the cluster');

# ---- changed: another page at A's key ----
$A->write_file('html/moved.html', $A->fixture('bicycle.html'));
$B->write_file('html/moved.html', $B->fixture('cafe-utf8.html'));
stored($A, '/moved.html');
$before = cl($B);
$r = $B->get('/moved.html');
$via = h($r);
like($via, qr/^changed /, "another page at A's key through B: $via");
$after = cl($B);
is($after->{refetches} - $before->{refetches}, 1, 'from the cluster');
is($after->{writes} - $before->{writes}, 1,
   'the new version written to the cluster');
$A->write_file('html/moved.html', $A->fixture('cafe-utf8.html'));
is($via, h($A->get('/moved.html')), 'as A answers it from its zone');
is($B->status_of('/moved.html'), 'unchanged',
   'B again: unchanged, its zone holds the new version');
is(cl($B)->{lookups}, $after->{lookups}, 'the cluster not asked');

# ---- a duplicate the cluster finds: its original warms the zone ----
my ($page) = $A->random_pages(1, 200, 777);
$_->write_file('html/orig.html', $page) for $A, $B;
stored($A, '/orig.html');
$before = cl($B);
$r = $B->get('/orig.html?copy=1');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   "a copy of A's page through B: a duplicate");
my $of = $r->{headers}{'x-simhash-duplicate-of'};
is($of, 'http://tier.test/orig.html',
   "of the cluster's document, named by its key text ($of)");
$after = cl($B);
is($after->{found} - $before->{found}, 1, 'found in the cluster');
$r = $B->get('/orig.html?copy=2');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'the next copy too');
is($r->{headers}{'x-simhash-duplicate-of'}, $of, 'of the same document');
is(h($B->get('/orig.html')), h($A->get('/orig.html')),
   "the original's own key through B: answered as A answers it");
is(cl($B)->{lookups}, $after->{lookups},
   'both from the zone: the cluster not asked');

# ---- a third node: B's new version of moved.html is the cluster's ----
my $E = node('64k');
$E->write_file('html/moved.html', $E->fixture('cafe-utf8.html'));
$before = cl($E);
is($E->status_of('/moved.html'), 'unchanged',
   "a fresh node: B's version is the key's newest in the cluster");
is(cl($E)->{refetches} - $before->{refetches}, 1, 'from the cluster');

# ---- a zone that evicts: what it lost, the cluster still answers ----
my $cap = $E->stats->{zones}{crawl}{capacity};
my $n = $cap + 8;
my @pages = $E->random_pages($n, 60, 4646);
$E->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. $n;
my %st;
$st{ $E->status_of("/gen/$_.html") }++ for 1 .. $n;
is($st{new}, $n, "$n pages through a zone of $cap: all new")
    or diag(explain \%st);
my $z = $E->stats->{zones}{crawl};
cmp_ok($z->{evictions}, '>=', 8, "the zone evicted its oldest ($z->{evictions})");
is(cl($E)->{writes}, $n, 'each written to the cluster');
$before = cl($E);
$r = $E->get('/gen/1.html');
is($r->{headers}{'x-simhash-status'}, 'unchanged',
   'the oldest page, evicted: answered from the cluster, not new');
is(cl($E)->{refetches} - $before->{refetches}, 1, "by its key's record");
$after = cl($E);
is($E->status_of('/gen/1.html'), 'unchanged', 'again: from the zone');
is(cl($E)->{lookups}, $after->{lookups}, 'the cluster not asked');

# ---- the key's record not read: the answer is incomplete, never new ----
# the record bucket of each of 40 pages, from its key hash: the id the
# cluster's lookup of the page's fingerprint (the command-line tool's, the
# module's own) answers with
my %rec_master;
for my $i (1 .. 40) {
    my $file = "$dir/gen-$i.html";
    open(my $o, '>:raw', $file) or die "$file: $!";
    print $o $pages[$i - 1];
    close $o;
    my (undef, $fpo) = sh($cli, 'fingerprint', '--seed', $seed, $file);
    my ($fp) = $fpo =~ /^([0-9a-f]{16})\t/ or next;
    my ($kh) = ($B->get("/cq?zone=crawl&fp=$fp")->{content} // '')
               =~ /"id":"([0-9a-f]{16})"/ or next;
    my $key = sprintf 'sh:r%0*x', int(($rbits + 3) / 4),
                      hex($kh) >> (64 - $rbits);
    $rec_master{$i} = master_of($key)->port;
}
is(scalar keys %rec_master, 40, "the 40 pages' record buckets");
my $F = node('1m');
my $dead = $c->kill_master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT',
                                                  $council_rec))->port;
$r = $F->get('/council.html');
is($r->{headers}{'x-simhash-status'}, 'skipped',
   "its record's master down: a re-fetch through an empty zone is skipped");
is($F->stats->{zones}{crawl}{skipped}{index_incomplete}, 1,
   'reason index_incomplete');
is($r->{status}, 200, 'passed');
is($r->{content}, $F->fixture('council.html'), 'whole');
is(h($B->get('/council.html')), $local, 'B answers it from its zone');

# the other pages' records: on the masters left, or on the one killed; a
# re-fetch needs only its record, whatever became of the probes
$F->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. 40;
my (%st2, @wrong);
for my $i (1 .. 40) {
    my $want = $rec_master{$i} == $dead ? 'skipped' : 'unchanged';
    my $got = $F->status_of("/gen/$i.html");
    $st2{$got}++;
    push @wrong, "$i: $got, not $want" if $got ne $want;
}
note(join ', ', map { "$_: $st2{$_}" } sort keys %st2);
is("@wrong", '', 'every re-fetch whose record was read: unchanged, '
   . 'though probes failed; every other one skipped');
cmp_ok($st2{skipped} // 0, '>', 0, 'some of each');
cmp_ok($st2{unchanged} // 0, '>', 0, 'some of each');

# ---- the counts add up ----
for my $t ($A, $B, $E, $F) {
    my $s = cl($t);
    my $inc = 0;
    $inc += $_ for values %{ $s->{incomplete} };
    is($s->{lookups}, $s->{found} + $s->{new} + $s->{refetches} + $inc,
       'every lookup ended one way');
}
like($B->get('/stats?format=prometheus')->{content},
     qr/^simhash_cluster_refetches_total\{zone="crawl"\} [1-9]/m,
     'Prometheus: the re-fetches the cluster answered');

$_->stop for $A, $B, $E, $F;
$_->check_log for $A, $B, $E, $F;
$c->stop;
done_testing();
