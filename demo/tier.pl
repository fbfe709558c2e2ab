#!/usr/bin/perl
# make run-tier's story (demo/run-tier.sh starts the tier and runs this):
#
#   demo/tier.pl URL_1 URL_2 A_PROXY A_STATS B_PROXY B_STATS REDIS_PORT
#
# URL_1 is fetched through node A (a forward proxy on 127.0.0.1:A_PROXY),
# then URL_2, its copy under another URL, through node B; between the two,
# the cluster is asked (simhash_cluster_query on each node's statistics
# port) until A's page is there.  Prints the two responses' headers and
# what they mean, then node B's cluster counters.  Exits 0 when B found
# A's page, 1 when something went otherwise (said on the terminal).
#
# Every wait polls a condition with a deadline (60 s: a busy machine).

use strict;
use warnings;
use HTTP::Tiny;
use JSON::PP ();
use Text::Wrap qw(wrap $columns);
use Time::HiRes qw(sleep time);
no warnings qw(portable);     # hex() of 64-bit fingerprints

my ($url1, $url2, $a_proxy, $a_stats, $b_proxy, $b_stats, $redis) = @ARGV;
die "usage: $0 URL_1 URL_2 A_PROXY A_STATS B_PROXY B_STATS REDIS_PORT\n"
    unless defined $redis;

my $direct = HTTP::Tiny->new(timeout => 10, proxy => undef,
                             http_proxy => undef);
my $failed = 0;
$columns = 76;
$Text::Wrap::unexpand = 0;      # spaces, not tabs

# a paragraph of plain words, wrapped, under the headers it explains
sub words { print wrap('   ', '   ', join(' ', @_)), "\n" }

sub fail {
    print "\n   !! $_[0]\n";
    $failed = 1;
}

sub json_get {
    my ($url) = @_;
    my $r = $direct->get($url);
    return undef unless $r->{success};
    return eval { JSON::PP::decode_json($r->{content}) };
}

sub wait_until {
    my ($what, $cond) = @_;
    my $deadline = time + 60;
    while (time < $deadline) {
        my $v = $cond->();
        return $v if $v;
        sleep 0.1;
    }
    fail("gave up waiting for $what (60 s)");
    return undef;
}

# a lookup in the cluster as the node asks it
sub ask {
    my ($stats, $zone, $fp, $h) = @_;
    return json_get("http://127.0.0.1:$stats/simhash-cluster?zone=$zone"
                    . "&fp=$fp&h=$h");
}

sub fetch {
    my ($proxy, $url) = @_;
    my $ua = HTTP::Tiny->new(timeout => 10, proxy => "http://127.0.0.1:$proxy");
    return $ua->get($url);
}

sub show {
    my ($r) = @_;
    my $h = $r->{headers};
    printf "   HTTP %s, %d bytes\n", $r->{status}, length($r->{content} // '');
    for my $name (qw(x-simhash-status x-simhash x-simhash-duplicate-of
                     x-simhash-distance x-simhash-score x-simhash-reason)) {
        next unless defined $h->{$name};
        (my $label = $name) =~ s/(^|-)(\w)/$1\u$2/g;
        print "   $label: $h->{$name}\n";
    }
}

# ---- each node's worker has read the slot map and the layout: a lookup
# of any fingerprint is answered in full (until then it is incomplete,
# cause starting, and a page would be passed through as skipped)
for ([$a_stats, 'a', 'A'], [$b_stats, 'b', 'B']) {
    my ($stats, $zone, $node) = @$_;
    wait_until("node $node to read the cluster's slot map and layout", sub {
        my $j = ask($stats, $zone, '0', 0);
        $j && $j->{status} eq 'new'
    }) or exit 1;
}

# ---- 1. through node A
print "\n== 1. a page through node A\n";
print "   \$ curl -si -x 127.0.0.1:$a_proxy $url1\n";
my $r = fetch($a_proxy, $url1);
show($r);
my $fp = $r->{headers}{'x-simhash'} // '';
if (($r->{headers}{'x-simhash-status'} // '') ne 'new' || $fp !~ /^[0-9a-f]{16}$/) {
    fail("node A did not call the page new (see a/logs/error.log)");
    exit 1;
}
words("New to node A and to the cluster: A stored it in its own zone and",
      "wrote it to the cluster, a record and a table entry each APPENDed to",
      "the master of its bucket, not waited for.");

# the write lands: the cluster now answers A's fingerprint with a document
my $found = wait_until("A's page to be in the cluster", sub {
    my $j = ask($a_stats, 'a', $fp, 0);
    $j && $j->{status} eq 'found' ? $j : undef
}) or exit 1;
my $id = $found->{id};
my $meta = `redis-cli -c -p $redis GET sh:m 2>/dev/null` // '';
my ($bits) = $meta =~ /^(\d+)/;
if ($bits) {
    my $bucket = sprintf 'sh:f%0*x', int(($bits + 3) / 4),
                         hex($fp) >> (64 - $bits);
    chomp(my $slot = `redis-cli -p $redis CLUSTER KEYSLOT $bucket 2>/dev/null`
                     // '');
    my $master = '?';
    for (split /\n/, `redis-cli -p $redis CLUSTER NODES 2>/dev/null` // '') {
        my @f = split ' ';
        next unless ($f[2] // '') =~ /master/;
        for my $range (@f[8 .. $#f]) {
            my ($lo, $hi) = $range =~ /^(\d+)(?:-(\d+))?$/ or next;
            $hi //= $lo;
            ($master = $f[1]) =~ s/@.*// if $slot >= $lo && $slot <= $hi;
        }
    }
    words("In the cluster: document $id (its key's hash), in the table",
          "bucket $bucket (the fingerprint's top $bits bits), slot $slot,",
          "held by the master at $master and its replica.");
}

# ---- 2. through node B
print "\n== 2. its copy, another URL, through node B\n";
print "   \$ curl -si -x 127.0.0.1:$b_proxy $url2\n";
$r = fetch($b_proxy, $url2);
show($r);
my $h = $r->{headers};
if (($h->{'x-simhash-status'} // '') eq 'duplicate'
    && ($h->{'x-simhash-duplicate-of'} // '') =~ /^(?:simhash-id:\Q$id\E|\Q$url1\E)$/)
{
    my $how = $h->{'x-simhash-duplicate-of'} eq $url1
        ? 'named by its URL.'
        : 'named by its id: the cluster keeps no URL text.';
    words("A duplicate of node A's page, $how  Node B never fetched A's",
          "page; its own zone had nothing near, so it asked the cluster,",
          "whose probes found A's document",
          ($h->{'x-simhash-distance'} // '?'), "bits away.  The response",
          "was held meanwhile, then passed on whole, tagged.");
} else {
    fail("node B did not find A's page (X-Simhash-Status: "
         . ($h->{'x-simhash-status'} // 'none') . ')');
}

# ---- 3. node B's counters
print "\n== 3. node B's cluster counters (its statistics: \"cluster\" in the JSON)\n";
my $st = json_get("http://127.0.0.1:$b_stats/simhash-stats");
my $c = $st && $st->{zones}{b}{cluster};
if (!$c) {
    fail("no cluster counters in node B's statistics");
} else {
    my $inc = 0;
    $inc += $_ for values %{ $c->{incomplete} // {} };
    my $lm = $c->{lookup_ms} // {};
    my $under = '';
    for my $le (qw(1 2 5 10 20 50 100 200 500 1000 5000)) {
        next unless ($lm->{$le} // 0) == ($lm->{count} // -1);
        $under = ", every one within $le ms";
        last;
    }
    printf "   lookups %d: found %d, new %d, incomplete %d%s\n",
        $c->{lookups}, $c->{found}, $c->{new}, $inc, !$inc ? '' : ' ('
        . join(', ', map { "$_ $c->{incomplete}{$_}" }
                     grep { $c->{incomplete}{$_} }
                     sort keys %{ $c->{incomplete} }) . ')';
    print "   lookup times: $lm->{count} timed$under\n" if $lm->{count};
    printf "   slot maps read %d, MOVED %d, ASK %d; pages written %d,"
         . " writes lost %d\n",
        $c->{refreshes}, $c->{moved}, $c->{asked}, $c->{writes},
        $c->{write_errors};
    words("The lookups are the core page's and the demo's own, through",
          "simhash_cluster_query: whether B had read the cluster's slot map",
          "and layout yet.  A lookup the cluster cannot answer in full (a",
          "master down, the timeout) is counted incomplete, by cause, and",
          "its page passed through as skipped, reason index_incomplete:",
          "never new.");
    fail("node B's counters do not show the lookup found")
        unless $c->{found} >= 1;
}

exit $failed;
