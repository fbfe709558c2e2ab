#!/bin/sh
# The console's page (module/console.html) as a C string, for the module to
# serve itself (ngx_http_simhash_console.c): no file to install, nothing
# fetched at run time.  Run by the module's `config` and, before every
# build, by tools/build-module.sh; the header is rewritten only when the
# page changed, so that make rebuilds only then.
#   tools/console-header.sh module/console.html OUT.h
set -eu
in=$1
out=$2
tmp="$out.tmp.$$"
{
    echo "/* generated from module/console.html by tools/console-header.sh */"
    echo "static const char  ngx_http_simhash_console_html[] ="
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$in"
    echo "    ;"
} > "$tmp"
if [ -f "$out" ] && cmp -s "$tmp" "$out"; then
    rm -f "$tmp"
else
    mv "$tmp" "$out"
fi
