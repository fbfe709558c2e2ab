#!/usr/bin/perl
# Stream entries are authenticated and versioned: with simhash_seed, every
# entry carries a MAC under a key derived from the tier's secret, so a
# reader of the stream cannot forge one (an attacker-named key with a
# fingerprint copied from another entry, a MAC made under another secret);
# an entry of another extraction version, or of an earlier release (no xv,
# no MAC), is refused and counted, never mixed in.  A replicated zone
# without simhash_seed is warned about: its MACs are public.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SimhashTest qw(wait_until);
use RedisTest;
no warnings qw(portable);

plan(skip_all => 'redis-server not installed (tools/deps.sh installs it)')
    unless RedisTest::available();
plan(skip_all => 'SH_CLI (the simhash tool) is not set')
    unless $ENV{SH_CLI} && -x $ENV{SH_CLI};

my $redis = RedisTest->new;
$redis->start;
my $url = $redis->url;
my $stream = 'simhash:crawl';
my $secret = '00112233445566778899aabbccddeeff';

# without a secret: nginx -t warns that every writer is trusted
my $c = SimhashTest->new(proxy => "simhash crawl;\n"
                                  . "        location / { return 204; }");
$c->set(http => "simhash_zone zone=crawl:1m;\n"
              . "    simhash_replicate crawl $url;");
my ($rc, $out) = $c->nginx_t;
is($rc, 0, 'replication without simhash_seed: nginx -t passes');
like($out, qr/\[warn\].*simhash zone "crawl" is replicated without simhash_seed: its stream entries carry a MAC anyone can compute/,
     '... with a warning that every writer of the stream is trusted');

my $t = SimhashTest->new(
    http  => "simhash_zone zone=crawl:1m;\n"
           . "    simhash_replicate crawl $url node=a;",
    proxy => <<"CONF");
        simhash crawl;
        simhash_seed $secret;
        simhash_key "site\$request_uri";
        location / { proxy_pass http://%%ORIGIN%%; }
        location = /stats { simhash_stats; }
CONF
my (undef, $out2) = $t->nginx_t;
unlike($out2, qr/replicated without simhash_seed/, 'with a secret: no warning');
$t->start;

sub repl { $t->stats->{zones}{crawl}{replication} }
sub wait_repl {
    my ($cond, $what) = @_;
    my $r;
    eval {
        wait_until("the replication counters: $what",
                   sub { $r = repl(); $cond->($r) });
    } or do { diag(explain $r); die $@ };
    return $r;
}
wait_repl(sub { $_[0]{connected} == 2 }, 'both connections');

# the node's own entry: every field, and a MAC that verifies under the
# secret only
my $fp = $t->get('/sourdough.html')->{headers}{'x-simhash'};
wait_repl(sub { $_[0]{published} == 1 }, 'published');
my $first = $redis->cmd('XRANGE', $stream, '-', '+')->[0];
my %f = @{ $first->[1] };
like($f{xv}, qr/^[0-9a-f]{8}$/, 'xv: the extraction version, 8 hex digits');
like($f{mac}, qr/^[0-9a-f]{32}$/, 'mac: 32 hex digits');
like($f{sk}, qr/^[0-9a-f]{32}$/, 'sk: the sketches, 32 hex digits');
like($f{seq}, qr/^[1-9][0-9]*$/, 'seq: the writer\'s sequence number, decimal');
my $text = join '', map { "$_ $f{$_}\n" }
                    qw(node key fp digest time seed xv sk seq mac);
sub verify {
    my ($entry, @opts) = @_;
    my $cmd = join ' ', $ENV{SH_CLI}, 'entry', @opts, '--verify',
                        '>/dev/null';
    open my $p, '|-', $cmd or die "simhash entry: $!";
    print $p $entry;
    close $p;
    return $? >> 8;
}
is(verify($text, '--seed', $secret), 0, 'the MAC verifies under the secret');
isnt(verify($text), 0, '... and not without it');

# An entry as a node of the tier signs it.
sub signed {
    my (%e) = @_;
    my @args = map { ("--$_" => $e{$_}) } sort keys %e;
    return map { split / /, $_, 2 } split /\n/,
           `$ENV{SH_CLI} entry --seed $secret --node z @args`;
}
my $bfp = sprintf('%016x', hex($fp) ^ 0xffff_0000);
my @order = qw(node key fp digest time seed xv sk seq mac);
# The fields of %$e in the stream's order, some replaced.
sub with {
    my ($e, %set) = @_;
    return map { ($_ => exists $set{$_} ? $set{$_} : $e->{$_}) } @order;
}

# 1. the forgery of the issue: an attacker-named key, with the fingerprint
#    and MAC copied from a real entry
$redis->cmd('XADD', $stream, '*', with(\%f, node => 'z',
                                       key => "site/y\r\nSet-Cookie: pwn=1"));
# 2. a MAC made under another secret, the seed field copied
my %other = map { split / /, $_, 2 } split /\n/,
    `$ENV{SH_CLI} entry --seed ffeeddccbbaa99887766554433221100 --node z --key site/evil --fp $fp`;
$redis->cmd('XADD', $stream, '*', with(\%other, seed => $f{seed}));
# 3. another extraction version, signed by the tier
$redis->cmd('XADD', $stream, '*',
            signed(key => 'site/other-version', fp => $bfp,
                   xv => '7f000001'));
# 4. an entry of an earlier release: no xv, no mac
$redis->cmd('XADD', $stream, '*', node => 'z', key => 'site/old',
            fp => $bfp, digest => '0' x 16, time => int(time * 1000),
            seed => $f{seed});
# 5. a real entry of the tier
$redis->cmd('XADD', $stream, '*', signed(key => 'site/elsewhere.html',
                                         fp => $bfp));

my $s = wait_repl(sub { $_[0]{refused} == 4 && $_[0]{applied} == 1 },
                  "four refused, the tier's entry applied");
is($s->{refused_mac}, 2, 'two for their MAC');
is($s->{refused_version}, 1, 'one for its extraction version');
like($t->error_log, qr/refused: (its MAC does not verify|extraction version 7f000001, this zone's is [0-9a-f]{8}|no "xv" field)/,
     'a refusal is logged with why');
my $r = $t->get('/sourdough.html?again');
is($r->{headers}{'x-simhash-status'}, 'duplicate', 'a copy of the page');
is($r->{headers}{'x-simhash-duplicate-of'}, 'site/sourdough.html',
   '... is a duplicate of the real key, not of the forged one');
my $p = $t->get('/stats?format=prometheus')->{content};
like($p, qr/^simhash_replication_refused_mac_total\{zone="crawl"\} 2$/m,
     'prometheus: refused for the MAC');
like($p, qr/^simhash_replication_refused_version_total\{zone="crawl"\} 1$/m,
     'prometheus: refused for the version');

$t->stop;
$t->check_log;
done_testing;
