#!/bin/sh
# The man pages name everything the code has:
#   man/check.sh SIMHASH_BINARY [MODULE_SOURCE]
#
# - every command of `simhash --help`, every action of `simhash index`, and
#   every option that a `simhash COMMAND --help` lists appears in
#   man/simhash.1;
# - every directive of the module's ngx_command_t table (default
#   ngx_simhash_module.c) appears in man/ngx_http_simhash_module.5;
# - both pages format without a groff warning.
#
# debian/rules runs it at build time, so that a new option or directive
# without its documentation stops the package build instead of shipping an
# incomplete page.  Exits 1 listing what is missing.
set -eu

MAN=$(cd "$(dirname "$0")" && pwd)
CLI=${1:?usage: man/check.sh SIMHASH_BINARY [MODULE_SOURCE]}
SRC=${2:-$MAN/../ngx_simhash_module.c}
missing=0

miss() { echo "man/check: $*" >&2; missing=1; }

# In roff every "-" of an option is written "\-".  Each page is read once,
# its "\-" made "-" and a bare "-" something else (it does not spell an
# option's), and looked up in the shell: a grep per option was some 600
# processes, seconds of t/cli.t on a busy machine.
page_text() {
    sed 's/\\-/\x01/g; s/-/\x02/g; s/\x01/-/g' "$1"
}
PAGE1=$(page_text "$MAN/simhash.1")
in_page() {     # page text
    [ "$1" = "$MAN/simhash.1" ] || { echo "in_page: $1" >&2; exit 2; }
    case "$PAGE1" in
        *"$2"*) return 0 ;;
    esac
    return 1
}

cmds=$("$CLI" --help | awk '/^commands:/ { on = 1; next }
                            on && NF == 0 { exit }
                            on { print $1 }')
[ -n "$cmds" ] || miss "no commands in \`$CLI --help\`"

for c in $cmds; do
    in_page "$MAN/simhash.1" "simhash $c" || miss "simhash.1: command $c"
    help=$("$CLI" "$c" --help)
    # actions: "simhash index build|query ..." lines of the usage
    for a in $(printf '%s\n' "$help" \
               | sed -n "s/^ *\(usage: \)\{0,1\}simhash $c \([a-z][a-z]*\) .*/\2/p;
                         s/^ *\(usage: \)\{0,1\}simhash $c \([a-z][a-z]*\)$/\2/p"); do
        in_page "$MAN/simhash.1" "simhash $c $a" \
            || miss "simhash.1: simhash $c $a"
    done
    for o in $(printf '%s\n' "$help" \
               | grep -oE '(^|[[:space:]])(--[a-z][a-z0-9-]*|-o)' | tr -d ' \t' \
               | sort -u); do
        in_page "$MAN/simhash.1" "$o" || miss "simhash.1: $c option $o"
    done
done

dirs=$(sed -n '/ngx_command_t  *ngx_http_simhash_commands\[\]/,/ngx_null_command/ s/.*ngx_string("\([a-z_]*\)").*/\1/p' "$SRC")
[ -n "$dirs" ] || miss "no directives found in $SRC"
for d in $dirs; do
    grep -qE "(^|[ \"])$d( |;|\"|\$)" "$MAN/ngx_http_simhash_module.5" \
        || miss "ngx_http_simhash_module.5: directive $d"
done

for p in "$MAN/simhash.1" "$MAN/ngx_http_simhash_module.5"; do
    w=$(LC_ALL=C.UTF-8 groff -man -ww -z "$p" 2>&1) || true
    [ -z "$w" ] || miss "$(basename "$p"): groff: $w"
done

[ "$missing" -eq 0 ] && echo "man/check: the man pages cover every command, option and directive"
exit "$missing"
