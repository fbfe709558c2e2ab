#!/bin/sh
# Install the Debian packages a make target needs, only those missing.
#   tools/deps.sh            build and test dependencies
#   tools/deps.sh eval       plus the HTML corpora used by `make eval`/`make bench`
#   tools/deps.sh fuzz       plus clang and libFuzzer (`make fuzz`)
#   tools/deps.sh stress     plus wrk (`make stress`)
#   tools/deps.sh deb        plus the Debian packaging tools (`make deb`)
# One list, one place: the README points here.  Run by root, it installs
# what is missing; run by anyone else, it names in one line what to
# install and fails (everything installed: it passes, root or not).
set -eu

# valgrind and gdb: the integration tests use both (t/11-valgrind.t,
# `make itest VALGRIND=1`, t/17-dead-writer.t stops a worker with gdb);
# wget: t/21-key-port.t crawls through the proxy with wget -r;
# libhiredis-dev: the module's replication; redis-server: its tests.
BUILD_PKGS="gcc make pkg-config perl nginx nginx-dev libxml2-dev libpcre2-dev
libstemmer-dev libutf8proc-dev libxxhash-dev zlib1g-dev libcmocka-dev
libssl-dev
valgrind gdb wget libhiredis-dev redis-server"
# manpages-dev, mandoc and man2html-base: the short-page corpus of `make eval`
# (the Linux manual pages rendered to HTML by two independent renderers);
# sphinx-doc, python-django-doc, python-scipy-doc, mkdocs-doc: sites whose
# index pages sit inside a navigation of the whole site (its hub part).
EVAL_PKGS="rust-doc python3.11-doc postgresql-doc-15 gnuplot-nox wrk
manpages-dev mandoc man2html-base
sphinx-doc python-django-doc python-scipy-doc mkdocs-doc"
FUZZ_PKGS="clang libclang-rt-14-dev"
STRESS_PKGS="wrk"
DEB_PKGS="debhelper dpkg-dev fakeroot lintian debootstrap"

want="$BUILD_PKGS"
case "${1:-}" in
    eval) want="$BUILD_PKGS $EVAL_PKGS" ;;
    fuzz) want="$BUILD_PKGS $FUZZ_PKGS" ;;
    stress) want="$BUILD_PKGS $STRESS_PKGS" ;;
    deb) want="$BUILD_PKGS $DEB_PKGS" ;;
    "") ;;
    *) echo "usage: $0 [eval|fuzz|stress|deb]" >&2; exit 2 ;;
esac

# dpkg-query answers for any user; only the installation needs root.
command -v dpkg-query >/dev/null 2>&1 || {
    echo "deps: no dpkg-query (not Debian?): install the equivalents of" \
         $want "then use make all and make check, which skip this" >&2
    exit 1
}

missing=""
for p in $want; do
    s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$s" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done

[ -z "$missing" ] && exit 0

# Not root: one line that says what to do, rather than a sudo password
# prompt in the middle of make, or apt-get failing on its lock files.
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing$missing; as root, run:" \
         "apt-get install --no-install-recommends$missing" >&2
    exit 1
fi

echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
