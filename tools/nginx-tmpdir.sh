#!/bin/sh
# Prints the directory under which the tests, the demo, the benchmark and
# the stress run give each nginx they start its own prefix (conf/, logs/,
# tmp/, and a copy of whatever its workers serve or write): $TMPDIR when
# every user can reach it, else /tmp.
#
#   prefix=$(mktemp -d "$(tools/nginx-tmpdir.sh)/simhash-demo.XXXXXX")
#
# Why not the checkout: started by root, nginx runs its workers as nobody
# (the `user` directive's default), and they open the files they serve, the
# temporary files and the snapshots themselves.  A clone under ~root, or
# under anything made by `mktemp -d` (mode 0700), is out of their reach,
# and so is a private $TMPDIR (libpam-tmpdir sets /tmp/user/UID, 0700).
# Only the master, which stays root, reads the configuration, the module
# and what the module loads at configuration time.  So each run copies
# what its workers read into a prefix every user can traverse, with modes
# set explicitly (the umask may be 077), and gives the worker user write
# access only where it writes.  `user root` would also work, but tests
# would then run nginx the way nobody should run it in production.
set -eu

# True when every directory from / down to $1 lets others through.
reachable() {
    d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
    while :; do
        [ -n "$(find "$d" -maxdepth 0 -perm -o+x 2>/dev/null)" ] || return 1
        [ "$d" = / ] && return 0
        d=$(dirname "$d")
    done
}

if [ -n "${TMPDIR:-}" ] && [ -w "$TMPDIR" ] && reachable "$TMPDIR"; then
    cd "$TMPDIR" && pwd -P
else
    echo /tmp
fi
