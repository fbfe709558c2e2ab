#!/usr/bin/perl
# Four workers share one index: copies of one page fetched at the same
# moment through different workers give exactly one "new", the rest
# "duplicate" of it, and the zone's counters add up.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SimhashTest;

SimhashTest::needs_master();

my $t = SimhashTest->new(
    workers => 4,
    http    => 'simhash_zone zone=crawl:2m;',
    proxy   => <<'EOF',
        simhash crawl;
        simhash_probes 4096;

        location / {
            proxy_pass http://%%ORIGIN%%;
        }

        location = /stats {
            simhash_stats;
        }
EOF
);

my $pages = 30;
my $copies = 6;
my @pages = $t->random_pages($pages, 200, 4242);
$t->write_file("html/gen/$_.html", $pages[$_ - 1]) for 1 .. $pages;
$t->start;

# child c fetches copy c of every page, in the same order as the others:
# the copies of a page are requested at about the same time
my $out = $t->prefix . '/tmp/results';
mkdir $out;
# they start together: each waits for the end of a pipe the parent closes
# once all are forked (was: a start time 0.5 s ahead)
pipe(my $gate, my $open) or die "pipe: $!";
my @kids;
for my $c (1 .. $copies) {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $open;
        my $ua = SimhashTest::ua(keep_alive => 1);
        sysread($gate, my $buf, 1);
        open(my $fh, '>', "$out/$c") or die;
        for my $i (1 .. $pages) {
            my $r = $ua->get($t->url("/gen/$i.html?copy=$c"));
            my $h = $r->{headers};
            print $fh join("\t", $i, $c, $r->{status},
                           $h->{'x-simhash-status'} // '-',
                           $h->{'x-simhash-duplicate-of'} // '-',
                           length($r->{content}) == length($pages[$i - 1])
                           ? 'whole' : 'cut'), "\n";
        }
        close $fh;
        POSIX::_exit(0);
    }
    push @kids, $pid;
}
close $open;
close $gate;
waitpid($_, 0) for @kids;

my (%by_page, $lines);
for my $c (1 .. $copies) {
    open(my $fh, '<', "$out/$c") or die "$out/$c: $!";
    while (<$fh>) {
        chomp;
        my ($i, $copy, $code, $status, $dup, $whole) = split /\t/;
        push @{ $by_page{$i} }, [$copy, $code, $status, $dup, $whole];
        $lines++;
    }
}
is($lines, $pages * $copies, 'every request answered');

my ($one_new, $dups_ok, $ok200) = (0, 0, 0);
for my $i (1 .. $pages) {
    my @r = @{ $by_page{$i} };
    $ok200++ if (grep { $_->[1] == 200 && $_->[4] eq 'whole' } @r) == @r;
    my @new = grep { $_->[2] eq 'new' } @r;
    next unless @new == 1;
    $one_new++;
    my $first = $t->url("/gen/$i.html?copy=$new[0][0]");
    $dups_ok++ if (grep { $_->[2] eq 'duplicate' && $_->[3] eq $first } @r)
                  == $copies - 1;
}
is($ok200, $pages, 'all 200 with whole bodies');
is($one_new, $pages, 'exactly one "new" per page');
is($dups_ok, $pages, 'the other copies: duplicates of that one');

my $c = $t->stats->{zones}{crawl};
is($c->{entries}, $pages, "entries: $pages");
is($c->{responses}{new}, $pages, 'stats: new');
is($c->{responses}{duplicate}, $pages * ($copies - 1), 'stats: duplicate');
is($c->{lookups}, $pages * $copies, 'stats: lookups');

# more than one worker did the work
my %workers = map { /^(\d+) \/gen\// ? ($1 => 1) : () }
              split /\n/, $t->read_file('logs/access.log');
cmp_ok(scalar keys %workers, '>=', 2,
       'the requests were spread over several workers');

$t->stop;
$t->check_log;
done_testing;
