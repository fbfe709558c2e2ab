#!/usr/bin/perl
# Every extraction directive reaches the library: for each one, the module's
# fingerprint equals the simhash CLI's with the equivalent option.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

plan(skip_all => 'SH_CLI not set (run through `make itest`)')
    unless $ENV{SH_CLI} && -x $ENV{SH_CLI};

my $t = SimhashTest->new;
my $p = $t->prefix;
$t->write_file('data/stop.txt', "baking\nbread\nsourdough\nthe\nand\n");

# an IDF table built by the CLI from the fixture pages
my $list = $t->write_file('data/pages.lst',
    join("\n", map { "$p/html/$_" }
               qw(sourdough.html bicycle.html council.html cafe-utf8.html))
    . "\n");
system("$ENV{SH_CLI} idf build --list $list -o $p/data/pages.idf "
       . ">/dev/null 2>&1") == 0 or BAIL_OUT("simhash idf build failed");
chmod 0644, "$p/data/pages.idf";

# a volatility table calibrated by the CLI on the fixture pages
system("$ENV{SH_CLI} calibrate --list $list -o $p/data/pages.vol "
       . "--edits 200 --queries 20 >/dev/null 2>&1") == 0
    or BAIL_OUT("simhash calibrate failed");
chmod 0644, "$p/data/pages.vol";

my $seed = 'a-secret-of-thirty-two-characters';

# [ location, directives, CLI options, page ]
my @cases = (
    [ 'default',   '', '', 'sourdough.html' ],
    [ 'words',     'simhash_shingle 1;', '--shingle 1', 'sourdough.html' ],
    [ 'shingle5',  'simhash_shingle 5;', '--shingle 5', 'sourdough.html' ],
    [ 'nostem',    'simhash_stem off;', '--stem none', 'sourdough.html' ],
    [ 'french',    'simhash_stem french;', '--stem french', 'cafe-utf8.html' ],
    [ 'english',   'simhash_stopwords english;', '--stopwords english',
      'sourdough.html' ],
    [ 'stopfile',  "simhash_stopwords $p/data/stop.txt;",
      "--stopwords $p/data/stop.txt", 'sourdough.html' ],
    [ 'ignore',    'simhash_ignore "(?i)margit olsen"; simhash_ignore "\\b[a-f]\\w*";',
      "--ignore '(?i)margit olsen' --ignore '\\b[a-f]\\w*'", 'sourdough.html' ],
    [ 'idf',       "simhash_idf $p/data/pages.idf;", "--idf $p/data/pages.idf",
      'bicycle.html' ],
    [ 'wweight',   'simhash_word_weight 2.5;', '--word-weight 2.5',
      'council.html' ],
    [ 'sweight',   'simhash_shingle_weight 0.25;', '--shingle-weight 0.25',
      'council.html' ],
    [ 'maxfeat',   'simhash_max_features 64;', '--max-features 64',
      'council.html' ],
    [ 'minfeat',   'simhash_min_features 5000;', '--min-features 5000',
      'council.html' ],
    [ 'seed',      "simhash_seed $seed;", "--seed $seed", 'sourdough.html' ],
);

# each option set its own zone: a zone holds one extraction version
my $proxy = '';
my $zones = '';
for my $c (@cases) {
    my ($name, $dirs, $cli, $page) = @$c;
    my $zone = "z_$name";
    $zones .= "    simhash_zone zone=$zone:256k;\n";
    $proxy .= "        location /$name/ {\n"
            . "            simhash $zone;\n"
            . "            $dirs\n"
            . "            proxy_pass http://%%ORIGIN%%/;\n"
            . "        }\n";
}
$proxy .= <<"EOF";
        location /vol/ {
            simhash vol;
            simhash_volatility $p/data/pages.vol;
            proxy_pass http://%%ORIGIN%%/;
        }
        location = /stats { simhash_stats; }
EOF
$t->set(http => $zones . "    simhash_zone zone=vol:256k;",
        proxy => $proxy);
$t->start;

my %fp;
for my $c (@cases) {
    my ($name, $dirs, $cli, $page) = @$c;
    my $r = $t->get("/$name/$page");
    my $got = $r->{headers}{'x-simhash'}
              // ($r->{headers}{'x-simhash-status'} eq 'skipped' ? '-' : '?');
    # the CLI options are written for the shell (quoted regexes)
    my ($want) = split /\t/, `$ENV{SH_CLI} fingerprint $cli '$p/html/$page'`;
    is($got, $want, "$name: module and CLI agree ($want)");
    $fp{$name} = $got;
}

# and the options do change something
for my $name (qw(words nostem english stopfile ignore wweight sweight seed)) {
    isnt($fp{$name}, $fp{default}, "$name changes the fingerprint");
}
is($fp{minfeat}, '-', 'min_features over the page size: skipped');

# a calibrated volatility table orders the probes; lookups still find
is($t->status_of('/vol/sourdough.html'), 'new', 'volatility table: new');
my $r = $t->get('/vol/sourdough-reprint.html');
is($r->{headers}{'x-simhash-status'}, 'duplicate',
   'volatility table: the reprint found');
is($r->{headers}{'x-simhash'},
   $t->get('/default/sourdough-reprint.html')->{headers}{'x-simhash'},
   'volatility table: the fingerprint does not depend on it');
cmp_ok($t->stats->{zones}{vol}{lookups}, '==', 2, 'volatility table: lookups');

$t->stop;
$t->check_log;
done_testing;
