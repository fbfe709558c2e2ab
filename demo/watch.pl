#!/usr/bin/perl
# The demo's view of its crawl: follows the proxy's crawl log and error
# log while the crawler (process PID) runs, prints the first two requests
# of each kind (what the URL is, what the proxy did) and every DUST rule
# that turns on or off as it happens, then what the crawl came to.
#
#   demo/watch.pl PID CRAWL_LOG ERROR_LOG ORIGIN_LOG
#
# The crawl log's format is demo/run.sh's: ACTION STATUS CODE "URL"
# "DUPLICATE_OF".

use strict;
use warnings;
use Time::HiRes qw(sleep);

my ($pid, $crawl, $errors, $origin) = @ARGV;
die "usage: $0 PID CRAWL_LOG ERROR_LOG ORIGIN_LOG\n" unless $origin;
$| = 1;

my @kinds = ('page', 'session id', 'tracking', 'print view', 'mirror');
sub kind {
    my ($url) = @_;
    return 'session id' if $url =~ /[?&]PHPSESSID=/;
    return 'tracking' if $url =~ /[?&]utm_/;
    return 'print view' if $url =~ m{://[^/]+/print/};
    return 'mirror' if $url =~ m{^\w+://m\.};
    return 'page';
}

my (%shown, %count, %rules, @rule_order, @pending);
my ($cpos, $epos) = (0, 0);

sub short { my ($u) = @_; $u =~ s{^http://}{}; return $u }

sub follow {
    my ($file, $pos, $each) = @_;
    open(my $fh, '<', $file) or return $pos;
    seek($fh, $pos, 0);
    while (my $line = <$fh>) {
        last unless $line =~ /\n\z/;    # a line being written: next time
        $pos = tell($fh);
        $each->($line);
    }
    close $fh;
    return $pos;
}

sub on_request {
    my ($line) = @_;
    my ($action, $status, $code, $url, $dup) =
        $line =~ /^(\S+) (\S+) (\d+) "([^"]*)" "([^"]*)"/ or return;
    my $k = kind($url);
    # a rule's line just before the first request it predicted: the logs
    # are read in bursts, and a fast crawl writes both before they are
    @pending = grep { !($action =~ /^(predicted|verified)$/
                        && index($url, $_->[0]) >= 0 && print($_->[1])) }
               @pending;
    $count{$k}{$action}++;
    $count{$k}{requests}++;
    return if $shown{"$k $action $status"}++ >= 2;
    my $of = $dup ne '' && $dup ne '-' ? "   = " . short($dup) : '';
    printf "  %-9s %-9s %-10s %s%s\n", $action, $status, $k, short($url),
           $of;
}

sub on_error {
    my ($line) = @_;
    my ($rule, $host, $pat, $onoff, $pairs, $against) =
        $line =~ /rule (\S+) for (\S+) (\S+) (on|off) \(was \w+\): (\d+) pairs, (\d+) against/
        or return;
    push @rule_order, "$rule $host$pat" unless $rules{"$rule $host$pat"};
    $rules{"$rule $host$pat"} = $onoff;
    my ($arg) = $rule =~ /\(([^)*]+)/;
    push @pending, [$arg // '', sprintf "  >> DUST rule %s %s for %s%s: %d"
                    . " pairs of URLs it makes one were the same page, %d"
                    . " were not\n", $rule, $onoff, $host, $pat, $pairs,
                    $against];
}

printf "  %-9s %-9s %-10s %s\n", 'ACTION', 'STATUS', 'KIND', 'URL   = DUPLICATE OF';
for (;;) {
    my $alive = kill(0, $pid);
    # the error log first: a rule is logged before the request it
    # answered is, so its line comes before its first prediction's
    $epos = follow($errors, $epos, \&on_error);
    $cpos = follow($crawl, $cpos, \&on_request);
    last unless $alive;
    sleep 0.2;
}
print $_->[1] for @pending;
my $rest = 0;
for my $k (keys %count) { $rest += $count{$k}{requests} }
my $shown = 0;
$shown += $_ > 2 ? 2 : $_ for values %shown;
printf "  ... and %d more requests like the above\n", $rest - $shown
    if $rest > $shown;

# ---- what the crawl came to ----------------------------------------------

my $fetched = 0;
follow($origin, 0, sub { $fetched++ });

print "\n== what the crawl came to\n\n";
printf "  %-11s %8s %8s %8s %10s %9s\n", 'KIND', 'requests', 'passed',
       'dropped', 'predicted', 'verified';
my %total;
for my $k (@kinds) {
    next unless $count{$k};
    printf "  %-11s %8d %8d %8d %10d %9d\n", $k,
           map { $total{$_} += $count{$k}{$_} // 0; $count{$k}{$_} // 0 }
           qw(requests passed dropped predicted verified);
}
printf "  %-11s %8d %8d %8d %10d %9d\n", 'total',
       map { $total{$_} // 0 } qw(requests passed dropped predicted verified);
my ($req, $pred) = ($total{requests} // 0, $total{predicted} // 0);
my $dropped = ($total{dropped} // 0) + $pred;
print <<"EOF";

  passed:    the page went to the crawler (new, or a duplicate under
             another path: tagged X-Simhash-Status: duplicate, not dropped)
  dropped:   fetched, found a near-duplicate of a page with the same path,
             answered 204 with no body
  predicted: a DUST rule said it is a duplicate: answered 204 at once,
             without a fetch from the origin
  verified:  predicted, but fetched anyway to keep checking the rule (1 in 16)

  saved: the origin served $fetched of the crawler's $req requests;
         the crawler got $dropped empty answers instead of duplicate pages
EOF
if (@rule_order) {
    print "\n  DUST rules learnt (docs/DUST.md):\n";
    printf "    %-26s %-30s %s\n", $_ =~ /^(\S+) (\S+)$/, $rules{$_}
        for @rule_order;
} else {
    print "\n  no DUST rule turned on\n";
}
