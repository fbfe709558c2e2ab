#!/usr/bin/perl
# A zone without simhash_seed keys its store's and its DUST learner's
# hashes by a random secret of its own (issue 31, item 4): before, both
# were derived from an empty key, and a client computed DUST host slots
# offline to evict a site's entry with 8 aimed requests.
#
#  - the first start makes PATH.secret beside the snapshot: 64 hex digits,
#    mode 0600, and nginx -t's log says so;
#  - a restart keeps it: the snapshot loads;
#  - two installations have two secrets: one's snapshot is refused by the
#    other (under the old public key it loaded, key hashes and all);
#  - a secret others may read, a link, a damaged one, or one owned by
#    another user than root or the one nginx starts as (the workers' user
#    could have chosen it): nginx -t refuses it, saying why and what to do.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

my $zone = 'simhash_zone zone=crawl:1m file=%%PREFIX%%/data/crawl.snap '
         . 'save=off;';
my $proxy = <<'EOF';
        simhash crawl;
        location / { proxy_pass http://%%ORIGIN%%; }
EOF

sub node {
    my $t = SimhashTest->new(http => $zone, proxy => $proxy);
    $t->write_file('html/p.html', ($t->random_pages(1, 200, 43))[0]);
    return $t;
}

my $a = node();
my $secret = $a->prefix . '/data/crawl.snap.secret';

my ($rc, $out) = $a->nginx_t;
is($rc, 0, 'nginx -t passes without simhash_seed') or diag $out;
like($out, qr/zone "crawl" has no simhash_seed: its key hashes are keyed by a new random secret in "\Q$secret\E"/,
     'nginx -t says a secret was made, and where');
ok(-f $secret && !-l $secret, 'the secret is a regular file');
is((stat $secret)[2] & 07777, 0600, 'mode 0600');
like($a->read_file('data/crawl.snap.secret'), qr/^[0-9a-f]{64}\n\z/,
     '64 hex digits');
my $made = $a->read_file('data/crawl.snap.secret');

$a->start;
is($a->status_of('/p.html'), 'new', 'a page stored');
$a->stop;
ok(-s $a->prefix . '/data/crawl.snap', 'saved at exit');

$a->start;
is($a->read_file('data/crawl.snap.secret'), $made, 'a restart keeps it');
is($a->status_of('/p.html'), 'unchanged',
   'the snapshot loads under it: the page is known');
$a->stop;
$a->check_log;

# another installation: another secret; the first one's snapshot is not
# its own
my $b = node();
($rc, $out) = $b->nginx_t;
is($rc, 0, 'second installation: nginx -t passes') or diag $out;
isnt($b->read_file('data/crawl.snap.secret'), $made,
     'second installation: another secret');
$b->write_file('data/crawl.snap', $a->read_file('data/crawl.snap'));
$b->start;
like($b->error_log, qr/snapshot "[^"]*crawl\.snap" refused/,
     'second installation: the first one\'s snapshot is refused');
is($b->status_of('/p.html'), 'new', '... and its documents not taken');
$b->stop;
$b->check_log;

# secrets that are no secrets, or not files
my $c = node();
my $cs = $c->prefix . '/data/crawl.snap.secret';
$c->write_file('data/crawl.snap.secret', $made);
chmod 0644, $cs;
($rc, $out) = $c->nginx_t;
isnt($rc, 0, 'a secret others may read: nginx -t fails');
like($out, qr/\[emerg\].*its secret "\Q$cs\E" may be read by others \(mode 0644\).*simhash_seed/,
     '... saying why and what to do');

chmod 0600, $cs;
$c->write_file('data/crawl.snap.secret', "not hex\n");
chmod 0600, $cs;
($rc, $out) = $c->nginx_t;
isnt($rc, 0, 'a damaged secret: nginx -t fails');
like($out, qr/\[emerg\].*its secret "\Q$cs\E" is damaged/, '... saying so');

unlink $cs;
symlink($c->prefix . '/html/p.html', $cs) or die $!;
($rc, $out) = $c->nginx_t;
isnt($rc, 0, 'a symbolic link as the secret: nginx -t fails');
like($out, qr/\[emerg\].*cannot open its secret "\Q$cs\E" \(a symbolic link\)/,
     '... saying so');

# a secret of another user's (the workers', who can write the directory):
# whoever owns it may have chosen it.  Only root can give a file away; a
# normal user's own file is the case above, and passes.
SKIP: {
    skip 'a secret of another owner: needs root to give the file away', 4
        if $> != 0;
    unlink $cs;
    $c->write_file('data/crawl.snap.secret', $made);
    chmod 0600, $cs;
    my $nobody = getpwnam('nobody') // 65534;
    chown $nobody, -1, $cs or die "chown: $!";
    ($rc, $out) = $c->nginx_t;
    isnt($rc, 0, "a secret owned by nobody: nginx -t fails");
    like($out, qr/\[emerg\].*its secret "\Q$cs\E" is owned by uid $nobody, neither root nor the user nginx starts as \(uid 0\).*chown.*simhash_seed/,
         '... saying why and what to do');

    chown 0, -1, $cs or die "chown: $!";
    ($rc, $out) = $c->nginx_t;
    is($rc, 0, "the same secret, given to root: nginx -t passes") or diag $out;
    unlike($out, qr/new random secret/, '... and it is the one kept');
}

# with simhash_seed there is no secret file: the seed keys everything
unlink $cs;
$c->set(proxy => $proxy =~ s/simhash crawl;/simhash crawl;\n        simhash_seed "a-seed-of-the-tier-0123";/r);
($rc, $out) = $c->nginx_t;
is($rc, 0, 'with simhash_seed: nginx -t passes') or diag $out;
ok(!-e $cs && !-l $cs, 'with simhash_seed: no secret file');

done_testing;
