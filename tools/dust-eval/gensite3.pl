#!/usr/bin/perl
# tools/dust-eval/gensite3.pl OUT -- the DUST evaluation's THIRD site
# (`make dust-eval SITE=3`): the site "you do not have".  Built
# after the learner and without reading it (src/sh_dust*) or tuning to it:
# the URL forms are what a site grown from a blog, a shop, an old Java
# portal and a documentation tree does, in proportions guessed from the
# web, one fixed seed.
#
#   OUT/site/     the tree of site3.test (and its alias www.site3.test)
#   OUT/nodust/   nodust3.test: the same documents, plain links
#   OUT/origin.conf, OUT/truth.tsv (site, URI, document, forms),
#   OUT/hosts.tsv (host, label), OUT/hosts.sh, OUT/site.txt
#
# Documents (other Debian documentation than sites 1 and 2):
#   /blog/SLUG/     a WordPress-like CMS: python-sklearn-doc's examples and
#                   python-pandas-doc's release notes as articles
#   /shop/product.php?id=N   products: python-pandas-doc's API pages
#   /help/PATH      the shop's help centre: pandas' user guide
#   /portal/PATH    an old Java portal: python-sklearn-doc's user guide
#   /docs/P/PATH    python-flask-doc, -jinja2-doc, -setuptools-doc,
#                   -requests-doc, docutils-doc
# Each generated file is one page view with a fresh session, carried by
# its links the way its section does it:
#   /shop/...?sid=HEX32          the shop's session (upper-case hex)
#   /help/PATH?sessionid=HEX32   the help centre's (another name)
#   /portal/PATH;jsessionid=HEX  the portal's (URL rewriting, no cookies)
#   /blog/, /docs/               no session (cookies)
# and drawn for each link, section by section:
#   utm_source=..&utm_medium=..[&utm_campaign=..]   tracking (blog most)
#   /blog/SLUG for /blog/SLUG/   the trailing slash left off
#   /blog/SLUG/?replytocom=N     a comment's reply link: the article
#   sort=relevance, paged=1, lang=en   defaults written out
#   print=1 (shop), /print/help/... (help)           print views
#   DIR/index.html, index.htm, index.shtml, index.jsp  index files
#   the parameters in another order
#   http://www.site3.test/...    the www. alias (its pages' links stay on it)
# Traps (other content, never DUST):
#   /blog/?paged=N                        the blog's pages
#   /shop/catalog.php?page=N[&sort=relevance]  the catalogue's pages
#   /shop/catalog.php?sort=price[&page=N] the catalogue in another order
#   /shop/product.php?id=N                one product per id
#   /docs/PATH?lang=de                    the German page (another pandas
#                                         page stands for it); lang=en is
#                                         the same page
#   /portal/PATH?version=0.24             the old release's page (another
#                                         pandas page), on a few pages
use strict;
use warnings;
use File::Path qw(make_path);
use Digest::MD5;
use FindBin;
use lib $FindBin::Bin;
use DustPages qw(slurp spew text_of esc html_files page_of a page main_html);

my $out = shift or die "usage: $0 OUT\n";
srand($ENV{DUST_SITE_SEED} // 3003);

sub pages_of {
    my ($root, $skip, $min) = @_;
    my @docs;
    for (html_files($root, $skip, sub { $_[0] !~ /[^A-Za-z0-9_\/.-]/ })) {
        my ($rel, $file) = @$_;
        my $pg = page_of($rel, $file, \&main_html, $min // 1500) or next;
        my $path = $rel;
        $path =~ s{(^|/)index\.html$}{$1};      # a directory: DIR/
        push @docs, { rel => $path, %$pg };
    }
    return @docs;
}
# Pages whose words are not near-copies of a page kept before them:
# pandas documents Series.x and DataFrame.x, str.islower and str.istitle
# in one template, and a shop would not sell one product under two ids.
# Resemblance of 4-word shingles (Broder), estimated from 48 minimum
# hashes; kept when below 0.5 against every page kept.
sub distinct_pages {
    my @kept;
    for my $pg (@_) {
        my @w = split ' ', lc $pg->{text};
        my @sig = (4294967291) x 48;
        for my $k (0 .. $#w - 3) {
            # 48 hashes of a shingle from two (double hashing)
            my ($a, $b) = unpack('NN', Digest::MD5::md5("@w[$k .. $k + 3]"));
            for my $j (0 .. 47) {
                my $x = ($a + $j * $b) % 4294967291;
                $sig[$j] = $x if $x < $sig[$j];
            }
        }
        my $near = 0;
        for my $o (@kept) {
            my $same = grep { $sig[$_] == $o->{sig}[$_] } 0 .. 47;
            if ($same >= 24) { $near = 1; last }
        }
        push @kept, { %$pg, sig => \@sig } unless $near;
    }
    delete $_->{sig} for @kept;
    return @kept;
}
sub shuffle { map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } @_ }
sub take { my ($n, @a) = @_; @a[0 .. ($n < @a ? $n : scalar @a) - 1] }

my $D = '/usr/share/doc';
my $SK = "$D/python-sklearn-doc/html";
my $PD = "$D/python-pandas-doc/html";
my $nav = qr{^(?:_|genindex|search|py-modindex|contents|index\.html$)};

# the blog: one article per example or release note, a slug each
my @blog = map { my $s = $_->{rel} =~ s{\.html$}{}r =~ s{/$}{}r =~ s{[/_.]+}{-}gr;
                 +{ %$_, slug => lc $s } }
           (pages_of("$SK/auto_examples", qr{(?:^|/)index\.html$}),
            map { +{ %$_, rel => "pandas-$_->{rel}" } } pages_of("$PD/whatsnew", qr{^index}));
my %seen;
@blog = grep { !$seen{$_->{slug}}++ } @blog;
# the shop's products and the traps' other pages: pandas' API reference,
# drawn apart
my @api = distinct_pages(shuffle(pages_of("$PD/reference/api", undef, 1000)));
my $NPROD = 300;
my @prod = take($NPROD, @api);
my @de_pool = @api[$NPROD .. $NPROD + 99];
my @old_pool = @api[$NPROD + 100 .. $NPROD + 134];
my @help = pages_of("$PD/user_guide", qr{^(?:_|genindex|search)});
push @help, map { +{ %$_, rel => "getting-started/$_->{rel}" } } pages_of("$PD/getting_started", $nav);
my @portal = (pages_of($SK, qr{^(?:_|genindex|search|py-modindex|contents|auto_examples|whats_new)}));
my @dproj = ([flask => "$D/python-flask-doc/html"], [jinja => "$D/python-jinja2-doc/html"],
             [setuptools => "$D/python-setuptools-doc/html"], [requests => "$D/python-requests-doc/html"],
             [docutils => "$D/docutils-doc/docs"]);
my @docs;
for (@dproj) {
    my ($p, $root) = @$_;
    push @docs, map { +{ %$_, rel => "$p/$_->{rel}" } } pages_of($root, qr{^(?:_|genindex|search|py-modindex|contents)});
}
die "no pages: install the doc packages (tools/deps.sh eval)\n"
    unless @blog > 200 && @api >= $NPROD + 135 && @help > 20 && @portal > 100 && @docs > 100;

# every document: sec, path (its own URI), body, title, dir, and the
# session parameter of its section
my @doc;
push @doc, map { +{ %$_, sec => 'blog', path => "/blog/$_->{slug}/", dir => 0 } } @blog;
push @doc, map { +{ %{ $prod[$_] }, sec => 'shop', path => "/shop/product.php?id=" . ($_ + 1),
                    file => "/products/" . ($_ + 1) . ".html", dir => 0 } } 0 .. $#prod;
push @doc, map { +{ %$_, sec => 'help', path => "/help/$_->{rel}" } } @help;
push @doc, map { +{ %$_, sec => 'portal', path => "/portal/$_->{rel}" } } @portal;
push @doc, map { +{ %$_, sec => 'docs', path => "/docs/$_->{rel}" } } @docs;
for (@doc) {
    $_->{dir} //= $_->{path} =~ m{/$} ? 1 : 0;
    $_->{file} //= $_->{path} =~ m{/$} ? "$_->{path}index.html" : $_->{path};
}
my %index_of = map { $doc[$_]{path} => $_ } 0 .. $#doc;
my %sess = (shop => 'sid', help => 'sessionid', portal => 'jsessionid');

# the German pages (a /docs/ page's lang=de) and the old release
# (a /portal/ page's version=0.24)
my (%de_of, %old_of);
my @t = shuffle(grep { $doc[$_]{sec} eq 'docs' } 0 .. $#doc);
$de_of{$t[$_]} = $de_pool[$_] for 0 .. ($#t < $#de_pool ? $#t : $#de_pool);
@t = shuffle(grep { $doc[$_]{sec} eq 'portal' } 0 .. $#doc);
$old_of{$t[$_]} = $old_pool[$_] for 0 .. ($#t < $#old_pool ? $#t : $#old_pool);

sub hex32 { join '', map { sprintf '%08X', int(rand(2**32)) } 1 .. 4 }
my @campaigns = qw(spring_sale newsletter_2023_11 launch weekly_digest blackfriday);
my @sources = (['twitter', 'social'], ['facebook', 'social'], ['newsletter', 'email'],
               ['linkedin', 'social'], ['google', 'cpc'], ['reddit', 'referral']);

my %truth;      # URI -> [document, forms]
my %ntruth;
sub note { my ($u, $doc, $forms) = @_; $truth{$u} //= [$doc, $forms]; $u }

# A link to document $i from a page view with session $s (its target
# section's way), forms drawn unless $plain.  Returns the href.
sub doc_link {
    my ($i, $s, $plain, $extra) = @_;
    my $d = $doc[$i];
    my $sec = $d->{sec};
    my ($p, $q0) = split /\?/, $d->{path}, 2;
    my @q = defined $q0 ? ($q0) : ();
    my (@forms, $host);
    my $sp = $sess{$sec};
    if ($sp && $sp ne 'jsessionid' && rand() < 0.9) {
        push @q, "$sp=$s"; push @forms, "sess-$sp";
    }
    push @q, @$extra if $extra;
    push @forms, 'default' if $extra;
    unless ($plain) {
        my $utm = $sec eq 'blog' ? 0.15 : $sec eq 'shop' ? 0.08 : 0.03;
        if (rand() < $utm) {
            my $src = $sources[rand @sources];
            push @q, "utm_source=$src->[0]", "utm_medium=$src->[1]";
            push @q, 'utm_campaign=' . $campaigns[rand @campaigns] if rand() < 0.6;
            push @forms, 'tracking';
        }
        if ($sec eq 'shop' && rand() < 0.05) { push @q, 'print=1'; push @forms, 'print' }
        if ($sec eq 'docs' && rand() < 0.05) { push @q, 'lang=en'; push @forms, 'default' }
        if (@q > 2 && rand() < 0.3) {
            # a form that rebuilds the query in its own order
            my @o = shuffle(@q);
            if ("@o" ne "@q") { @q = @o; push @forms, 'order' }
        }
        if ($sec eq 'blog' && rand() < 0.2) { $p =~ s{/$}{}; push @forms, 'slash' }
        if ($sec eq 'help' && rand() < 0.06) { $p = "/print$p"; push @forms, 'print' }
        if ($d->{dir} && rand() < 0.4) {
            $p .= $sec eq 'portal' ? (qw(index.jsp index.html))[rand 2]
                : (qw(index.html index.htm index.shtml))[rand 3];
            push @forms, 'index';
        }
        # the host is not in the truth's key: report.pl names the alias
        # by the host of the request
        $host = 'http://www.site3.test' if rand() < 0.05;
    }
    if ($sp && $sp eq 'jsessionid' && ($plain || rand() < 0.85)) {
        $p .= ";jsessionid=$s"; push @forms, 'sess-jsessionid';
    }
    my $u = @q ? "$p?" . join('&', @q) : $p;
    note($u, "doc:$d->{path}", join(',', @forms) || 'plain');
    return ($host // '') . $u;
}
# a comment's reply link: the article itself, ?replytocom=N
sub reply_link {
    my ($i, $c) = @_;
    my $d = $doc[$i];
    my $p = rand() < 0.2 ? $d->{path} =~ s{/$}{}r : $d->{path};
    my @q = ("replytocom=$c");
    push @q, 'utm_source=newsletter', 'utm_medium=email' if rand() < 0.05;
    return note("$p?" . join('&', @q), "doc:$d->{path}", 'reply');
}
sub home_link { a(note(rand() < 0.85 ? '/' : '/index.html', 'home', 'home'), 'Home') }

# the blog's pages (?paged=N, 10 articles each, newest first) and the
# shop's catalogue (?page=N, 20 products each, by relevance or by price)
my @blog_i = grep { $doc[$_]{sec} eq 'blog' } 0 .. $#doc;
my @prod_i = grep { $doc[$_]{sec} eq 'shop' } 0 .. $#doc;
my $BPER = 10;
my $nbp = int((@blog_i + $BPER - 1) / $BPER);
my %bpage_of;
$bpage_of{ $blog_i[$_] } = 1 + int($_ / $BPER) for 0 .. $#blog_i;
my $CPER = 20;
my $ncp = int((@prod_i + $CPER - 1) / $CPER);
my %order = (relevance => [sort { lc $doc[$a]{title} cmp lc $doc[$b]{title} || $a <=> $b } @prod_i],
             price => [shuffle(@prod_i)]);
my %cpage_of;
$cpage_of{ $order{relevance}[$_] } = 1 + int($_ / $CPER) for 0 .. $#prod_i;
sub blog_page_link {
    my ($n) = @_;
    my $u = $n > 1 ? "/blog/?paged=$n" : rand() < 0.15 ? '/blog/?paged=1' : '/blog/';
    return note($u, "blog-page:$n", $u =~ /paged=1$/ ? 'default' : 'list');
}
sub catalog_link {
    my ($n, $sort, $s) = @_;
    my @q;
    push @q, "page=$n" if $n > 1 || rand() < 0.1;
    push @q, "sort=$sort" if $sort ne 'relevance' || rand() < 0.4;
    push @q, "sid=$s" if rand() < 0.9;
    @q = shuffle(@q) if rand() < 0.3;
    my $u = @q ? '/shop/catalog.php?' . join('&', @q) : '/shop/catalog.php';
    my @f = grep { $u =~ /[?&]$_->[0]/ } ['page=1(?:&|$)', 'default'],
            ['sort=relevance', 'default'], ['sid=', 'sess-sid'];
    return note($u, "catalog:$sort:$n", join(',', map { $_->[1] } @f) || 'list');
}
sub summary { my @w = split ' ', $_[0]{text}; join(' ', @w[0 .. ($#w < 39 ? $#w : 39)]) }
# links a page of section $sec shows beside its text
sub section_rel {
    my ($i, $s) = @_;
    my $d = $doc[$i];
    my @same = grep { $doc[$_]{sec} eq $d->{sec} } ($i + 1) % @doc, ($i - 1) % @doc;
    my @rel = map { a(doc_link($_, $s), 'Next') } @same;
    push @rel, a(doc_link(int(rand(@doc)), $s), 'Related') for 1 .. 8;
    # the breadcrumb: the section's (or the project's) front page
    my $root = $d->{sec} eq 'docs' ? $d->{path} =~ s{^(/docs/[^/]+/).*}{$1}r : "/$d->{sec}/";
    push @rel, a(doc_link($index_of{$root}, $s), 'Up') if defined $index_of{$root};
    push @rel, a(doc_link($prod_i[rand @prod_i], $s), 'From the shop') for 1 .. ($d->{sec} eq 'shop' ? 3 : 1);
    if ($d->{sec} eq 'blog') {
        push @rel, a(reply_link($i, 1000 + int(rand(90000))), 'Reply') for 1 .. 1 + int(rand(3));
        push @rel, a(blog_page_link($bpage_of{$i}), 'More articles');
    } elsif ($d->{sec} eq 'shop') {
        push @rel, a(catalog_link($cpage_of{$i}, 'relevance', $s), 'Back to the catalogue');
        push @rel, a(catalog_link(1, 'price', $s), 'Cheapest first') if rand() < 0.3;
    }
    if ($de_of{$i}) {
        push @rel, a(note("$d->{path}?lang=de", "de:$d->{path}", 'lang'), 'Deutsch'),
                   a(doc_link($i, $s, 1, ['lang=en']), 'English');
    }
    if ($old_of{$i}) {
        push @rel, a(note("$d->{path}?version=0.24", "old:$d->{path}", 'version'), 'Version 0.24');
    }
    return @rel;
}

my ($nfiles, $nlinks) = (0, 0);
for my $i (0 .. $#doc) {
    my $d = $doc[$i];
    my $s = hex32();
    my @rel = section_rel($i, $s);
    spew("$out/site$d->{file}", page($d->{title}, home_link(), $d->{body}, \@rel));
    $nfiles++; $nlinks += @rel + 1;

    my @plain = map { a($doc[$_ % @doc]{file} =~ s{index\.html$}{}r, 'See also') }
                ($i + 1, $i - 1 + @doc, map { int(rand(@doc)) } 1 .. 4);
    $ntruth{$d->{file} =~ s{index\.html$}{}r} = ["doc:$d->{path}", 'plain'];
    spew("$out/nodust" . $d->{file}, page($d->{title}, a('/', 'Home'), $d->{body}, \@plain));

    if (my $g = $de_of{$i}) {
        my $s2 = hex32();
        my @r = (a(doc_link($i, $s2, 1, ['lang=en']), 'English'),
                 a(doc_link(int(rand(@doc)), $s2), 'Siehe auch'));
        spew("$out/site/de$d->{file}", page($g->{title}, home_link(), $g->{body}, \@r));
        $nfiles++; $nlinks += @r + 1;
    }
    if (my $g = $old_of{$i}) {
        my @r = (a(doc_link($i, hex32(), 1), 'Current release'));
        spew("$out/site/old$d->{file}", page($g->{title}, '', $g->{body}, \@r));
        $nfiles++; $nlinks += @r;
    }
}
for my $n (1 .. $nbp) {
    my $s = hex32();
    my @it = @blog_i[($n - 1) * $BPER .. ($n * $BPER < @blog_i ? $n * $BPER - 1 : $#blog_i)];
    my $body = join('', map { "<h2>" . a(doc_link($_, $s), $doc[$_]{title}) . "</h2>\n<p>"
                              . esc(summary($doc[$_])) . "</p>\n" } @it);
    my @r;
    push @r, a(blog_page_link($n - 1), 'Newer posts') if $n > 1;
    push @r, a(blog_page_link($n + 1), 'Older posts') if $n < $nbp;
    spew("$out/site/bloglist/$n.html", page("Blog, page $n", home_link(), $body, \@r));
    $nfiles++; $nlinks += @r + @it + 1;
}
for my $sort (qw(relevance price)) {
    for my $n (1 .. $ncp) {
        my $s = hex32();
        my $o = $order{$sort};
        my @it = @$o[($n - 1) * $CPER .. ($n * $CPER < @$o ? $n * $CPER - 1 : $#$o)];
        my $body = join('', map { "<h3>" . a(doc_link($_, $s), $doc[$_]{title}) . "</h3>\n<p>"
                                  . esc(summary($doc[$_])) . "</p>\n" } @it);
        my @r;
        push @r, a(catalog_link($n - 1, $sort, $s), 'Previous') if $n > 1;
        push @r, a(catalog_link($n + 1, $sort, $s), 'Next') if $n < $ncp;
        push @r, a(catalog_link($n, $sort eq 'price' ? 'relevance' : 'price', $s), "Sort by the other order");
        spew("$out/site/catalog/$sort-$n.html", page("Catalogue by $sort, page $n", home_link(), $body, \@r));
        $nfiles++; $nlinks += @r + @it + 1;
    }
}
{
    my $s = hex32();
    my @r = (a(blog_page_link(1), 'Blog'), a(catalog_link(1, 'relevance', $s), 'Shop'));
    my %first;
    $first{ $doc[$_]{sec} } //= $_ for 0 .. $#doc;
    push @r, a(doc_link($first{$_}, $s), ucfirst $_) for qw(help portal docs);
    my @f = map { int($_ * @doc / 24) } 0 .. 23;
    my $body = "<p>A blog, a shop, its help centre, a portal and documentation.</p>\n"
             . join('', map { "<h3>" . a(doc_link($_, $s), $doc[$_]{title}) . "</h3>\n<p>"
                              . esc(summary($doc[$_])) . "</p>\n" } @f);
    spew("$out/site/home.html", page('Site three', '', $body, \@r));
    my @nr = map { a($doc[$_]{file} =~ s{index\.html$}{}r, 'Featured') } @f;
    spew("$out/nodust/home.html", page('Site three', '',
         '<p>A blog, a shop, its help centre, a portal and documentation.</p>', \@nr));
    $ntruth{'/'} = ['home', 'plain'];
    $nfiles++;
}

open(my $t, '>', "$out/truth.tsv") or die $!;
print $t "site\t$_\t$truth{$_}[0]\t$truth{$_}[1]\n" for sort keys %truth;
print $t "nodust\t$_\t$ntruth{$_}[0]\t$ntruth{$_}[1]\n" for sort keys %ntruth;
close $t;
spew("$out/hosts.tsv", "site3.test\tsite\nwww.site3.test\tsite\nnodust3.test\tnodust\n");
spew("$out/hosts.sh", "SITE_SEED=http://site3.test/ SITE_HOSTS='site3\\.test|www\\.site3\\.test' SITE_DOMAINS=site3.test\n"
                    . "NODUST_SEED=http://nodust3.test/ NODUST_HOSTS='nodust3\\.test' NODUST_DOMAINS=nodust3.test\n");
my %nsec;
$nsec{$_->{sec}}++ for @doc;
my %docs;
$docs{$_->[0]}++ for values %truth;
my %nform;
$nform{$_}++ for map { split /,/, $_->[1] } values %truth;
spew("$out/site.txt", sprintf(
    "site 3: documents %d (/blog/ sklearn examples + pandas release notes %d, /shop/ pandas API %d, /help/ pandas guide %d, /portal/ sklearn guide %d, /docs/ flask jinja setuptools requests docutils %d), de %d, old %d (pandas API), blog pages %d, catalogue pages %d x 2\n"
  . "files %d, links %d, distinct linked URLs %d (documents linked %d)\nforms of the linked URLs: %s\n",
    scalar @doc, map({ $nsec{$_} // 0 } qw(blog shop help portal docs)), scalar keys %de_of,
    scalar keys %old_of, $nbp, $ncp, $nfiles, $nlinks, scalar keys %truth, scalar keys %docs,
    join(', ', map { "$_ $nform{$_}" } sort keys %nform)));

spew("$out/origin.conf", <<'CONF');
# the origin of the DUST evaluation's third site (tools/dust-eval/gensite3.pl)
map $arg_paged $d3_paged { default 1; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_page $d3_page { default 1; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_sort $d3_sort { default relevance; price price; }
map $arg_id $d3_id { default 0; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_lang $d3_de { default 0; de 1; }
map $arg_version $d3_old { default 0; "0.24" 1; }

server {
    listen 127.0.0.1:%%PORT%%;
    server_name site3.test www.site3.test;
    root %%ROOT%%/site;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    # what the front ends do to every path: the portal's session, the
    # help centre's print view, the index files
    rewrite "^(.*);jsessionid=[0-9A-F]+$" $1;
    rewrite ^/print(/.*)$ $1;
    rewrite "^(.*/)index\.(?:html|htm|shtml|jsp)$" $1;

    location = / { try_files /home.html =404; }
    location = /blog/ { try_files /bloglist/$d3_paged.html =404; }
    location = /shop/product.php { try_files /products/$d3_id.html =404; }
    location = /shop/catalog.php { try_files /catalog/$d3_sort-$d3_page.html =404; }
    location /docs/ {
        if ($d3_de) { rewrite ^(.*)$ /de$1 last; }
        try_files $uri $uri/index.html =404;
    }
    location /portal/ {
        if ($d3_old) { rewrite ^(.*)$ /old$1 last; }
        try_files $uri $uri/index.html =404;
    }
    location /de/ { internal; try_files $uri $uri/index.html =404; }
    location /old/ { internal; try_files $uri $uri/index.html =404; }
    location /products/ { return 404; }
    location /catalog/ { return 404; }
    location /bloglist/ { return 404; }
    location / { try_files $uri $uri/index.html =404; }
}

server {
    listen 127.0.0.1:%%PORT%%;
    server_name nodust3.test;
    root %%ROOT%%/nodust;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    location = / { try_files /home.html =404; }
    location / { try_files $uri $uri/index.html =404; }
}
CONF
print slurp("$out/site.txt");
