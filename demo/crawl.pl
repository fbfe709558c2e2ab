#!/usr/bin/perl
# The demo crawler: fetches every URL of urls.txt through the proxy (as a
# forward proxy: absolute-URI requests) and prints one line per URL with
# what the X-Simhash-* headers say.
#
#   demo/crawl.pl PROXY_PORT demo/urls.txt

use strict;
use warnings;
use HTTP::Tiny;

my ($port, $list) = @ARGV;
die "usage: $0 PROXY_PORT URLS\n" unless $port && $list;

my $ua = HTTP::Tiny->new(proxy => "http://127.0.0.1:$port", timeout => 10,
                         agent => 'simhash-demo-crawler/1.0');

open(my $fh, '<', $list) or die "$list: $!\n";
printf "%-10s %4s  %s\n", 'STATUS', 'DIST', 'URL -> DUPLICATE OF   (what the page is)';
while (my $line = <$fh>) {
    chomp $line;
    next if $line =~ /^\s*(#|$)/;
    my ($url, $note, $header) = map { s/^\s+|\s+$//gr } split /\|/, $line;
    my %h;
    %h = ($1 => $2) if $header && $header =~ /^([\w-]+):\s*(.*)$/;
    my $r = $ua->get($url, { headers => \%h });
    my $x = $r->{headers};
    my $status = $x->{'x-simhash-status'}
                 // ($r->{status} == 200 ? '(not html)' : "($r->{status})");
    my $dup = $x->{'x-simhash-duplicate-of'};
    printf "%-10s %4s  %s%s%s\n", $status, $x->{'x-simhash-distance'} // '-',
           $url, $dup ? " -> $dup" : '', $note ? "   ($note)" : '';
}
close $fh;
