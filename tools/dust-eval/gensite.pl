#!/usr/bin/perl
# tools/dust-eval/gensite.pl OUT -- the DUST evaluation's test site
#, made of real pages of the documentation packages:
#
#   OUT/site/     the tree of site.test (and its alias www.site.test)
#   OUT/nodust/   the tree of nodust.test: the same pages, plain links
#   OUT/origin.conf  the origin's nginx servers (%%PORT%%, %%ROOT%%)
#   OUT/truth.tsv    every URL a page links to -> its document id
#   OUT/site.txt     what was made (counts)
#
# Documents: "en" pages are python3.11-doc and postgresql-doc-15 pages
# (their main text, their own links removed), "de" pages (served for
# ?lang=de) are rust-doc's books.  Every generated file carries a session
# id of its own in all its links (?sid=HEX), as a site that hands out a
# fresh session to each visit does, so that one page is linked under as
# many URLs as there are pages linking to it.  The URL space of site.test:
#
#   /doc/PATH              a document ("en:PATH"); a directory's index is
#                          /doc/DIR/, also /doc/DIR/index.html and /doc/DIR
#   /doc/PATH/             the same (trailing slash)
#   /print/doc/PATH        the same (print view)
#   ?sid=..., ?utm_source=...&sid=...  the same (session, tracking)
#   http://www.site.test/...  the same (host alias)
#   /doc/PATH?lang=en      the same; ?lang=de: another page ("de:PATH")
#   /list/?page=N&sort=name|date  a listing of every document, 20 per
#                          page ("list:SORT:N"); page=1 and sort=name are
#                          the defaults; sort=date orders by another key,
#                          so the same page number holds other items
#   /search?q=WORD         the documents holding WORD ("search:WORD")
#   / and /index.html      the home page ("home")
# nodust.test serves the "en" documents at /doc/PATH with plain links.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use DustPages qw(slurp spew text_of esc html_files page_of a page);

my $out = shift or die "usage: $0 OUT\n";
my $MAXEN = $ENV{DUST_SITE_EN} // 100000;   # cap on "en" documents
srand($ENV{DUST_SITE_SEED} // 23);

# The main text of a documentation page, without its links, scripts,
# navigation and sidebars.
sub main_html {
    my ($html) = @_;
    my $m;
    if ($html =~ m{<main[^>]*>(.*?)</main>}si) { $m = $1 }
    elsif ($html =~ m{role="main">(.*?)(?:<div class="sphinxsidebar"|<footer|<div class="footer")}si) { $m = $1 }
    elsif ($html =~ m{<body[^>]*>(.*?)</body>}si) { $m = $1 }
    else { $m = $html }
    $m =~ s{<(script|style|nav|form|select|button)\b.*?</\1>}{}gsi;
    $m =~ s{<div class="nav(?:header|footer)">.*?</div>}{}gsi;
    $m =~ s{<div class="mobile-nav-links">.*?</div>}{}gsi;
    $m =~ s{</?a\b[^>]*>}{}gsi;
    $m =~ s{<(?:img|link|meta|input|iframe)\b[^>]*>}{}gsi;
    $m =~ s{<!--.*?-->}{}gs;
    return $m;
}
sub pages_of {
    my ($root, $prefix, $skip) = @_;
    my @docs;
    for (html_files($root, $skip)) {
        my ($rel, $file) = @$_;
        my $pg = page_of($rel, $file, \&main_html,
                         $ENV{DUST_SITE_MINTEXT} // 1000) or next;
        my $path = $rel =~ s/\.html$//r;
        $path =~ s{(^|/)index$}{$1};       # a directory's index: DIR/
        push @docs, { path => "$prefix/$path", %$pg };
    }
    return @docs;
}

my @en = (pages_of('/usr/share/doc/python3.11/html', 'py',
                   qr{^(?:_|genindex|search|py-modindex|contents)}),
          pages_of('/usr/share/doc/postgresql-doc-15/html', 'pg',
                   qr{^(?:bookindex)}));
@en = @en[0 .. $MAXEN - 1] if @en > $MAXEN;
my $R = '/usr/share/doc/rust-doc/html';
my @de = map { pages_of("$R/$_", "rs/$_", qr{(?:^|/)(?:print|toc|404)\.html$}) }
         qw(book reference rust-by-example nomicon);
die "no pages: install the doc packages (tools/deps.sh eval)\n" unless @en > 100;

# a "de" version for as many "en" documents as there are "de" pages
my @order = map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } 0 .. $#en;
my %de_of;
$de_of{$order[$_]} = $de[$_] for 0 .. (@de < @en ? $#de : $#en);

sub sid { sprintf '%08x', int(rand(2**32)) }
my %truth;          # request URI (site.test and www.site.test) -> doc id
my %ntruth;         # nodust.test
sub is_dir { $_[0] =~ m{/$} }

# a link to "en" document $i from a page whose session id is $s, in one of
# the site's spellings (a weighted draw when $style is undef)
sub doc_link {
    my ($i, $s, $style) = @_;
    my $p = "/doc/$en[$i]{path}";
    my $dir = is_dir($p);
    unless (defined $style) {
        my $r = rand;
        $style = $r < 0.55 ? 'plain' : $r < 0.65 ? 'utm' : $r < 0.72 ? 'utm2'
               : $r < 0.80 ? 'slash' : $r < 0.87 ? ($dir ? 'index' : 'plain')
               : $r < 0.93 ? 'alias' : 'print';
    }
    my ($host, $u) = ('', "$p?sid=$s");
    if ($style eq 'utm') { $u = "$p?sid=$s&utm_source=related" }
    elsif ($style eq 'utm2') { $u = "$p?utm_source=related&sid=$s" }
    elsif ($style eq 'slash') { $u = ($dir ? ($p =~ s{/$}{}r) : "$p/") . "?sid=$s" }
    elsif ($style eq 'index') { $u = "${p}index.html?sid=$s" }
    elsif ($style eq 'alias') { $host = 'http://www.site.test' }
    elsif ($style eq 'print') { $u = "/print$p?sid=$s" }
    $truth{$u} = "en:$en[$i]{path}";
    return "$host$u";
}
sub lang_link {
    my ($i, $lang, $s) = @_;
    my $u = "/doc/$en[$i]{path}?lang=$lang&sid=$s";
    $truth{$u} = "$lang:$en[$i]{path}";
    return $u;
}
sub home_link {
    my ($s) = @_;
    my $u = rand() < 0.5 ? "/?sid=$s" : "/index.html?sid=$s";
    $truth{$u} = 'home';
    return a($u, 'Home');
}

# --- the search vocabulary: words in 5 to 60 documents -------------------
my (%df, @words_of);
for my $i (0 .. $#en) {
    my %seen;
    $seen{lc $_}++ for $en[$i]{text} =~ /\b([A-Za-z]{6,12})\b/g;
    $words_of[$i] = [sort keys %seen];
    $df{$_}++ for keys %seen;
}
my @vocab = grep { $df{$_} >= 5 && $df{$_} <= 60 } sort keys %df;
@vocab = map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } @vocab;
@vocab = sort @vocab[0 .. ($#vocab < 199 ? $#vocab : 199)];
my %in_vocab = map { $_ => 1 } @vocab;
my %hits;
for my $i (0 .. $#en) {
    push @{ $hits{$_} }, $i for grep { $in_vocab{$_} } @{ $words_of[$i] };
}
sub search_link {
    my ($w, $s) = @_;
    my $u = rand() < 0.5 ? "/search?q=$w&sid=$s" : "/search?sid=$s&q=$w";
    $truth{$u} = "search:$w";
    return $u;
}
sub summary {
    my @w = split ' ', $_[0]{text};
    return join(' ', @w[0 .. ($#w < 59 ? $#w : 59)]);
}

# --- listings: by name and by "date" (a random order), 20 a page -------
my $PER = 20;
my @by_name = sort { lc $en[$a]{title} cmp lc $en[$b]{title} || $a <=> $b } 0 .. $#en;
my @date = map { int(rand(3000)) } 0 .. $#en;
my @by_date = sort { $date[$b] <=> $date[$a] || $a <=> $b } 0 .. $#en;
my $npages = int((@en + $PER - 1) / $PER);
my %page_of;
$page_of{ $by_name[$_] } = 1 + int($_ / $PER) for 0 .. $#by_name;
sub list_link {
    my ($sort, $n, $s) = @_;
    my @q = ("sid=$s");
    push @q, "page=$n" if $n > 1 || rand() < 0.3;
    push @q, "sort=$sort" if $sort ne 'name' || rand() < 0.3;
    @q = map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } @q;
    my $u = '/list/?' . join('&', @q);
    $truth{$u} = "list:$sort:$n";
    return $u;
}
sub date_of { my $d = $date[$_[0]]; sprintf '%04d-%02d-%02d', 2018 + int($d / 365), 1 + int(($d % 365) / 31), 1 + $d % 28 }

# --- the pages ----------------------------------------------------------
my ($nfiles, $nlinks) = (0, 0);
for my $i (0 .. $#en) {
    my $d = $en[$i];
    my $s = sid();
    my @rel = (a(doc_link(($i + 1) % @en, $s, 'plain'), 'Next'),
               a(doc_link(($i - 1) % @en, $s, 'plain'), 'Previous'));
    push @rel, a(doc_link(int(rand(@en)), $s), 'Related') for 1 .. 4;
    push @rel, a(doc_link($i, $s, 'print'), 'Print this page');
    if ($de_of{$i}) {
        push @rel, a(lang_link($i, 'en', $s), 'English'),
                   a(lang_link($i, 'de', $s), 'Deutsch');
    }
    my @w = grep { $in_vocab{$_} } @{ $words_of[$i] };
    for (1 .. 2) {
        last unless @w;
        my $w = splice(@w, int(rand(@w)), 1);
        push @rel, a(search_link($w, $s), "Search: $w");
    }
    push @rel, a(list_link('name', $page_of{$i}, $s), 'In the index'),
               a(list_link(rand() < 0.5 ? 'name' : 'date', 1, $s), 'All pages');
    my $nav = home_link($s);
    my $file = "$out/site/doc/$d->{path}" . (is_dir($d->{path}) ? 'index.html' : '.html');
    spew($file, page($d->{title}, $nav, $d->{body}, \@rel));
    $nfiles++; $nlinks += @rel + 1;

    # the plain copy for nodust.test
    my @plain = map { a("/doc/$en[$_ % @en]{path}", 'Related') }
                ($i + 1, $i - 1 + @en, map { int(rand(@en)) } 1 .. 4);
    $ntruth{"/doc/$en[$_]{path}"} = "en:$en[$_]{path}" for 0 .. $#en;
    spew("$out/nodust/doc/$d->{path}" . (is_dir($d->{path}) ? 'index.html' : '.html'),
         page($d->{title}, a('/', 'Home'), $d->{body}, \@plain));

    # the "de" version
    if (my $g = $de_of{$i}) {
        my $s2 = sid();
        my @drel = (a(lang_link($i, 'en', $s2), 'English'));
        my @with = grep { $de_of{$_} } map { int(rand(@en)) } 1 .. 12;
        push @drel, a(lang_link($_, 'de', $s2), 'Verwandt') for @with[0 .. ($#with < 2 ? $#with : 2)];
        spew("$out/site/de/$d->{path}" . (is_dir($d->{path}) ? 'index.html' : '.html'),
             page($g->{title}, home_link($s2), $g->{body}, \@drel));
        $nfiles++; $nlinks += @drel + 1;
    }
}

for my $sort ('name', 'date') {
    my $list = $sort eq 'name' ? \@by_name : \@by_date;
    for my $n (1 .. $npages) {
        my $s = sid();
        my @items = @$list[($n - 1) * $PER .. ($n * $PER < @en ? $n * $PER - 1 : $#en)];
        my $body = join('', map {
            "<h3>" . a(doc_link($_, $s, 'plain'), $en[$_]{title}) . "</h3>\n"
            . "<p>" . esc(summary($en[$_])) . "</p>\n<p>Updated " . date_of($_) . "</p>\n"
        } @items);
        my @rel;
        push @rel, a(list_link($sort, $n - 1, $s), 'Previous') if $n > 1;
        push @rel, a(list_link($sort, $n + 1, $s), 'Next') if $n < $npages;
        push @rel, a(list_link($sort, 1, $s), 'First');
        my $other = $sort eq 'name' ? 'date' : 'name';
        push @rel, a(list_link($other, $n, $s), "Sort by $other");
        spew("$out/site/listing/$sort-$n.html",
             page("All pages, by $sort, page $n", home_link($s), $body, \@rel));
        $nfiles++; $nlinks += @rel + @items + 1;
    }
}

for my $w (@vocab) {
    my $s = sid();
    my @h = @{ $hits{$w} };
    @h = @h[0 .. 14] if @h > 15;
    my $body = "<p>" . scalar(@{ $hits{$w} }) . " pages hold "
             . esc($w) . ".</p>\n" . join('', map {
        "<h3>" . a(doc_link($_, $s, 'plain'), $en[$_]{title}) . "</h3>\n"
        . "<p>" . esc(summary($en[$_])) . "</p>\n" } @h);
    my @rel = map { a(search_link($_, $s), "Search: $_") }
              @vocab[map { int(rand(@vocab)) } 1 .. 3];
    spew("$out/site/searchres/$w.html",
         page("Search: $w", home_link($s), $body, \@rel));
    $nfiles++;
}

{
    my $s = sid();
    my @rel = (a(list_link('name', 1, $s), 'All pages by name'),
               a(list_link('date', 1, $s), 'All pages by date'));
    push @rel, a(doc_link($by_name[$_ * int(@en / 20)], $s, 'plain'), 'Featured') for 0 .. 19;
    push @rel, a(search_link($vocab[$_ * 10], $s), "Search") for 0 .. 4;
    spew("$out/site/home.html", page('The documentation site', '',
         '<p>Python, PostgreSQL and Rust documentation.</p>', \@rel));
    my @nrel = map { a("/doc/$en[$by_name[$_ * int(@en / 20)]]{path}", 'Featured') } 0 .. 19;
    spew("$out/nodust/home.html", page('The documentation site', '',
         '<p>Python and PostgreSQL documentation.</p>', \@nrel));
    $ntruth{'/'} = 'home';
    $nfiles++;
}

open(my $t, '>', "$out/truth.tsv") or die $!;
print $t "site\t$_\t$truth{$_}\n" for sort keys %truth;
print $t "nodust\t$_\t$ntruth{$_}\n" for sort keys %ntruth;
close $t;

my $de_n = grep { $de_of{$_} } 0 .. $#en;
spew("$out/site.txt", sprintf(
    "en documents %d (python3.11-doc, postgresql-doc-15)\nde documents %d (rust-doc books)\n"
  . "listing pages %d (2 sorts x %d)\nsearch words %d\nfiles %d, links %d, distinct linked URLs %d\n",
    scalar @en, $de_n, 2 * $npages, $npages, scalar @vocab, $nfiles, $nlinks,
    scalar keys %truth));

# --- the origin ---------------------------------------------------------
spew("$out/origin.conf", <<'CONF');
# the origin of the DUST evaluation (tools/dust-eval/gensite.pl)
map $arg_sort $dust_sort { default name; date date; }
map $arg_page $dust_page { default 1; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_q $dust_q { default _none; "~^([a-z]{1,20})$" $1; }

server {
    listen 127.0.0.1:%%PORT%%;
    server_name site.test www.site.test;
    root %%ROOT%%/site;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    location = / { try_files /home.html =404; }
    location = /index.html { try_files /home.html =404; }
    location /doc/ {
        if ($arg_lang = de) { rewrite ^/doc/(.*)$ /de/$1 last; }
        try_files $uri $uri.html $uri/index.html @slash;
    }
    location /de/ {
        internal;
        try_files $uri $uri.html $uri/index.html @slash;
    }
    location @slash {
        rewrite ^(.+)/$ $1 last;
        return 404;
    }
    location /print/ { rewrite ^/print(/doc/.*)$ $1 last; return 404; }
    location = /list/ { try_files /listing/$dust_sort-$dust_page.html =404; }
    location = /search { try_files /searchres/$dust_q.html =404; }
    location / { return 404; }
}

server {
    listen 127.0.0.1:%%PORT%%;
    server_name nodust.test;
    root %%ROOT%%/nodust;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    location = / { try_files /home.html =404; }
    location /doc/ { try_files $uri.html $uri/index.html =404; }
    location / { return 404; }
}
CONF
print slurp("$out/site.txt");
