#!/usr/bin/perl
# The console's saved figures (PATH.console) as an attacker would write
# them: whoever can write the snapshot's directory (the workers' user, often
# shared with other services) could put a file there.  The file is read
# field by field and checked, and carries a MAC under the zone's secret:
#
#  - a sites' table of k = 2^27 with its checksums made right (even the
#    MAC, as if the writer had the secret) is refused: no worker dies on a
#    duplicate or on the statistics, then or at the next restart;
#  - outcome slots whose texts have no NUL are refused: the console never
#    shows (nor reads past) more than a slot's text;
#  - a file others may write, with another name (a hard link), or of
#    another owner than root, the master's or the workers' user is refused;
#  - a file of the older format (a memory image) is refused cleanly;
# each time with a line in the log, and the figures start at zero.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use Digest::SHA qw(hmac_sha256);
use Compress::Zlib qw(crc32);
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m file=%%PREFIX%%/data/crawl.snap;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        location /doc/ {
            simhash crawl;
            simhash_dust on;
            simhash_dust_verify 0%;
            simhash_action drop keys=any;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location /stats {
            simhash_stats;
        }
END
);

my @pages = $t->random_pages(2, 150, 4545);
mkdir $t->prefix . '/html/doc';
mkdir $t->prefix . '/data';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->start;
$t->raw_get('/doc/a.html');
$t->raw_get('/doc/copy.html');
my ($st) = $t->raw_get('/doc/a.html?sid=1');
is($st, 204, 'a prediction: an outcome to keep');
$t->raw_get('/doc/b.html');
$t->stop('quit');

my $side = $t->prefix . '/data/crawl.snap.console';
my $logged = length $t->error_log;
my $saved = $t->read_file('data/crawl.snap.console');
ok(length $saved, 'the figures saved');

# the key of the MAC, as one who can read PATH.secret derives it
my $secret = pack('H*', substr($t->read_file('data/crawl.snap.secret'), 0, 64));
my $key = hmac_sha256('console figures', $secret);

# the file's checks made right again: the MAC (under the zone's secret),
# or a file of the older format's CRC32
sub fixed {
    my ($f) = @_;
    if (substr($f, 0, 16) eq 'simhash-figures1') {
        substr($f, -4) = pack('V', crc32(substr($f, 0, -4)));
    } else {
        substr($f, -32) = hmac_sha256(substr($f, 0, -32), $key);
    }
    return $f;
}

sub put {
    my ($bytes, $mode) = @_;
    unlink $side;
    sysopen(my $fh, $side, O_WRONLY | O_CREAT | O_EXCL, 0600) or die $!;
    binmode $fh;
    print $fh $bytes;
    close $fh;
    chmod $mode, $side if defined $mode;
}

# a start from a file: what the log says about it, and whether the figures
# came back; then a duplicate and the statistics, which a bad table killed
sub run {
    my ($name) = @_;
    $t->start;
    my $log = substr($t->error_log, $logged);
    my ($s) = $t->raw_get('/doc/copy.html?x=' . int(rand(1e9)));
    is($s, 204, "$name: a duplicate, dropped");
    my $z = eval { $t->stats->{zones}{crawl} } // {};
    ok(%$z, "$name: the statistics answer") or diag $@;
    $t->stop('quit');
    $log = substr($t->error_log, $logged);
    $logged = length $t->error_log;
    ok($log !~ /exited on signal/, "$name: no worker died")
        or diag(grep { /signal|simhash/ } split /^/, $log);
    return ($log, $z);
}

sub refused {
    my ($name, $re) = @_;
    my ($log, $z) = run($name);
    ok($log =~ /the console's figures "\Q$side\E" not loaded: $re.*they start at zero/,
       "$name: refused, the log says why")
        or diag(grep { /figures/ } split /^/, $log);
    ok($log !~ /figures restored/, "$name: nothing restored");
    is($z->{figures}{restored}, 0, "$name: the JSON says so");
    is($z->{responses}{new} // 0, 0, "$name: the figures start at zero");
    return $z;
}

# the sites' table with k = 2^27
my $f = $saved;
if (substr($f, 0, 16) eq 'simhash-figures1') {
    no warnings 'portable';
    my $at = index($f, pack('Q<', 0x6b706f7448537));    # the table's magic
    substr($f, $at + 8, 4) = pack('V', 1 << 27);
} else {
    substr($f, 52, 4) = pack('V', 1 << 27);             # the shape's k
}
put(fixed($f));
refused('k = 2^27', 'of another shape');
run('k = 2^27, the next restart');

# outcome slots without a NUL, host and rules
$f = $saved;
my $at = index($f, "v.test\0");
ok($at > 0, "an outcome's host in the file");
substr($f, $at, 128) = 'A' x 128;
put(fixed($f));
my $z = refused('outcomes without NUL', 'outcome \d+: a text without its end');
ok(!grep({ length($_->{host}) > 63 || length($_->{rules}) > 63 }
         @{ $z->{rule_outcomes} }),
   'outcomes without NUL: no text longer than its slot shown');

# a file others may write, a file with another name
put($saved, 0646);
refused('mode 0646', 'others than its owner may write it \(mode 0646\)');

put($saved);
link($side, "$side.other") or die $!;
refused('a hard link', '.*has other names');
unlink "$side.other";

SKIP: {
    skip 'another owner: needs root to give the file away', 5 if $> != 0;
    put($saved);
    chown 12345, 12345, $side or die $!;
    refused('owned by uid 12345', 'owned by uid 12345, neither root');
}

# a file of the older format (the image of one build's structures)
put('simhash-figures1' . ("\0" x 225_000));      # as large as they were
refused('the older format', 'of an older format');

# and the file as saved still loads
put($saved);
my ($log) = run('the file as saved');
like($log, qr/figures restored from "\Q$side\E"/, 'the file as saved loads');

$t->check_log;
done_testing;
