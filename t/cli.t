# The `simhash` command-line tool: output formats, exit codes and one-line
# errors, run as a user would.
use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use FindBin;
use lib "$FindBin::Bin/lib";
use SimhashCli;
use File::Spec;

my $cli = $ENV{SH_CLI} || 'build/simhash';
my $fx  = 'tests/fixtures';
plan skip_all => "no $cli (run make)" unless -x $cli;

my $tmp = tempdir(CLEANUP => 1);

my ($rc, $out, $err);

($rc, $out) = sh($cli, '--help');
is $rc, 0, 'simhash --help exits 0';
like $out, qr/fingerprint/, '... and lists the commands';
for my $c (qw(fingerprint distance text)) {
    ($rc, $out) = sh($cli, $c, '--help');
    is $rc, 0, "$c --help exits 0";
    like $out, qr/usage: simhash $c/, "... and prints its usage";
}

# fingerprint: one line per page, "-" for a page too short to fingerprint
open my $s, '>', "$tmp/short.html" or die;
print $s "<html><body><p>Page not found</p></body></html>\n";
close $s;
($rc, $out, $err) = sh($cli, 'fingerprint', "$fx/article.html",
                       "$tmp/short.html");
is $rc, 0, 'fingerprint exits 0';
my @lines = split /\n/, $out;
is scalar @lines, 2, 'one line per page';
like $lines[0], qr/^[0-9a-f]{16}\t\d+\t\Q$fx\E\/article\.html$/,
    'hex, feature count, path';
like $lines[1], qr/^-\t\d\t\Q$tmp\E\/short\.html$/, 'too short: "-"';
my ($hex) = $lines[0] =~ /^([0-9a-f]{16})/;

# --list gives the same lines
open my $l, '>', "$tmp/list" or die;
print $l "$fx/article.html\n\n$tmp/short.html\n";
close $l;
($rc, my $out2) = sh($cli, 'fingerprint', '--list', "$tmp/list");
is $out2, $out, '--list prints the same as files on the command line';

# --weights: 64 weights whose signs are the bits
($rc, $out) = sh($cli, 'fingerprint', '--weights', "$fx/article.html");
my @f = split /\t/, (split /\n/, $out)[0];
my @w = split / /, $f[3];
is scalar @w, 64, '--weights prints 64 weights';
# bit j of the hex is 1 iff W[j] >= 0; compare four bits (one digit) at a time
my $from_w = join '', map {
    my $d = 15 - $_;
    sprintf '%x', ($w[4*$d+3] >= 0) << 3 | ($w[4*$d+2] >= 0) << 2
                | ($w[4*$d+1] >= 0) << 1 | ($w[4*$d] >= 0);
} 0 .. 15;
is $from_w, $hex, 'weight signs are the bits';

# distance
($rc, $out) = sh($cli, 'distance', "$fx/article.html", "$fx/article.html");
is $out, "0 0.0000 match\n", 'a page is at distance 0 from itself';
($rc, $out) = sh($cli, 'distance', "$fx/article.html", "$fx/unrelated.html");
my ($h, $score, $verdict) = split ' ', $out;
ok $h > 10, "unrelated pages are far apart ($h)";
ok $score > 12, "... with a score beyond the default threshold ($score)";
is $verdict, 'differ', '... and the rule says so';
($rc, $out) = sh($cli, 'distance', '--match', 'hamming', '--h', 7,
                 "$fx/article.html", "$fx/unrelated.html");
is((split ' ', $out)[1], $score, 'the score is the same under either rule');
($rc, $out) = sh($cli, 'distance', '--match', 'weighted', '--threshold',
                 $score, '--h', 16, "$fx/article.html",
                 "$fx/unrelated.html");
is((split ' ', $out)[2], $h <= 16 ? 'match' : 'differ',
   'a threshold at the score accepts the pair when the cap allows');
($rc, $out, $err) = sh($cli, 'distance', '--match', 'cosine',
                       "$fx/article.html", "$fx/article.html");
is $rc, 2, 'an unknown rule is a usage error';
like $err, qr/^simhash: --match: expected hamming or weighted/, '... said so';
($rc, $out, $err) = sh($cli, 'distance', '--match', 'hamming', '--threshold',
                       3, "$fx/article.html", "$fx/article.html");
is $rc, 2, 'a threshold under the hamming rule is a usage error';
($rc, $out, $err) = sh($cli, 'distance', "$fx/article.html",
                       "$tmp/short.html");
is $rc, 1, 'distance to a too-short page fails';
like $err, qr/^simhash: .*too-short/, '... saying why';

# errors: one line on stderr, non-zero exit
($rc, $out, $err) = sh($cli, 'fingerprint', '--ignore', '([a-', 
                       "$fx/article.html");
is $rc, 2, 'a bad regex is a usage error';
like $err, qr/^simhash: ignore pattern 1 "\(\[a-": .*offset \d+\n\z/,
    '... with one line naming the pattern';
is $out, '', '... and no output';

($rc, $out, $err) = sh($cli, 'fingerprint', '/nonexistent.html',
                       "$fx/article.html");
is $rc, 1, 'an unreadable file fails the run';
like $err, qr/^simhash: cannot open "\/nonexistent\.html": .+\n\z/,
    '... with one line';
like $out, qr/article\.html$/m, '... but the other pages are printed';

($rc, $out, $err) = sh($cli, 'fingerprint', '--bogus', "$fx/article.html");
is $rc, 2, 'an unknown option is a usage error';
like $err, qr/^simhash: .*--bogus/, '... naming it';

($rc, $out, $err) = sh($cli, 'fingerprint', '--shingle', '0', 'x');
is $rc, 2, 'an out-of-range value is refused';
like $err, qr/--shingle/, '... naming the option';

($rc, $out, $err) = sh($cli, 'nosuchcommand');
is $rc, 2, 'an unknown command is refused';

# idf: build, use, refuse corrupt and foreign tables
open $l, '>', "$tmp/corpus" or die;
print $l "$fx/$_\n" for qw(article.html article-neardup.html unrelated.html
                           latin1.utf8.html);
close $l;
($rc, $out, $err) = sh($cli, 'idf', 'build', '--list', "$tmp/corpus",
                       '-o', "$tmp/idf");
is $rc, 0, 'idf build succeeds';
ok -s "$tmp/idf", '... and writes the table';

# a link planted at OUT.tmp (a shared directory) is never written through
for my $cmd (['idf', 'build', '--list', "$tmp/corpus", '-o', "$tmp/idf2"],
             ['index', 'build', '--list', "$tmp/corpus", '-o', "$tmp/ix2"]) {
    my $out = $cmd->[-1];
    open my $v, '>', "$tmp/victim" or die;
    print $v "precious\n";
    close $v;
    symlink("$tmp/victim", "$out.tmp") or die "$out.tmp: $!";
    ($rc) = sh($cli, @$cmd);
    is $rc, 0, "$cmd->[0] build with a symlink at OUT.tmp succeeds";
    open $v, '<', "$tmp/victim" or die;
    is scalar(<$v>), "precious\n", '... and leaves its target untouched';
    close $v;
    ok !-l $out && -f $out, '... writing a regular file';
    unlink "$tmp/victim";
}
($rc, $out) = sh($cli, 'fingerprint', '--idf', "$tmp/idf",
                 "$fx/article.html");
is $rc, 0, 'fingerprint --idf succeeds';
like $out, qr/^[0-9a-f]{16}\t/, '... and prints a fingerprint';

($rc, $out, $err) = sh($cli, 'fingerprint', '--seed', 'other',
                       '--idf', "$tmp/idf", "$fx/article.html");
is $rc, 2, 'an IDF table built under another seed is refused';
like $err, qr/another hash key/, '... saying so';

{
    open my $i, '+<', "$tmp/idf" or die;
    binmode $i;
    seek $i, 60, 0;
    my $c; read $i, $c, 1;
    seek $i, 60, 0;
    print $i chr(ord($c) ^ 0xff);
    close $i;
}
($rc, $out, $err) = sh($cli, 'fingerprint', '--idf', "$tmp/idf",
                       "$fx/article.html");
is $rc, 2, 'a corrupt IDF table is refused';
like $err, qr/corrupt|bad entry/, '... saying so';

truncate "$tmp/idf", 20;
($rc, $out, $err) = sh($cli, 'fingerprint', '--idf', "$tmp/idf",
                       "$fx/article.html");
is $rc, 2, 'a truncated IDF table is refused';

# text: what the fingerprint is made of
($rc, $out, $err) = sh($cli, 'text', '--stem', 'none', "$fx/sjis.html");
is $rc, 0, 'text succeeds';
like $out, qr/^山\n/m, 'Shift_JIS decoded from <meta>, one token per kanji';
like $err, qr/charset CP932/, '... and the charset is reported';

# text --blocks: each block with its weight and zone (content weighting)
($rc, $out, $err) = sh($cli, 'text', '--blocks', "$fx/article.html");
is $rc, 0, 'text --blocks succeeds';
like $out, qr/^0\.00  chrome  links  90%  home geology contact$/m,
     '... the menu: chrome, nine tenths links (the "|" between), weight 0';
like $out, qr/^1\.00  main    links   0%  walk upstream along/m,
     '... a paragraph of the article: main, weight 1';
($rc, $out, $err) = sh($cli, 'text', '--blocks', '--content', 'off',
                       "$fx/article.html");
is $rc, 2, 'text --blocks --content off: a usage error';
($rc, $out, $err) = sh($cli, 'fingerprint', '--content', 'main',
                       "$fx/article.html");
is $rc, 2, '--content main: a usage error';
like $err, qr/^simhash: --content: "main" is not auto, structure or off$/m,
     '... saying which values it takes';

# index check and dump: a sound snapshot, then damaged copies of it.
# --capacity 3: the index rounds it up to what its region holds (4), and
# every stored page keeps its path (the path table once had 3 slots).
($rc, $out, $err) = sh($cli, 'index', 'build', '--list', "$tmp/corpus",
                       '--capacity', '3', '-o', "$tmp/ix.snap");
is $rc, 0, 'index build --capacity 3 (4 pages)';
($rc, $out, $err) = sh($cli, 'index', 'check', "$tmp/ix.snap");
is $rc, 0, 'index check of a sound snapshot exits 0';
my ($entries) = $out =~ /^entries\t(\d+)$/m;
like $out, qr/^version\t3\nextraction\t[0-9a-f]{8}\ncapacity\t\d+\nentries\t\d+\n/,
    '... prints the format, extraction version, capacity and entries';
like $out, qr/^documents\t$entries$/m, '... every entry has its path';
like $out, qr/^check\tOK\n\z/m, '... and ends with OK';

($rc, $out) = sh($cli, 'index', 'dump', "$tmp/ix.snap");
is $rc, 0, 'index dump exits 0';
@lines = split /\n/, $out;
is scalar @lines, $entries, 'one line per stored document';
is scalar(grep { /^[0-9a-f]{16}\t\d+\t\Q$fx\E\/[\w.-]+\.html$/ } @lines),
    $entries, 'each: hex, ref, path';
my ($fp_u) = split /\t/, `$cli fingerprint $fx/unrelated.html`;
like $lines[2], qr/^\Q$fp_u\E\t\d+\t\Q$fx\E\/unrelated\.html$/,
    'oldest first: the third page of the list, with its fingerprint';

my $snap = do { local $/; open my $f, '<:raw', "$tmp/ix.snap" or die; <$f> };
sub write_raw {
    my ($path, $bytes) = @_;
    open my $f, '>:raw', $path or die "$path: $!";
    print $f $bytes;
    close $f;
}
my $bad = $snap;
substr($bad, length($bad) / 2, 8) = 'CORRUPT!';
write_raw("$tmp/corrupt.snap", $bad);
($rc, $out, $err) = sh($cli, 'index', 'check', "$tmp/corrupt.snap");
is $rc, 1, 'index check of a corrupt snapshot exits 1';
like $out, qr/^check\tFAILED: .*fails? (its|their) checksum\n\z/m,
    '... with one line saying why';
($rc, $out, $err) = sh($cli, 'index', 'dump', "$tmp/corrupt.snap");
is $rc, 1, 'index dump refuses it too';
like $err, qr/^simhash: .*fails? (its|their) checksum\n\z/, '... in one line';

write_raw("$tmp/short.snap", substr($snap, 0, 200));
($rc, $out) = sh($cli, 'index', 'check', "$tmp/short.snap");
is $rc, 1, 'index check of a truncated snapshot exits 1';
like $out, qr/^check\tFAILED: .*truncated/, '... saying so';

($rc, $out) = sh($cli, 'index', 'check', "$tmp/nonexistent.snap");
is $rc, 1, 'index check of a missing file exits 1';
($rc, $out, $err) = sh($cli, 'index', 'check');
is $rc, 2, 'index check without a file is a usage error';

# the man pages name every command, option and directive (man/check.sh, which
# the Debian package build runs too): a command added without its page, or
# one whose --help fails, is found here and not at packaging time
SKIP: {
    skip 'no groff (man/check.sh formats the pages)', 1
        unless grep { -x "$_/groff" } split /:/, $ENV{PATH};
    ($rc, $out, $err) = sh('sh', "$FindBin::Bin/../man/check.sh", $cli);
    is $rc, 0, 'man/check.sh: the man pages cover the tool and the module'
        or diag $err;
}

# entry --batch: an entry per line, each as `entry` alone prints it (its
# MAC verifies), their seqs rising even within one microsecond
{
    open my $b, '>', "$tmp/batch" or die;
    print $b "z site/a 0000000000001f0f\n\nw2 site/b 00000000000000ff\n"
             . "w3 site/c 00000000000000fe\n";
    close $b;
    my $all = `$cli entry --batch < $tmp/batch`;
    is $?, 0, 'entry --batch exits 0';
    my @e = grep { /\S/ } split /\n\n/, $all;
    is scalar @e, 3, '... an entry per line, blank lines skipped';
    like $e[1], qr/^node w2\nkey site\/b\nfp 00000000000000ff\n/,
        '... in order, with their fields';
    my @seq = map { /^seq (\d+)$/m } @e;
    ok @seq == 3 && $seq[0] < $seq[1] && $seq[1] < $seq[2], '... seqs rising';
    my $ok = 0;
    for my $i (0 .. $#e) {
        open my $v, '>', "$tmp/e$i" or die;
        print $v "$e[$i]\n";
        close $v;
        $ok++ if system("$cli entry --verify < $tmp/e$i >/dev/null") == 0;
    }
    is $ok, 3, '... each MAC verifies';
    open my $x, '>', "$tmp/bad" or die;
    print $x "z site/a\n";
    close $x;
    ($rc, $out, $err) = sh('sh', '-c', "$cli entry --batch < $tmp/bad");
    is $rc, 2, 'entry --batch: a short line: exit 2';
    like $err, qr/line 1: want NODE KEY FP/, '... saying which and why';
}

done_testing;
