#!/usr/bin/perl
# tools/dust-eval/gensite2.pl OUT -- the DUST evaluation's SECOND site
# (`make dust-eval SITE=2`): other real documentation than
# gensite.pl's, and the URL forms real sites mix, several on one URL, with
# traps that must never be predicted.  Built without looking at the
# learner: what a PHP front end, a Java section and a CMS in one site do.
#
#   OUT/site/     the tree of site2.test (and its alias m.site2.test)
#   OUT/nodust/   nodust2.test: the same documents, plain links
#   OUT/origin.conf, OUT/truth.tsv (site, URI, document, forms),
#   OUT/hosts.tsv (host, label), OUT/site.txt
#
# Documents: /docs/ python-django-doc, /guide/ python-sqlalchemy-doc,
# /manual/ sphinx-doc; python-scipy-doc pages are the traps' other
# documents (items, the French pages, the old manual).  Every generated
# file is one page view with a session of its own, carried by its links
# the way its section does it:
#
#   /docs/PATH?PHPSESSID=HEX       the session on most page views
#   /guide/PATH?s=HEX              another session parameter, one section
#   /manual/PATH;jsessionid=HEX    a Java path parameter, and a cache-
#          ?v=HEX                  buster (the build's hash) on most links
# and, drawn for each link, any of:
#   fbclid=RAND, gclid=RAND, ref=WORD     tracking
#   format=html                           a default value written out
#   the parameters in another order
#   DIR/index.php, DIR/default.htm, DIR/index.html for DIR/
#   /Docs/Ref/Foo.HTML for /docs/ref/foo.html   path case (a case-
#                                         insensitive server)
#   /amp/docs/...                         an AMP prefix
#   http://m.site2.test/...               the mobile host (its pages'
#                                         links stay on it)
# Traps (other documents, never DUST):
#   /list/?page=N[&format=html]   pagination (page=1 is the default)
#   /item?id=N                    item ids (scipy pages)
#   /docs/PATH?hl=fr              another language (a scipy page); hl=en
#                                 is the same page
#   /manual/PATH?v=6.1            another version (a scipy page), on a
#                                 few pages of the cache-buster section
use strict;
use warnings;
use File::Spec;
use File::Path qw(make_path);
use File::Basename qw(dirname);
use FindBin;
use lib $FindBin::Bin;
use DustPages qw(slurp spew text_of esc html_files page_of a page);

my $out = shift or die "usage: $0 OUT\n";
srand($ENV{DUST_SITE_SEED} // 34);

sub main_html {
    my ($html) = @_;
    my $m;
    if ($html =~ m{<main[^>]*>(.*?)</main>}si) { $m = $1 }
    elsif ($html =~ m{role="main">(.*?)(?:<div class="sphinxsidebar"|<footer|<div class="footer")}si) { $m = $1 }
    elsif ($html =~ m{<div id="yui-main">(.*?)<div class="yui-b" id="sidebar"}si) { $m = $1 }
    elsif ($html =~ m{<body[^>]*>(.*?)</body>}si) { $m = $1 }
    else { $m = $html }
    $m =~ s{<(script|style|nav|form|select|button)\b.*?</\1>}{}gsi;
    $m =~ s{</?a\b[^>]*>}{}gsi;
    $m =~ s{<(?:img|link|meta|input|iframe)\b[^>]*>}{}gsi;
    $m =~ s{<!--.*?-->}{}gs;
    return $m;
}
sub pages_of {
    my ($root, $skip) = @_;
    my @docs;
    # one spelling per path: no upper case (the path-case form makes it)
    for (html_files($root, $skip, sub { $_[0] !~ /[^a-z0-9_\/.-]/ })) {
        my ($rel, $file) = @$_;
        my $pg = page_of($rel, $file, \&main_html, 1200) or next;
        my $path = $rel;
        $path =~ s{(^|/)index\.html$}{$1};      # a directory: DIR/
        push @docs, { rel => $path, %$pg };
    }
    return @docs;
}
sub shuffle { map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } @_ }

my $D = '/usr/share/doc';
my @sec = (
    [ 'docs',   'PHPSESSID', pages_of("$D/python-django-doc/html", qr{^(?:_|genindex|search|py-modindex|contents)}) ],
    [ 'guide',  's',         pages_of("$D/python-sqlalchemy-doc/html", qr{^(?:_|genindex|search|contents|changelog/)}) ],
    [ 'manual', 'jsessionid', pages_of("$D/sphinx-doc/html", qr{^(?:_|genindex|search|py-modindex|contents)}) ],
);
my @doc;        # { sec, sess, path (under /), body, text, title, dir }
for my $s (@sec) {
    my ($name, $sess, @p) = @$s;
    push @doc, map { +{ %$_, sec => $name, sess => $sess, path => "/$name/$_->{rel}",
                       dir => ($_->{rel} eq "" || $_->{rel} =~ m{/$} ? 1 : 0) } } @p;
}
my @sp = shuffle(pages_of("$D/python-scipy-doc/html", qr{^(?:_|genindex|search|py-modindex|release)}));
die "no pages: install the doc packages (tools/deps.sh eval)\n" unless @doc > 300 && @sp > 700;
my $NITEMS = 500;
my @items = @sp[0 .. $NITEMS - 1];
my @fr_pool = @sp[$NITEMS .. $NITEMS + 199];
my @old_pool = @sp[$NITEMS + 200 .. $NITEMS + 239];

# the French pages (a /docs/ page's hl=fr) and the old manual (v=6.1)
my (%fr_of, %old_of);
my @docs_i = grep { $doc[$_]{sec} eq 'docs' } 0 .. $#doc;
my @man_i = grep { $doc[$_]{sec} eq 'manual' } 0 .. $#doc;
my @t = shuffle(@docs_i);
$fr_of{$t[$_]} = $fr_pool[$_] for 0 .. ($#t < $#fr_pool ? $#t : $#fr_pool);
@t = shuffle(@man_i);
$old_of{$t[$_]} = $old_pool[$_] for 0 .. ($#t < 29 ? $#t : 29);
my @builds = map { sprintf '%07x', int(rand(2**28)) } 1 .. 6;  # cache-busters

sub hex8 { sprintf '%08X%08X', int(rand(2**32)), int(rand(2**32)) }
sub rnd { my @c = ('a' .. 'z', 'A' .. 'Z', 0 .. 9, '_'); join '', map { $c[rand @c] } 1 .. $_[0] }

my %truth;      # URI -> [document, forms]
my %ntruth;
my %case_links; # a path-case spelling -> the file it serves

# the file under OUT/site of a document path
sub file_of { my $p = $_[0]; $p =~ m{/$} ? "${p}index.html" : $p }
sub cased {
    my ($p) = @_;
    my $c = join '/', map { ucfirst } split m{/}, $p, -1;
    $c =~ s/\.html$/.HTML/;
    return $c;
}

# A link to document $i from a page view with session $s (its section's
# way), forms drawn at random unless $plain.  Returns the href.
sub doc_link {
    my ($i, $s, $plain, $extra) = @_;
    my $d = $doc[$i];
    my $p = $d->{path};
    my @forms;
    my @q;
    my $host = '';
    my $r = $plain ? 1 : rand;
    if ($d->{sess} eq 'jsessionid') {
        if (rand() < 0.85) { push @forms, 'sess-jsessionid' }
        if ($plain || rand() < 0.75) {
            push @q, 'v=' . $builds[rand @builds];
            push @forms, 'cache-buster';
        }
    } elsif (rand() < 0.9) {
        push @q, "$d->{sess}=$s";
        push @forms, "sess-$d->{sess}";
    }
    if ($extra) { push @q, @$extra; push @forms, 'default' }
    unless ($plain) {
        if (rand() < 0.22) {
            my $k = rand;
            push @q, $k < 0.4 ? 'fbclid=IwAR' . rnd(24) : $k < 0.7 ? 'gclid=Cj0K' . rnd(20)
                   : 'ref=' . (qw(nav footer related sidebar))[rand 4];
            push @forms, 'tracking';
        }
        if ($d->{sec} ne 'manual' && rand() < 0.15) { push @q, 'format=html'; push @forms, 'default' }
        if (@q > 1 && rand() < 0.5) {
            my @o = shuffle(@q);
            if ("@o" ne "@q") { @q = @o; push @forms, 'order' }
        }
        my $f = rand;
        if ($d->{dir} && $f < 0.45) {
            $p .= (qw(index.php default.htm index.html))[rand 3];
            push @forms, 'index';
        } elsif ($f >= 0.45 && $f < 0.51 && !$d->{dir}) {
            my $c = cased($p);
            $case_links{$c} = file_of($d->{path});
            $p = $c;
            push @forms, 'case';
        } elsif ($f >= 0.51 && $f < 0.57) {
            $p = "/amp$p";
            push @forms, 'amp';
        }
        if (rand() < 0.06) { $host = 'http://m.site2.test'; push @forms, 'alias' }
    }
    $p .= ";jsessionid=$s" if grep { $_ eq 'sess-jsessionid' } @forms;
    my $u = @q ? "$p?" . join('&', @q) : $p;
    $truth{$u} //= ["doc:$d->{path}", join(',', @forms) || 'plain'];
    return "$host$u";
}
sub trap_link {
    my ($u, $docid, $form) = @_;
    $truth{$u} //= [$docid, $form];
    return $u;
}
sub home_link {
    my ($s) = @_;
    my $u = rand() < 0.6 ? "/?PHPSESSID=$s" : rand() < 0.5 ? '/index.php' : "/index.php?PHPSESSID=$s";
    $truth{$u} //= ['home', 'home'];
    return a($u, 'Home');
}
my $PER = 25;
my @by_title = sort { lc $doc[$a]{title} cmp lc $doc[$b]{title} || $a <=> $b } 0 .. $#doc;
my $npages = int((@doc + $PER - 1) / $PER);
my %page_of;
$page_of{ $by_title[$_] } = 1 + int($_ / $PER) for 0 .. $#by_title;
sub list_link {
    my ($n, $s) = @_;
    my @q = ("PHPSESSID=$s");
    push @q, "page=$n" if $n > 1 || rand() < 0.3;
    push @q, 'format=html' if rand() < 0.2;
    @q = shuffle(@q);
    return trap_link('/list/?' . join('&', @q), "list:$n", 'list');
}
sub item_link {
    my ($n, $s) = @_;
    my @q = shuffle("id=$n", "PHPSESSID=$s");
    return trap_link('/item?' . join('&', @q), "item:$n", 'item');
}
sub summary { my @w = split ' ', $_[0]{text}; join(' ', @w[0 .. ($#w < 49 ? $#w : 49)]) }

my ($nfiles, $nlinks) = (0, 0);
for my $i (0 .. $#doc) {
    my $d = $doc[$i];
    my $s = hex8();
    my @rel = (a(doc_link(($i + 1) % @doc, $s), 'Next'),
               a(doc_link(($i - 1) % @doc, $s), 'Previous'));
    push @rel, a(doc_link(int(rand(@doc)), $s), 'See also') for 1 .. 4;
    push @rel, a(item_link(1 + int(rand($NITEMS)), $s), 'Item') for 1 .. 2;
    if ($fr_of{$i}) {
        my $u = "$d->{path}?hl=fr&PHPSESSID=$s";
        push @rel, a(trap_link($u, "fr:$d->{path}", 'lang'), 'Français'),
                   a(doc_link($i, $s, 1, ['hl=en']), 'English');
    }
    if ($old_of{$i}) {
        push @rel, a(trap_link("$d->{path}?v=6.1", "old:$d->{path}", 'version'), 'Version 6.1');
    }
    push @rel, a(list_link($page_of{$i}, $s), 'In the index');
    spew("$out/site" . file_of($d->{path}), page($d->{title}, home_link($s), $d->{body}, \@rel));
    $nfiles++; $nlinks += @rel + 1;

    my @plain = map { a($doc[$_ % @doc]{path}, 'See also') }
                ($i + 1, $i - 1 + @doc, map { int(rand(@doc)) } 1 .. 4);
    $ntruth{$d->{path}} = ["doc:$d->{path}", 'plain'];
    spew("$out/nodust" . file_of($d->{path}), page($d->{title}, a('/', 'Home'), $d->{body}, \@plain));

    if (my $g = $fr_of{$i}) {
        my $s2 = hex8();
        my @r = (a(doc_link($i, $s2, 1, ['hl=en']), 'English'),
                 a(doc_link(int(rand(@doc)), $s2), 'Voir aussi'));
        spew("$out/site/fr" . file_of($d->{path}), page($g->{title}, home_link($s2), $g->{body}, \@r));
        $nfiles++; $nlinks += @r + 1;
    }
    if (my $g = $old_of{$i}) {
        my @r = (a(doc_link($i, hex8(), 1), 'Current version'));
        spew("$out/site/old" . file_of($d->{path}), page($g->{title}, '', $g->{body}, \@r));
        $nfiles++; $nlinks += @r;
    }
}
for my $n (1 .. $NITEMS) {
    my $g = $items[$n - 1];
    my $s = hex8();
    my @r = (a(item_link($n % $NITEMS + 1, $s), 'Next item'),
             a(doc_link(int(rand(@doc)), $s), 'Documentation'));
    spew("$out/site/items/$n.html", page($g->{title}, home_link($s), $g->{body}, \@r));
    $nfiles++; $nlinks += @r + 1;
}
for my $n (1 .. $npages) {
    my $s = hex8();
    my @it = @by_title[($n - 1) * $PER .. ($n * $PER < @doc ? $n * $PER - 1 : $#doc)];
    my $body = join('', map { "<h3>" . a(doc_link($_, $s), $doc[$_]{title}) . "</h3>\n<p>"
                              . esc(summary($doc[$_])) . "</p>\n" } @it);
    my @r;
    push @r, a(list_link($n - 1, $s), 'Previous') if $n > 1;
    push @r, a(list_link($n + 1, $s), 'Next') if $n < $npages;
    push @r, a(list_link(1, $s), 'First');
    spew("$out/site/listing/$n.html", page("Index, page $n", home_link($s), $body, \@r));
    $nfiles++; $nlinks += @r + @it + 1;
}
{
    my $s = hex8();
    my @r = (a(list_link(1, $s), 'Index'));
    # a home page with text of its own: the featured pages' summaries
    my @f = map { $by_title[$_ * int(@doc / 24)] } 0 .. 23;
    my $body = "<p>Django, SQLAlchemy and Sphinx documentation.</p>\n"
             . join('', map { "<h3>" . a(doc_link($_, $s), $doc[$_]{title}) . "</h3>\n<p>"
                              . esc(summary($doc[$_])) . "</p>\n" } @f);
    spew("$out/site/home.html", page('Framework documentation', '', $body, \@r));
    my @nr = map { a($doc[$by_title[$_ * int(@doc / 24)]]{path}, 'Featured') } 0 .. 23;
    spew("$out/nodust/home.html", page('Framework documentation', '',
         '<p>Django, SQLAlchemy and Sphinx documentation.</p>', \@nr));
    $ntruth{'/'} = ['home', 'plain'];
    $nfiles++;
}
# the case-insensitive server: each spelling linked is a link to the file
for my $c (sort keys %case_links) {
    my $link = "$out/site" . ($c =~ m{/$} ? "${c}index.html" : $c);
    my $target = "$out/site$case_links{$c}";
    make_path(dirname($link));
    symlink(File::Spec->abs2rel($target, dirname($link)), $link) or die "$link: $!";
}

open(my $t, '>', "$out/truth.tsv") or die $!;
print $t "site\t$_\t$truth{$_}[0]\t$truth{$_}[1]\n" for sort keys %truth;
print $t "nodust\t$_\t$ntruth{$_}[0]\t$ntruth{$_}[1]\n" for sort keys %ntruth;
close $t;
spew("$out/hosts.tsv", "site2.test\tsite\nm.site2.test\tsite\nnodust2.test\tnodust\n");
spew("$out/hosts.sh", "SITE_SEED=http://site2.test/ SITE_HOSTS='site2\\.test|m\\.site2\\.test' SITE_DOMAINS=site2.test\n"
                    . "NODUST_SEED=http://nodust2.test/ NODUST_HOSTS='nodust2\\.test' NODUST_DOMAINS=nodust2.test\n");
my %nsec;
$nsec{$_->{sec}}++ for @doc;
my %docs;
$docs{$_->[0]}++ for values %truth;
my %nform;
$nform{$_}++ for map { split /,/, $_->[1] } values %truth;
spew("$out/site.txt", sprintf(
    "site 2: documents %d (/docs/ django %d, /guide/ sqlalchemy %d, /manual/ sphinx %d), items %d, fr %d, old %d (scipy), listing pages %d\n"
  . "files %d, links %d, distinct linked URLs %d (documents linked %d)\nforms of the linked URLs: %s\n",
    scalar @doc, $nsec{docs}, $nsec{guide}, $nsec{manual}, $NITEMS, scalar keys %fr_of,
    scalar keys %old_of, $npages, $nfiles, $nlinks, scalar keys %truth, scalar keys %docs,
    join(', ', map { "$_ $nform{$_}" } sort keys %nform)));

spew("$out/origin.conf", <<'CONF');
# the origin of the DUST evaluation's second site (tools/dust-eval/gensite2.pl)
map $arg_page $d2_page { default 1; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_id $d2_id { default 0; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_hl $d2_fr { default 0; fr 1; }
map $arg_v $d2_old { default 0; "6.1" 1; }

server {
    listen 127.0.0.1:%%PORT%%;
    server_name site2.test m.site2.test;
    root %%ROOT%%/site;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    # what the application's front does to every path
    rewrite ^/amp(/.*)$ $1;
    rewrite "^(.*);jsessionid=[0-9A-F]+$" $1;
    rewrite ^(.*/)(?:index\.php|default\.htm)$ $1;

    location = / { try_files /home.html =404; }
    location = /index.php { try_files /home.html =404; }
    location /docs/ {
        if ($d2_fr) { rewrite ^(.*)$ /fr$1 last; }
        try_files $uri $uri/index.html =404;
    }
    location /manual/ {
        if ($d2_old) { rewrite ^(.*)$ /old$1 last; }
        try_files $uri $uri/index.html =404;
    }
    location /fr/ { internal; try_files $uri $uri/index.html =404; }
    location /old/ { internal; try_files $uri $uri/index.html =404; }
    location = /list/ { try_files /listing/$d2_page.html =404; }
    location = /item { try_files /items/$d2_id.html =404; }
    location /items/ { return 404; }
    location /listing/ { return 404; }
    location / { try_files $uri $uri/index.html =404; }
}

server {
    listen 127.0.0.1:%%PORT%%;
    server_name nodust2.test;
    root %%ROOT%%/nodust;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    location = / { try_files /home.html =404; }
    location / { try_files $uri $uri/index.html =404; }
}
CONF
print slurp("$out/site.txt");
