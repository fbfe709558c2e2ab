#!/usr/bin/perl
# tools/dust-eval/check-truth.pl ORIGIN_PORT GEN -- checks the ground truth
# against the origin itself: every URL of GEN/truth.tsv is fetched directly
# (no proxy) with its site's Host, and the URLs of one document must get
# one body (byte for byte), the URLs of two documents two bodies.  Prints
# one line; exits 1 on a mismatch.
use strict;
use warnings;
use HTTP::Tiny;
use Digest::MD5 qw(md5_hex);

my ($port, $gen) = @ARGV;
# the origin as a proxy: absolute-URI requests name the site (HTTP::Tiny
# sets Host itself)
my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 1,
                         proxy => "http://127.0.0.1:$port");
my (%body_of_doc, %doc_of_body, $n, $bad);
# the host of each label: GEN/hosts.tsv (the second site's), the first
# host named for a label; else LABEL.test
my %host_of;
if (open(my $h, '<', "$gen/hosts.tsv")) {
    while (<$h>) { chomp; my ($host, $label) = split /\t/; $host_of{$label} //= $host }
}
open(my $t, '<', "$gen/truth.tsv") or die "$gen/truth.tsv: $!";
while (<$t>) {
    chomp;
    my ($site, $uri, $doc) = split /\t/;
    my $r = $ua->get("http://" . ($host_of{$site} // "$site.test") . $uri);
    $n++;
    my $m = $r->{status} == 200 ? md5_hex($r->{content}) : "status $r->{status}";
    my $key = "$site $doc";
    if ($r->{status} != 200) { $bad++; warn "$site $uri: $m\n"; next }
    if (($body_of_doc{$key} //= $m) ne $m) { $bad++; warn "$site $uri: another body than ${doc}'s\n" }
    if (($doc_of_body{$m} //= $key) ne $key) { $bad++; warn "$site $uri: $doc has the body of $doc_of_body{$m}\n" }
}
printf "ground truth: %d URLs, %d documents, %d distinct bodies, %d mismatches\n",
       $n, scalar keys %body_of_doc, scalar keys %doc_of_body, $bad // 0;
exit($bad ? 1 : 0);
