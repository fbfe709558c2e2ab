#!/usr/bin/perl
# tools/dust-eval/crawl.pl PROXY_PORT SEED_URL HOSTS_RE OUT.tsv
# A breadth-first crawler through the proxy (a forward proxy: absolute-URI
# requests): fetches SEED_URL, follows every <a href> of a 200 text/html
# answer whose host matches HOSTS_RE, each distinct URL once (as written:
# it knows nothing of DUST), and writes one line per fetch:
#   N  URL  STATUS  X-Simhash-Status  X-Simhash-Predicted  X-Simhash-Duplicate-Of
# A dropped answer (204, no body) has no links to follow: that is what
# drop mode saves.  DUST_CRAWL_MAX caps the fetches.
use strict;
use warnings;
use HTTP::Tiny;

my ($port, $seed, $hosts, $out) = @ARGV;
die "usage: $0 PROXY_PORT SEED_URL HOSTS_RE OUT.tsv\n" unless $out;
my $max = $ENV{DUST_CRAWL_MAX} // 1_000_000;
my $hre = qr/^(?:$hosts)$/;
my $ua = HTTP::Tiny->new(proxy => "http://127.0.0.1:$port", timeout => 30,
                         agent => 'dust-eval-crawler/1.0', keep_alive => 1);
open(my $o, '>', $out) or die "$out: $!";
my @queue = ($seed);
my %seen = ($seed => 1);
my $n = 0;
while (@queue && $n < $max) {
    my $url = shift @queue;
    my $r = $ua->get($url);
    my $h = $r->{headers};
    $n++;
    print $o join("\t", $n, $url, $r->{status}, $h->{'x-simhash-status'} // '-',
                  $h->{'x-simhash-predicted'} // '-',
                  $h->{'x-simhash-duplicate-of'} // '-'), "\n";
    next unless $r->{status} == 200 && ($h->{'content-type'} // '') =~ m{text/html};
    my ($host) = $url =~ m{^http://([^/]+)};
    for my $href ($r->{content} =~ /<a\s[^>]*?href="([^"]*)"/gi) {
        $href =~ s/&amp;/&/g;
        $href =~ s/#.*//;
        next if $href eq '';
        my $abs;
        if ($href =~ m{^http://([^/]+)}) { next unless $1 =~ $hre; $abs = $href }
        elsif ($href =~ m{^/}) { $abs = "http://$host$href" }
        else { next }          # the site writes no relative links
        next if $seen{$abs}++;
        push @queue, $abs;
    }
}
close $o;
printf "crawl.pl: %d fetches, %d URLs seen, %d left in the queue\n",
       $n, scalar keys %seen, scalar @queue;
