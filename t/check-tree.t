#!/usr/bin/perl
# tools/check-tree.sh, the checker of the structural targets, on
# small trees written here: each target broken once (a circle by calls, a
# circle by includes, the zone core calling a feature, a file and a function
# one line too long, an include loop in src/, a feature calling the store
# and the image itself, a response's path turned back: the response using
# the filter's next-filter pointer, the decision the response's function
# and variable), each caught at its file and line; and the same
# trees one step short of each limit pass (a feature naming the store's
# types, the zone core calling the store).  Last, it runs on this tree and
# says each thing it finds as FILE:LINE: what.

use strict;
use warnings;
use FindBin;
use Test::More;
use File::Temp qw(tempdir);
use File::Path qw(make_path);
use File::Basename qw(dirname);

my $checker = "$FindBin::Bin/../tools/check-tree.sh";

sub tree {
    my (%files) = @_;
    my $dir = tempdir(CLEANUP => 1);
    for my $name (keys %files) {
        make_path(dirname("$dir/$name"));
        open(my $fh, '>', "$dir/$name") or die "$name: $!";
        print $fh $files{$name};
        close $fh;
    }
    return $dir;
}

# (exit status, [lines printed])
sub check {
    my ($dir) = @_;
    my @out = `'$checker' '$dir' 2>/dev/null`;
    chomp @out;
    return ($? >> 8, \@out);
}

# A function of `lines` lines from its name to its closing brace (its
# type on the line before).
sub func {
    my ($name, $lines) = @_;
    return "static int\n$name(int x)\n{\n" . ("    x++;\n" x ($lines - 3))
           . "}\n";
}

# The module's shared header declares every part's functions: declarations
# are not uses, so the header draws no arrow.
my $header = <<'EOF';
#ifndef NGX_HTTP_SIMHASH_H
#define NGX_HTTP_SIMHASH_H
int ngx_http_simhash_zone_lock(int x);
int ngx_http_simhash_zone_find(int x);
int ngx_http_simhash_dust_init(int x);
int ngx_http_simhash_parts_init(int x);
int ngx_http_simhash_stats_get(int x);
int ngx_http_simhash_sites_get(int x);
int sh_store_doc(int x);
#endif
EOF

# A layered tree: features call the zone, the zone calls the part table
# (which may know the features: it is the one door to them).
my %good = (
    'module/ngx_http_simhash.h' => $header,
    'module/ngx_http_simhash_zone.c' => <<'EOF',
#include "ngx_http_simhash.h"
/* ngx_http_simhash_dust_init(): named in a comment only */
static const char *s = "ngx_http_simhash_dust_init(1)";
int
ngx_http_simhash_zone_lock(int x)
{
    return ngx_http_simhash_parts_init(x);
}
EOF
    'module/ngx_http_simhash_zone_conf.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_zone_find(int x)
{
    (void) sh_store_doc(x);
    return ngx_http_simhash_zone_lock(x);
}
EOF
    # the part table: the one thing outside the core the zone may call
    'module/ngx_http_simhash_parts.c' => <<'EOF',
#include "ngx_http_simhash.h"
#include "ngx_http_simhash_snap.h"
int
ngx_http_simhash_parts_init(int x)
{
    return x;
}
EOF
    # a feature names the store's types, but calls the zone only
    'module/ngx_http_simhash_dust.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_dust_init(int x)
{
    return ngx_http_simhash_zone_find(x) + sizeof(sh_store_doc_t *)
           + sizeof(sh_index_t);    /* not sh_store_doc(x) */
}
EOF
    'module/ngx_http_simhash_stats.c' => "#include \"ngx_http_simhash.h\"\n"
        . "int\nngx_http_simhash_stats_get(int x)\n{\n"
        . "    return ngx_http_simhash_dust_init(x);\n}\n"
        . func('long_enough', 150),
    # one subject in three files (a header, x.c, x_load.c) that call each
    # other: one part, no circle
    'module/ngx_http_simhash_snap.h' => "int ngx_http_simhash_snap_run(int);\n"
        . "int ngx_http_simhash_snap_load(int);\n",
    'module/ngx_http_simhash_snap.c' => "#include \"ngx_http_simhash_snap.h\"\n"
        . "int\nngx_http_simhash_snap_run(int x)\n{\n"
        . "    return ngx_http_simhash_snap_load(x);\n}\n",
    'module/ngx_http_simhash_snap_load.c' =>
        "#include \"ngx_http_simhash.h\"\n"
        . "#include \"ngx_http_simhash_snap.h\"\n"
        . "int\nngx_http_simhash_snap_load(int x)\n{\n"
        . "    return x ? ngx_http_simhash_snap_run(x - 1)\n"
        . "             : ngx_http_simhash_zone_lock(x);\n}\n",
    'ngx_simhash_module.c' => "#include \"ngx_http_simhash.h\"\n"
        . "static int (*table[])(int) = {\n"
        . "    ngx_http_simhash_stats_get, ngx_http_simhash_dust_init\n};\n"
        . ("/* filler */\n" x 1496),
    # a response's path, one way: the filter owns the next filters and
    # calls the decision, then the response
    'module/ngx_http_simhash_filter.c' => <<'EOF',
#include "ngx_http_simhash.h"
int (*ngx_http_simhash_next_body_filter)(int);
static int  ngx_http_simhash_held;
int
ngx_http_simhash_body_filter(int x)
{
    x = ngx_http_simhash_decide(x) + ngx_http_simhash_held;
    x = ngx_http_simhash_respond(x);
    return ngx_http_simhash_next_body_filter(x);
}
EOF
    'module/ngx_http_simhash_decide.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_decide(int x)
{
    return ngx_http_simhash_zone_find(x);
}
EOF
    'module/ngx_http_simhash_response.c' => <<'EOF',
#include "ngx_http_simhash.h"
int  ngx_http_simhash_headers_set;
static int
ngx_http_simhash_held(int x)
{
    return x;   /* a name of the filter's, static in both */
}
int
ngx_http_simhash_respond(int x)
{
    return ngx_http_simhash_held(x) + ngx_http_simhash_headers_set;
}
EOF
    'src/sh_a.h' => "#include \"sh_b.h\"\n",
    'src/sh_a.c' => "#include \"sh_a.h\"\n#include \"sh_a_internal.h\"\n",
    'src/sh_a_internal.h' => "#include \"sh_a.h\"\n",
    'src/sh_b.h' => "int sh_b(void);\n",
    'src/sh_b.c' => "#include \"sh_b.h\"\n",
    'src/sh_tokenizer_model.c' => func('step', 400),
    'tools/simhash/cmd_x.c' => func('cmd_x', 150),
);

my ($rc, $out) = check(tree(%good));
is($rc, 0, 'a layered tree passes');
is_deeply($out, [], 'and nothing is said of it')
    or diag(join("\n", @$out));

# Every target broken once.
my %bad = (%good,
    # a circle by calls: sites -> stats -> dust -> zone core, and
    # stats -> sites (a function put in a table is a use too)
    'module/ngx_http_simhash_sites.c' => "#include \"ngx_http_simhash.h\"\n"
        . "int\nngx_http_simhash_sites_get(int x)\n{\n"
        . "    return ngx_http_simhash_stats_get(x);\n}\n",
    'module/ngx_http_simhash_stats.c' => "#include \"ngx_http_simhash.h\"\n"
        . "static int (*t[])(int) = { ngx_http_simhash_sites_get };\n"
        . "int\nngx_http_simhash_stats_get(int x)\n{\n"
        . "    return ngx_http_simhash_dust_init(x);\n}\n"
        . func('too_long', 151),
    # a circle by includes
    'module/ngx_http_simhash_redis.h' =>
        "#include \"ngx_http_simhash_pump.h\"\n",
    'module/ngx_http_simhash_pump.h' =>
        "\n#include \"ngx_http_simhash_redis.h\"\n",
    # the zone core calls a feature
    'module/ngx_http_simhash_zone.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_zone_lock(int x)
{
    ngx_http_simhash_parts_init(x);
    return ngx_http_simhash_dust_init(x);
}
EOF
    'ngx_simhash_module.c' => $good{'ngx_simhash_module.c'} . "\n",
    # an include loop in src/, through a third part
    'src/sh_b.c' => "#include \"sh_b.h\"\n#include \"sh_c.h\"\n",
    'src/sh_c.h' => "#include \"sh_a.h\"\n",
    # a feature calls the store and the image itself, not through the zone
    'module/ngx_http_simhash_guard.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_guard_get(int x)
{
    x += sh_store_doc (x) + sizeof(sh_store_doc_t);
    return sh_image_save_step(&x);
}
EOF
    # the path turned back: the response sends through the filter's
    # pointer, the decision sets a header through the response
    'module/ngx_http_simhash_response.c' => <<'EOF',
#include "ngx_http_simhash.h"
int  ngx_http_simhash_headers_set;
int
ngx_http_simhash_respond(int x)
{
    return ngx_http_simhash_next_body_filter(x);
}
EOF
    'module/ngx_http_simhash_decide.c' => <<'EOF',
#include "ngx_http_simhash.h"
int
ngx_http_simhash_decide(int x)
{
    ngx_http_simhash_headers_set = 1;
    return ngx_http_simhash_respond(x);
}
EOF
    # `step` is allowed its length in the tokenizer model only
    'src/sh_other.c' => func('step', 151),
    'tools/simhash/cmd_x.c' => "\n" . func('cmd_x', 151),
);
($rc, $out) = check(tree(%bad));
is($rc, 1, 'a tree with a violation of each target fails');
# [where, what]: a line starting "where: " and saying "what"
my $M = 'module/ngx_http_simhash_';
my @expect = (
    ['ngx_simhash_module.c:1501', '1501 lines, over 1500'],
    ["${M}stats.c:9", 'function too_long is 151 lines'],
    ['src/sh_other.c:2', 'function step is 151 lines'],
    ['tools/simhash/cmd_x.c:3', 'function cmd_x is 151 lines'],
    ["${M}sites.c:5", 'circle among {sites, stats}: uses '
                      . "ngx_http_simhash_stats_get (${M}stats.c)"],
    ["${M}stats.c:2", 'circle among {sites, stats}: uses '
                      . 'ngx_http_simhash_sites_get'],
    ["${M}redis.h:1", "circle among {pump, redis}: includes ${M}pump.h"],
    ["${M}pump.h:2", "circle among {pump, redis}: includes ${M}redis.h"],
    ["${M}zone.c:6", 'the zone core calls the feature function '
                     . "ngx_http_simhash_dust_init (${M}dust.c)"],
    ["${M}zone.c:6", 'circle among {dust, zone core}: uses '
                     . 'ngx_http_simhash_dust_init'],
    ["${M}dust.c:5", 'circle among {dust, zone core}: uses '
                     . 'ngx_http_simhash_zone_find'],
    ["${M}guard.c:5", 'calls sh_store_doc; only the zone core'],
    ["${M}guard.c:6", 'calls sh_image_save_step; only the zone core'],
    ["${M}response.c:6", 'uses ngx_http_simhash_next_body_filter '
                         . "(${M}filter.c): a response's path goes one way"],
    ["${M}decide.c:5", 'uses ngx_http_simhash_headers_set '
                       . "(${M}response.c): a response's path goes one way"],
    ["${M}decide.c:6", 'uses ngx_http_simhash_respond '
                       . "(${M}response.c): a response's path goes one way"],
    ['src/sh_a.h:1', 'include circle among {sh_a, sh_b, sh_c}: includes '
                     . 'src/sh_b.h'],
    ['src/sh_b.c:2', 'include circle among {sh_a, sh_b, sh_c}: includes '
                     . 'src/sh_c.h'],
    ['src/sh_c.h:1', 'include circle among {sh_a, sh_b, sh_c}: includes '
                     . 'src/sh_a.h'],
);
for my $e (@expect) {
    my ($where, $what) = @$e;
    ok((grep { index($_, "$where: ") == 0 && index($_, $what) > 0 } @$out),
       "$where: $what");
}
is(scalar @$out, scalar @expect, 'and nothing else')
    or diag(join("\n", @$out));
unlike(join("\n", @$out), qr/parts_init|tokenizer_model|long_enough/,
       'the part table, the tokenizer model and a 150-line function pass');

# This tree: whatever it finds, each finding is FILE:LINE: what, of a file
# that exists.
($rc, $out) = check("$FindBin::Bin/..");
ok($rc == 0 || $rc == 1, "this tree checked (exit $rc)");
my @bad_lines = grep {
    !/^([^:\s]+):(\d+): \S/ || !-f "$FindBin::Bin/../$1"
} @$out;
is_deeply(\@bad_lines, [], 'each finding names a file and a line');

done_testing;
