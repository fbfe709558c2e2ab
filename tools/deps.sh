#!/bin/sh
# Install the Debian packages a make target needs, only those missing.
#   tools/deps.sh            build and test dependencies
#   tools/deps.sh eval       plus the HTML corpora used by `make eval`/`make bench`
#   tools/deps.sh fuzz       plus clang and libFuzzer (`make fuzz`)
#   tools/deps.sh stress     plus wrk (`make stress`)
#   tools/deps.sh load       plus stress-ng (`make test-load`)
#   tools/deps.sh deb        plus the Debian packaging tools (`make deb`)
#   tools/deps.sh console    plus headless Chromium, its driver, Selenium
#                            and promtool (`make console-test`)
#   tools/deps.sh list [WHAT]  print the list (of the build, or of WHAT),
#                            install nothing (tools/chroot-test.sh installs
#                            it in a chroot)
# One list, one place: the README points here.  Run by root, it installs
# what is missing; run by anyone else, it names in one line what to
# install and fails (everything installed: it passes, root or not).
set -eu

# valgrind and gdb: the integration tests use both (t/valgrind.t,
# `make itest VALGRIND=1`, t/dead-writer.t stops a worker with gdb);
# wget: t/key-port.t crawls through the proxy with wget -r;
# libhiredis-dev: the module's replication; redis-server: its tests;
# libpsl-dev and publicsuffix: which hosts are one site (a DUST host alias
# joins only those; src/sh_site.h), publicsuffix the list Debian updates;
# ca-certificates: the CAs every example that fetches https trusts
# (/etc/ssl/certs/ca-certificates.crt; nginx -t fails without the file,
# which a minimal Debian lacks: the package depends on it too);
# libjansson-dev: `simhash explain` reads the node's JSON answer;
# iproute2 and nftables: t/cluster-partition.t cuts a node from a Redis
# master with a network namespace and a rule that drops packets (as root);
# libio-socket-ssl-perl: the test harness's commands to a Redis Cluster
# that speaks TLS only (t/cluster-tls.t).
BUILD_PKGS="gcc make pkg-config perl nginx nginx-dev libxml2-dev libpcre2-dev
libstemmer-dev libutf8proc-dev libxxhash-dev zlib1g-dev libcmocka-dev
libssl-dev libpsl-dev publicsuffix ca-certificates libjansson-dev
valgrind gdb wget libhiredis-dev redis-server iproute2 nftables
libio-socket-ssl-perl"
# manpages-dev, mandoc and man2html-base: the short-page corpus of `make eval`
# (the Linux manual pages rendered to HTML by two independent renderers);
# sphinx-doc, python-django-doc, python-scipy-doc, mkdocs-doc: sites whose
# index pages sit inside a navigation of the whole site (its hub part).
# python-sklearn-doc, python-pandas-doc, -flask-doc, -jinja2-doc,
# -setuptools-doc, -requests-doc, docutils-doc: the third DUST site
# (`make dust-eval SITE=3`, tools/dust-eval/gensite3.pl)
# python-pytest-doc, -celery-doc, -kombu-doc, -tornado-doc, -scrapy-doc,
# -pymongo-doc, -werkzeug-doc, -aiohttp-doc, -dask-doc, -gevent-doc,
# -pil-doc, -cryptography-doc, -click-doc, -distributed-doc, -xarray-doc:
# the fourth (`make dust-eval SITE=4`, tools/dust-eval/gensite4.pl)
EVAL_PKGS="rust-doc python3.11-doc postgresql-doc-15 gnuplot-nox wrk
python-sklearn-doc python-pandas-doc python-flask-doc python-jinja2-doc
python-setuptools-doc python-requests-doc docutils-doc
python-pytest-doc python-celery-doc python-kombu-doc python-tornado-doc
python-scrapy-doc python-pymongo-doc python-werkzeug-doc python-aiohttp-doc
python-dask-doc python-gevent-doc python-pil-doc python-cryptography-doc
python-click-doc python-distributed-doc python-xarray-doc
manpages-dev mandoc man2html-base
sphinx-doc python-django-doc python-scipy-doc mkdocs-doc"
FUZZ_PKGS="clang libclang-rt-14-dev"
STRESS_PKGS="wrk"
LOAD_PKGS="stress-ng"
DEB_PKGS="debhelper dpkg-dev fakeroot lintian debootstrap"
# the console (simhash_stats ?format=html) in a real browser, and
# promtool (in Debian's prometheus package) for the Prometheus output
CONSOLE_PKGS="chromium chromium-driver python3-selenium prometheus"

want="$BUILD_PKGS"
list=0
if [ "${1:-}" = list ]; then
    list=1
    shift
fi
case "${1:-}" in
    eval) want="$BUILD_PKGS $EVAL_PKGS" ;;
    fuzz) want="$BUILD_PKGS $FUZZ_PKGS" ;;
    stress) want="$BUILD_PKGS $STRESS_PKGS" ;;
    load) want="$BUILD_PKGS $LOAD_PKGS" ;;
    deb) want="$BUILD_PKGS $DEB_PKGS" ;;
    console) want="$BUILD_PKGS $CONSOLE_PKGS" ;;
    "") ;;
    *) echo "usage: $0 [eval|fuzz|stress|load|deb|console]" >&2; exit 2 ;;
esac

if [ $list = 1 ]; then
    # shellcheck disable=SC2086
    echo $want
    exit 0
fi

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

# Another apt-get or dpkg (unattended-upgrades, a second make) holds a
# lock (dpkg's, or the package lists' that `update` takes): wait for it,
# naming the process that holds it (apt says which), rather than fail at
# once or wait in silence inside apt-get.  apt-get itself is asked not to
# wait (Lock::Timeout=0): this loop does, and says so every 30 s.
#
# What apt-get prints goes to a log, shown only when it fails: the
# progress is read from its status descriptor (APT::Status-Fd, one
# machine-readable line per step), one line per package set up.
WAIT=${DEPS_LOCK_WAIT:-600}
POLL=${DEPS_LOCK_POLL:-5}
LOG=$(mktemp "${TMPDIR:-/tmp}/deps.XXXXXX")
trap 'rm -f "$LOG" "$LOG.rc"' EXIT

# pmstatus:PKG:PERCENT:WHAT and dlstatus:N:PERCENT:WHAT -> two lines a
# package (unpacked, installed), the download by quarters
progress() {
    awk -F: '
        $1 == "dlstatus" { p = int($3 / 25) * 25
                           if (p != dl) { dl = p
                               printf "deps: downloading, %d%%\n", p } }
        $1 == "pmstatus" { what = $4
                           for (i = 5; i <= NF; i++) what = what ":" $i
                           if (what != last && what ~ /^(Unpacking|Installed|Removing|Removed) /) {
                               last = what
                               printf "deps: [%3d%%] %s\n", $3, what } }
        { fflush() }' >&2
}

apt_get() {
    waited=0
    said=-1
    while :; do
        # (dash runs the EXIT trap in a pipeline's subshell too: not here;
        # and set -e would end it before its status is written)
        { trap - EXIT
          rc=0
          apt-get -o DPkg::Lock::Timeout=0 -o APT::Status-Fd=3 "$@" \
              3>&1 >"$LOG" 2>&1 || rc=$?
          echo "$rc" > "$LOG.rc"; } | progress
        [ "$(cat "$LOG.rc")" -ne 0 ] || return 0
        if ! grep -q -e "Could not get lock" -e "Unable to lock" "$LOG"; then
            tail -n 30 "$LOG" >&2
            echo "deps: apt-get $* failed (above: the end of its output)" >&2
            return 1
        fi
        # "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held
        # by process 4242 (apt-get)"
        lock=$(sed -n 's/.*Could not get lock \([^ ]*\)\. .*/\1/p' "$LOG" \
               | head -n 1)
        pid=$(sed -n 's/.*held by process \([0-9]*\).*/\1/p' "$LOG" \
              | head -n 1)
        who="another apt-get or dpkg"
        if [ -n "$pid" ]; then
            cmd=$(ps -o args= -p "$pid" 2>/dev/null | cut -c 1-70 || true)
            who="process $pid (${cmd:-$(sed -n 's/.*held by process [0-9]* (\([^)]*\)).*/\1/p' "$LOG" | head -n 1)})"
        fi
        if [ "$waited" -ge "$WAIT" ]; then
            echo "deps: the package lock ${lock:-} was still held after" \
                 "${WAIT}s by $who; try again when it is done" >&2
            return 1
        fi
        if [ "$said" -lt 0 ] || [ $((waited - said)) -ge 30 ]; then
            if [ "$said" -lt 0 ]; then
                echo "deps: waiting for $who, which holds the package lock" \
                     "${lock:-}, to finish (up to ${WAIT}s)" >&2
            else
                echo "deps: still waiting for $who: ${waited}s so far" >&2
            fi
            said=$waited
        fi
        sleep "$POLL"
        waited=$((waited + POLL + 1))
    done
}
echo "deps: updating the package lists" >&2
apt_get update -qq
# shellcheck disable=SC2086
apt_get install -y -qq --no-install-recommends $missing
echo "deps: installed$missing" >&2
