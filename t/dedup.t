# `simhash dedup`, run as a user would: the exact batch method prints
# exactly the pairs a brute force over `simhash fingerprint` finds, for
# every table design; PSM's pairs are among them; --method both reports
# both methods' time and memory and PSM's recall; bad designs are refused.
use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use FindBin;
use lib "$FindBin::Bin/lib";
use SimhashCli;

my $cli = $ENV{SH_CLI} || 'build/simhash';
my $fx  = 'tests/fixtures';
plan skip_all => "no $cli (run make)" unless -x $cli;

my $tmp = tempdir(CLEANUP => 1);

# A corpus with near-duplicates: pages of random prose, exact copies, and
# copies with one word changed or a sentence added.
srand 17;
my @words = map { join '', map { ('a' .. 'z')[int rand 26] } 1 .. 3 + int rand 6 }
            1 .. 400;
my @paths = ("$fx/article.html", "$fx/article-neardup.html",
             "$fx/unrelated.html");
for my $i (1 .. 60) {
    my @p = map { join ' ', map { $words[int rand @words] } 1 .. 60 } 1 .. 8;
    my @variants = (\@p);
    push @variants, [@p] if $i % 3 == 0;                    # exact copy
    if ($i % 2 == 0) {                                      # one word changed
        my @q = @p;
        $q[3] =~ s/^\S+/changed/;
        push @variants, \@q;
    }
    if ($i % 5 == 0) {                                      # a sentence more
        push @variants, [@p, 'and one more sentence at the end of it'];
    }
    for my $v (0 .. $#variants) {
        my $f = "$tmp/p$i-$v.html";
        open my $h, '>', $f or die;
        print $h "<html><body>", (map { "<p>$_</p>\n" } @{ $variants[$v] }),
                 "</body></html>\n";
        close $h;
        push @paths, $f;
    }
}
open my $l, '>', "$tmp/list" or die;
print $l "$_\n" for @paths;
close $l;

# Brute force from the fingerprints.
my ($rc, $out) = sh($cli, 'fingerprint', '--list', "$tmp/list");
is $rc, 0, 'fingerprint the corpus';
my @fp;
for (split /\n/, $out) {
    my ($hex, undef, $path) = split /\t/;
    push @fp, [$hex, $path] if $hex ne '-';
}
sub dist {
    my ($a, $b) = @_;
    my $n = 0;
    for my $half (0, 8) {
        my $x = hex(substr($a, $half, 8)) ^ hex(substr($b, $half, 8));
        $n += unpack '%32b*', pack 'N', $x;
    }
    return $n;
}
my %exact;
for my $i (0 .. $#fp) {
    for my $j ($i + 1 .. $#fp) {
        my $d = dist($fp[$i][0], $fp[$j][0]);
        $exact{"$fp[$i][1]\t$fp[$j][1]\t$d"} = 1 if $d <= 3;
    }
}
my @zero = grep { /\t0$/ } keys %exact;
my @near = grep { !/\t0$/ } keys %exact;
ok @zero >= 20 && @near >= 5,
   scalar(@zero) . ' pairs at distance 0, ' . scalar(@near) . ' within 1..3';

sub pairs { my %p = map { $_ => 1 } split /\n/, shift; return \%p }

for my $t (4, 10, 20) {
    ($rc, $out, my $err) = sh($cli, 'dedup', '--method', 'bphs',
                              '--tables', $t, '--list', "$tmp/list");
    is $rc, 0, "bphs, $t tables: exit 0";
    is_deeply pairs($out), \%exact, '... exactly the brute-force pairs';
    like $err, qr/^dedup: bphs$t n=\d+ pairs=\d+ time=\S+s .*maxrss=\S+MB/m,
         '... summary with time and peak memory';
}

($rc, $out) = sh($cli, 'dedup', '--match', 'hamming', '--list',
                 "$tmp/list");
is $rc, 0, 'psm, hamming rule: exit 0';
my $psm = pairs($out);
is scalar(grep { !$exact{$_} } keys %$psm), 0, '... only exact pairs';
ok scalar(keys %$psm) >= @zero, '... at least the equal pages';

($rc, $out, my $err) = sh($cli, 'dedup', '--list', "$tmp/list");
is $rc, 0, 'psm, the default (weighted) rule: exit 0';
like $err, qr/^dedup: psm_a rule=weighted n=\d+ t=\d+ k=\d+ pairs=/m,
     '... says so';
my $w = pairs($out);
is scalar(grep { !$w->{$_} } @zero), 0, '... finds every equal pair';

($rc, $out, $err) = sh($cli, 'dedup', '--method', 'both', '--list',
                       "$tmp/list", '--background', 3000);
is $rc, 0, 'both, with background: exit 0';
like $err, qr/^dedup: psm_a rule=hamming n=\d+ t=\d+ k=\d+ pairs=\d+ .*maxrss=/m,
     '... PSM line, under the hamming rule';
like $err, qr/^dedup: bphs4 n=\d+ pairs=(\d+) /m, '... exact line';
my ($bp) = $err =~ /^dedup: bphs4 n=\d+ pairs=(\d+) /m;
is $bp, scalar(keys %exact), '... the background adds no pair here';
like $err, qr/relative recall of psm_a [01]\.\d+ \(\d+ of $bp pairs\), speed-up over bphs4 \S+x/,
     '... recall against the exact pairs';

($rc, undef, $err) = sh($cli, 'dedup', '--method', 'bphs', '--tables', 7,
                        '--list', "$tmp/list");
is $rc, 2, '--tables 7: usage error';
like $err, qr/expected 4, 10 or 20/, '... says which designs exist';
($rc, undef, $err) = sh($cli, 'dedup', '--method', 'both', '--h', 4,
                        '--list', "$tmp/list");
is $rc, 2, '--h 4 with the exact method: usage error';
($rc, $out) = sh($cli, 'dedup', '--method', 'bphs', '--h', 0, '--list',
                 "$tmp/list");
is_deeply pairs($out), { map { $_ => 1 } @zero }, '--h 0: the equal pages';

done_testing;
