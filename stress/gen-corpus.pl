#!/usr/bin/perl
# The origin's documents for `make stress`, generated from the project's
# own text (demo/site, t/fixtures/site, tests/fixtures), deterministically.
#
#   stress/gen-corpus.pl OUT
#
# OUT/html/ is the origin's root; OUT/mix.tsv lists every URL wrk may ask
# for, by category, with the category's share of the requests:
#
#   #category  weight  gzip(1: send Accept-Encoding: gzip)  description
#   category   path
#
# Categories (every URL answers 200):
#   page     /p/N.html        8,000 distinct articles, 2-12 KB: new pages
#                             keep arriving and the 1m zone (4,300
#                             documents) fills past capacity and evicts
#   near     /nd/N-vK.html    1,000 articles in 4 variants differing in a
#                             date, a visitor counter and an ad
#   dynamic  /dyn/N.shtml     500 SSI pages with the time and a request id
#                             (chunked; a re-fetch is unchanged or changed)
#   drop     /drop/nd/...     the near-duplicates through the drop-mode
#                             location (204 for a duplicate)
#   gzip     /gz/p/N.html     the pages compressed by the origin (gzip on)
#   static   /gzs/N.html      1,000 more articles served pre-compressed
#                             (gzip_static)
#   png      /img/N.png       image/png: passes untouched
#   json     /api/N.json      application/json: passes untouched
#   big      /big/N.html|shtml  300-600 KB, over simhash_max_body 256k,
#                             with a Content-Length or chunked (SSI)
#   bomb     /bigz/N.html     2 MB of HTML in 10-20 KB of gzip
#   bad      /bad/N.html      binary, NULs, broken UTF-8, tag soup, deep
#                             nesting, a huge attribute, empty, tiny, ...
#   badgz    /badgz/N.html    gzip_static files that are corrupt/truncated
#
# A stamp file (OUT/.stamp) holds the generator's version: the driver
# regenerates only when it changes.

use strict;
use warnings;
use File::Find;
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use FindBin;
use IO::Compress::Gzip qw(gzip $GzipError);

our $VERSION = 6;

my $out = shift or die "usage: $0 OUT\n";
my $top = "$FindBin::Bin/..";

my %count = (page => 8000, near => 1000, dynamic => 500, static => 1000,
             png => 200, json => 200, big => 10, bomb => 10, badgz => 20);

my %weight = (page => 40, near => 15, dynamic => 8, drop => 7, gzip => 8,
              static => 5, png => 5, json => 5, big => 2, bomb => 1,
              bad => 3, badgz => 1);

# ---- a deterministic random source (the same corpus on every machine) ----

my $seed = 20261121;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed }
sub pick { my ($a) = @_; return $a->[rnd() % @$a] }
sub between { my ($lo, $hi) = @_; return $lo + rnd() % ($hi - $lo + 1) }

# ---- the text: sentences and words of the project's pages ----

sub read_file {
    my ($path) = @_;
    open(my $fh, '<:raw', $path) or die "$path: $!";
    local $/;
    my $c = <$fh>;
    close $fh;
    return $c;
}

# The demo's site is generated (demo/gensite.pl, a fixed seed), not kept in
# the tree: it is written into a directory of its own first.
sub source_pages {
    my @files;
    my $demo = tempdir('simhash-corpus-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    system($^X, "$top/demo/gensite.pl", $demo, 40) == 0
        or die "demo/gensite.pl failed\n";
    find(sub { push @files, $File::Find::name if /\.html$/ },
         $demo, "$top/t/fixtures/site");
    push @files, map { "$top/tests/fixtures/$_.html" }
                 qw(article article-neardup unrelated);
    return sort grep { !/latin1|cp1251|sjis/ } @files;
}

sub load_text {
    my (%sentences, %words);
    for my $f (source_pages()) {
        my $c = read_file($f);
        $c =~ s{<(script|style)\b.*?</\1>}{ }gis;
        $c =~ s/<[^>]*>/ /g;
        $c =~ s/&[a-z]+;|&#\d+;/ /g;
        $c =~ s/\s+/ /g;
        for my $s (split /(?<=[.!?])\s+/, $c) {
            $s =~ s/^\s+|\s+$//g;
            my $n = () = $s =~ /\w+/g;
            $sentences{$s} = 1 if $n >= 5 && $n <= 60 && $s !~ /[^\x20-\x7e]/;
        }
        $words{lc $1} = 1 while $c =~ /\b([A-Za-z]{3,})\b/g;
    }
    return ([sort keys %sentences], [sort keys %words]);
}

my ($SENT, $WORDS) = load_text();
die "too little text: " . scalar(@$SENT) . " sentences\n" if @$SENT < 100;

# A paragraph: sentences of the pool with a third of their words swapped
# for others, and sentences of random words, so that two generated articles
# share no long runs of text (they sit 20-40 bits apart, as unrelated pages
# do).
sub paragraph {
    my @s;
    for (1 .. between(3, 7)) {
        my $s;
        if (rnd() % 3 == 0) {
            $s = ucfirst(join(' ', map { pick($WORDS) } 1 .. between(6, 16)))
               . '.';
        } else {
            $s = pick($SENT);
            $s =~ s/\b([a-z]{3,})\b/rnd() % 3 == 0 ? pick($WORDS) : $1/ge;
        }
        push @s, $s;
    }
    return '<p>' . join(' ', @s) . "</p>\n";
}

sub article_body {
    my ($bytes) = @_;
    my $body = '';
    while (length $body < $bytes) {
        $body .= rnd() % 6 == 0 ? '<h2>' . join(' ', map { pick($WORDS) } 1 .. 4)
                                  . "</h2>\n"
                                : paragraph();
    }
    return $body;
}

sub page {
    my ($title, $body, %opt) = @_;
    my $meta = $opt{charset} // '<meta charset="utf-8">';
    return "<!DOCTYPE html>\n<html><head>$meta<title>$title</title>\n"
         . "<style>body { font-family: serif }</style></head>\n<body>\n"
         . "<nav><a href=\"/\">Home</a> | <a href=\"/p/1.html\">News</a></nav>\n"
         . "<h1>$title</h1>\n$body"
         . "<footer>Printed by the stress corpus.</footer>\n</body></html>\n";
}

sub title { return join(' ', map { ucfirst pick($WORDS) } 1 .. between(3, 6)) }

# ---- output ----

my (%urls, %gzipped);

sub put {
    my ($path, $content) = @_;
    my $file = "$out/html$path";
    (my $dir = $file) =~ s{/[^/]+$}{};
    make_path($dir) unless -d $dir;
    open(my $fh, '>:raw', $file) or die "$file: $!";
    print $fh $content;
    close $fh or die "$file: $!";
    return $file;
}

sub put_gz {
    my ($path, $content) = @_;
    my $file = put($path, $content);
    gzip(\$content => "$file.gz", Level => 6) or die "gzip: $GzipError";
}

sub url { my ($cat, $path) = @_; push @{ $urls{$cat} }, $path }

sub gen_pages {
    for my $n (1 .. $count{page}) {
        put("/p/$n.html", page(title(), article_body(between(2000, 12000))));
        url(page => "/p/$n.html");
        url(gzip => "/gz/p/$n.html") if $n <= 2000;
    }
}

sub gen_near {
    my @ads = ('Fresh coffee beans delivered weekly',
               'Winter tyres at half price this week only',
               'Learn a language in ten minutes a day',
               'The best garden hoses of the year, reviewed');
    for my $n (1 .. $count{near}) {
        my $title = title();
        my $body = article_body(between(6000, 16000));
        for my $v (1 .. 4) {
            my $extra = sprintf("<p class=\"date\">Published 2026-%02d-%02d "
                                . "%02d:%02d</p>\n<div class=\"ad\">%s</div>\n",
                                between(1, 12), between(1, 28), between(0, 23),
                                between(0, 59), pick(\@ads));
            my $counter = sprintf("<p>%d readers today</p>\n",
                                  between(100, 99999));
            put("/nd/$n-v$v.html", page($title, $extra . $body . $counter));
            url(near => "/nd/$n-v$v.html");
            url(drop => "/drop/nd/$n-v$v.html");
        }
    }
}

sub gen_dynamic {
    for my $n (1 .. $count{dynamic}) {
        my $ssi = "<p>Generated <!--# echo var=\"date_local\" --> for request "
                . "<!--# echo var=\"request_id\" --></p>\n";
        put("/dyn/$n.shtml", page(title(), $ssi . article_body(between(3000, 12000))));
        url(dynamic => "/dyn/$n.shtml");
    }
}

sub gen_static {
    for my $n (1 .. $count{static}) {
        put_gz("/gzs/$n.html", page(title(), article_body(between(2000, 12000))));
        url(static => "/gzs/$n.html");
    }
}

sub png_bytes {
    my ($size) = @_;
    my $data = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0";
    $data .= chr(rnd() % 256) for 1 .. $size;
    return $data;
}

sub gen_png_json {
    for my $n (1 .. $count{png}) {
        put("/img/$n.png", png_bytes(between(500, 20000)));
        url(png => "/img/$n.png");
    }
    for my $n (1 .. $count{json}) {
        my @items = map { sprintf('{"id":%d,"title":"%s","text":"%s"}', $_,
                                  title(), pick($SENT) =~ s/"/'/gr) }
                    1 .. between(5, 80);
        put("/api/$n.json", '{"items":[' . join(',', @items) . "]}\n");
        url(json => "/api/$n.json");
    }
}

sub gen_big {
    for my $n (1 .. $count{big}) {
        put("/big/$n.html", page(title(), article_body(between(300000, 600000))));
        url(big => "/big/$n.html");
        put("/big/$n.shtml", page(title(), "<p><!--# echo var=\"date_local\" --></p>\n"
                                  . article_body(between(300000, 600000))));
        url(big => "/big/$n.shtml");
    }
    for my $n (1 .. $count{bomb}) {
        # only the .gz: gzip_static needs no plain file, and wrk accepts gzip
        my $p = paragraph();
        my $html = page(title(), $p x int(2_000_000 / length $p));
        my $file = "$out/html/bigz/$n.html.gz";
        make_path("$out/html/bigz");
        gzip(\$html => $file, Level => 9) or die "gzip: $GzipError";
        url(bomb => "/bigz/$n.html");
    }
}

# Malformed and binary bodies served as text/html.
sub bad_bodies {
    my $text = article_body(6000);
    my $rand = sub { join '', map { chr(rnd() % 256) } 1 .. $_[0] };
    return (
        $rand->(8000),                                      # binary
        "\0\0\0\0" . $text,                                 # NULs first
        $text =~ s/e/\xff\xfe/gr,                           # broken UTF-8
        $text =~ s/<\/p>//gr =~ s/<p>/<p><b><i><span>/gr,   # unclosed tags
        '<div>' x 5000 . $text . '</div>' x 5000,           # deep nesting
        '<html><body><a href="' . ('x' x 200000) . "\">$text</a></body></html>",
        '',                                                 # empty
        "<html><body>Not found.</body></html>",             # too short
        "<<<>>><!-- never closed $text",                    # comment to EOF
        "<html><body><script>$text",                        # script to EOF
        "<html><body><![CDATA[$text]]>&#xFFFFFFFF;&#0;&amp&lt$text",
        "\xff\xfe" . $text,                                 # UTF-16 BOM
        page('charset', $text, charset => '<meta charset="x-no-such">'),
        page('utf16', $text, charset => '<meta charset="utf-16">'),
        page('tokens', join(' ', map { "w$_" } 1 .. 40000)),  # many features
        "<table>" . ("<tr><td>" . pick($SENT)) x 2000,      # table soup
        "<svg><math><template>$text</template></math></svg><p>after",
        $rand->(3000) . $text,                              # junk then text
        $text . "\0" . $rand->(3000),                       # text then junk
        "<?xml version=\"1.0\" encoding=\"ebcdic\"?><html>$text",
    );
}

sub gen_bad {
    my $n = 0;
    for my $body (bad_bodies()) {
        $n++;
        put("/bad/$n.html", $body);
        url(bad => "/bad/$n.html");
    }
    for my $n (1 .. $count{badgz}) {
        my $html = page(title(), article_body(8000));
        my $file = put("/badgz/$n.html", $html);
        gzip(\$html => \my $gz) or die $GzipError;
        if ($n % 3 == 0) {
            $gz = substr($gz, 0, int(length($gz) / 2));     # truncated
        } elsif ($n % 3 == 1) {
            substr($gz, 20, 64) = 'x' x 64;                 # corrupt
        } else {
            $gz = "\x1f\x8b\x08\0" . 'garbage' x 100;       # header only
        }
        open(my $fh, '>:raw', "$file.gz") or die $!;
        print $fh $gz;
        close $fh;
        url(badgz => "/badgz/$n.html");
    }
}

sub gzip_categories { return map { $_ => 1 } qw(gzip static bomb badgz) }

sub write_mix {
    my %gz = gzip_categories();
    open(my $fh, '>', "$out/mix.tsv") or die "$out/mix.tsv: $!";
    for my $cat (sort keys %weight) {
        die "no urls for $cat" unless $urls{$cat};
        printf $fh "#%s\t%d\t%d\t%d urls\n", $cat, $weight{$cat},
                   $gz{$cat} ? 1 : 0, scalar @{ $urls{$cat} };
    }
    for my $cat (sort keys %weight) {
        print $fh "$cat\t$_\n" for @{ $urls{$cat} };
    }
    close $fh;
}

remove_tree("$out/html");
make_path("$out/html");
gen_pages();
gen_near();
gen_dynamic();
gen_static();
gen_png_json();
gen_big();
gen_bad();
write_mix();
system('chmod', '-R', 'a+rX', $out) == 0 or die "chmod failed\n";

open(my $st, '>', "$out/.stamp") or die $!;
print $st "$VERSION\n";
close $st;

my $n = 0;
$n += @$_ for values %urls;
print "corpus: $n URLs in ", scalar(keys %urls), " categories, from ",
      scalar(@$SENT), " sentences\n";
