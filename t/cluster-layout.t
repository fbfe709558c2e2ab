#!/usr/bin/perl
# The tier's index in a real Redis Cluster (3 masters, 3 replicas), through
# the command-line tool: key slots as Redis computes them, a bulk load
# straight into the cluster and through redis-cli --pipe files, documents
# found near their fingerprints with their whole id and their key text, a
# chunk written by a client without the tier's secret never read as a
# document, nor a key text as a document's, and a killed
# master: probes of its buckets are "incomplete" (never "new") until its
# replica takes over, then answered in full again.

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

my $c = RedisCluster->new(masters => 3, replicas => 1, node_timeout => 1000);
$c->start;
my @nodes = $c->nodes;

# ---- slots: Redis's own answer ----
for my $key ('foo', 'sh:f0a1b', 'sh:r3ff', '{user1000}.following',
             'foo{}{bar}', 'foo{{bar}}zap', 'a{b}c{d}') {
    my ($rc, $out) = sh($cli, 'cluster', 'slot', $key);
    chomp $out;
    is($out, $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key), "slot of $key");
}

# ---- a bulk load from a file ----
my $dir = File::Temp::tempdir('simhash-cluster-XXXXXX',
                              DIR => SimhashTest::nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
my $docs = "$dir/docs.txt";
srand(46);
my @known;
open(my $fh, '>', $docs) or die "$docs: $!";
for my $i (1 .. 3000) {
    my @v = map { sprintf '%08x', int(rand(2**32)) } 1 .. 6;
    my ($kh, $fp, $dg) = ("$v[0]$v[1]", "$v[2]$v[3]", "$v[4]$v[5]");
    # a key text for most (the rest of the line), none for every 7th
    my $key = $i % 7 ? "http://layout.example/doc/$i?q=a b" : '';
    print $fh "$kh $fp $dg 1700000000 0 0" . ($key ? " $key" : '') . "\n";
    push @known, [$kh, $fp, $dg, $key] if $i % 300 == 0;
}
close $fh;
my ($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', 'tier-secret',
                          '--redis', $c->addr, $docs);
is($rc, 0, 'load') or diag($err);
like($out, qr/^documents 3000$/m, 'every document loaded');

sub query {
    my ($addr, @fp) = @_;
    my ($rc, $out, $err) = sh($cli, 'cluster', 'query', '--seed',
                              'tier-secret', '--redis', $addr, @fp);
    return ($rc, $out . $err);
}

sub flip { sprintf '%016x', hex($_[0]) ^ $_[1] }

for my $k (@known) {
    my ($kh, $fp, $dg, $key) = @$k;
    my ($rc, $out) = query($c->addr, flip($fp, 0x5));
    my $named = $key ? " key \Q$key\E" : '';
    like($out, qr/near $fp id $kh distance 2 digest $dg$named$/m,
         "a page 2 bits from $fp finds it, with its whole id"
         . ($key ? ' and its key text' : ' (loaded without a key)'));
}
my ($nokey) = grep { !$_->[3] } @known;
ok($nokey, 'one loaded without its key text');
($rc, $out) = query($c->addr, 'ffffffffffffffff', '0000000000000000');
like($out, qr/^ffffffffffffffff new/m, 'a far page is new');

# ---- files for redis-cli --pipe, one a master, under another prefix ----
($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', 'tier-secret',
                       '--prefix', 'p2:', '--redis', $c->addr, '--out',
                       "$dir/pipe", $docs);
is($rc, 0, 'load --out DIR') or diag($err);
my @files = glob("$dir/pipe/*.resp");
is(scalar @files, 3, 'one file a master');
for my $f (@files) {
    my ($port) = $f =~ /:(\d+)\.resp$/;
    my $o = `redis-cli -p $port --pipe < '$f' 2>&1`;
    like($o, qr/errors: 0, replies: \d+/, "redis-cli --pipe into $port");
}
{
    my ($rc2, $out2, $err2) = sh($cli, 'cluster', 'query', '--seed',
                                 'tier-secret', '--prefix', 'p2:', '--redis',
                                 $c->addr, flip($known[0][1], 0x100));
    like($out2, qr/near $known[0][1] id $known[0][0]/,
         'found under the piped prefix');
}

# ---- a forged chunk: written by a client that has not the secret ----
my $target = flip($known[1][1], 0x3);       # near one of ours
my $forged = "$dir/forged.txt";
open($fh, '>', $forged) or die;
print $fh "00000000deadbeef $target 0\n";
close $fh;
($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', 'not-the-secret',
                       '--out', "$dir/forged.resp", $forged);
is($rc, 0, 'a forged load file') or diag($err);
{
    open(my $r, '<', "$dir/forged.resp") or die;
    my $resp = do { local $/; <$r> };   # not for the block: RESP reads lines
    # the SET of the table bucket: APPEND it to the real bucket
    my ($key, $val) = $resp =~ /\$3\r\nSET\r\n\$\d+\r\n(sh:f[0-9a-f]+)\r\n\$(\d+)\r\n/
        or die "no table SET in the forged file";
    my $start = $+[0];
    my $bytes = substr($resp, $start, $val);
    my $node = $c->master_of_slot(
        $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key));
    ok(!ref $node->cmd('APPEND', $key, $bytes), "forged chunk appended to $key");
}
($rc, $out) = query($c->addr, $target);
unlike($out, qr/id 00000000deadbeef/, 'the forged document is not read');
like($out, qr/near $known[1][1] id $known[1][0]/, 'the real one still is');

# ---- a forged key text: a URL of the forger's for a real document ----
open($fh, '>', $forged) or die;
print $fh "$nokey->[0] $nokey->[1] 0 0 0 0 http://forger.example/\n";
close $fh;
($rc, $out, $err) = sh($cli, 'cluster', 'load', '--seed', 'not-the-secret',
                       '--out', "$dir/forged.resp", $forged);
is($rc, 0, 'a forged key text file') or diag($err);
{
    open(my $r, '<', "$dir/forged.resp") or die;
    my $resp = do { local $/; <$r> };
    my ($key, $val) = $resp =~ /\$3\r\nSET\r\n\$\d+\r\n(sh:k[0-9a-f]+)\r\n\$(\d+)\r\n/
        or die "no key text SET in the forged file";
    my $bytes = substr($resp, $+[0], $val);
    my $node = $c->master_of_slot(
        $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $key));
    ok(!ref $node->cmd('APPEND', $key, $bytes),
       "forged key text appended to $key");
}
($rc, $out) = query($c->addr, $nokey->[1]);
like($out, qr/near $nokey->[1] id $nokey->[0] distance 0 digest $nokey->[2] forged 1$/m,
     'the document found, its forged key text refused and counted');
unlike($out, qr/forger/, 'the forger\'s URL never named');

# ---- a master killed: incomplete, then answered again after failover ----
for my $m ($c->masters) {
    $m->cmd('WAIT', 1, 5000);                 # its replica has the load
}
my $fp = $known[2][1];
my $bucket_key = do {
    my $meta = $c->master_of_slot($nodes[0]->cmd('CLUSTER', 'KEYSLOT',
                                                 'sh:m'))->cmd('GET', 'sh:m');
    my ($bits) = split / /, $meta;
    sprintf 'sh:f%0*x', int(($bits + 3) / 4), hex($fp) >> (64 - $bits);
};
my $slot = $nodes[0]->cmd('CLUSTER', 'KEYSLOT', $bucket_key);
my $victim = $c->kill_master_of_slot($slot);
my ($live) = grep { $_->{pid} } $c->nodes;
my $addr = '127.0.0.1:' . $live->port;

($rc, $out) = query($addr, $fp);
like($out, qr/^$fp incomplete/m, 'a probe of the dead master: incomplete');
isnt($rc, 0, 'and the tool says so by its exit code');
unlike($out, qr/ new/, 'never "new"');

$c->wait_ok;
($rc, $out) = query($addr, $fp);
like($out, qr/near $fp id $known[2][0] distance 0/,
     'after the failover, found again (the replica had it)');
is($rc, 0, 'a complete answer');

$c->stop;
done_testing();
