#!/usr/bin/perl
# tools/dust-eval/gensite4.pl OUT -- the DUST evaluation's FOURTH site
# (`make dust-eval SITE=4`), built blind: without reading the
# learner (src/sh_dust*), its notes or its tests, and without tuning to
# its results.  The forms and their rates below were fixed before the
# first crawl.  The site is a software project's web presence grown from
# five products, each with the URL habits of the software that serves it:
#
#   /docs/en/latest/PATH   Read the Docs: pytest's documentation
#   /wiki/TITLE            MediaWiki: celery's and kombu's pages as articles
#   /forum/viewtopic.php?f=F&t=T   phpBB 3: tornado, scrapy, pymongo,
#                          werkzeug and aiohttp pages as topics, 5 forums
#   /store/(S(SESSION))/Product.aspx?ProductID=N   an ASP.NET WebForms
#                          shop with cookieless sessions: dask's API pages
#   /news/YYYY/MM/SLUG     Drupal 7: gevent, pillow, cryptography and
#                          click pages as news articles (also /node/N)
#
#   OUT/site/     the tree of site4.test (and its alias m.site4.test)
#   OUT/nodust/   nodust4.test: the same documents, plain links
#   OUT/origin.conf, OUT/truth.tsv (site, URI, document, forms),
#   OUT/hosts.tsv (host, label), OUT/hosts.sh, OUT/site.txt
#
# Each generated file is one page view; where the section has a session
# (no cookies for a crawler) the view's links to its own section carry a
# fresh one:
#   /forum/...&sid=HEX32             phpBB's session id (lower-case hex)
#   /store/(S(24 of a-z0-5))/...     ASP.NET's cookieless session, a path
#                                    segment after the application root
#   /docs/, /wiki/, /news/           no session (cookies)
# Drawn for each link, by the target's section (rates per link):
#   docs   /docs/en/stable/ for /docs/en/latest/ (RTD's alias of the same
#          build) 0.15; DIR/index.html for DIR/ 0.35; ?highlight=WORD (a
#          Sphinx search hit) 0.04
#   wiki   /w/index.php?title=T for /wiki/T 0.2, of which &action=view
#          (the default action written out) 0.15; every article's sidebar
#          links /w/index.php?title=T&printable=yes
#   forum  sid 0.95 on the forum's own pages; f=F written out (phpBB 3.0
#          does, 3.1 often not) 0.5; viewtopic.php?p=POST#pPOST (a post's
#          link: its topic) 0.08; hilit=WORD (a search hit) 0.04;
#          view=print 0.03; the parameters in another order 0.1
#   store  the session on the shop's own pages 0.97; CategoryID=C (the
#          category the product was reached from) 0.3; product.aspx and
#          lower-case names (IIS and ASP.NET ignore case) 0.06; gclid 0.06,
#          msclkid 0.02 (ad clicks); the parameters in another order 0.15
#   news   /node/N for the path alias 0.12, /?q=node/N (Drupal without
#          clean URLs) 0.03; fbclid 0.06, gclid 0.03, mc_cid&mc_eid
#          (Mailchimp) 0.04, _ga (Google's cross-domain linker) 0.02;
#          ref=WORD or source=WORD 0.05; ?amp (the AMP view) 0.05
#   any    http://m.site4.test/... (the mobile host: its pages' links stay
#          on it) 0.05; / or /index.php for the front page (0.1)
#   defaults written out in listings: /news?page=0 0.1, phpBB's
#          &sk=t&sd=d 0.15 and &start=0 0.1, the shop's &Page=1 0.1 and
#          &SortBy=Name 0.15
# Traps (other content, never DUST):
#   /docs/en/6.2/PATH          the old release's page (another document),
#                              on 40 pages' version switchers
#   /w/index.php?title=T&oldid=N   an older revision (another document),
#                              40 articles
#   /forum/viewtopic.php?t=T&start=15  a long topic's second page (another
#                              document), 20 topics
#   /forum/viewforum.php?f=F&start=N   a forum's pages, 10 topics each;
#                              &sk=s&sd=a the first page by subject
#   /store/Category.aspx?CategoryID=C&Page=N[&SortBy=Price]  the shop's
#                              listings, by name or by price
#   /store/Product.aspx?ProductID=N   one product per id
#   /news?page=N               the news listing, 10 each, 0-based
#   /forum/viewtopic.php?t=T, /node/N   one topic, one node per id
use strict;
use warnings;
use Digest::MD5;
use FindBin;
use lib $FindBin::Bin;
use DustPages qw(slurp spew text_of esc html_files page_of a page main_html);

my $out = shift or die "usage: $0 OUT\n";
srand($ENV{DUST_SITE_SEED} // 4004);

my $D = '/usr/share/doc';
my $skip = qr{^(?:_|genindex|search|py-modindex|contents|404)};
sub pages_of {
    my ($pkg, $min, $keep) = @_;
    my @docs;
    for (html_files("$D/$pkg/html", $skip, sub { $_[0] !~ /[^A-Za-z0-9_\/.-]/ && (!$keep || $_[0] =~ $keep) })) {
        my ($rel, $file) = @$_;
        my $pg = page_of($rel, $file, \&main_html, $min // 700) or next;
        push @docs, { rel => $rel, pkg => $pkg =~ s/^python-|-doc$//gr, %$pg };
    }
    return @docs;
}
# The min-hash signature of a text's 4-word shingles (48 minima, double
# hashing), and a filter that keeps a page only when its estimated
# resemblance to every page kept before it is below 0.5: a site does not
# publish one text twice, and two near-copies would be one page for the
# module's own fingerprint (pytest's release announcements, dask's API
# pages come from one template).
sub sig_of {
    my @w = split ' ', lc $_[0];
    my @sig = (4294967291) x 48;
    for my $k (0 .. $#w - 3) {
        my ($a, $b) = unpack('NN', Digest::MD5::md5("@w[$k .. $k + 3]"));
        for my $j (0 .. 47) {
            my $x = ($a + $j * $b) % 4294967291;
            $sig[$j] = $x if $x < $sig[$j];
        }
    }
    return \@sig;
}
my %sig_index;      # "j value" -> indices of the signatures kept
my @kept_sig;
# true when the text is near (>= 0.5) a text kept; else keeps it
sub near_or_keep {
    my ($text, $label) = @_;
    my $sig = sig_of($text);
    my %same;
    for my $j (0 .. 47) { $same{$_}++ for @{ $sig_index{"$j $sig->[$j]"} // [] } }
    my ($best) = sort { $same{$b} <=> $same{$a} } keys %same;
    return $kept_sig[$best] if defined $best && $same{$best} >= 24;
    push @kept_sig, $label;
    push @{ $sig_index{"$_ $sig->[$_]"} }, $#kept_sig for 0 .. 47;
    return undef;
}
sub distinct { grep { !near_or_keep($_->{text}, "$_->{pkg}/$_->{rel}") } @_ }
sub shuffle { map { $_->[1] } sort { $a->[0] <=> $b->[0] } map { [rand, $_] } @_ }
sub take { my ($n, $a) = @_; splice(@$a, 0, $n < @$a ? $n : scalar @$a) }

# the documents, drawn apart section by section (distinct across all)
my @p_docs = distinct(pages_of('python-pytest-doc'));
my @p_wiki = distinct(pages_of('python-celery-doc'), pages_of('python-kombu-doc'));
my @forum_pkgs = qw(tornado scrapy pymongo werkzeug aiohttp);
my @p_forum = distinct(map { pages_of("python-$_-doc") } @forum_pkgs);
my @p_news = distinct(map { pages_of("python-$_-doc") } qw(gevent pil cryptography click));
my @dask_api = distinct(shuffle(pages_of('python-dask-doc', 700, qr{^generated/})));
my $NPROD = 320;
my @p_store = take($NPROD, \@dask_api);
# the traps' other documents: distributed's and xarray's pages, the dask
# API pages the shop does not sell
my @pool = shuffle(distinct(pages_of('python-distributed-doc'), pages_of('python-xarray-doc')), @dask_api);
my @old_pool = take(40, \@pool);
my @oldid_pool = take(40, \@pool);
my @start_pool = take(20, \@pool);
die "no pages: install the doc packages (tools/deps.sh eval)\n"
    unless @p_docs > 80 && @p_wiki > 150 && @p_forum > 150 && @p_news > 150
        && @p_store == $NPROD && @start_pool == 20;

# every document: sec, path (its own URI), file (under site/), plain (its
# URI on nodust4.test), title, body, text; and the section's own keys
my @doc;
my %seen;
for (@p_docs) {
    my $rel = $_->{rel} =~ s{(^|/)index\.html$}{$1}r;
    push @doc, { %$_, sec => 'docs', path => "/docs/en/latest/$rel", rel => $rel,
                 file => "/docs/en/latest/" . ($rel =~ m{(^|/)$} ? "${rel}index.html" : $rel),
                 dir => $rel =~ m{(^|/)$} ? 1 : 0 };
}
for (@p_wiki) {
    my $t = $_->{rel} =~ s{\.html$}{}r =~ s{(^|/)index$}{}r;
    $t = $t eq '' ? ($_->{pkg} eq 'celery' ? 'Main_Page' : 'Kombu') : $_->{pkg} eq 'kombu' ? "Kombu/$t" : $t;
    $t = join('_', map { ucfirst } split m{[/_-]+}, $t);
    $t =~ s/\.+/_/g;
    next if $seen{"wiki $t"}++;
    push @doc, { %$_, sec => 'wiki', title_key => $t, path => "/wiki/$t", file => "/wiki/$t" };
}
my (@forums, %post_of);
{
    my $t = 101;
    my %f_of = map { $forum_pkgs[$_] => $_ + 2 } 0 .. $#forum_pkgs;
    for (shuffle(@p_forum)) {
        my $f = $f_of{ $_->{pkg} };
        my $post = 1000 + $t * 7 + int(rand(7));
        $post_of{$t} = $post;
        push @doc, { %$_, sec => 'forum', t => $t, f => $f, post => $post,
                     path => "/forum/viewtopic.php?t=$t", file => "/topics/$t.html",
                     plain => "/forum/topic-$t.html" };
        push @{ $forums[$f] }, $#doc;
        $t++;
    }
}
my @cats = ([q(array), q(Arrays)], [q(dataframe), q(DataFrames and the rest)]);
my @cat_items;
for my $k (0 .. $#p_store) {
    my $pg = $p_store[$k];
    my $name = $pg->{rel} =~ s{^generated/}{}r =~ s{\.html$}{}r;
    my $c = $name =~ /^dask\.array\b/ ? 1 : 2;
    my $id = 1001 + $k;
    push @doc, { %$pg, sec => 'store', id => $id, cat => $c,
                 path => "/store/Product.aspx?ProductID=$id", file => "/products/$id.html",
                 plain => "/store/product-$id.html" };
    push @{ $cat_items[$c] }, $#doc;
}
{
    my $node = 201;
    for (@p_news) {
        my $slug = lc($_->{pkg} . '-' . ($_->{rel} =~ s{\.html$}{}r =~ s{(^|/)index$}{$1}r =~ s{[/_.]+}{-}gr));
        $slug =~ s/-+$//;
        my $date = sprintf('%04d/%02d', 2019 + int(rand(5)), 1 + int(rand(12)));
        next if $seen{"news $date/$slug"}++;
        push @doc, { %$_, sec => 'news', node => $node, date => $date,
                     path => "/news/$date/$slug", file => "/nodes/$node.html" };
        $node++;
    }
}
for (@doc) {
    $_->{dir} //= 0;
    $_->{plain} //= $_->{path} =~ s{/$}{/index.html}r;
}
my @sec_of = map { $_->{sec} } @doc;
my %by_sec;
push @{ $by_sec{ $doc[$_]{sec} } }, $_ for 0 .. $#doc;
my %index_of = map { $doc[$_]{path} => $_ } 0 .. $#doc;

# the traps' documents
my (%old_of, %oldid_of, %start_of);
my @t = shuffle(@{ $by_sec{docs} });
$old_of{ $t[$_] } = $old_pool[$_] for 0 .. $#old_pool;
@t = shuffle(@{ $by_sec{wiki} });
$oldid_of{ $t[$_] } = { %{ $oldid_pool[$_] }, oldid => 500000 + int(rand(400000)) } for 0 .. $#oldid_pool;
@t = shuffle(@{ $by_sec{forum} });
$start_of{ $t[$_] } = $start_pool[$_] for 0 .. $#start_pool;

sub hex32 { join '', map { sprintf '%08x', int(rand(2**32)) } 1 .. 4 }
my @b32 = ('a' .. 'z', 0 .. 5);
sub aspnet { join '', map { $b32[rand @b32] } 1 .. 24 }
sub rhex { my $n = shift; join '', map { sprintf '%x', int(rand 16) } 1 .. $n }
sub ralnum { my $n = shift; my @c = ('A' .. 'Z', 'a' .. 'z', 0 .. 9, '_', '-'); join '', map { $c[rand @c] } 1 .. $n }
sub word_of { my @w = grep { /^[a-z]{5,12}$/ } split ' ', lc $_[0]{text}; @w ? $w[rand @w] : 'python' }

my (%truth, %ntruth);
sub note { my ($u, $doc, $forms) = @_; $truth{$u} //= [$doc, $forms]; $u }

# A link to document $i from a page view of section $from with session
# $s, the forms drawn unless $plain.  Returns the href.
sub doc_link {
    my ($i, $from, $s, $plain) = @_;
    my $d = $doc[$i];
    my $sec = $d->{sec};
    my (@forms, $p, @q, $frag);
    my $draw = sub { !$plain && rand() < $_[0] };
    if ($sec eq 'docs') {
        $p = $d->{path};
        if ($draw->(0.15)) { $p =~ s{^/docs/en/latest/}{/docs/en/stable/}; push @forms, 'stable' }
        if ($d->{dir} && $draw->(0.35)) { $p .= 'index.html'; push @forms, 'index' }
        if ($draw->(0.04)) { push @q, 'highlight=' . word_of($d); push @forms, 'highlight' }
    } elsif ($sec eq 'wiki') {
        if ($draw->(0.2)) {
            $p = '/w/index.php'; push @q, "title=$d->{title_key}"; push @forms, 'title';
            if ($draw->(0.15)) { push @q, 'action=view'; push @forms, 'default' }
        } else { $p = $d->{path} }
    } elsif ($sec eq 'forum') {
        $p = '/forum/viewtopic.php';
        if ($draw->(0.08)) {
            push @q, "p=$d->{post}"; $frag = "#p$d->{post}"; push @forms, 'post';
        } else {
            if ($draw->(0.5)) { push @q, "f=$d->{f}"; push @forms, 'context' }
            push @q, "t=$d->{t}";
        }
        if ($draw->(0.04)) { push @q, 'hilit=' . word_of($d); push @forms, 'highlight' }
        if ($draw->(0.03)) { push @q, 'view=print'; push @forms, 'print' }
        if ($from eq 'forum' && rand() < 0.95) { push @q, "sid=$s"; push @forms, 'sess-sid' }
        if (@q > 2 && $draw->(0.1)) {
            my @o = shuffle(@q);
            if ("@o" ne "@q") { @q = @o; push @forms, 'order' }
        }
    } elsif ($sec eq 'store') {
        my ($pp, $id, $cat) = ('Product.aspx', 'ProductID', 'CategoryID');
        if ($draw->(0.06)) { ($pp, $id, $cat) = map { lc } ($pp, $id, $cat); push @forms, 'case' }
        $p = "/store/$pp";
        push @q, "$id=$d->{id}";
        if ($draw->(0.3)) { push @q, "$cat=$d->{cat}"; push @forms, 'context' }
        if ($draw->(0.06)) { push @q, 'gclid=' . ralnum(72); push @forms, 'tracking' }
        elsif ($draw->(0.02)) { push @q, 'msclkid=' . rhex(32); push @forms, 'tracking' }
        if (@q > 1 && $draw->(0.15)) {
            my @o = shuffle(@q);
            if ("@o" ne "@q") { @q = @o; push @forms, 'order' }
        }
        if ($from eq 'store' && rand() < 0.97) { $p =~ s{^/store/}{/store/(S($s))/}; push @forms, 'sess-aspnet' }
    } elsif ($sec eq 'news') {
        $p = $d->{path};
        if ($draw->(0.12)) { $p = "/node/$d->{node}"; push @forms, 'node' }
        elsif ($draw->(0.03)) { $p = '/'; push @q, "q=node/$d->{node}"; push @forms, 'node' }
        if ($draw->(0.06)) { push @q, 'fbclid=IwAR' . ralnum(58); push @forms, 'tracking' }
        if ($draw->(0.03)) { push @q, 'gclid=' . ralnum(72); push @forms, 'tracking' }
        if ($draw->(0.04)) { push @q, 'mc_cid=' . rhex(10), 'mc_eid=' . rhex(10); push @forms, 'tracking' }
        if ($draw->(0.02)) { push @q, sprintf('_ga=2.%d.%d.%d-%d.%d', int(rand(2**28)), int(rand(2**30)), 1690000000 + int(rand(9999999)),
                                              int(rand(2**30)), 1690000000 + int(rand(9999999))); push @forms, 'tracking' }
        if ($draw->(0.05)) { push @q, (qw(ref source))[rand 2] . '=' . (qw(homepage rss twitter sidebar newsletter))[rand 5]; push @forms, 'ref' }
        if ($draw->(0.05)) { push @q, 'amp'; push @forms, 'amp' }
    }
    my $host = $draw->(0.05) ? 'http://m.site4.test' : '';
    my $u = @q ? "$p?" . join('&', @q) : $p;
    note($u, "doc:$d->{path}", join(',', @forms) || 'plain');
    return $host . $u . ($frag // '');
}
sub home_link { a(note(rand() < 0.9 ? '/' : '/index.php', 'home', 'home'), 'Home') }

# the forum's board index and listings (10 topics each, newest first; by
# subject, the first page), the shop's listings (20 each, by name or by
# price), the news listing (10 each, newest first, 0-based)
sub forum_sid { my ($s, $u) = @_; return ($u, 0) unless defined $s && rand() < 0.95; return ($u . ($u =~ /\?/ ? '&' : '?') . "sid=$s", 1) }
sub board_link {
    my ($s) = @_;
    my $u = rand() < 0.3 ? '/forum/index.php' : '/forum/';
    my $sid;
    ($u, $sid) = forum_sid($s, $u);
    return note($u, 'forum-index', join(',', $u =~ /index\.php/ ? 'index' : (), $sid ? 'sess-sid' : ()) || 'list');
}
my $FPER = 10;
sub forum_link {
    my ($f, $start, $bysubj, $s) = @_;
    my (@q, @forms) = ("f=$f");
    if ($bysubj) { push @q, 'sk=s', 'sd=a' }
    else {
        if ($start > 0 || rand() < 0.1) { push @q, "start=$start"; push @forms, 'default' if $start == 0 }
        if (rand() < 0.15) { push @q, 'sk=t', 'sd=d'; push @forms, 'default' }
    }
    my $u = '/forum/viewforum.php?' . join('&', @q);
    my $sid;
    ($u, $sid) = forum_sid($s, $u);
    push @forms, 'sess-sid' if $sid;
    return note($u, "forum:$f:" . ($bysubj ? 'subject' : 'time') . ":$start", join(',', @forms) || 'list');
}
my $CPER = 20;
sub cat_link {
    my ($c, $n, $sort, $s) = @_;
    my (@q, @forms) = ("CategoryID=$c");
    if ($n > 1 || rand() < 0.1) { push @q, "Page=$n"; push @forms, 'default' if $n == 1 }
    if ($sort eq 'price') { push @q, 'SortBy=Price' }
    elsif (rand() < 0.15) { push @q, 'SortBy=Name'; push @forms, 'default' }
    my $p = '/store/Category.aspx';
    if (defined $s && rand() < 0.97) { $p = "/store/(S($s))/Category.aspx"; push @forms, 'sess-aspnet' }
    return note("$p?" . join('&', @q), "cat:$c:$sort:$n", join(',', @forms) || 'list');
}
my $NPER = 10;
sub news_link {
    my ($n) = @_;
    my $u = $n > 0 ? "/news?page=$n" : rand() < 0.1 ? '/news?page=0' : '/news';
    return note($u, "news:$n", $u =~ /page=0/ ? 'default' : 'list');
}
sub summary { my @w = split ' ', $_[0]{text}; join(' ', @w[0 .. ($#w < 39 ? $#w : 39)]) }

my @news_i = sort { $doc[$b]{date} cmp $doc[$a]{date} || $a <=> $b } @{ $by_sec{news} };
my %npage_of;
$npage_of{ $news_i[$_] } = int($_ / $NPER) for 0 .. $#news_i;
my $nnp = int((@news_i + $NPER - 1) / $NPER);
my (%fpage_of, @forder);
for my $f (2 .. $#forums) {
    $forder[$f] = [reverse @{ $forums[$f] }];      # newest (highest t) first
    $fpage_of{ $forder[$f][$_] } = $FPER * int($_ / $FPER) for 0 .. $#{ $forder[$f] };
}
my (%cpage_of, %corder);
for my $c (1 .. @cats) {
    $corder{$c}{name} = [sort { lc $doc[$a]{title} cmp lc $doc[$b]{title} || $a <=> $b } @{ $cat_items[$c] // [] }];
    $corder{$c}{price} = [shuffle(@{ $cat_items[$c] // [] })];
    $cpage_of{ $corder{$c}{name}[$_] } = 1 + int($_ / $CPER) for 0 .. $#{ $corder{$c}{name} };
}

# the session of a page view in section $sec
sub session { $_[0] eq 'forum' ? hex32() : $_[0] eq 'store' ? aspnet() : undef }
# links a page of document $i shows beside its text
sub section_rel {
    my ($i, $s) = @_;
    my $d = $doc[$i];
    my $sec = $d->{sec};
    my $all = $by_sec{$sec};
    my ($k) = grep { $all->[$_] == $i } 0 .. $#$all;
    my @rel = (a(doc_link($all->[($k + 1) % @$all], $sec, $s), 'Next'),
               a(doc_link($all->[($k - 1) % @$all], $sec, $s), 'Previous'));
    push @rel, a(doc_link(int(rand(@doc)), $sec, $s), 'Related') for 1 .. 12;
    push @rel, a(doc_link($by_sec{store}[rand @{ $by_sec{store} }], $sec, $s), 'From the store');
    if ($sec eq 'docs') {
        my $root = $index_of{'/docs/en/latest/'};
        push @rel, a(doc_link($root, $sec, $s), 'Contents') if defined $root;
        push @rel, a(note("/docs/en/6.2/$d->{rel}", "old:$d->{path}", 'version'), 'v6.2') if $old_of{$i};
    } elsif ($sec eq 'wiki') {
        push @rel, a(doc_link($index_of{'/wiki/Main_Page'}, $sec, $s), 'Main page') if defined $index_of{'/wiki/Main_Page'};
        push @rel, a(note("/w/index.php?title=$d->{title_key}&printable=yes", "doc:$d->{path}", 'title,print'), 'Printable version');
        push @rel, a(note("/w/index.php?title=$d->{title_key}&oldid=$oldid_of{$i}{oldid}", "oldid:$d->{path}", 'revision'), 'Previous revision')
            if $oldid_of{$i};
    } elsif ($sec eq 'forum') {
        push @rel, a(forum_link($d->{f}, $fpage_of{$i}, 0, $s), 'Return to the forum');
        push @rel, a(board_link($s), 'Board index');
        if ($start_of{$i}) {
            my ($u) = forum_sid($s, ($d->{f} && rand() < 0.5 ? "/forum/viewtopic.php?f=$d->{f}&t=$d->{t}" : "/forum/viewtopic.php?t=$d->{t}") . '&start=15');
            push @rel, a(note($u, "topic2:$d->{path}", 'page'), 'Page 2');
        }
    } elsif ($sec eq 'store') {
        push @rel, a(cat_link($d->{cat}, $cpage_of{$i}, 'name', $s), 'Back to ' . $cats[$d->{cat} - 1][1]);
        push @rel, a(doc_link($by_sec{store}[rand @{ $by_sec{store} }], $sec, $s), 'Customers also bought') for 1 .. 2;
    } elsif ($sec eq 'news') {
        push @rel, a(news_link($npage_of{$i}), 'More news');
    }
    return @rel;
}

my ($nfiles, $nlinks) = (0, 0);
my %final_text;     # document -> its page's words, for the last check
sub emit {
    my ($file, $docname, $title, $nav, $body, $rel) = @_;
    my $html = page($title, $nav, $body, $rel);
    spew("$out/site$file", $html);
    $final_text{$docname} //= text_of($body);
    $nfiles++; $nlinks += @$rel + ($nav ne '' ? 1 : 0);
}
for my $i (0 .. $#doc) {
    my $d = $doc[$i];
    my $s = session($d->{sec});
    my @rel = section_rel($i, $s);
    emit($d->{file}, "doc:$d->{path}", $d->{title}, home_link(), $d->{body}, \@rel);

    my @plain = map { a($doc[$_ % @doc]{plain} =~ s{index\.html$}{}r, 'See also') }
                ($i + 1, $i - 1 + @doc, map { int(rand(@doc)) } 1 .. 4);
    $ntruth{ $d->{plain} =~ s{index\.html$}{}r } = ["doc:$d->{path}", 'plain'];
    spew("$out/nodust" . $d->{plain}, page($d->{title}, a('/', 'Home'), $d->{body}, \@plain));

    if (my $g = $old_of{$i}) {
        my @r = (a(doc_link($i, 'docs', undef, 1), 'Latest version'), a(doc_link(int(rand(@doc)), 'docs', undef), 'See also'));
        emit("/docs/en/6.2/$d->{rel}" . ($d->{dir} ? 'index.html' : ''), "old:$d->{path}", $g->{title}, home_link(), $g->{body}, \@r);
    }
    if (my $g = $oldid_of{$i}) {
        my @r = (a(doc_link($i, 'wiki', undef, 1), 'Current revision'));
        emit("/wikiold/$g->{oldid}.html", "oldid:$d->{path}", $g->{title}, home_link(), $g->{body}, \@r);
    }
    if (my $g = $start_of{$i}) {
        my $s2 = session('forum');
        my @r = (a(doc_link($i, 'forum', $s2, 1), 'Page 1'), a(forum_link($d->{f}, $fpage_of{$i}, 0, $s2), 'Return to the forum'));
        emit("/topics/$d->{t}-2.html", "topic2:$d->{path}", $g->{title}, home_link(), $g->{body}, \@r);
    }
}
# listings
sub item { my ($i, $href) = @_; "<h3>" . a($href, $doc[$i]{title}) . "</h3>\n<p>" . esc(summary($doc[$i])) . "</p>\n" }
{
    my $s = session('forum');
    my $body = join('', map { my $f = $_; "<h2>" . a(forum_link($f, 0, 0, $s), ucfirst $forum_pkgs[$f - 2]) . "</h2>\n<p>"
                                 . scalar(@{ $forums[$f] }) . " topics; the newest: " . esc($doc[$forder[$f][0]]{title}) . "</p>\n" } 2 .. $#forums);
    emit('/forums/index.html', 'forum-index', 'Board index', home_link(), $body, [a(board_link($s), 'Board index')]);
}
for my $f (2 .. $#forums) {
    my $o = $forder[$f];
    for (my $start = 0; $start < @$o; $start += $FPER) {
        my $s = session('forum');
        my @it = @$o[$start .. ($start + $FPER - 1 < $#$o ? $start + $FPER - 1 : $#$o)];
        my $body = join('', map { item($_, doc_link($_, 'forum', $s)) } @it);
        my @r = (a(board_link($s), 'Board index'));
        push @r, a(forum_link($f, $start - $FPER, 0, $s), 'Previous') if $start > 0;
        push @r, a(forum_link($f, $start + $FPER, 0, $s), 'Next') if $start + $FPER < @$o;
        push @r, a(forum_link($f, 0, 1, $s), 'Sort by subject') if $start == 0;
        emit("/forums/$f-d-$start.html", "forum:$f:time:$start", ucfirst($forum_pkgs[$f - 2]) . " forum, from $start",
             home_link(), $body, \@r);
    }
    my $s = session('forum');
    my @by = (sort { lc $doc[$a]{title} cmp lc $doc[$b]{title} || $a <=> $b } @$o)[0 .. ($FPER - 1 < $#$o ? $FPER - 1 : $#$o)];
    my $body = join('', map { item($_, doc_link($_, 'forum', $s)) } @by);
    emit("/forums/$f-a-0.html", "forum:$f:subject:0", ucfirst($forum_pkgs[$f - 2]) . " forum by subject", home_link(), $body,
         [a(forum_link($f, 0, 0, $s), 'Newest first'), a(board_link($s), 'Board index')]);
}
for my $c (1 .. @cats) {
    for my $sort (qw(name price)) {
        my $o = $corder{$c}{$sort};
        my $np = int((@$o + $CPER - 1) / $CPER);
        for my $n (1 .. $np) {
            my $s = session('store');
            my @it = @$o[($n - 1) * $CPER .. ($n * $CPER - 1 < $#$o ? $n * $CPER - 1 : $#$o)];
            my $body = join('', map { item($_, doc_link($_, 'store', $s)) } @it);
            my @r;
            push @r, a(cat_link($c, $n - 1, $sort, $s), 'Previous') if $n > 1;
            push @r, a(cat_link($c, $n + 1, $sort, $s), 'Next') if $n < $np;
            push @r, a(cat_link($c, 1, $sort eq 'name' ? 'price' : 'name', $s), $sort eq 'name' ? 'Sort by price' : 'Sort by name');
            push @r, a(cat_link($_, 1, 'name', $s), $cats[$_ - 1][1]) for grep { $_ != $c } 1 .. @cats;
            emit("/categories/$c-$sort-$n.html", "cat:$c:$sort:$n", "$cats[$c - 1][1], page $n (by $sort)", home_link(), $body, \@r);
        }
    }
}
for my $n (0 .. $nnp - 1) {
    my @it = @news_i[$n * $NPER .. ($n * $NPER + $NPER - 1 < $#news_i ? $n * $NPER + $NPER - 1 : $#news_i)];
    my $body = join('', map { item($_, doc_link($_, 'news', undef)) } @it);
    my @r;
    push @r, a(news_link($n - 1), 'Newer') if $n > 0;
    push @r, a(news_link($n + 1), 'Older') if $n < $nnp - 1;
    emit("/newslist/$n.html", "news:$n", "News, page " . ($n + 1), home_link(), $body, \@r);
}
{
    my $s = session('store');
    my @r = (a(doc_link($index_of{'/docs/en/latest/'} // $by_sec{docs}[0], 'home', undef), 'Documentation'),
             a(doc_link($index_of{'/wiki/Main_Page'} // $by_sec{wiki}[0], 'home', undef), 'Wiki'),
             a(board_link(undef), 'Forum'), a(cat_link(1, 1, 'name', undef), 'Store'), a(news_link(0), 'News'));
    my @f = map { int($_ * @doc / 24) } 0 .. 23;
    my $intro = '<p>Documentation, a wiki, a forum, a store and the news of one project.</p>';
    my $body = $intro . "\n" . join('', map { item($_, doc_link($_, 'home', undef)) } @f);
    emit('/home.html', 'home', 'Site four', '', $body, \@r);
    my @nr = map { a($doc[$_]{plain} =~ s{index\.html$}{}r, 'Featured') } @f;
    spew("$out/nodust/home.html", page('Site four', '', $intro, \@nr));
    $ntruth{'/'} = ['home', 'plain'];
}

# the last check: no two documents of the truth near-copies (0.5) for
# one another, generated listings included
%sig_index = (); @kept_sig = ();
my %docs_linked;
$docs_linked{ $_->[0] } = 1 for values %truth;
my @near;
for my $dn (sort keys %final_text) {
    next unless $docs_linked{$dn};
    my $o = near_or_keep($final_text{$dn}, $dn);
    push @near, "$dn ~ $o" if $o;
}
warn "gensite4: near-copies among the documents: @near\n" if @near;

open(my $t, '>', "$out/truth.tsv") or die $!;
print $t "site\t$_\t$truth{$_}[0]\t$truth{$_}[1]\n" for sort keys %truth;
print $t "nodust\t$_\t$ntruth{$_}[0]\t$ntruth{$_}[1]\n" for sort keys %ntruth;
close $t;
spew("$out/hosts.tsv", "site4.test\tsite\nm.site4.test\tsite\nnodust4.test\tnodust\n");
spew("$out/hosts.sh", "SITE_SEED=http://site4.test/ SITE_HOSTS='site4\\.test|m\\.site4\\.test' SITE_DOMAINS=site4.test\n"
                    . "NODUST_SEED=http://nodust4.test/ NODUST_HOSTS='nodust4\\.test' NODUST_DOMAINS=nodust4.test\n");
my %nsec;
$nsec{$_->{sec}}++ for @doc;
my %nform;
$nform{$_}++ for map { split /,/, $_->[1] } values %truth;
my $ndl = keys %docs_linked;
spew("$out/site.txt", sprintf(
    "site 4: documents %d (/docs/ pytest %d, /wiki/ celery kombu %d, /forum/ tornado scrapy pymongo werkzeug aiohttp %d, /store/ dask API %d, /news/ gevent pillow cryptography click %d), store categories %d, old 6.2 %d, old revisions %d, topic pages 2 %d (distributed, xarray, dask API), forum listings %d, store listings %d, news listings %d\n"
  . "files %d, links %d, distinct linked URLs %d (documents linked %d), near-copies among them %d\nforms of the linked URLs: %s\n",
    scalar @doc, map({ $nsec{$_} // 0 } qw(docs wiki forum store news)), scalar @cats, scalar keys %old_of,
    scalar keys %oldid_of, scalar keys %start_of, scalar(grep { /^forum[:-]/ } keys %docs_linked),
    scalar(grep { /^cat:/ } keys %docs_linked), $nnp,
    $nfiles, $nlinks, scalar keys %truth, $ndl, scalar @near,
    join(', ', map { "$_ $nform{$_}" } sort keys %nform)));

# the origin: what each product's software does with its URLs
my $p2t = join('', map { "    $post_of{$_} $_;\n" } sort { $a <=> $b } keys %post_of);
my $n2n = join('', map { "    $doc[$_]{path} $doc[$_]{node};\n" } @{ $by_sec{news} });
my $conf = <<'CONF';
# the origin of the DUST evaluation's fourth site (tools/dust-eval/gensite4.pl)
# the news paths are the keys of a map: longer than the default bucket
map_hash_bucket_size 128;
map $arg_t $d4_t { default 0; "~^([1-9][0-9]{0,4})$" $1; }
map $arg_p $d4_p { default 0;
%%P2T%%}
map "$d4_t:$d4_p" $d4_topic { default 0; "~^0:([1-9][0-9]*)$" $1; "~^([1-9][0-9]*):" $1; }
map $arg_start $d4_tpage { default ""; 0 ""; 15 "-2"; }
map $arg_f $d4_f { default 0; "~^([1-9][0-9]?)$" $1; }
map $arg_start $d4_fstart { default 0; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_sk$arg_sd $d4_fsort { default d; sa a; }
map $arg_productid $d4_pid { default 0; "~^([1-9][0-9]{0,4})$" $1; }
map $arg_categoryid $d4_cid { default 0; "~^([1-9])$" $1; }
map $arg_page $d4_cpage { default 1; "~^([1-9][0-9]{0,3})$" $1; }
map $arg_sortby $d4_csort { default name; "~*^price$" price; }
map $arg_page $d4_npage { default 0; "~^([0-9]{1,4})$" $1; }
map $arg_q $d4_q { default ""; "~^node/([1-9][0-9]{0,4})$" $1; }
map $uri $d4_node { default 0; "~^/node/([1-9][0-9]{0,4})$" $1;
%%N2N%%}
map $arg_title $d4_title { default "-"; "~^([A-Za-z0-9_.-]+)$" $1; }
map $arg_oldid $d4_oldid { default ""; "~^([1-9][0-9]{0,7})$" $1; }

server {
    listen 127.0.0.1:%%PORT%%;
    server_name site4.test m.site4.test;
    root %%ROOT%%/site;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    # ASP.NET's cookieless session: a path segment after the shop's root
    rewrite "^/store/\(S\([a-z0-5]{24}\)\)(/.*)$" /store$1;
    # Read the Docs: stable is latest's build
    rewrite ^/docs/en/stable/(.*)$ /docs/en/latest/$1;

    location = / {
        if ($d4_q) { rewrite ^ /nodes/$d4_q.html last; }
        try_files /home.html =404;
    }
    location = /index.php { try_files /home.html =404; }
    location /docs/ { try_files $uri $uri/index.html =404; }
    location /wiki/ { try_files $uri =404; }
    location = /w/index.php {
        if ($d4_oldid) { rewrite ^ /wikiold/$d4_oldid.html? last; }
        rewrite ^ /wiki/$d4_title? last;
    }
    location = /forum/ { try_files /forums/index.html =404; }
    location = /forum/index.php { try_files /forums/index.html =404; }
    location = /forum/viewtopic.php { try_files /topics/$d4_topic$d4_tpage.html =404; }
    location = /forum/viewforum.php { try_files /forums/$d4_f-$d4_fsort-$d4_fstart.html =404; }
    location ~* ^/store/product\.aspx$ { try_files /products/$d4_pid.html =404; }
    location ~* ^/store/category\.aspx$ { try_files /categories/$d4_cid-$d4_csort-$d4_cpage.html =404; }
    location = /news { try_files /newslist/$d4_npage.html =404; }
    location /news/ { try_files /nodes/$d4_node.html =404; }
    location /node/ { try_files /nodes/$d4_node.html =404; }
    location /nodes/ { internal; }
    location /wikiold/ { internal; }
    location / { return 404; }
}

server {
    listen 127.0.0.1:%%PORT%%;
    server_name nodust4.test;
    root %%ROOT%%/nodust;
    default_type text/html;
    access_log %%LOGS%%/origin.log;

    location = / { try_files /home.html =404; }
    location / { try_files $uri $uri/index.html =404; }
}
CONF
$conf =~ s/%%P2T%%/$p2t/;
$conf =~ s/%%N2N%%/$n2n/;
spew("$out/origin.conf", $conf);
print slurp("$out/site.txt");
