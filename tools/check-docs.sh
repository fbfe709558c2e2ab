#!/bin/sh
# tools/check-docs.sh [TOP] -- the user docs against the code:
#
#   (a) docs/reference.md has a section "### NAME" for every directive of
#       the module's ngx_command_t table (ngx_simhash_module.c), and none
#       for a directive the table does not have;
#   (b) each section has nginx.org's form: a Syntax, a Default and a
#       Context line, then an Example; the Context names the contexts the
#       table allows (http, server, location), no more and no fewer;
#   (c) every NAME= parameter the parsers know (an ngx_strncmp with
#       "NAME=" in module/ or the top file) appears in some directive's
#       Syntax, and every NAME= a Syntax names is one the parsers know
#       (by name: a name two directives share, keys=, is checked once);
#   (d) every value of an enumerated directive (ngx_conf_enum_t) appears
#       in its Syntax, and every kind of rule simhash_dust_rule takes in
#       its section;
#   (e) no user doc (README.md, docs/*.md, man pages, conf-examples/,
#       demo/, contrib/*/README*, src/README.md) says "issue N",
#       "session N" or "round", and BENCHMARKS.md none of the first two
#       (its "rounds" are a measure's repetitions, `bench_extract
#       --rounds`): the docs are a manual, the history is the git log's.
#
# Each problem is one line, FILE[:LINE]: what.  Exit 0 when there is none,
# 1 otherwise.  `make tree` runs it (so `make check` and `make test` do);
# t/check-docs.t runs it on this tree and on damaged copies of it.
exec perl -x "$0" "$@"
#!perl
use strict;
use warnings;
use File::Basename qw(dirname);
use Cwd qw(abs_path);

my $top = abs_path(shift @ARGV // dirname(abs_path($0)) . '/..');
chdir $top or die "check-docs: cannot enter $top: $!\n";

my @problems;
sub problem { push @problems, join(': ', @_) }

sub slurp {
    my ($f) = @_;
    open(my $fh, '<', $f) or die "check-docs: $f: $!\n";
    local $/;
    return scalar <$fh>;
}

# ---- the code --------------------------------------------------------------

my $topc = slurp('ngx_simhash_module.c');
my ($table) = $topc =~ /ngx_command_t\s+ngx_http_simhash_commands\[\]\s*=\s*\{(.*?)ngx_null_command/s
    or die "check-docs: no ngx_http_simhash_commands[] in ngx_simhash_module.c\n";

my (%ctx, %post, @order);
while ($table =~ /\{\s*ngx_string\("(\w+)"\),\s*([^,]+),(?:[^,]*,){3}\s*([^}]*?)\s*\}/gs) {
    my ($name, $flags, $post) = ($1, $2, $3);
    my @c;
    push @c, 'http'     if $flags =~ /NGX_HTTP_MAIN_CONF/;
    push @c, 'server'   if $flags =~ /NGX_HTTP_SRV_CONF/;
    push @c, 'location' if $flags =~ /NGX_HTTP_LOC_CONF\b/;
    $ctx{$name} = join(', ', @c);
    $post{$name} = $post =~ /&(\w+)/ ? $1 : '';
    push @order, $name;
}
@order or die "check-docs: no directive read from the command table\n";

my @c_files = ('ngx_simhash_module.c', glob('module/*.c'));
my %code_param;      # NAME= => the file that parses it
my %enum;            # ngx_conf_enum_t array => its values
my @rule_kinds;
for my $f (@c_files) {
    my $s = slurp($f);
    while ($s =~ /ngx_strncmp\s*\([^;]*?"([a-z_]+)=/g) {
        $code_param{$1} //= $f;
    }
    while ($s =~ /ngx_conf_enum_t\s+(\w+)\[\]\s*=\s*\{(.*?)\};/gs) {
        my ($arr, $body) = ($1, $2);
        $enum{$arr} = [ $body =~ /ngx_string\("(\w+)"\)/g ];
    }
    while ($s =~ /\{\s*ngx_string\("(\w+)"\),\s*SH_DUST_\w+,\s*\d\s*\}/g) {
        push @rule_kinds, $1;
    }
}

# ---- the reference ---------------------------------------------------------

my $ref = 'docs/reference.md';
my $r = slurp($ref);
my ($dirs) = $r =~ /^## Directives\n(.*?)(?=^## )/ms
    or die "check-docs: $ref has no \"## Directives\" section\n";

my %sec;
for my $part (split /^(?=### )/m, $dirs) {
    next unless $part =~ /^### (\S+)\n/;
    $sec{$1} = $part;
}

for my $d (@order) {
    my $s = $sec{$d};
    unless (defined $s) {
        problem($ref, "directive $d (ngx_simhash_module.c) is not documented");
        next;
    }
    my ($syntax) = $s =~ /^    Syntax:\s+(.*?)\n    Default:/ms;
    my ($context) = $s =~ /^    Context:\s+(.*)$/m;
    if (!defined $syntax || $s !~ /^    Default:\s+\S/m || !defined $context) {
        problem($ref, "$d: no Syntax/Default/Context block");
        next;
    }
    $syntax =~ s/\s+/ /g;
    problem($ref, "$d: its Syntax does not begin with \"$d\"")
        unless $syntax =~ /^\Q$d\E(\s|;)/;
    problem($ref, "$d: Context \"$context\", the code says \"$ctx{$d}\"")
        unless $context eq $ctx{$d};
    problem($ref, "$d: no Example") unless $s =~ /^Example:/m;

    while ($syntax =~ /(?<![\w-])([a-z_]+)=/g) {
        problem($ref, "$d: parameter $1= is not in the code's parsers")
            unless $code_param{$1};
        $sec{$d . ' params'}{$1} = 1;
    }
    my $vals = $enum{$post{$d}} // [];
    for my $v (@$vals) {
        problem($ref, "$d: value \"$v\" ($post{$d}) is not in its Syntax")
            unless $syntax =~ /(?<![\w=])\Q$v\E(?![\w=])/;
    }
}
for my $d (sort grep { !/ params$/ } keys %sec) {
    problem($ref, "directive $d is documented but not in ngx_simhash_module.c")
        unless exists $ctx{$d};
}

my %in_syntax = map { %{ $sec{$_} } } grep { / params$/ } keys %sec;
for my $p (sort keys %code_param) {
    problem($ref, "parameter $p= ($code_param{$p}) is in no directive's Syntax")
        unless $in_syntax{$p};
}

@rule_kinds or problem('module/ngx_http_simhash_dust_conf.c', 'no DUST rule kinds read');
for my $k (@rule_kinds) {
    problem($ref, "simhash_dust_rule: rule $k is not documented")
        unless ($sec{simhash_dust_rule} // '') =~ /`\Q$k\E[`=]/;
}

# ---- no history in the user docs -------------------------------------------

my @user = ('README.md', 'src/README.md', glob('docs/*.md'),
            glob('man/*.[1-8]'), glob('conf-examples/*'),
            glob('contrib/*/README*'));
my @demo = ('demo');
while (my $d = shift @demo) {
    for my $f (glob("$d/*")) {
        if (-d $f) { push @demo, $f } elsif (-T $f) { push @user, $f }
    }
}
for my $f (grep { -f } @user, 'BENCHMARKS.md') {
    my $n = 0;
    my $bench = $f eq 'BENCHMARKS.md';
    for my $line (split /\n/, slurp($f)) {
        $n++;
        # "round" as a measure's repetition is spelt otherwise here; a
        # round trip and a command's --rounds option are not history
        (my $l = $line) =~ s/\bround[- ]trips?\b|--rounds\b//gi;
        $l =~ s/\brounds?\b//gi if $bench;
        if ($l =~ /\b(issues?\s*#?\s*\d+|rounds?|sessions?\s+(?:of\s+)?\d+)\b/i) {
            problem("$f:$n", "says \"$1\": user docs carry no history "
                             . "(the git log does; figures go to BENCHMARKS.md)");
        }
    }
}

print "$_\n" for @problems;
exit(@problems ? 1 : 0);
