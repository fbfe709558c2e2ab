#!/bin/bash
# Install the built packages into a clean Debian release and check them:
#   tools/deb-test.sh [BUILD [SUITE]]     (as root; tools/deb.sh runs it)
#
# SUITE: bookworm (Debian 12, the default) or trixie (Debian 13); the
# packages are those tools/deb.sh built for it, in BUILD/deb/SUITE.
# "Clean Debian with nginx" is a debootstrap'ed SUITE (minbase) with
# Debian's nginx installed, cached in BUILD/deb/SUITE/chroot-base (about
# 45 s to make, once).  Each run copies it to BUILD/deb/SUITE/chroot-test
# and, inside:
#
#   1. apt-get install ./libnginx-mod-http-simhash_*.deb, then the tool's
#      package: the command the issue names, dependencies from the mirror;
#   2. checks what the package set up (modules-enabled link, snapshot
#      directory, man pages), nginx -t with the stock nginx.conf and then
#      with every example of conf-examples/ in conf.d/, starts nginx and
#      sends pages through reverse-proxy-tag.conf to a local origin (new,
#      duplicate, unchanged; X-Simhash equal to `simhash fingerprint`),
#      reads the statistics;
#   3. runs the integration suite t/ against the installed module and tool,
#      four files at a time (DEB_TEST_JOBS), as `make test` does;
#   4. removes and purges the module package;
#   5. in a second copy of the base (no package), the from-source
#      installation as docs/module.md writes it: its commands, read from
#      the document ("Installation on Debian": tools/deps.sh, make install,
#      the example copied into conf.d, nginx -t), run as written from a
#      copy of the source tree, then every example in conf.d and nginx -t.
#
# Steps 2-4 run in a network namespace of their own (only a loopback), so
# the chroot's nginx can listen on 80 and 3128 without touching the host's
# ports and sends nothing outside; steps 1 and 5 need the mirror.  Mounts (/proc)
# live in a private mount namespace and vanish with it.
#
# Prints one "ok"/"not ok" line per check and "N passed, M failed" at the
# end; exits non-zero if any check failed.  Log: BUILD/deb/deb-test.log.
# DEB_TEST_MIRROR overrides the Debian mirror (default: the host's).
# DEB_TEST_SOURCE=0 skips step 5.
# DEB_TEST_WAIT (120 s): how long a check waits for nginx to listen or to
# exit before it fails, saying what it waited for.
set -eu
# what a Debian system has: files and directories readable by nginx's
# workers (www-data), whatever the caller's umask
umask 022

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
SUITE=${2:-bookworm}
OUT="$BUILD/deb/$SUITE"
BASE="$OUT/chroot-base"
ROOT="$OUT/chroot-test"
LOG="$OUT/deb-test.log"
case "$SUITE" in
    bookworm) RELEASE="Debian 12" ;;
    trixie) RELEASE="Debian 13" ;;
    *) RELEASE="Debian $SUITE" ;;
esac
JOBS=${DEB_TEST_JOBS:-4}
WAIT=${DEB_TEST_WAIT:-120}

die() { echo "deb-test: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, unshare)"
for c in debootstrap unshare chroot ip; do
    command -v "$c" >/dev/null 2>&1 \
        || die "$c missing (tools/deps.sh deb installs debootstrap)"
done

module_deb=$(ls "$OUT"/libnginx-mod-http-simhash_*.deb 2>/dev/null | head -n1)
tools_deb=$(ls "$OUT"/simhash-tools_*.deb 2>/dev/null | head -n1)
[ -n "$module_deb" ] && [ -n "$tools_deb" ] \
    || die "no packages in $OUT: run make deb (or tools/deb.sh) first"

# The mirror the host's apt uses for a suite (one-line or deb822 sources),
# so that the chroot reaches the same place as the host does.
mirror_for() {
    local suite=$1 f
    {
        [ -f /etc/apt/sources.list ] && awk -v s="$suite" \
            '$1 == "deb" && $2 !~ /^\[/ && $3 == s { print $2 }' \
            /etc/apt/sources.list
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            awk -v s="$suite" 'BEGIN { RS = "" } {
                uri = ""; deb = 0; hit = 0
                n = split($0, l, "\n")
                for (i = 1; i <= n; i++) {
                    m = split(l[i], w, /[ \t]+/)
                    if (w[1] == "URIs:") uri = w[2]
                    if (w[1] == "Types:")
                        for (j = 2; j <= m; j++) if (w[j] == "deb") deb = 1
                    if (w[1] == "Suites:")
                        for (j = 2; j <= m; j++) if (w[j] == s) hit = 1
                }
                if (deb && hit && uri != "") print uri
            }' "$f"
        done
    } 2>/dev/null | head -n1
}
MIRROR=${DEB_TEST_MIRROR:-$(mirror_for "$SUITE")}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY=$(mirror_for "$SUITE-security")
SECURITY=${SECURITY:-http://deb.debian.org/debian-security}

# Run a command in the chroot: private mount and pid namespaces with their
# own /proc.  `in_chroot_offline` adds a network namespace with only lo.
in_chroot() {
    unshare --mount --pid --fork --mount-proc="$ROOT/proc" \
        chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
in_chroot_offline() {
    unshare --net --mount --pid --fork --mount-proc="$ROOT/proc" \
        /bin/sh -c 'ip link set lo up && exec "$@"' sh \
        chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

: > "$LOG"

# ---- the cached base: SUITE minbase + nginx ----
if [ ! -f "$BASE/.ready" ]; then
    echo "deb-test: making the $RELEASE ($SUITE) chroot $BASE from" \
         "$MIRROR (once, about a minute)"
    rm -rf "$BASE" "$BASE.new"
    debootstrap --variant=minbase "$SUITE" "$BASE.new" "$MIRROR" \
        >> "$LOG" 2>&1 || die "debootstrap failed, see $LOG"
    # Services must not start inside the chroot: nginx's postinst would
    # start it on the host's network.
    printf '#!/bin/sh\nexit 101\n' > "$BASE.new/usr/sbin/policy-rc.d"
    chmod 755 "$BASE.new/usr/sbin/policy-rc.d"
    # what an installed Debian has: updates and security too
    cat > "$BASE.new/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY $SUITE-security main
EOF
    echo 'Acquire::Check-Valid-Until "false";' \
        > "$BASE.new/etc/apt/apt.conf.d/99sh-valid-until"
    ROOT="$BASE.new" in_chroot sh -c \
        'apt-get update -qq && apt-get install -y -qq --no-install-recommends nginx' \
        >> "$LOG" 2>&1 || die "installing nginx in the chroot failed, see $LOG"
    touch "$BASE.new/.ready"
    mv "$BASE.new" "$BASE"
fi

# ---- a fresh copy for this run ----
rm -rf "$ROOT"
cp -a --reflink=auto "$BASE" "$ROOT"
# the chroot's / is the system's root directory: 0755, even when the
# chroot was made under a umask of 077
chmod 755 "$ROOT"
mkdir -p "$ROOT/root/debs" "$ROOT/opt/src/tests" "$ROOT/opt/src/tools"
cp "$module_deb" "$tools_deb" "$ROOT/root/debs/"
# What the checks and t/ read: the suite and its fixtures, the script that
# says where the suite's nginx prefixes go (tools/nginx-tmpdir.sh), a test
# page; t/examples.t reads ../conf-examples, here the examples the
# package installed.  They come from the tree the packages were built from
# (BUILD/deb/src, written by tools/deb.sh), so that tests and package are
# of one version even while the working tree moves on.
SRC="$OUT/src"
[ -d "$SRC/t" ] || SRC="$TOP"
cp -a "$SRC/t" "$ROOT/opt/src/"
cp -a "$SRC/tests/fixtures" "$ROOT/opt/src/tests/"
cp -a "$SRC/tools/nginx-tmpdir.sh" "$ROOT/opt/src/tools/"
ln -s /usr/share/doc/libnginx-mod-http-simhash/examples \
    "$ROOT/opt/src/conf-examples"
cp "$SRC/t/fixtures/site/sourdough.html" "$ROOT/root/page.html"

# For step 5: another copy of the base, the source tree without what
# dpkg-buildpackage left in it, and the same check.sh (below).
ROOT_SRC="$OUT/chroot-src"
rm -rf "$ROOT_SRC"
cp -a --reflink=auto "$BASE" "$ROOT_SRC"
chmod 755 "$ROOT_SRC"
mkdir -p "$ROOT_SRC/opt/ngx_simhash"
(cd "$SRC" && tar cf - --exclude='./obj-*' --exclude=./debian/tmp \
     --exclude='./debian/build-*' --exclude=./build --exclude=./build-asan \
     --exclude='./debian/libnginx-mod-http-simhash' \
     --exclude='./debian/simhash-tools' --exclude='./debian/.debhelper' .) \
    | (cd "$ROOT_SRC/opt/ngx_simhash" && tar xf -)

cat > "$ROOT/root/check.sh" <<'CHECK'
#!/bin/bash
# Runs inside the chroot; $1 is the step.  One "ok"/"not ok" line a check.
# No set -e: a failed check is reported and the next ones still run.
set -u
ok()     { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
check()  { local d=$1; shift; if "$@" >/tmp/check.out 2>&1; then ok "$d";
           else not_ok "$d"; sed 's/^/#   /' /tmp/check.out; fi; }
# await WHAT CMD...: until CMD succeeds, polled every 0.05 s, up to one
# generous limit (DEB_TEST_WAIT, 120 s) whose expiry says what was awaited
# (was: 50 steps of 0.1 s, after which the next checks ran regardless).
await()  { local what=$1 end=$((SECONDS + ${DEB_TEST_WAIT:-120})); shift
           until "$@" 2>/dev/null; do
               if [ "$SECONDS" -ge "$end" ]; then
                   not_ok "gave up waiting for $what"; return 1
               fi
               sleep 0.05
           done; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# GET through a port with bash's /dev/tcp: no curl in a minimal system.
get() {     # port host path
    local r
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$2" >&3
    r=$(timeout "${DEB_TEST_WAIT:-120}" cat <&3 | tr -d '\r')
    exec 3<&-
    printf '%s\n' "$r"
}
header() {  # response name
    printf '%s\n' "$1" | sed -n '/^$/q; s/^'"$2"': //Ip' | head -n1
}
no_warning() {  # nginx -t without [warn], [emerg], [alert]
    local out
    out=$(nginx -t 2>&1); local rc=$?
    echo "$out"
    [ $rc -eq 0 ] && ! printf '%s' "$out" | grep -q '\[\(warn\|emerg\|alert\)\]'
}

case "$1" in
install)
    cd /root/debs || exit 1
    apt-get update -qq >/dev/null 2>&1
    check "apt-get install ./libnginx-mod-http-simhash_*.deb" \
        apt-get install -y -q ./libnginx-mod-http-simhash_*.deb
    check "apt-get install ./simhash-tools_*.deb" \
        apt-get install -y -q ./simhash-tools_*.deb
    # for t/ (Test::More, HTTP::Tiny, JSON::PP) and the crawls through the
    # examples (wget; openssl for t/https.t's CA); not needed by the
    # package
    check "apt-get install perl wget openssl (for t/ and the crawls)" \
        apt-get install -y -q --no-install-recommends perl wget openssl
    ;;

checks)
    link=/etc/nginx/modules-enabled/50-mod-http-simhash.conf
    check "modules-enabled link to modules-available/mod-http-simhash.conf" \
        test "$(readlink $link)" = \
             /usr/share/nginx/modules-available/mod-http-simhash.conf
    check "the link loads the module" \
        grep -qx 'load_module modules/ngx_http_simhash_module.so;' $link
    check "/var/lib/nginx/simhash exists, www-data, 0750" \
        test "$(stat -c '%U %a' /var/lib/nginx/simhash)" = "www-data 750"
    check "man pages simhash(1) and ngx_http_simhash_module(5)" \
        test -f /usr/share/man/man1/simhash.1.gz \
          -a -f /usr/share/man/man5/ngx_http_simhash_module.5.gz
    check "simhash --help" simhash --help
    check "nginx -t: stock nginx.conf with the module, no warning" no_warning

    ex=/usr/share/doc/libnginx-mod-http-simhash/examples
    for f in "$ex"/*.conf; do
        case "${f##*/}" in mod-*) continue ;; esac   # load_module snippet
        cp "$f" "/etc/nginx/conf.d/simhash-${f##*/}"
    done
    check "nginx -t: every example in conf.d, no warning" no_warning

    # reverse-proxy-tag.conf proxies www.example.org to 127.0.0.1:8080
    mkdir -p /srv/site
    cp /root/page.html /srv/site/a.html
    cp /root/page.html /srv/site/copy.html
    chmod -R a+rX /srv/site
    cat > /etc/nginx/conf.d/zz-origin.conf <<'EOF'
server { listen 127.0.0.1:8080; root /srv/site; }
EOF
    check "nginx starts" nginx
    # nginx opens every listening socket of the configuration at once,
    # before it forks: one of them answering is all of them
    await "nginx to listen on port 80" listening 80

    want=$(simhash fingerprint /srv/site/a.html | cut -f1)
    r=$(get 80 www.example.org /a.html)
    check "a page: new" test "$(header "$r" X-Simhash-Status)" = new
    check "X-Simhash = simhash fingerprint ($want)" \
        test "$(header "$r" X-Simhash)" = "$want"
    # the example says `simhash_reveal status`: a duplicate, and no more
    # (not which page it copies, nor how close: the public are its clients)
    r=$(get 80 www.example.org /copy.html)
    check "its copy: duplicate, the original not named (simhash_reveal status)" \
        test "$(header "$r" X-Simhash-Status)|$(header "$r" X-Simhash-Duplicate-Of)|$(header "$r" X-Simhash-Distance)" \
           = "duplicate||"
    r=$(get 80 www.example.org /a.html?utm_source=x)
    check "a re-fetch (query string not in the key): unchanged" \
        test "$(header "$r" X-Simhash-Status)" = unchanged
    r=$(get 9145 localhost /simhash)
    check "statistics (JSON): zone site, 1 entry" \
        grep -q '"site":{[^}]*"entries":1,' <<<"$r"
    r=$(get 9145 localhost '/simhash?format=prometheus')
    check "statistics (Prometheus)" \
        grep -q '^simhash_entries{zone="site"} 1$' <<<"$r"

    # every forward proxy of the examples, as shipped: a wget crawl of the
    # origin (index -> a, copy: the copy is another path, so even drop
    # mode passes it), and a request naming the proxy refused
    check "postinst wrote /etc/nginx/simhash-resolver.conf" \
        grep -q '^resolver ' /etc/nginx/simhash-resolver.conf
    printf '<html><body><p>%s</p><a href="a.html">a</a> <a href="/copy.html">c</a></body></html>\n' \
        "$(sed 's/<[^>]*>//g' /root/page.html | tr -s ' \n' ' ' | cut -c1-2000)" \
        > /srv/site/index.html
    chmod a+r /srv/site/index.html
    for port in 3128 3129 3130 3131; do
        # (wget's exit status counts the page's dead links: not ours)
        check "wget -r through the example on :$port: every page" \
            sh -c "cd /tmp; http_proxy=http://127.0.0.1:$port wget -q -r -l 2 \
                   -P /tmp/crawl-$port http://127.0.0.1:8080/index.html;
                   test -s /tmp/crawl-$port/127.0.0.1:8080/a.html &&
                   test -s /tmp/crawl-$port/127.0.0.1:8080/copy.html"
        r=$(get $port 127.0.0.1:$port /a.html)
        check "a request naming the proxy on :$port: 508, no loop" \
            grep -q '^HTTP/1.1 508 ' <<<"$r"
    done
    r=$(get 3126 127.0.0.1:3126 /simhash-stats)
    check "forward-proxy.conf: the counters on their own port 3126" \
        grep -q '"crawl":{' <<<"$r"
    check "nginx stops" nginx -s quit
    await "nginx to remove /run/nginx.pid as it exits" test ! -e /run/nginx.pid
    check "error.log has no [alert], [crit], [emerg]" \
        sh -c '! grep -E "\[(alert|crit|emerg)\]" /var/log/nginx/error.log'
    rm -f /etc/nginx/conf.d/simhash-*.conf /etc/nginx/conf.d/zz-origin.conf
    ;;

prove)
    # The suite against the installed files.  Left out: t/demo.t and
    # t/run-tier.t run demo/run.sh and demo/run-tier.sh, tools of the
    # source tree (not packaged) that look for the module in a build
    # directory; t/deps.t tests tools/deps.sh, the source tree's installer
    # of build dependencies; t/check-tree.t tests tools/check-tree.sh, the
    # source tree's structure checker; t/check-docs.t tests
    # tools/check-docs.sh, which reads the source (none of these tools is
    # packaged).
    cd /opt/src || exit 1
    tests=()
    for t in t/*.t; do
        case "$t" in
            t/demo.t|t/run-tier.t|t/deps.t|t/check-tree.t|t/check-docs.t) ;;
            *) tests+=("$t") ;;
        esac
    done
    # Four files at a time, as `make test` runs them: they wait on nginx
    # more than they compute (one at a time took 20 of make deb's 29
    # minutes, most of it a 20 s wait at every nginx start, now gone).
    SH_MODULE=/usr/lib/nginx/modules/ngx_http_simhash_module.so \
    SH_CLI=/usr/bin/simhash prove --timer -j"${DEB_TEST_JOBS:-4}" \
        "${tests[@]}" > /tmp/prove.out 2>&1
    rc=$?
    sed 's/^/#   /' /tmp/prove.out
    # the failures again, for the summary on the terminal
    grep -E '^(t/.*(Wstat|Dubious)|  Failed tests:)' /tmp/prove.out \
        | sed 's/^/#   prove: /'
    what="prove t/ (but demo.t, run-tier.t, deps.t, check-tree.t, check-docs.t) on the installed module"
    if [ $rc -eq 0 ]; then ok "$what"; else not_ok "$what"; fi
    ;;

source)
    # docs/module.md's from-source installation, its commands as the
    # document writes them (a root shell: `sudo` dropped; the clone is the
    # copy in /opt/ngx_simhash; no systemd in a chroot: `systemctl` left
    # out, nginx -t is what it would start with)
    cd /opt/ngx_simhash || exit 1
    awk '/^## Installation on Debian/ { on = 1; next }
         on && /^    git clone/ { code = 1 }
         code && /^$/ { exit }
         code { sub(/^    /, ""); print }' docs/module.md \
        | sed -e 's|^git clone .*|cd /opt/ngx_simhash|' -e 's/^sudo //' \
              -e '/systemctl/d' > /tmp/steps.sh
    check "docs/module.md has from-source steps (deps.sh, make install)" \
        sh -c 'grep -q "^tools/deps.sh" /tmp/steps.sh &&
               grep -q "^make install" /tmp/steps.sh'
    sed 's/^/#   step: /' /tmp/steps.sh
    check "docs/module.md's from-source steps, as written" \
        bash -ex /tmp/steps.sh
    check "make install: the module in /usr/lib/nginx/modules" \
        test -f /usr/lib/nginx/modules/ngx_http_simhash_module.so
    check "make install: the load_module link" \
        grep -qx 'load_module modules/ngx_http_simhash_module.so;' \
            /etc/nginx/modules-enabled/50-mod-http-simhash.conf
    check "make install wrote /etc/nginx/simhash-resolver.conf" \
        grep -q '^resolver ' /etc/nginx/simhash-resolver.conf
    check "make install: /var/lib/nginx/simhash, www-data, 0750" \
        test "$(stat -c '%U %a' /var/lib/nginx/simhash)" = "www-data 750"
    rm -f /etc/nginx/conf.d/simhash-*.conf
    for f in conf-examples/*.conf; do
        case "${f##*/}" in mod-*) continue ;; esac
        cp "$f" "/etc/nginx/conf.d/simhash-${f##*/}"
    done
    check "from source: nginx -t with every example in conf.d, no warning" \
        no_warning
    ;;

remove)
    check "apt-get remove libnginx-mod-http-simhash" \
        apt-get remove -y -q libnginx-mod-http-simhash
    check "the module is disabled (no modules-enabled link)" \
        test ! -e /etc/nginx/modules-enabled/50-mod-http-simhash.conf
    check "nginx -t after removal" nginx -t
    check "simhash-tools works without the module" simhash --help
    check "apt-get purge libnginx-mod-http-simhash" \
        apt-get purge -y -q libnginx-mod-http-simhash
    check "purge removes /var/lib/nginx/simhash and the link" \
        test ! -e /var/lib/nginx/simhash \
          -a ! -L /etc/nginx/modules-enabled/50-mod-http-simhash.conf.removed
    ;;
esac
CHECK
cp "$ROOT/root/check.sh" "$ROOT_SRC/root/check.sh"

echo "deb-test: $(basename "$module_deb"), $(basename "$tools_deb")" \
     "in a $RELEASE ($SUITE) chroot ($ROOT)"
# Debian's awk (mawk) reads a pipe a block at a time: each line as it
# comes, so that the steps show as they start
AWK_LINES=
if awk -W version 2>&1 | grep -q mawk; then
    AWK_LINES="-W interactive"
fi
start=$SECONDS
step() { echo "deb-test: [$(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s] $*"; }
{
    step "1/5 install the packages ($SUITE's mirror for their dependencies)"
    in_chroot bash /root/check.sh install
    step "2/5 what the package set up; the examples, through nginx"
    in_chroot_offline DEB_TEST_WAIT="$WAIT" bash /root/check.sh checks
    step "3/5 prove t/ against the installed module (minutes)"
    in_chroot_offline DEB_TEST_JOBS="$JOBS" bash /root/check.sh prove
    step "4/5 remove and purge"
    in_chroot_offline DEB_TEST_WAIT="$WAIT" bash /root/check.sh remove
    # 5: from source, in a chroot of its own (DEB_TEST_SOURCE=0 skips it:
    # its apt-get of the build dependencies is most of this test's time)
    if [ "${DEB_TEST_SOURCE:-1}" != 0 ]; then
        step "5/5 docs/module.md's from-source installation, as written"
        ROOT="$ROOT_SRC" in_chroot bash /root/check.sh source
    fi
    step "done"
} 2>&1 | tee -a "$LOG" | awk $AWK_LINES '
    /^deb-test: / { print; fflush(); next }
    /^ok /     { print; fflush(); detail = 0; next }
    /^not ok / { print; fflush(); detail = 1; next }
    /^#   (Files=|Result:|prove: )/ || (detail && /^#/) { print; fflush() }'

pass=$(grep -c '^ok ' "$LOG" || true)
fail=$(grep -c '^not ok ' "$LOG" || true)
echo "deb-test: $pass passed, $fail failed (log: $LOG)"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
