#!/usr/bin/perl
# Misconfiguration is caught by nginx -t, with the file and the line.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new;
my $conf = $t->conf_path;
$t->write_file('data/garbage.idf', "this is not an IDF table\n\0\1\2");

my $loc = sub {
    my ($extra) = @_;
    return "simhash crawl;\n        $extra\n"
         . "        location / { proxy_pass http://%%ORIGIN%%; }";
};
my $zone = 'simhash_zone zone=crawl:1m;';

# [ name, http, proxy, expected message, the text on the offending line ]
my @cases = (
    [ 'unknown zone', $zone,
      "location /x/ { simhash nosuch; }",
      qr/unknown simhash zone "nosuch"/, 'simhash nosuch;' ],
    [ 'unknown zone, used before any zone', '',
      "simhash crawl2;",
      qr/unknown simhash zone "crawl2"/, 'simhash crawl2;' ],
    [ 'bad size', 'simhash_zone zone=crawl:12q;', $loc->(''),
      qr/invalid zone size "zone=crawl:12q"/, 'zone=crawl:12q' ],
    [ 'size missing', 'simhash_zone zone=crawl;', $loc->(''),
      qr/invalid zone size "zone=crawl"/, 'zone=crawl;' ],
    [ 'zone too small', 'simhash_zone zone=crawl:16k;', $loc->(''),
      qr/zone "zone=crawl:16k" is too small/, 'zone=crawl:16k' ],
    [ 'keys= larger than the zone', 'simhash_zone zone=crawl:1m keys=2m;',
      $loc->(''),
      qr/zone "zone=crawl:1m" is too small for keys=2097152/, 'keys=2m' ],
    [ 'keys= too small', 'simhash_zone zone=crawl:1m keys=1k;', $loc->(''),
      qr/invalid "keys=1k": the key text ring's size, at least 4k/,
      'keys=1k' ],
    [ 'no zone parameter', 'simhash_zone distance=3;', '',
      qr/must have "zone=NAME:SIZE" parameter/, 'distance=3;' ],
    [ 'distance out of range', 'simhash_zone zone=crawl:1m distance=17;',
      $loc->(''),
      qr/invalid distance "distance=17": must be between 0 and 16/,
      'distance=17' ],
    [ 'hamming distance out of range',
      'simhash_zone zone=crawl:1m match=hamming distance=9;', $loc->(''),
      qr/invalid distance=9: match=hamming takes 0 to 7/, 'distance=9' ],
    [ 'unknown match rule', 'simhash_zone zone=crawl:1m match=cosine;',
      $loc->(''),
      qr/invalid "match=cosine": must be match=weighted or match=hamming/,
      'match=cosine' ],
    [ 'threshold under hamming',
      'simhash_zone zone=crawl:1m match=hamming threshold=5;', $loc->(''),
      qr/"threshold" needs match=weighted/, 'threshold=5' ],
    [ 'bad threshold', 'simhash_zone zone=crawl:1m threshold=1e3;',
      $loc->(''), qr/invalid threshold "threshold=1e3"/, 'threshold=1e3' ],
    [ 'threshold out of range',
      'simhash_zone zone=crawl:1m threshold=1000.5;', $loc->(''),
      qr/invalid threshold "threshold=1000.5"/, 'threshold=1000.5' ],
    [ 'negative distance', 'simhash_zone zone=crawl:1m distance=-1;',
      $loc->(''), qr/invalid distance/, 'distance=-1' ],
    [ 'save without file', 'simhash_zone zone=crawl:1m save=10s;',
      $loc->(''), qr/"save" needs the "file" parameter/, 'save=10s' ],
    [ 'bad save time', 'simhash_zone zone=crawl:1m file=x.snap save=1ms;',
      $loc->(''), qr/invalid save time/, 'save=1ms' ],
    [ 'duplicate zone', "$zone\n    $zone", $loc->(''),
      qr/duplicate simhash zone "crawl"/, $zone, 2 ],
    [ 'zone in server context', '',
      "simhash_zone zone=s:1m;",
      qr/"simhash_zone" directive is not allowed here/, 'zone=s:1m' ],
    [ 'invalid regex', $zone, $loc->('simhash_ignore "[a-";'),
      qr/invalid regex "\[a-": .* at offset/, 'simhash_ignore' ],
    [ 'unreadable IDF', $zone, $loc->('simhash_idf /nonexistent/words.idf;'),
      qr{cannot read "/nonexistent/words\.idf" for "simhash_idf" \(2: No such file},
      'simhash_idf' ],
    [ 'IDF not a table', $zone,
      $loc->('simhash_idf %%PREFIX%%/data/garbage.idf;'),
      qr/simhash: .*garbage\.idf.*/, 'simhash_idf' ],
    [ 'unreadable stop words', $zone,
      $loc->('simhash_stopwords /nonexistent/stop.txt;'),
      qr{cannot read "/nonexistent/stop\.txt" for "simhash_stopwords"},
      'simhash_stopwords' ],
    [ 'unknown stemmer', $zone, $loc->('simhash_stem klingon;'),
      qr/unknown stemmer language "klingon"/, 'simhash_stem' ],
    [ 'shingle out of range', $zone, $loc->('simhash_shingle 9;'),
      qr/must be between 1 and 8/, 'simhash_shingle' ],
    [ 'bad action', $zone, $loc->('simhash_action maybe;'),
      qr/invalid action "maybe": "tag" or "drop"/, 'simhash_action' ],
    [ 'bad drop code', $zone, $loc->('simhash_action drop 99;'),
      qr/invalid status code "99"/, 'simhash_action' ],
    [ 'bad drop option', $zone, $loc->('simhash_action drop keys=host;'),
      qr/invalid drop option "keys=host"/, 'simhash_action' ],
    [ 'bad drop score', $zone, $loc->('simhash_action drop score=x;'),
      qr/invalid drop option "score=x"/, 'simhash_action' ],
    [ 'two drop codes', $zone, $loc->('simhash_action drop 204 410;'),
      qr/invalid status code "410"/, 'simhash_action' ],
    [ 'tag with an option', $zone, $loc->('simhash_action tag keys=any;'),
      qr/takes no status code or option with "tag"/, 'simhash_action' ],
    [ 'bad probes', $zone, $loc->('simhash_probes recall=2;'),
      qr/invalid recall "recall=2"/, 'simhash_probes' ],
    [ 'too many probes', $zone, $loc->('simhash_probes 5000;'),
      qr/invalid number of probes "5000": 1 to 4096/, 'simhash_probes' ],
    [ 'short seed', $zone, $loc->('simhash_seed abc;'),
      qr/simhash_seed is too short/, 'simhash_seed' ],
    [ 'two seeds, one zone', $zone,
      "location /a/ { simhash crawl; simhash_seed first-secret-1234; }\n"
      . "        location /b/ { simhash crawl; simhash_seed second-secret-5678; }",
      qr/simhash zone "crawl" needs the same simhash_seed everywhere \(it has another one at \S+:\d+\)/,
      'location /b/' ],
    [ 'bad weight', $zone, $loc->('simhash_word_weight -1;'),
      qr/invalid weight "-1": a number from 0 to 1000/, 'simhash_word_weight' ],
    [ 'bad content mode', $zone, $loc->('simhash_content main;'),
      qr/invalid value "main"/, 'simhash_content' ],
    [ 'missing volatility table', $zone,
      $loc->('simhash_volatility /nonexistent/table.vol;'),
      qr{cannot use "/nonexistent/table\.vol" as a volatility table: },
      'simhash_volatility' ],
    [ 'not a volatility table', $zone,
      $loc->('simhash_volatility %%PREFIX%%/data/garbage.idf;'),
      qr{cannot use ".*garbage\.idf" as a volatility table: },
      'simhash_volatility' ],
    [ 'bad max_body', $zone, $loc->('simhash_max_body lots;'),
      qr/"simhash_max_body" directive invalid value/, 'simhash_max_body' ],
    [ 'unknown zone in simhash_stats', $zone,
      $loc->('location = /s { simhash_stats nosuch; }'),
      qr/unknown simhash zone "nosuch"/, 'simhash_stats nosuch' ],
    [ 'zone name with a quote', 'simhash_zone \'zone=a"b:1m\';', '',
      qr/invalid zone name "zone=a"b:1m": letters, digits/, 'zone=a' ],
    [ 'zone name with a slash', 'simhash_zone zone=a/b:1m;', '',
      qr/invalid zone name "zone=a\/b:1m"/, 'zone=a/b' ],
);

for my $c (@cases) {
    my ($name, $http, $proxy, $re, $marker, $nth) = @$c;
    $t->set(http => $http, proxy => $proxy);
    my ($rc, $out) = $t->nginx_t;
    my $line = $t->line_of($marker);
    $line++ if $nth;   # the second of two identical lines
    isnt($rc, 0, "$name: nginx -t fails");
    like($out, qr/\[emerg\] .*$re.* in \Q$conf\E:$line$/m,
         "$name: message with file:line ($line)") or diag($out);
}

# a snapshot in a directory that does not exist: a warning, not an error
$t->set(http => 'simhash_zone zone=crawl:1m file=/nonexistent/dir/c.snap;',
        proxy => $loc->(''));
my ($wrc, $wout) = $t->nginx_t;
is($wrc, 0, 'snapshot directory missing: nginx -t still passes');
like($wout, qr{\[warn\] .*the directory "/nonexistent/dir/" of the snapshot file is not usable: the zone will not be saved \(2: No such file or directory\) in \Q$conf\E:\d+}m,
     'snapshot directory missing: warned with file:line') or diag($wout);

# a correct configuration with every directive passes
$t->write_file('data/stop.txt', "the\nand\nof\n");
$t->set(http => 'simhash_zone zone=crawl:1m distance=2 '
              . 'file=%%PREFIX%%/data/c.snap save=30s; '
              . 'simhash_zone zone=plain:1m;',
        proxy => <<'EOF');
        simhash crawl;
        simhash_action drop 410;
        simhash_types application/xhtml+xml;
        simhash_max_body 512k;
        simhash_min_features 8;
        simhash_max_features 4096;
        simhash_key $host$uri;
        simhash_shingle 2;
        simhash_word_weight 2;
        simhash_shingle_weight 0.5;
        simhash_content structure;
        simhash_stem french;
        simhash_stopwords %%PREFIX%%/data/stop.txt;
        simhash_ignore "\d{4}-\d{2}-\d{2}";
        simhash_ignore "(?i)session [0-9a-f]+";
        simhash_probes recall=0.9;
        simhash_insert off;
        simhash_seed 0123456789abcdef0123456789abcdef;
        location / { proxy_pass http://%%ORIGIN%%; }
        location /plain/ {
            simhash plain;
            simhash_stem off;
            simhash_stopwords off;
            simhash_probes 64;
            simhash_action tag;
            proxy_pass http://%%ORIGIN%%;
        }
        location /stats { simhash_stats; }
        location /nohash/ { simhash off; }
EOF
my ($rc, $out) = $t->nginx_t;
is($rc, 0, 'every directive: nginx -t passes') or diag($out);
like($out, qr/test is successful/, 'every directive: test is successful');

# one zone, one extraction: fingerprints of other options are not
# comparable with what it holds, so nginx -t names both places
$t->set(http => 'simhash_zone zone=crawl:1m;', proxy => <<'EOF');
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
        location /plain/ {
            simhash_stem off;
            proxy_pass http://%%ORIGIN%%;
        }
EOF
($rc, $out) = $t->nginx_t;
isnt($rc, 0, 'two extractions in one zone: nginx -t fails');
like($out, qr/simhash zone "crawl" needs the same extraction options everywhere: extraction version [0-9a-f]{8} here, [0-9a-f]{8} at \S+:\d+ .* in \S+nginx\.conf:\d+/,
     '... naming both versions and both places');

done_testing;
