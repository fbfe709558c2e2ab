# tools/dust-eval/DustPages.pm -- what the DUST evaluation's site
# generators share: files read and written, a page's text, HTML escaping,
# the walk over a documentation package's HTML pages, and main_html (the
# third and fourth sites'; the first two keep their own, tuned to their
# packages' themes).  Each generator keeps its own idea of which pages
# count.
package DustPages;
use strict;
use warnings;
use Exporter 'import';
use File::Find;
use File::Path qw(make_path);
use File::Basename qw(dirname);

our @EXPORT_OK = qw(slurp spew text_of esc html_files page_of a page
                    main_html);

sub slurp { local $/; open(my $f, '<:raw', $_[0]) or die "$_[0]: $!"; <$f> }

sub spew {
    my ($p, $c) = @_;
    make_path(dirname($p));
    open(my $f, '>:raw', $p) or die "$p: $!";
    print $f $c;
    close $f;
}

# The words of some HTML: tags and entities made spaces, spaces squeezed.
sub text_of {
    my $t = $_[0] =~ s/<[^>]*>/ /gr;
    $t =~ s/&[a-z#0-9]+;/ /gi;
    $t =~ s/\s+/ /g;
    return $t;
}

sub esc { $_[0] =~ s/&/&amp;/gr =~ s/</&lt;/gr =~ s/>/&gt;/gr =~ s/"/&quot;/gr }

# The HTML files under $root (regular files, not links), as [path under
# $root, file name], sorted by path: skipped when their path matches
# $skip, kept only when $keep (a sub of the path) says so.
sub html_files {
    my ($root, $skip, $keep) = @_;
    my @p;
    return () unless -d $root;
    find({ no_chdir => 1, wanted => sub {
        return unless /\.html$/ && -f $_ && !-l $_;
        my $rel = substr($File::Find::name, length($root) + 1);
        return if $skip && $rel =~ $skip;
        return if $keep && !$keep->($rel);
        push @p, [$rel, $File::Find::name];
    } }, $root);
    return sort { $a->[0] cmp $b->[0] } @p;
}

# One page: its main text as HTML (by $main, a sub of the raw HTML), its
# words, its title (the path $rel when it has none); undef when its words
# are fewer than $min_text bytes (stubs and tables of contents).
sub page_of {
    my ($rel, $file, $main, $min_text) = @_;
    my $raw = slurp($file);
    my $body = $main->($raw);
    my $text = text_of($body);
    return undef if length($text) < $min_text;
    my ($title) = $raw =~ m{<title>(.*?)</title>}si;
    $title = text_of($title // $rel);
    $title =~ s/^\s+|\s+$//g;
    return { body => $body, text => $text, title => $title };
}

# A link, its address and text escaped.
sub a { sprintf qq{<a href="%s">%s</a>}, esc($_[0]), esc($_[1]) }

# A generated page view: the title, the section's navigation, the body and
# a list of related links, in the one layout every site uses.
sub page {
    my ($title, $nav, $body, $related) = @_;
    return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
         . "<title>" . esc($title) . "</title></head>\n<body>\n"
         . "<div class=\"nav\">$nav</div>\n<h1>" . esc($title) . "</h1>\n"
         . "<div class=\"content\">\n$body\n</div>\n"
         . "<div class=\"related\"><ul>\n"
         . join('', map { "<li>$_</li>\n" } @$related) . "</ul></div>\n"
         . "</body></html>\n";
}

# A page's own text: the theme's main element, else the Sphinx body,
# else the whole body; navigation, forms and links' markup gone.
sub main_html {
    my ($html) = @_;
    my $m;
    if ($html =~ m{<main[^>]*>(.*?)</main>}si) { $m = $1 }
    elsif ($html =~ m{role="main"[^>]*>(.*?)(?:<div class="sphinxsidebar"|<footer|<div class="footer")}si) { $m = $1 }
    elsif ($html =~ m{<div class="document"[^>]*>(.*?)(?:<div class="footer"|</body>)}si) { $m = $1 }
    elsif ($html =~ m{<body[^>]*>(.*?)</body>}si) { $m = $1 }
    else { $m = $html }
    $m =~ s{<(script|style|nav|form|select|button|header|footer)\b.*?</\1>}{}gsi;
    $m =~ s{</?a\b[^>]*>}{}gsi;
    $m =~ s{<(?:img|link|meta|input|iframe)\b[^>]*>}{}gsi;
    $m =~ s{<!--.*?-->}{}gs;
    return $m;
}

1;
