#!/bin/bash
# Build the Debian packages (make deb):
#   tools/deb.sh [BUILD]
#
#   BUILD/deb/src/    a copy of the source tree; dpkg-buildpackage runs here
#   BUILD/deb/*.deb   libnginx-mod-http-simhash, simhash-tools (+ -dbgsym)
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
# Then lintian, when installed (tools/deps.sh deb installs it): its errors
# fail the build; warnings are printed.  Then tools/deb-test.sh, which
# installs the packages into a clean Debian 12 chroot and checks them
# (root only: a non-root build stops before it, saying so); DEB_TEST=0
# skips it.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
OUT="$BUILD/deb"
SRC="$OUT/src"

cd "$TOP"
rm -rf "$SRC"
mkdir -p "$SRC"
# results of an earlier run would be mistaken for this one's
rm -f "$OUT"/*.deb "$OUT"/*.ddeb "$OUT"/*.changes "$OUT"/*.buildinfo

if [ "${DEB_FROM:-}" = HEAD ]; then
    git archive --format=tar HEAD | tar -x -C "$SRC"
    echo "deb: source is commit $(git rev-parse --short HEAD)"
else
    # ls-files lists deleted-but-tracked files too: copy only what exists
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do
              [ -e "$f" ] && printf '%s\0' "$f"
          done \
        | tar -c --null -T - -f - | tar -x -C "$SRC"
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
        echo "deb: the working tree has uncommitted changes; they are" \
             "packaged (DEB_FROM=HEAD packages the last commit)" >&2
    fi
fi

cd "$SRC"
# -b: binary packages only (no orig tarball needed); -us -uc: unsigned.
# The log is kept: dpkg-buildpackage is long-winded.  What it is at is
# shown as it goes, one line a step (the dh commands, the unit tests'
# summaries), with the time since the start: minutes in all, nginx's
# configure, the module, the tool, the unit tests.
START=$SECONDS
stamp() { printf '%dm%02ds' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)); }
echo "deb: dpkg-buildpackage (a few minutes; its log: $OUT/build.log)"
: > "$OUT/build.log"
dpkg-buildpackage -us -uc -b > "$OUT/build.log" 2>&1 &
BUILD_PID=$!
# tail ends when dpkg-buildpackage does (--pid); the steps: dh's own
# "   dh_auto_build ..." lines, the overrides', `make unit`'s lines
tail -n +1 -f --pid="$BUILD_PID" "$OUT/build.log" 2>/dev/null \
    | { cc=0
        while IFS= read -r line; do
          case "$line" in
              "   dh_"*|"   debian/rules "*)
                  set -- $line
                  echo "deb: [$(stamp)] $1${2:+ $2}" ;;
              "ok    "*|"FAIL  "*)
                  echo "deb: [$(stamp)]     unit $line" ;;
              "cc "*" -c "*|"gcc "*" -c "*)
                  cc=$((cc + 1))
                  [ $((cc % 25)) -ne 0 ] \
                      || echo "deb: [$(stamp)]     $cc files compiled" ;;
          esac
        done; }
rc=0
wait "$BUILD_PID" || rc=$?
if [ "$rc" -ne 0 ]; then
    tail -n 40 "$OUT/build.log" >&2
    echo "deb: dpkg-buildpackage failed, see $OUT/build.log" >&2
    exit 1
fi
echo "deb: [$(stamp)] packages built"
cd "$OUT"

changes=$(ls "$OUT"/ngx-simhash_*.changes)
if command -v lintian >/dev/null 2>&1; then
    echo "deb: [$(stamp)] lintian (a minute or so)"
    # --fail-on error: a lintian error is a packaging bug worth stopping
    # for; warnings and info are reported, not fatal.
    # (its stderr only says that root should not run it)
    lintian --fail-on error --display-info --tag-display-limit 0 "$changes" \
        > "$OUT/lintian.log" 2> "$OUT/lintian.err" || {
        cat "$OUT/lintian.log" "$OUT/lintian.err" >&2
        echo "deb: lintian found errors" >&2
        exit 1
    }
    if [ -s "$OUT/lintian.log" ]; then
        echo "deb: lintian (also in $OUT/lintian.log):"
        sed 's/^/    /' "$OUT/lintian.log"
    else
        echo "deb: lintian: clean"
    fi
else
    echo "deb: lintian not installed, not run (tools/deps.sh deb installs it)"
fi

echo "deb: built"
for f in "$OUT"/*.deb "$OUT"/*.ddeb; do
    [ -e "$f" ] && echo "    $f"
done

if [ "${DEB_TEST:-1}" = 0 ]; then
    echo "deb: DEB_TEST=0: the install test is not run"
elif [ "$(id -u)" -ne 0 ]; then
    # the packages are built (fakeroot); only the test needs root
    echo "deb: the install test needs root: sudo tools/deb-test.sh $BUILD" >&2
else
    "$TOP/tools/deb-test.sh" "$BUILD"
fi
