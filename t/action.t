#!/usr/bin/perl
# $simhash_action: what the module did with the response, for an
# operator's access log (issue 36): "passed" (the upstream's response,
# whole: new pages, and duplicates that keys=path does not drop),
# "dropped" (a duplicate answered with the drop code), "predicted"
# (answered by a DUST rule without a fetch), "verified" (predicted, but
# fetched to check the rule).  $simhash_status alone said "duplicate" for
# the dropped and the passed alike.  Hidden, like the status, under
# simhash_reveal off; empty where the module is off.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $t = SimhashTest->new(
    http => <<'END',
    simhash_zone zone=crawl:1m dust=1m;
    simhash_dust_rule zone=crawl host=v.test pattern=/doc/
                      drop_param=sid pin;
END
    proxy => <<'END',
        add_header X-Action "$simhash_action" always;
        simhash_action drop;

        location /doc/ {
            simhash crawl;
            simhash_dust on;
            # no verification sample here: a prediction is answered
            simhash_dust_verify 0;
            simhash_key http://v.test$request_uri;
            proxy_pass http://%%ORIGIN%%;
        }

        location ~ ^/check(/doc/.*)$ {
            simhash crawl;
            simhash_dust on;
            simhash_key http://v.test$1$is_args$args;
            simhash_dust_verify 100%;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        location ~ ^/hidden(/doc/.*)$ {
            simhash crawl;
            simhash_reveal off;
            simhash_key http://v.test$1$is_args$args;
            proxy_pass http://%%ORIGIN%%$1$is_args$args;
        }

        location /plain/ {
            proxy_pass http://%%ORIGIN%%/doc/;
        }
END
);

my @pages = $t->random_pages(3, 150, 4444);
mkdir $t->prefix . '/html/doc';
$t->write_file('html/doc/a.html', $pages[0]);
$t->write_file('html/doc/copy.html', $pages[0]);
$t->write_file('html/doc/b.html', $pages[1]);
$t->write_file('html/doc/c.html', $pages[2]);
$t->start;

sub action {
    my ($path) = @_;
    my ($status, $h) = $t->raw_get($path);
    return ($status, $h->{'x-action'} // '');
}

is_deeply([action('/doc/a.html')], [200, 'passed'], 'a new page: passed');
is_deeply([action('/doc/a.html?sid=2')], [204, 'predicted'],
          'a variant the pinned rule predicts: predicted, no fetch');
is_deeply([action('/check/doc/a.html?sid=3')], [204, 'verified'],
          'a prediction fetched to check it (and dropped): verified');
is_deeply([action('/doc/copy.html')], [200, 'passed'],
          'a duplicate under another path (keys=path): passed');
is_deeply([action('/hidden/doc/b.html')], [200, ''],
          'simhash_reveal off: no action told');
is_deeply([action('/plain/b.html')], [200, ''], 'the module off: empty');

# a fingerprint duplicate of the same path, not predicted (no sid):
# dropped after the fetch
is_deeply([action('/doc/c.html?x=1')], [200, 'passed'],
          'another page: passed');
is_deeply([action('/doc/c.html?x=2')], [204, 'dropped'],
          'the same page under another query: dropped');

$t->stop;
$t->check_log;

done_testing;
