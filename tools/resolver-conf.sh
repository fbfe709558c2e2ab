#!/bin/sh
# resolver-conf.sh [RESOLV_CONF]: prints the nginx `resolver` directives for
# the name servers of RESOLV_CONF (default /etc/resolv.conf), for
# /etc/nginx/simhash-resolver.conf, which the examples include.  nginx never
# reads resolv.conf, and a fixed address in the examples exists on some
# systems only (127.0.0.53 is systemd-resolved's, not on a stock Debian 12).
# IPv6 servers are bracketed and lose a %zone; with none, 127.0.0.1.
set -eu
in=${1:-/etc/resolv.conf}
[ -r "$in" ] || in=/dev/null
awk -v src="${1:-/etc/resolv.conf}" '
    $1 == "nameserver" && $2 != "" {
        a = $2
        sub(/%.*/, "", a)
        if (a ~ /:/) a = "[" a "]"
        s = s " " a
    }
    END {
        print "# written from " src " by resolver-conf.sh (package"
        print "# libnginx-mod-http-simhash); edit freely, it is kept on upgrade"
        if (s == "") s = " 127.0.0.1"
        print "resolver" s " valid=300s ipv6=off;"
        print "resolver_timeout 5s;"
    }' "$in"
