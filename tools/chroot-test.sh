#!/bin/bash
# Build and test in another Debian release (make trixie, make sid):
#   tools/chroot-test.sh SUITE [BUILD]
#
# SUITE is a Debian suite the mirror serves: trixie (Debian 13, stable:
# nginx 1.26, libxml2 2.9.14 under a 2.12.7 version name) or sid
# (unstable: the next nginx and libxml2).  What a user of that release
# gets: a debootstrap'ed SUITE (minbase) with the release's nginx,
# nginx-dev, libxml2-dev and the other build and test dependencies
# (tools/deps.sh's list, plus git and openssl for the tests that use
# them, plus the packaging tools for tools/deb.sh), kept in
# /var/tmp/sh-SUITE (SH_CHROOT_ROOT overrides it; outside the tree: about
# 900 MB; made once, a few minutes, then reused).  Each run copies the
# working tree as git sees it (as tools/deb.sh does) to /opt/src inside,
# keeping the build directory of the last run there (CHROOT_CLEAN=1: a
# build from nothing), and there runs what `make test` runs:
#
#   1. make all: the library, the CLI and the module, against the
#      release's nginx and libxml2 (the versions are printed);
#   2. make unit: the unit tests, and with them every fuzz corpus
#      (fuzz/seeds, fuzz/regressions) as regression inputs
#      (tests/unit/test_fuzz_regressions.c);
#   3. make tree: the structural checks;
#   4. make itest: the whole of t/ against the module built there, four
#      files at a time.  CHROOT_TESTS="t/a.t t/b.t" runs only those.
#
# As root only (debootstrap, chroot, unshare).  Mounts (/proc) live in a
# private mount namespace and vanish with it.  SH_CHROOT_MIRROR overrides
# the Debian mirror (default: the one the host's apt uses for Debian).  The
# Release file of a suite may be past its Valid-Until date: the chroot's
# apt is told not to check it.  CHROOT_BUILD_ONLY=1: make the chroot,
# copy the tree, build (CHROOT_BUILD_TARGET, default all), nothing else
# (tools/chroot-eval.sh);
# CHROOT_PREPARE_ONLY=1: make the chroot, nothing else (tools/deb.sh).
# CHROOT_SRC: where the tree goes inside (default /opt/src; the
# evaluation uses its own, so that it can run beside make SUITE).
set -eu
umask 022

SUITE=${1:-}
[ -n "$SUITE" ] || { echo "usage: $0 SUITE [BUILD]" >&2; exit 2; }
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${SH_CHROOT_ROOT:-/var/tmp/sh-$SUITE}
# git: t/demo.t copies the files git knows; openssl: t/https.t's CA;
# python3: make tree's layer check; build-essential and the packaging
# tools (dpkg-buildpackage checks for the former): make deb builds
# the release's packages in this chroot
PKGS="$("$TOP/tools/deps.sh" list deb) git openssl python3 build-essential
dh-sequence-nginx"
PKGS=$(echo "$PKGS" | tr ' ' '\n' | grep -vx debootstrap | tr '\n' ' ')

say() { echo "$SUITE: $*"; }
die() { echo "$SUITE: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, unshare)"
for c in debootstrap unshare chroot; do
    command -v "$c" >/dev/null 2>&1 \
        || die "$c missing (tools/deps.sh deb installs debootstrap)"
done

MIRROR=${SH_CHROOT_MIRROR:-$(sh "$TOP/tools/debian-mirror.sh")}

in_chroot() {   # root command...
    local r=$1
    shift
    unshare --mount --pid --fork --mount-proc="$r/proc" \
        chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# ---- the chroot, made once; the package list again when it grew ----
new="$ROOT.new"
log="$ROOT.log"
if [ ! -f "$ROOT/.ready" ]; then
    say "making the chroot $ROOT from $MIRROR (once, a few minutes;" \
        "log $log)"
    if [ ! -f "$new/.debootstrapped" ]; then
        rm -rf "$new"
        say "debootstrap --variant=minbase $SUITE"
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
    rm -f "$new/.packages"
    mv "$new" "$ROOT"
fi
if [ "$(cat "$ROOT/.packages" 2>/dev/null)" != "$PKGS" ]; then
    say "apt-get install the build and test dependencies (log $log)"
    # shellcheck disable=SC2086
    in_chroot "$ROOT" sh -c "apt-get update -qq && apt-get install -y -qq \
        --no-install-recommends $(echo $PKGS)" >> "$log" 2>&1 \
        || die "installing the build dependencies failed, see $log"
    echo "$PKGS" > "$ROOT/.packages"
    touch "$ROOT/.ready"
fi

[ "${CHROOT_PREPARE_ONLY:-0}" = 1 ] && exit 0

# ---- the source, fresh each run; the build kept (CHROOT_CLEAN=1: not)
# as the host's build/ is: tar keeps the files' times, so make rebuilds
# what changed ----
IN_SRC=${CHROOT_SRC:-/opt/src}
SRC="$ROOT$IN_SRC"
KEEP="$SRC.build-kept"
rm -rf "$KEEP"
if [ "${CHROOT_CLEAN:-0}" != 1 ] && [ -d "$SRC/build" ]; then
    mv "$SRC/build" "$KEEP"
fi
rm -rf "$SRC"
mkdir -p "$SRC"
[ -d "$KEEP" ] && mv "$KEEP" "$SRC/build"
cd "$TOP"
git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do
          [ -e "$f" ] && printf '%s\0' "$f"
      done \
    | tar -c --null -T - -f - | tar -x -C "$SRC"
# the tests' nginx workers run as nobody
chmod -R a+rX "$SRC"

if [ "${CHROOT_BUILD_ONLY:-0}" = 1 ]; then
    target=${CHROOT_BUILD_TARGET:-all}
    say "make $target (CHROOT_BUILD_ONLY)"
    in_chroot "$ROOT" /bin/bash -c 'cd "$1" && make -s "$2"' \
        "$SUITE-build" "$IN_SRC" "$target"
    exit 0
fi

# ---- build and test inside, a line at each step ----
start=$SECONDS
# shellcheck disable=SC2016
in_chroot "$ROOT" /bin/bash -c '
    set -eu
    suite=$1 tests=$2
    step() { echo "$suite: [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }
    cd "$3"
    # a git checkout of the copy, for t/demo.t (the files git knows)
    git init -q . && git add -A
    step "$(nginx -v 2>&1), libxml2 $(pkg-config --modversion \
        libxml-2.0) (package $(dpkg-query -W -f="\${Version}" libxml2-dev))"
    step "make all"
    make -s all
    step "make unit"
    make -s unit
    step "make tree"
    make -s tree
    if [ -n "$tests" ]; then
        step "prove $tests"
        SH_MODULE=$PWD/build/nginx/ngx_http_simhash_module.so \
        SH_CLI=$PWD/build/simhash SH_REPLAY=$PWD/build/dust-replay \
            prove --timer -j4 $tests
    else
        step "make itest: the whole of t/"
        make -s itest
    fi
    step "done"
' "$SUITE-run" "$SUITE" "${CHROOT_TESTS:-}" "$IN_SRC"
say "built and tested in $ROOT in $(( (SECONDS - start) / 60 ))m" \
    "$(( (SECONDS - start) % 60 ))s"
