# Runs the `simhash` command-line tool as a user would, for the CLI tests:
# each call returns its exit code, stdout and stderr.
package SimhashCli;
use strict;
use warnings;
use Exporter 'import';
use File::Temp qw(tempdir);

our @EXPORT = qw(sh);

my $tmp = tempdir(CLEANUP => 1);

# sh(ARGV...) -> (exit code, stdout, stderr); the arguments are quoted
# for the shell, so any byte but NUL passes through as given.
sub sh {
    my @args = @_;
    my $cmd = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @args;
    my $rc = system("$cmd >'$tmp/out' 2>'$tmp/err'") >> 8;
    local $/;
    open my $o, '<', "$tmp/out" or die "$tmp/out: $!";
    my $out = <$o>;
    close $o;
    open my $e, '<', "$tmp/err" or die "$tmp/err: $!";
    my $err = <$e>;
    close $e;
    return ($rc, $out, $err);
}

1;
