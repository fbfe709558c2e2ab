#!/usr/bin/perl
# The demo's site, written into DIR (the same every time: a fixed seed):
#
#   demo/gensite.pl DIR [ARTICLES]
#
# DIR/www is www.gazette.example, a newspaper of ARTICLES (default 160)
# articles in /articles/, each one of its own text; its mirror
# m.gazette.example serves the same files (the origin points both at
# DIR/www).  The links are what makes a crawler waste its fetches:
#
#   - the articles' index links every article: the originals;
#   - each article links the next one with a session id in the URL
#     (?PHPSESSID=..., a new one on every page, as a PHP site without
#     cookies does): the same page under another URL;
#   - each article links its print view, /print/articles/aNNN.html: the
#     same text in a bare template;
#   - every third article a link with a tracking parameter
#     (?utm_source=newsletter), as a newsletter's links carry;
#   - every fourth article the same article on the mirror.
#
# The numbers are above what a DUST rule needs to turn on (docs/DUST.md,
# "When a rule turns on and off"): about 24 pairs for a name the web uses
# one way (PHPSESSID, utm_source) and for a www./m. pair of hosts, about
# 115 for a name of the site's own; a rule's pairs are counted in its
# directory (/articles/).

use strict;
use warnings;
use File::Path qw(make_path);

my ($dir, $n) = @ARGV;
die "usage: $0 DIR [ARTICLES]\n" unless $dir;
$n ||= 160;

# A fixed generator (not Perl's rand, which differs between builds): the
# same site on every machine.
my $state = 47;
sub rnd {
    my ($k) = @_;
    $state = ($state * 1103515245 + 12345) % 2147483648;
    return int($state / 65536) % $k;
}

my @words = qw(
    harbour council library railway bridge market river garden school
    festival museum orchard winter summer evening morning village county
    station tram bicycle ferry lighthouse meadow forest valley hill
    bakery workshop theatre choir orchestra painter sculptor poet novel
    archive letter map survey census harvest rainfall drought flood
    storm tide beach dune cliff island quarry mill canal lock weir
    budget vote mayor election committee report plan road tunnel
    hospital clinic nurse doctor vaccine study result trial science
    telescope comet planet moon eclipse season migration swallow heron
    otter badger beaver salmon trout oyster kelp seagrass coral reef
    volunteer neighbour family child student teacher farmer fisher
    baker builder engineer architect carpenter mason weaver potter
    restored opened closed returned repaired rebuilt measured counted
    planted harvested painted recorded discovered celebrated argued
    quiet busy old new early late small large bright dark warm cold
    wooden stone glass iron copper brick green blue golden silver
    north south east west upper lower inner outer first last
    because although while after before during since until unless
    slowly quickly carefully finally nearly almost rarely often
    together apart again already still never always sometimes
);

sub sentence {
    my $len = 8 + rnd(10);
    my @w = map { $words[rnd(scalar @words)] } 1 .. $len;
    return ucfirst(join ' ', @w) . '.';
}

sub paragraph {
    return join ' ', map { sentence() } 1 .. 4 + rnd(3);
}

sub title {
    return join ' ', map { ucfirst $words[rnd(scalar @words)] } 1 .. 3 + rnd(3);
}

sub session {
    my ($i) = @_;
    my $h = '';
    $h .= sprintf '%04x', rnd(65536) for 1 .. 6;
    return $h;
}

sub write_file {
    my ($path, $text) = @_;
    (my $d = $path) =~ s{/[^/]+$}{};
    make_path($d);
    open(my $fh, '>', $path) or die "$path: $!\n";
    print $fh $text;
    close $fh or die "$path: $!\n";
}

my $nav = '<nav><a href="/">Front page</a> | <a href="/articles/">All '
        . 'articles</a> | <a href="/about.html">About</a></nav>';

sub page {
    my ($title, $body) = @_;
    return <<"EOF";
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>$title - The Harbour Gazette</title></head>
<body>
<header><h1>The Harbour Gazette</h1>$nav</header>
<main>
$body
</main>
<footer><p>The Harbour Gazette, a made-up newspaper for the ngx_simhash
demo. Letters to the editor: letters\@gazette.example.</p></footer>
</body></html>
EOF
}

my $www = "$dir/www";
my (@title, @text);
for my $i (1 .. $n) {
    push @title, title();
    push @text, join "\n", map { '<p>' . paragraph() . "</p>" } 1 .. 5;
}

for my $i (1 .. $n) {
    my $a = sprintf 'a%03d.html', $i;
    my @links = (qq{<a href="/print/articles/$a">Print this article</a>});
    if ($i < $n) {
        my $next = sprintf 'a%03d.html', $i + 1;
        push @links, qq{<a href="/articles/$next?PHPSESSID=} . session($i)
                   . qq{">Next: $title[$i]</a>};
    }
    push @links, qq{<a href="/articles/$a?utm_source=newsletter">Share}
               . qq{ (newsletter link)</a>} if $i % 3 == 0;
    push @links, qq{<a href="http://m.gazette.example/articles/$a">Mobile}
               . qq{ edition</a>} if $i % 4 == 0;
    write_file("$www/articles/$a",
               page($title[$i - 1], "<article><h2>$title[$i - 1]</h2>\n"
                    . "$text[$i - 1]\n</article>\n<p>"
                    . join(' | ', @links) . "</p>"));
    write_file("$www/print/articles/$a", <<"EOF");
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>$title[$i - 1] - The Harbour Gazette (print)</title></head>
<body><h1>The Harbour Gazette</h1>
<h2>$title[$i - 1]</h2>
$text[$i - 1]
<p>The Harbour Gazette, a made-up newspaper for the ngx_simhash
demo. Letters to the editor: letters\@gazette.example.</p></body></html>
EOF
}

write_file("$www/articles/index.html",
           page('All articles', "<h2>All articles</h2>\n<ul>\n"
                . join('', map { sprintf qq{<li><a href="a%03d.html">%s</a></li>\n},
                                 $_, $title[$_ - 1] } 1 .. $n)
                . "</ul>"));
write_file("$www/index.html",
           page('Front page', "<h2>Today</h2>\n<p>"
                . paragraph() . "</p>\n<p>" . paragraph()
                . qq{</p>\n<p><a href="/articles/">Every article</a></p>}));
write_file("$www/about.html",
           page('About', "<h2>About the Gazette</h2>\n<p>" . paragraph()
                . "</p>\n<p>" . paragraph() . "</p>"));
