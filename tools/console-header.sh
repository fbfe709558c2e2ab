#!/bin/sh
# The console's page (module/console.html) as a C string, for the module to
# serve itself (ngx_http_simhash_console.c): no file to install, nothing
# fetched at run time.  Run by the module's `config` and, before every
# build, by tools/build-module.sh; the header is rewritten only when the
# page changed, so that make rebuilds only then.
#
# With it, the SHA-256 of the page's one inline script, as its Content-
# Security-Policy names it ('sha256-BASE64'): the browser runs that script
# and no other, where 'unsafe-inline' would run any script a host name or
# rule text managed to inject.  Computed here, at build time, so that the
# policy is a constant (no nonce to draw per answer, the page cacheable).
# Perl's Digest::SHA is part of Debian's perl, which every build has.
#   tools/console-header.sh module/console.html OUT.h
set -eu
in=$1
out=$2
tmp="$out.tmp.$$"
hash=$(perl -MDigest::SHA=sha256_base64 -0777 -ne '
    my @s = m{<script>(.*?)</script>}sg;
    die "console-header.sh: want one <script>, found " . @s . "\n"
        if @s != 1;
    print sha256_base64($s[0]), "=";' "$in")
{
    echo "/* generated from module/console.html by tools/console-header.sh */"
    echo "#define NGX_HTTP_SIMHASH_CONSOLE_SCRIPT  \"'sha256-$hash'\""
    echo "static const char  ngx_http_simhash_console_html[] ="
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$in"
    echo "    ;"
} > "$tmp"
if [ -f "$out" ] && cmp -s "$tmp" "$out"; then
    rm -f "$tmp"
else
    mv "$tmp" "$out"
fi
