#!/bin/sh
# Prints N distinct loopback ports that nothing listens on, one a line:
#
#   set -- $(tools/free-ports.sh 3); ORIGIN=$1 PROXY=$2 STATS=$3
#
# For the scripts that start an nginx with several server blocks (the
# benchmark, the DUST evaluation).  The ports are held all at once while
# they are chosen: asked for one at a time, the kernel may give a port that
# was just closed again, and two server blocks on one port make nginx
# answer every request from the first (a DUST evaluation run that reached
# the origin directly, 2026-11-27).  They come from below the ephemeral
# range, which outgoing connections draw from; the test suite reserves its
# own the same way (t/lib/SimhashTest.pm, free_port).
#
# SH_PORTS=LO-HI chooses the range instead (both here and in the tests),
# e.g. SH_PORTS=40000-40999 where a firewall or another service owns the
# default one.
set -eu
exec perl -MIO::Socket::INET -e '
    my $n = shift // 1;
    my ($lo, $hi);
    if (defined $ENV{SH_PORTS} && $ENV{SH_PORTS} ne "") {
        ($lo, $hi) = $ENV{SH_PORTS} =~ /^\s*(\d+)\s*-\s*(\d+)\s*$/
            or die "free-ports: SH_PORTS=$ENV{SH_PORTS}: want LO-HI,"
                   . " e.g. SH_PORTS=40000-40999\n";
        die "free-ports: SH_PORTS=$ENV{SH_PORTS}: want"
            . " 1024 <= LO < HI <= 65535\n"
            unless $lo >= 1024 && $hi <= 65535 && $lo < $hi;
    } else {
        my ($low) = split " ", (`cat /proc/sys/net/ipv4/ip_local_port_range`
                                || "32768");
        ($lo, $hi) = (20000, $low - 1);
        ($lo, $hi) = (1024, 19999) if $hi < $lo + 1000;
    }
    my (@held, %seen);
    for (1 .. 5000) {
        last if @held == $n;
        my $p = $lo + int(rand($hi - $lo + 1));
        next if $seen{$p}++;
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                      LocalPort => $p, ReuseAddr => 1)
            or next;
        push @held, $s;
    }
    die "free-ports: found only " . @held . " of $n free in $lo-$hi\n"
        if @held < $n;
    print $_->sockport, "\n" for @held;
' "${1:-1}"
