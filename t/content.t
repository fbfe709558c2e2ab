#!/usr/bin/perl
# simhash_content: the same article under two site templates is a
# duplicate when blocks are weighed by where they sit (auto, the default),
# and new when the whole page's text counts (off); a different article
# under the same template stays new.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=auto:1m distance=3;'
           . ' simhash_zone zone=whole:1m distance=3;'
           . ' simhash_zone zone=struct:1m distance=3;',
    proxy => <<'EOF',
        location /auto/ {
            simhash auto;
            proxy_pass http://%%ORIGIN%%/;
        }
        location /whole/ {
            simhash whole;
            simhash_content off;
            proxy_pass http://%%ORIGIN%%/;
        }
        location /struct/ {
            simhash struct;
            simhash_content structure;
            proxy_pass http://%%ORIGIN%%/;
        }
EOF
);
$t->start;

my $article = join '', map { "<p>$_</p>\n" } (
    'The old harbour crane was built in the eighteen nineties to lift '
  . 'timber from the river barges onto the quay, and it stayed in use '
  . 'until the sawmill closed after the second war.',
    'Volunteers from the local history society spent three winters '
  . 'cleaning the iron frame, replacing rotten beams and repainting the '
  . 'cabin in the colours shown on an early photograph.',
    'The crane can now be turned by hand again, and on the first Sunday '
  . 'of every month visitors may climb into the cabin while a guide '
  . 'explains how the counterweight and the gears work together.',
    'The society hopes to raise enough money next year to restore the '
  . 'small engine house beside the crane, whose roof collapsed during a '
  . 'storm and whose boiler has been missing since the sixties.',
);
my $other = join '', map { "<p>$_</p>\n" } (
    'Beekeepers on the allotments report that the lime trees flowered '
  . 'two weeks early this year, so the summer honey was taken in June.',
    'A new apiary course starts in the autumn and covers hive inspection, '
  . 'swarm control and the treatment of mites without strong chemicals.',
    'Members are asked to bring their own veils, since the association '
  . 'has only a few spare ones and those are kept for visiting children.',
);

# Template A: a news site, header, long menu of links, main, footer.
sub site_a {
    my ($title, $body) = @_;
    my $menu = join ' ', map { "<a href=\"/section/$_\">Section $_ news "
                               . "and stories</a>" } 1 .. 40;
    return "<!DOCTYPE html><html><head><title>$title - Quay Herald</title>"
         . "</head><body><header><a href=\"/\">The Quay Herald</a>"
         . "<nav>$menu</nav></header><main><article><h1>$title</h1>\n"
         . "$body</article></main><footer>The Quay Herald, 4 Dock Road. "
         . "All rights reserved. Subscribe to our weekly newsletter for "
         . "more local stories every Friday morning.</footer></body></html>";
}

# Template B: an aggregator, divs with class names, a sidebar of teasers.
sub site_b {
    my ($title, $body) = @_;
    my $side = join '', map { "<li><a href=\"/s/$_\">Read trending story "
                              . "number $_ on Readwire today</a></li>" }
               1 .. 40;
    return "<html><head><title>$title | Readwire</title></head><body>"
         . "<div class=\"topbar\"><a href=\"/\">Readwire</a> <a href="
         . "\"/signup\">Sign up</a></div><div class=\"sidebar\"><ul>$side"
         . "</ul></div><div class=\"story\"><h1>$title</h1>\n$body</div>"
         . "<div class=\"site-footer\">Readwire aggregates stories from "
         . "local papers with permission of their publishers.</div>"
         . "</body></html>";
}

$t->write_file('html/herald/crane.html', site_a('The harbour crane turns again', $article));
$t->write_file('html/readwire/crane.html', site_b('The harbour crane turns again', $article));
$t->write_file('html/herald/bees.html', site_a('An early honey harvest', $other));

my $r = $t->get('/auto/herald/crane.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'auto: the article: new');
$r = $t->get('/auto/herald/bees.html');
is($r->{headers}{'x-simhash-status'}, 'new',
   'auto: another article under the same template: new');
$r = $t->get('/auto/readwire/crane.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'auto: the article under another template: duplicate');
like($r->{headers}{'x-simhash-duplicate-of'} // '',
     qr{/auto/herald/crane\.html$}, 'auto: ... of the original');

$r = $t->get('/whole/herald/crane.html');
is($r->{headers}{'x-simhash-status'}, 'new', 'off: the article: new');
$r = $t->get('/whole/readwire/crane.html');
is($r->{headers}{'x-simhash-status'}, 'new',
   'off: the whole page counts, templates included: new');

# The distance between the two copies under each mode: markup alone
# (structure) weighs the marked chrome down but keeps the unmarked menu
# and the aggregator's title; link density (auto) removes the menus.
my %d;
for my $zone (qw(auto struct whole)) {
    my $a = $t->get("/$zone/herald/crane.html")->{headers}{'x-simhash'};
    my $b = $t->get("/$zone/readwire/crane.html")->{headers}{'x-simhash'};
    $d{$zone} = SimhashTest::distance($a, $b);
}
cmp_ok($d{whole}, '>', 8, "off: the copies are $d{whole} bits apart");
cmp_ok($d{struct}, '<', $d{whole},
       "structure: closer ($d{struct} bits) than off");
cmp_ok($d{auto}, '<=', 3, "auto: $d{auto} bits apart");

done_testing;
