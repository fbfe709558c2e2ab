#!/usr/bin/perl
# Hub pages (issue 21): a site's section indexes, whose own content is a
# list of links, are not duplicates of each other, even in drop mode where
# a duplicate is answered 204 and a crawler would lose their outlinks;
# while the same article under two site templates is still a duplicate.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http  => 'simhash_zone zone=hubs:1m;',
    proxy => <<'EOF2',
        location / {
            simhash hubs;
            # keys=any: drop whatever is a duplicate, so that a hub page
            # survives by its fingerprint, not by the drop policy
            simhash_action drop keys=any;
            proxy_pass http://%%ORIGIN%%;
        }
        location = /stats {
            simhash_stats;
        }
EOF2
);
$t->start;

# One site template: header, menu, a main content of links, a footer.
sub index_page {
    my ($section, @items) = @_;
    my $list = join "\n", map {
        my $slug = lc $_;
        $slug =~ s/\W+/-/g;
        "<li><a href=\"/$section/$slug.html\">$_</a></li>"
    } @items;
    return "<!DOCTYPE html><html><head><title>Archive - Valley Notes"
         . "</title></head><body><header><a href=\"/\">Valley Notes</a>"
         . "<nav><a href=\"/walks/\">Walks</a> <a href=\"/birds/\">Birds"
         . "</a> <a href=\"/about.html\">About us</a></nav></header>"
         . "<main><h1>Archive</h1><ul>\n$list\n</ul></main>"
         . "<footer>Valley Notes is written by volunteers of the valley "
         . "society. Copy freely, with credit to the authors.</footer>"
         . "</body></html>";
}

$t->write_file('html/walks/index.html', index_page('walks',
    'Along the river to the old mill', 'The ridge path in winter',
    'Three bridges and a ford', 'Up the gorge after heavy rain',
    'A circular walk from the station', 'The drovers road to the pass',
    'Beech woods in the autumn', 'Lakeside loop for a short day'));
$t->write_file('html/birds/index.html', index_page('birds',
    'Herons nesting in the alders', 'Where the dippers feed',
    'Counting swifts over the town', 'A kestrel above the quarry',
    'Geese arriving in October', 'Listening for the first cuckoo',
    'Ravens at the crag', 'Kingfishers on the mill race'));

for my $p ('/walks/index.html', '/birds/index.html') {
    my ($status, $h, $body) = $t->raw_get($p);
    is($status, 200, "$p: 200, not dropped");
    is($h->{'x-simhash-status'}, 'new', "$p: new");
    like($body, qr{<li><a href=}, "$p: its links are delivered");
}

is($t->stats->{zones}{hubs}{whole_text}, 2,
   'stats: both fingerprinted on their whole text (their content is links)');

# The same article under two templates: still a duplicate, dropped.
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
);
my $menu = join ' ', map { "<a href=\"/section/$_\">Section $_ news "
                           . "and stories</a>" } 1 .. 30;
$t->write_file('html/herald/crane.html',
    "<html><head><title>The crane turns again - Quay Herald</title></head>"
  . "<body><header><nav>$menu</nav></header><main><article><h1>The crane "
  . "turns again</h1>$article</article></main><footer>The Quay Herald, "
  . "4 Dock Road.</footer></body></html>");
my $side = join '', map { "<li><a href=\"/s/$_\">Read trending story "
                          . "number $_ on Readwire today</a></li>" } 1 .. 30;
$t->write_file('html/readwire/crane.html',
    "<html><head><title>The crane turns again | Readwire</title></head>"
  . "<body><div class=\"sidebar\"><ul>$side</ul></div><div class=\"story\">"
  . "<h1>The crane turns again</h1>$article</div><div class=\"site-footer\">"
  . "Readwire aggregates local papers.</div></body></html>");

my ($status, $h) = $t->raw_get('/herald/crane.html');
is($h->{'x-simhash-status'}, 'new', 'the article: new');
($status, $h) = $t->raw_get('/readwire/crane.html');
is($status, 204, 'the article under another template: 204');
is($h->{'x-simhash-status'}, 'duplicate', '... a duplicate');

# Issue 35: short section indexes (a heading, a sentence, four links)
# inside a navigation that lists the whole site on every page.  The
# navigation is the site's; the indexes are not duplicates of each other,
# and the zone counts their short content.
my $toc = join '', map { "<li><a href=\"/manual/$_.html\">Chapter $_ of "
                         . "the manual, part $_</a></li>" } 1 .. 40;
sub short_index {
    my ($title, @items) = @_;
    my $list = join '', map { "<li><a href=\"/m/$_.html\">$_</a></li>" }
                        @items;
    return "<html><head><title>$title - Manual</title></head><body>"
         . "<nav><ul>$toc</ul></nav><div role=\"main\"><h1>$title</h1>"
         . "<p>The pages of this section.</p><ul>$list</ul></div>"
         . "<footer>Copyright the authors.</footer></body></html>";
}
$t->write_file('html/manual/rivers.html', short_index('Rivers',
    'amazon basin floods', 'nile delta farming', 'danube gorge locks',
    'mekong floodplain rice'));
$t->write_file('html/manual/birds.html', short_index('Birds',
    'herons of marshes', 'owls in winter', 'swifts and swallows',
    'kestrels hunting voles'));
my $short = $t->stats->{zones}{hubs}{short_content};
for my $p ('/manual/rivers.html', '/manual/birds.html') {
    ($status, $h) = $t->raw_get($p);
    is($status, 200, "$p: 200, not dropped");
    is($h->{'x-simhash-status'}, 'new', "$p: new");
}
is($t->stats->{zones}{hubs}{short_content}, $short + 2,
   'stats: both counted as short content');

done_testing;
