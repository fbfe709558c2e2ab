#!/bin/bash
# Build and test in Debian unstable (make sid):  tools/sid.sh [BUILD]
#
# The next libxml2 and the next nginx, as a user of the next Debian gets
# them: a debootstrap'ed sid (minbase) with Debian's nginx, nginx-dev,
# libxml2-dev and the other build dependencies (tools/deps.sh's list),
# kept in SH_SID_ROOT (default /var/tmp/sh-sid, outside the tree: about
# 600 MB; made once, a few minutes, then reused).  Each run copies the
# working tree as git sees it (as tools/deb.sh does) to /opt/src inside
# and there runs:
#
#   1. make all: the library, the CLI and the module, against sid's
#      nginx and libxml2 (the versions are printed);
#   2. make unit: the unit tests, and with them every fuzz corpus
#      (fuzz/seeds, fuzz/regressions) as regression inputs
#      (tests/unit/test_fuzz_regressions.c);
#   3. a representative part of t/ (SID_TESTS, default below) against the
#      module built there.
#
# As root only (debootstrap, chroot, unshare).  Mounts (/proc) live in a
# private mount namespace and vanish with it.  SID_MIRROR overrides the
# Debian mirror (default: the one the host's apt uses for Debian).  The
# sid Release file may be past its Valid-Until date: the chroot's apt is
# told not to check it.
set -eu
umask 022

TOP=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${SH_SID_ROOT:-/var/tmp/sh-sid}
SUITE=sid
SID_TESTS=${SID_TESTS:-"t/basic.t t/changed.t t/encoding.t
t/edges.t t/config.t t/options.t t/identical.t t/content.t
t/budget.t t/cli.t t/replicate.t t/redis-hostile.t
t/replicate-auth.t t/listings.t"}
PKGS="gcc make pkg-config perl nginx nginx-dev libxml2-dev libpcre2-dev
libstemmer-dev libutf8proc-dev libxxhash-dev zlib1g-dev libcmocka-dev
libpsl-dev publicsuffix wget libhiredis-dev redis-server dpkg-dev"

die() { echo "sid: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, unshare)"
for c in debootstrap unshare chroot; do
    command -v "$c" >/dev/null 2>&1 \
        || die "$c missing (tools/deps.sh deb installs debootstrap)"
done

# The host's Debian mirror (one-line or deb822 sources), else Debian's.
host_mirror() {
    {
        [ -f /etc/apt/sources.list ] && awk \
            '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2 }' \
            /etc/apt/sources.list
        cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | awk '$1 == "URIs:" && $2 ~ /\/debian\/?$/ { print $2 }'
    } | head -n1
}
MIRROR=${SID_MIRROR:-$(host_mirror)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

in_chroot() {   # root command...
    local r=$1
    shift
    unshare --mount --pid --fork --mount-proc="$r/proc" \
        chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# ---- the chroot, made once ----
if [ ! -f "$ROOT/.ready" ]; then
    new="$ROOT.new"
    log="$ROOT.log"
    echo "sid: making the Debian unstable chroot $ROOT from $MIRROR" \
         "(once, a few minutes; log $log)"
    if [ ! -f "$new/.debootstrapped" ]; then
        rm -rf "$new"
        debootstrap --variant=minbase "$SUITE" "$new" "$MIRROR" \
            > "$log" 2>&1 || die "debootstrap failed, see $log"
        touch "$new/.debootstrapped"
    fi
    # no service may start inside (nginx's postinst would, on the host's
    # network)
    printf '#!/bin/sh\nexit 101\n' > "$new/usr/sbin/policy-rc.d"
    chmod 755 "$new/usr/sbin/policy-rc.d"
    echo 'Acquire::Check-Valid-Until "false";' \
        > "$new/etc/apt/apt.conf.d/99sh-valid-until"
    echo "deb $MIRROR $SUITE main" > "$new/etc/apt/sources.list"
    # shellcheck disable=SC2086
    in_chroot "$new" sh -c "apt-get update -qq && apt-get install -y -qq \
        --no-install-recommends $(echo $PKGS)" >> "$log" 2>&1 \
        || die "installing the build dependencies failed, see $log"
    touch "$new/.ready"
    rm -rf "$ROOT"
    mv "$new" "$ROOT"
fi

# ---- the source, fresh each run ----
SRC="$ROOT/opt/src"
rm -rf "$SRC"
mkdir -p "$SRC"
cd "$TOP"
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do
          [ -e "$f" ] && printf '%s\0' "$f"
      done \
    | tar -c --null -T - -f - | tar -x -C "$SRC"
# the tests' nginx workers run as nobody
chmod -R a+rX "$SRC"

# ---- build and test inside (SID_BUILD_ONLY=1: build only, for
# tools/sid-eval.sh) ----
if [ "${SID_BUILD_ONLY:-0}" = 1 ]; then
    in_chroot "$ROOT" /bin/bash -c 'cd /opt/src && make -s all' sid-build
    exit 0
fi
# shellcheck disable=SC2086
in_chroot "$ROOT" /bin/bash -c '
    set -eu
    cd /opt/src
    echo "sid: $(nginx -v 2>&1), libxml2 $(pkg-config --modversion libxml-2.0)"
    make -s all
    make -s unit
    SH_MODULE=$PWD/build/nginx/ngx_http_simhash_module.so \
    SH_CLI=$PWD/build/simhash prove '"$(echo $SID_TESTS)"'
' sid-run
echo "sid: built and tested under Debian unstable ($ROOT)"
