#!/bin/sh
# tools/check-tree.sh [TOP] -- the tree's structural targets:
#
#   (a) no circle among module/ files (and the top file), by #include of the
#       module's headers or by a call (any use of a function defined in
#       another file: a call, or its address put in a table);
#   (b) the zone core (zone.c, zone_conf.c) calls no feature by name, only
#       itself and the part table (ZONE_MAY_CALL below, the one place that
#       says which);
#   (c) no file in module/ or src/, nor the top file, over 1,500 lines;
#   (d) no function over 150 lines in module/, src/, tools/simhash/ and the
#       top file, save the ones in LONG_FUNCTIONS below, each with why;
#   (e) no include loop in src/: no part (sh_x.c, sh_x.h, sh_x_internal.h)
#       includes, through any chain, a header of a part that includes its
#       own.
#   (f) only the zone core (zone.c, zone_conf.c) calls sh_store_*,
#       sh_index_* and sh_image_* functions in module/ and the top file (a
#       call: the name and `(` inside a body; a type may be named anywhere).
#   (g) a response's path goes one way: the body filter (filter.c) calls
#       the decision (decide.c), then the response (response.c), and neither
#       calls back: response.c uses nothing filter.c or decide.c defines
#       (a function, or a variable such as the next-filter pointers),
#       decide.c nothing response.c defines (ONE_WAY below).
#
# Each violation is one line, FILE:LINE: what (a circle: one line per arrow
# in it, where the arrow is first drawn).  Exit 0 when there is none, 1
# otherwise.  `make tree` runs it on this tree, and so does `make check`.
# t/check-tree.t runs it on small fixture trees.
#
# Perl (always here: t/ needs it) reads C well enough for this: comments,
# strings and preprocessor lines are blanked first (line numbers kept), then
# a brace counter finds each top-level `name(...) {`.  It is not a C parser;
# a function whose definition it cannot see is one it does not measure.
exec perl -x "$0" "$@"
#!perl
use strict;
use warnings;
use File::Basename qw(basename dirname);
use Cwd qw(abs_path);

# ---- the targets, in one place -------------------------------------------

my $MAX_FILE_LINES = 1500;
my $MAX_FUNC_LINES = 150;    # from the name's line to the closing brace

# The zone core: the files that own the lock and the store.
my @ZONE_CORE = qw(module/ngx_http_simhash_zone.c
                   module/ngx_http_simhash_zone_conf.c);

# What the zone core may use of other module files: the part table (issue
# 33 item 1) -- the table and whatever it is named, nothing of a feature.
my @ZONE_MAY_CALL = (qr/^ngx_http_simhash_(zone_)?parts?(_|\z)/);

# A response's path, one way (g): [file, the files whose functions and
# variables it may not use].  The filter may use both: it calls the
# decision, then the response, and sends what the response made.
my @ONE_WAY = (
    ['module/ngx_http_simhash_response.c',
     ['module/ngx_http_simhash_filter.c', 'module/ngx_http_simhash_decide.c']],
    ['module/ngx_http_simhash_decide.c',
     ['module/ngx_http_simhash_response.c']],
);

# Functions allowed over $MAX_FUNC_LINES: [file, function, why].
my @LONG_FUNCTIONS = (
    [qr{^src/sh_(budget|tokenizer_model)\.c\z}, 'step',
     'the HTML tokenizer model\'s state machine: one switch over the states '
     . 'of libxml2\'s htmlParseTryOrFinish, case for case, which is what '
     . 'makes the model checkable against libxml2'],
);

# ---- reading C ------------------------------------------------------------

my $top = abs_path(shift @ARGV // dirname(abs_path($0)) . '/..');
chdir $top or die "check-tree: cannot enter $top: $!\n";

my @problems;
sub problem { push @problems, sprintf("%s:%d: %s", @_) }

sub slurp {
    my ($f) = @_;
    open(my $fh, '<', $f) or die "check-tree: $f: $!\n";
    local $/;
    my $s = <$fh>;
    return $s;
}

# The text with comments, string and character literals and preprocessor
# lines blanked out, newlines kept so that line numbers stay true.
sub code_of {
    my ($s) = @_;
    my $blank = sub { (my $m = $_[0]) =~ s/[^\n]/ /g; $m };
    $s =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')}
           {$blank->($1)}gse;
    $s =~ s{^([ \t]*#(?:[^\n]*\\\n)*[^\n]*)}{$blank->($1)}gme;
    return $s;
}

my %code;    # file => blanked text
sub code { $code{$_[0]} //= code_of(slurp($_[0])) }

sub line_at { 1 + (substr($_[0], 0, $_[1]) =~ tr/\n//) }

# The code inside braces only: a name there is a use (a call, or a function
# put in a table's initializer); at depth 0 it is a declaration.
my %inner;
sub inner {
    my ($f) = @_;
    return $inner{$f} if defined $inner{$f};
    my $s = code($f);
    my ($depth, $out) = (0, '');
    for my $piece (split /([{}])/, $s) {
        if ($piece eq '{') { $depth++; $out .= ' '; next }
        if ($piece eq '}') { $depth-- if $depth; $out .= ' '; next }
        if ($depth) { $out .= $piece }
        else        { (my $b = $piece) =~ s/[^\n]/ /g; $out .= $b }
    }
    return $inner{$f} = $out;
}

# The functions a file defines: [name, first line, last line, static].
# A definition is a `{` at depth 0 whose text since the last `;`, `}` or
# `{` ends in `name(...)`.
sub functions {
    my ($f) = @_;
    my $s = code($f);
    my (@fn, $depth, $from, $open);
    ($depth, $from) = (0, 0);
    while ($s =~ /([{};])/g) {
        my ($c, $at) = ($1, pos($s) - 1);
        if ($c eq '{') {
            if ($depth++ == 0) {
                my $head = substr($s, $from, $at - $from);
                if ($head =~ /(?<![\w=])([A-Za-z_]\w*)\s*
                              (\((?:[^()]|(?2))*\))\s*\z/x)
                {
                    my ($name, $name_at) = ($1, $from + $-[1]);
                    $open = [$name, line_at($s, $name_at),
                             $head =~ /\bstatic\b/ ? 1 : 0];
                } else {
                    $open = undef;
                }
            }
        } elsif ($c eq '}') {
            $depth-- if $depth > 0;
            if ($depth == 0) {
                push @fn, [@$open[0, 1], line_at($s, $at), $open->[2]]
                    if $open;
                $open = undef;
                $from = $at + 1;
            }
        } elsif ($depth == 0) {
            $from = $at + 1;
        }
    }
    return @fn;
}

# #include "X" lines of a file: [header, line].
sub includes {
    my ($f) = @_;
    my (@inc, $n);
    open(my $fh, '<', $f) or die "check-tree: $f: $!\n";
    while (<$fh>) {
        $n++;
        push @inc, [$1, $n] if /^\s*#\s*include\s+"([^"]+)"/;
    }
    return @inc;
}

sub files { my ($dir, $glob) = @_; -d $dir ? sort glob("$dir/$glob") : () }

# ---- (c) and (d): sizes ---------------------------------------------------

my $topfile = 'ngx_simhash_module.c';
my @module = (files('module', '*.c'), files('module', '*.h'));
push @module, $topfile if -f $topfile;
my @src = (files('src', '*.c'), files('src', '*.h'));
my @cli = (files('tools/simhash', '*.c'), files('tools/simhash', '*.h'));

for my $f (@module, @src) {
    my $n = (slurp($f) =~ tr/\n//);
    problem($f, $n, "$n lines, over $MAX_FILE_LINES") if $n > $MAX_FILE_LINES;
}

my %defined;    # module function name => file (not static)
for my $f (@module, @src, @cli) {
    for my $fn (functions($f)) {
        my ($name, $first, $last, $static) = @$fn;
        my $len = $last - $first + 1;
        problem($f, $first, "function $name is $len lines, over "
                . "$MAX_FUNC_LINES")
            if $len > $MAX_FUNC_LINES
               && !grep { $f =~ $_->[0] && $name eq $_->[1] } @LONG_FUNCTIONS;
        $defined{$name} = $f if !$static && grep { $_ eq $f } @module;
    }
}

# ---- circles --------------------------------------------------------------

# Tarjan's strongly connected components of %$edge (node => {node => 1});
# each component of more than one node holds at least one circle.
sub knots {
    my ($edge) = @_;
    my ($index, @stack, %on, %idx, %low, @out) = (0);
    my $visit;
    $visit = sub {
        my ($v) = @_;
        $idx{$v} = $low{$v} = $index++;
        push @stack, $v;
        $on{$v} = 1;
        for my $w (sort keys %{ $edge->{$v} || {} }) {
            if (!defined $idx{$w}) {
                $visit->($w);
                $low{$v} = $low{$w} if $low{$w} < $low{$v};
            } elsif ($on{$w}) {
                $low{$v} = $idx{$w} if $idx{$w} < $low{$v};
            }
        }
        if ($low{$v} == $idx{$v}) {
            my @c;
            my $w;
            do { $w = pop @stack; $on{$w} = 0; push @c, $w } while $w ne $v;
            push @out, [sort @c] if @c > 1;
        }
    };
    for my $v (sort keys %$edge) { $visit->($v) unless defined $idx{$v} }
    return @out;
}

# One line per arrow inside each knot: where it is first drawn.
sub report_knots {
    my ($what, $edge, $where, $short) = @_;
    for my $knot (knots($edge)) {
        my %in = map { $_ => 1 } @$knot;
        my $names = join(', ', map { $short->($_) } @$knot);
        for my $from (@$knot) {
            for my $to (sort keys %{ $edge->{$from} }) {
                next unless $in{$to};
                my ($file, $line, $how) = @{ $where->{$from}{$to} };
                problem($file, $line, "$what circle among {$names}: "
                        . "$how");
            }
        }
    }
}

# (a) module/: a part is one subject's files, which may call each other: a
# header's name with the files that share it or extend it by _WORD (x.h,
# x.c, x_conf.c, x_load.c), the module-wide header ngx_http_simhash.h
# aside; the zone core's files are one part.  The zone core's use of the
# part table is not an arrow: the table is how the zone reaches the parts
# without depending on them (it sits above them, as the top file does).
my %core = map { $_ => 1 } @ZONE_CORE;
my @subjects = sort { length $b <=> length $a }
               map { (my $b = basename($_)) =~ s/\.h\z//; $b }
               grep { /\.h\z/ && basename($_) ne 'ngx_http_simhash.h' }
               @module;
my $part = sub {
    return 'zone core' if $core{$_[0]};
    my $b = basename($_[0]);
    $b =~ s/\.[ch]\z//;
    for my $h (@subjects) {
        return $h if $b eq $h || index($b, "${h}_") == 0;
    }
    $b;
};
my $short = sub { (my $p = $_[0]) =~ s/^ngx_http_simhash_//; $p };
my (%medge, %mwhere);
my %mheader = map { basename($_) => $_ } grep { /\.h\z/ } @module;
my $arrow = sub {
    my ($edge, $where, $from, $to, $file, $line, $how) = @_;
    return if $from eq $to;
    my $old = $where->{$from}{$to};
    return if $old && ($old->[0] lt $file
                       || ($old->[0] eq $file && $old->[1] <= $line));
    $edge->{$from}{$to} = 1;
    $where->{$from}{$to} = [$file, $line, $how];
};
my $names_re = %defined
    ? join('|', map { quotemeta } sort { length $b <=> length $a }
                                       keys %defined)
    : '(?!)';
for my $f (@module) {
    for my $inc (includes($f)) {
        my $h = $mheader{basename($inc->[0])} or next;
        $arrow->(\%medge, \%mwhere, $part->($f), $part->($h), $f, $inc->[1],
                 "includes $h");
    }
    my $s = inner($f);
    while ($s =~ /\b($names_re)\b/g) {
        my ($name, $at) = ($1, $-[1]);
        my $def = $defined{$name};
        next if $def eq $f || $part->($def) eq $part->($f);
        next if $core{$f} && grep { $name =~ $_ } @ZONE_MAY_CALL;
        $arrow->(\%medge, \%mwhere, $part->($f), $part->($def), $f,
                 line_at($s, $at), "uses $name ($def)");
    }
}
report_knots('module/', \%medge, \%mwhere, $short);

# (b) the zone core calls nothing of another module file but the parts.
for my $f (grep { -f } @ZONE_CORE) {
    my $s = inner($f);
    my %seen;
    while ($s =~ /\b($names_re)\b/g) {
        my ($name, $at) = ($1, $-[1]);
        my $def = $defined{$name};
        next if $core{$def} || $seen{$name}++;
        next if grep { $name =~ $_ } @ZONE_MAY_CALL;
        problem($f, line_at($s, $at), "the zone core calls the feature "
                . "function $name ($def); only the zone core and the part "
                . "table are allowed");
    }
}

# (f) only the zone core calls the store, the index and the image: a call
# is the name followed by `(` inside a body (a type such as sh_store_doc_t
# may be named anywhere).
for my $f (grep { !$core{$_} } @module) {
    my $s = inner($f);
    while ($s =~ /\b(sh_(?:store|index|image)_\w+)\s*\(/g) {
        problem($f, line_at($s, $-[1]), "calls $1; only the zone core "
                . "(zone.c, zone_conf.c) calls sh_store_*, sh_index_* and "
                . "sh_image_*");
    }
}

# (g) one way.  What a file offers the others: its functions and its
# variables that are not static (a variable: a declaration at depth 0, not
# static, extern or typedef, whose name is not followed by `(`, or a
# pointer to a function, `type (*name)(...)`).
sub globals {
    my ($f) = @_;
    my @names = map { $_->[0] } grep { !$_->[3] } functions($f);
    my $s = code($f);
    my ($depth, $outer) = (0, '');
    for my $piece (split /([{}])/, $s) {
        if ($piece eq '{') { $outer .= '{' if $depth++ == 0; next }
        if ($piece eq '}') { $depth-- if $depth; $outer .= '}' if !$depth;
                             next }
        $outer .= $piece if !$depth;
    }
    for my $st (split /[;{}]/, $outer) {
        next if $st =~ /\b(?:static|extern|typedef)\b/;
        $st =~ s/=.*//s;
        if ($st =~ /\(/) {
            # a pointer to a function, `type (*name)(args)`; else a
            # function's declaration
            push @names, $1 if $st =~ /\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(/;
            next;
        }
        $st =~ s/\[[^\]]*\]//g;
        # a type, then the name
        push @names, $1 if $st =~ /[A-Za-z_]\w*[\s*]+([A-Za-z_]\w*)\s*\z/;
    }
    return @names;
}

for my $rule (@ONE_WAY) {
    my ($from, $targets) = @$rule;
    next unless -f $from;
    for my $to (grep { -f } @$targets) {
        my @names = globals($to) or next;
        my $re = join('|', map { quotemeta } sort { length $b <=> length $a }
                                                  @names);
        my $s = code($from);
        my %seen;
        while ($s =~ /\b($re)\b/g) {
            my ($name, $at) = ($1, $-[1]);
            next if $seen{$name}++;
            problem($from, line_at($s, $at), "uses $name ($to): a "
                    . "response's path goes one way (filter.c calls "
                    . "decide.c, then response.c; response.c calls neither, "
                    . "decide.c not response.c)");
        }
    }
}

# (e) src/: parts by include, sh_x_internal.h folded into sh_x.
my $spart = sub {
    my $b = basename($_[0]);
    $b =~ s/\.[ch]\z//;
    $b =~ s/_internal\z//;
    $b;
};
my (%sedge, %swhere);
my %sheader = map { basename($_) => $_ } grep { /\.h\z/ } @src;
for my $f (@src) {
    for my $inc (includes($f)) {
        my $h = $sheader{basename($inc->[0])} or next;
        $arrow->(\%sedge, \%swhere, $spart->($f), $spart->($h), $f,
                 $inc->[1], "includes $h");
    }
}
report_knots('src/ include', \%sedge, \%swhere, sub { $_[0] });

print "$_\n" for @problems;
if (@problems) {
    printf STDERR "check-tree: %d violation%s of the tree's targets\n",
        scalar @problems, @problems == 1 ? '' : 's';
    exit 1;
}
exit 0;
