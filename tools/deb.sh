#!/bin/bash
# Build the Debian packages (make deb):
#   tools/deb.sh [BUILD]
#
# For each release of DEB_SUITES (default "bookworm trixie": Debian 12 and
# Debian 13), in BUILD/deb/SUITE:
#
#   src/    a copy of the source tree; dpkg-buildpackage runs here
#   *.deb   libnginx-mod-http-simhash, simhash-tools (+ -dbgsym)
#
# A package is built on the release it is for: against that release's
# nginx-dev (whose dh_nginx writes the dependency on the nginx ABI that
# release's nginx provides, nginx-abi-*) and its libraries.  The host's
# own release is built here; another in the chroot of
# tools/chroot-test.sh SUITE (/var/tmp/sh-SUITE, made once; root only),
# BUILD/deb/SUITE mounted into it.
#
# Out of tree on purpose: dpkg-buildpackage writes debian/tmp, debian/<pkg>,
# obj-*/ and debian/build-cli inside the tree it builds, and others keep
# working in this one; the developer's build/ is never touched.
#
# What is copied: by default the working tree as git sees it (tracked and
# untracked files, .gitignore honoured, so build/ stays out), uncommitted
# edits included, so that `make deb` packages what `make` builds.
# DEB_FROM=HEAD copies the last commit instead (git archive), for a package
# that matches a commit exactly.
#
# Then lintian of the same release, when installed (tools/deps.sh deb
# installs it on the host; the chroots have it): its errors fail the
# build; warnings are printed.  Then tools/deb-test.sh, which installs the
# packages into a clean chroot of their release and checks them (root
# only: a non-root build stops before it, saying so); DEB_TEST=0 skips it.
# Each step prints a line as it starts, with the time since the start.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
SUITES=${DEB_SUITES:-bookworm trixie}
# every core for the compiler (nginx's configure and make, the tool, the
# unit tests), unless the caller says otherwise
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=$(nproc 2>/dev/null || echo 2)}
HOST_SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

start=$SECONDS
say() {
    echo "deb: $suite: [$(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s] $*"
}
die() { echo "deb: $suite: $*" >&2; exit 1; }

# copy_tree DIR: the source as described above
copy_tree() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    cd "$TOP"
    if [ "${DEB_FROM:-}" = HEAD ]; then
        git archive --format=tar HEAD | tar -x -C "$dir"
        say "source is commit $(git rev-parse --short HEAD)"
    else
        # ls-files lists deleted-but-tracked files too: copy only what exists
        git ls-files -z --cached --others --exclude-standard \
            | while IFS= read -r -d '' f; do
                  [ -e "$f" ] && printf '%s\0' "$f"
              done \
            | tar -c --null -T - -f - | tar -x -C "$dir"
        if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
            say "the working tree has uncommitted changes; they are" \
                "packaged (DEB_FROM=HEAD packages the last commit)"
        fi
    fi
    # the chroot's builder reads it as root, but lintian and the tests
    # run as others too
    chmod -R a+rX "$dir"
}

# in_suite COMMAND: COMMAND (a bash script) in BUILD/deb/SUITE, on the
# host for the host's release, else in the release's chroot with that
# directory mounted on /opt/deb
in_suite() {
    if [ "$suite" = "$HOST_SUITE" ]; then
        (cd "$OUT" && bash -c "$1")
    else
        local root=/var/tmp/sh-$suite
        unshare --mount --pid --fork --mount-proc="$root/proc" /bin/bash -c '
            set -e
            mkdir -p "$1/opt/deb"
            mount --bind "$2" "$1/opt/deb"
            chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                HOME=/root LANG=C.UTF-8 DEB_BUILD_OPTIONS="$4" \
                /bin/bash -c "cd /opt/deb && $3"
        ' in-suite "$root" "$OUT" "$1" "$DEB_BUILD_OPTIONS"
    fi
}

build_suite() {
    start=$SECONDS
    OUT="$BUILD/deb/$suite"
    mkdir -p "$OUT"
    # results of an earlier run would be mistaken for this one's
    rm -f "$OUT"/*.deb "$OUT"/*.ddeb "$OUT"/*.changes "$OUT"/*.buildinfo

    if [ "$suite" != "$HOST_SUITE" ]; then
        [ "$(id -u)" -eq 0 ] || die "the $suite packages are built in a" \
            "$suite chroot: root only (DEB_SUITES=$HOST_SUITE builds this" \
            "release's alone)"
        say "the $suite chroot /var/tmp/sh-$suite (made once, minutes)"
        CHROOT_PREPARE_ONLY=1 "$TOP/tools/chroot-test.sh" "$suite"
    fi
    say "copying the tree to $OUT/src"
    copy_tree "$OUT/src"

    # -b: binary packages only (no orig tarball needed); -us -uc:
    # unsigned.  The log is kept: dpkg-buildpackage is long-winded.
    say "dpkg-buildpackage -us -uc -b (nginx $(in_suite \
        'sed -n "s/^#define NGINX_VERSION *\"\(.*\)\"/\1/p" \
         /usr/share/nginx/src/src/core/nginx.h'); log $OUT/build.log)"
    # What it is at is shown as it goes, one line a step: dh's own
    # "   dh_auto_build ..." lines, the overrides', `make unit`'s lines,
    # every 25 files compiled (tail ends when dpkg-buildpackage does)
    : > "$OUT/build.log"
    in_suite 'cd src && dpkg-buildpackage -us -uc -b' \
        > "$OUT/build.log" 2>&1 &
    local pid=$! rc=0 cc=0 line
    while IFS= read -r line; do
        case "$line" in
            "   dh_"*|"   debian/rules "*)
                # shellcheck disable=SC2086
                set -- $line
                say "    $1${2:+ $2}" ;;
            "ok    "*|"FAIL  "*)
                say "    unit $line" ;;
            "cc "*" -c "*|"gcc "*" -c "*)
                cc=$((cc + 1))
                [ $((cc % 25)) -ne 0 ] || say "    $cc files compiled" ;;
        esac
    done < <(tail -n +1 -f --pid="$pid" "$OUT/build.log" 2>/dev/null)
    wait "$pid" || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$OUT/build.log" >&2
        die "dpkg-buildpackage failed, see $OUT/build.log"
    fi
    say "built: $(cd "$OUT" && echo *.deb)"
    say "depends: $(dpkg-deb -f "$OUT"/libnginx-mod-http-simhash_*.deb \
                    Depends | grep -o 'nginx-abi-[^ ,]*')"

    if in_suite 'command -v lintian' >/dev/null 2>&1; then
        say "lintian ($(in_suite 'lintian --version'))"
        # --fail-on error: a lintian error is a packaging bug worth
        # stopping for; warnings and info are reported, not fatal.  (its
        # stderr only says that root should not run it)
        in_suite 'lintian --fail-on error --display-info \
            --tag-display-limit 0 ngx-simhash_*.changes \
            > lintian.log 2> lintian.err' || {
            cat "$OUT/lintian.log" "$OUT/lintian.err" >&2
            die "lintian found errors"
        }
        if [ -s "$OUT/lintian.log" ]; then
            say "lintian (also in $OUT/lintian.log):"
            sed 's/^/    /' "$OUT/lintian.log"
        else
            say "lintian: clean"
        fi
    else
        say "lintian not installed, not run (tools/deps.sh deb installs it)"
    fi

    if [ "${DEB_TEST:-1}" = 0 ]; then
        say "DEB_TEST=0: the install test is not run"
    elif [ "$(id -u)" -ne 0 ]; then
        # the packages are built (fakeroot); only the test needs root
        say "the install test needs root: sudo tools/deb-test.sh" \
            "$BUILD $suite" >&2
    else
        say "tools/deb-test.sh: install and test in a clean $suite"
        "$TOP/tools/deb-test.sh" "$BUILD" "$suite"
    fi
    say "done"
}

for suite in $SUITES; do
    build_suite
done
