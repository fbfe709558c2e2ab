#!/bin/sh
# tools/debian-mirror.sh -- the Debian mirror this host's apt uses (its
# one-line sources.list or its deb822 .sources), else Debian's own: the
# mirror the chroots, the API check and nginx's source build fetch from,
# so that a machine that reaches only its own mirror still works.
{
    [ -f /etc/apt/sources.list ] && awk \
        '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2 }' \
        /etc/apt/sources.list
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '$1 == "URIs:" && $2 ~ /\/debian\/?$/ { print $2 }'
} | head -n1 | grep . || echo http://deb.debian.org/debian
