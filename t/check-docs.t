#!/usr/bin/perl
# tools/check-docs.sh: the reference against the code, and no history in
# the user docs.  It passes on this tree; then on a copy of the files it
# reads, each damaged once, it fails and names the damage: a directive
# left out of docs/reference.md, one documented that the code does not
# have, a parameter a parser knows but no Syntax names, a Syntax naming a
# parameter no parser knows, a wrong Context, an enumerated value and a
# DUST rule kind left out, a section without its Example, and a user doc
# that says "issue 12", "session 24" or "round" (BENCHMARKS.md may count a
# measure's rounds, not name an issue).

use strict;
use warnings;
use FindBin;
use Test::More;
use File::Temp qw(tempdir);
use File::Copy qw(copy);
use File::Path qw(make_path);
use File::Basename qw(dirname);

my $top = "$FindBin::Bin/..";
my $checker = "$top/tools/check-docs.sh";

sub run_check {
    my ($dir) = @_;
    my @out = `'$checker' '$dir' 2>&1`;
    chomp @out;
    return ($? >> 8, \@out);
}

my ($rc, $out) = run_check($top);
is($rc, 0, 'this tree: the reference covers the code, no history in user docs')
    or diag(join("\n", @$out));

# A copy of what the checker reads, with one edit applied.
my @files = ('ngx_simhash_module.c', glob("$top/module/*.c"),
             'docs/reference.md', 'README.md', 'BENCHMARKS.md');
sub damaged {
    my ($file, $edit) = @_;
    my $dir = tempdir(CLEANUP => 1);
    for my $f (@files) {
        (my $rel = $f) =~ s{^\Q$top\E/}{};
        make_path(dirname("$dir/$rel"));
        copy(($f =~ m{^/} ? $f : "$top/$f"), "$dir/$rel") or die "$rel: $!";
    }
    my $p = "$dir/$file";
    open(my $fh, '<', $p) or die "$p: $!";
    my $s = do { local $/; <$fh> };
    close $fh;
    my $before = $s;
    $edit->() for $s;
    isnt($s, $before, "the edit of $file applies") or return $dir;
    open($fh, '>', $p) or die "$p: $!";
    print $fh $s;
    close $fh;
    return $dir;
}

sub fails_with {
    my ($what, $dir, $re) = @_;
    my ($rc, $out) = run_check($dir);
    is($rc, 1, "$what: fails");
    ok((grep { /$re/ } @$out), "$what: says so") or diag(join("\n", @$out));
}

fails_with('a directive left out',
    damaged('docs/reference.md',
            sub { s/^### simhash_max_held\n.*?(?=^### )//ms }),
    qr/directive simhash_max_held .* is not documented/);

fails_with('a directive the code does not have',
    damaged('docs/reference.md', sub {
        s/^### simhash_stats$/### simhash_frobnicate\n\n    Syntax:  simhash_frobnicate;\n    Default: —\n    Context: http\n\nExample:\n\n    simhash_frobnicate;\n\n### simhash_stats/m }),
    qr/simhash_frobnicate is documented but not in/);

fails_with('a parameter no Syntax names',
    damaged('docs/reference.md', sub { s/\s*\[outbox=SIZE\]// }),
    qr/parameter outbox= \(module\/ngx_http_simhash_replicate\.c\) is in no directive's Syntax/);

fails_with('a parameter no parser knows',
    damaged('docs/reference.md', sub { s/ \[rate=N\];/ [rate=N] [burst=N];/ }),
    qr/simhash_replicate: parameter burst= is not in the code's parsers/);

fails_with('a parameter the parser no longer knows',
    damaged('module/ngx_http_simhash_replicate.c', sub { s/"rate=", 5/"pace=", 5/ }),
    qr/simhash_replicate: parameter rate= is not in the code's parsers/);

fails_with('a wrong Context',
    damaged('docs/reference.md', sub {
        s/(Syntax:  simhash_max_held SIZE;\n.*?Context: )http/${1}http, server/s }),
    qr/simhash_max_held: Context "http, server", the code says "http"/);

fails_with('an enumerated value left out',
    damaged('docs/reference.md', sub { s/simhash_reveal off \| status \| key;/simhash_reveal off | key;/ }),
    qr/simhash_reveal: value "status"/);

fails_with('a DUST rule kind left out',
    damaged('docs/reference.md', sub { s/`path_case`/`pathcase`/g }),
    qr/simhash_dust_rule: rule path_case is not documented/);

fails_with('a section without its Example',
    damaged('docs/reference.md', sub {
        s/(### simhash_insert\n.*?)^Example:/$1Such as:/ms }),
    qr/simhash_insert: no Example/);

fails_with('"issue N" in the README',
    damaged('README.md', sub { s/\n/\nAs issue 12 asked, this works.\n/ }),
    qr/README\.md:2: says "issue 12"/);

fails_with('"round" in the README',
    damaged('README.md', sub { s/\n/\nIn its seventh round the learner got better.\n/ }),
    qr/README\.md:2: says "round"/);

fails_with('"session N" in the README',
    damaged('README.md', sub { s/\n/\nMeasured in session 24.\n/ }),
    qr/README\.md:2: says "session 24"/);

fails_with('"issue N" in BENCHMARKS.md',
    damaged('BENCHMARKS.md', sub { s/\n/\nAfter issue 34 the learner costs more.\n/ }),
    qr/BENCHMARKS\.md:2: says "issue 34"/);

{
    # a measure's rounds are not history: BENCHMARKS.md may say them
    my $dir = damaged('BENCHMARKS.md',
                      sub { s/\n/\nthe median of 7 rounds' ratios\n/ });
    my ($rc, $out) = run_check($dir);
    is($rc, 0, 'BENCHMARKS.md may count a measure\'s rounds')
        or diag(join("\n", @$out));
}

done_testing();
