#!/usr/bin/perl
# Nothing from a URL or an origin reaches the client as header syntax:
#  - every byte value 0x00-0xFF in a key, through the decoded $uri and
#    through $request_uri, comes out of X-Simhash-Duplicate-Of as itself or
#    percent-encoded (controls, space, DEL, >= 0x80), never raw: no CR LF,
#    no injected header, also in drop mode and after a restart;
#  - X-Simhash-Duplicate-Of is left out past 4096 bytes;
#  - X-Simhash-* headers an origin sends never reach the client where
#    simhash is on: HTML, text/plain, 404, HEAD.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use SimhashTest;

my $t = SimhashTest->new(
    http   => 'simhash_zone zone=crawl:8m file=%%PREFIX%%/data/crawl.snap;',
    origin => join('', map { "        location /$_/ { try_files "
                             . "/gen/\$arg_p.html =404; }\n" }
                       qw(k d r e x)) . <<'EOF',

        location /spoof/ {
            alias %%PREFIX%%/html/;
            add_header X-Simhash-Status duplicate always;
            add_header X-Simhash-Duplicate-Of http://victim.example/ always;
            add_header x-simhash 0123456789abcdef always;
            add_header X-Simhash-Distance 0 always;
        }
EOF
    proxy  => <<'EOF');
        large_client_header_buffers 4 64k;
        simhash crawl;

        location /k/ {
            simhash_key $scheme://$host$uri;
            proxy_pass http://%%ORIGIN%%;
        }
        location /d/ {
            simhash_key $scheme://$host$uri;
            proxy_pass http://%%ORIGIN%%;
        }
        location /x/ {
            simhash_key $scheme://$host$uri;
            simhash_action drop keys=any;   # another path: any key
            proxy_pass http://%%ORIGIN%%;
        }
        location / {
            proxy_pass http://%%ORIGIN%%;
        }
EOF

my @pages = $t->random_pages(520, 120, 19);
$t->write_file("html/gen/$_.html", $pages[$_]) for 0 .. $#pages;
$t->start;

# A raw request: (status, [header lines]), the lines exactly as sent.
sub raw {
    my ($target, $method) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port, Proto => 'tcp')
        or die "connect: $!";
    binmode $s;
    print $s ($method // 'GET') . " $target HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    local $/;
    my $resp = <$s> // '';
    close $s;
    my ($head) = split /\r\n\r\n/, $resp, 2;
    my @lines = split /\r\n/, $head // '';
    my ($status) = (shift(@lines) // '') =~ /^HTTP\/1\.\d (\d+)/;
    return ($status // 0, \@lines);
}

sub headers_named {
    my ($lines, $name) = @_;
    return map { /^\Q$name\E:\s*(.*)$/i ? $1 : () } @$lines;
}

# what the module must send for a raw key byte
sub esc {
    my ($b) = @_;
    return ($b <= 0x20 || $b >= 0x7f) ? sprintf('%%%02X', $b) : chr($b);
}

# Every header line well-formed: a token, a colon, printable bytes.
sub clean {
    my ($lines) = @_;
    return !grep { !/^[!#\$%&'*+\-.^_`|~0-9A-Za-z]+: [\x20-\x7e]*$/ } @$lines;
}

# --- $uri: percent-decoded, so the key can hold any byte nginx accepts
my ($tried, $checked, @fail) = (0, 0);
for my $b (0 .. 255) {
    my $hex = sprintf('%02X', $b);
    my ($st) = raw("/k/a%${hex}b?p=$b");
    next unless $st == 200;          # nginx refuses some (%00, ...): 400
    $tried++;
    my ($st2, $lines) = raw("/d/$b?p=$b");
    my @dup = headers_named($lines, 'X-Simhash-Duplicate-Of');
    my $want = 'http://127.0.0.1/k/a' . esc($b) . 'b';
    if ($st2 == 200 && @dup == 1 && $dup[0] eq $want && clean($lines)
        && !headers_named($lines, 'Set-Cookie'))
    {
        $checked++;
    } else {
        push @fail, sprintf('0x%02X: %s', $b, join(' | ', @$lines));
    }
}
cmp_ok($tried, '>=', 250, "\$uri: $tried of 256 byte values accepted by nginx");
is($checked, $tried, '$uri: every one comes out escaped, one clean header')
    or diag(join("\n", @fail[0 .. ($#fail < 9 ? $#fail : 9)]));

# the attack of the report: a cookie and a whole second response
raw('/k/a%0d%0aSet-Cookie:%20pwn=1?p=512');
my ($st, $lines) = raw('/d/cookie?p=512');
ok(!headers_named($lines, 'Set-Cookie'), 'no Set-Cookie injected');
is((headers_named($lines, 'X-Simhash-Duplicate-Of'))[0],
   'http://127.0.0.1/k/a%0D%0ASet-Cookie:%20pwn=1', '... the key escaped');
raw('/k/b%0d%0a%0d%0aHTTP/1.1%20200%20OK?p=513');
($st, $lines) = raw('/d/split?p=513');
ok(clean($lines), 'no second response injected');

# --- $request_uri (the default key): raw bytes in the request line
($tried, $checked, @fail) = (0, 0);
for my $b (0 .. 255) {
    my $p = 256 + $b;
    my ($st1) = raw("/r/a" . chr($b) . "b?p=$p&b=$b");
    next unless $st1 == 200;
    $tried++;
    my ($st2, $l2) = raw("/e/$b?p=$p&b=$b");
    my @dup = headers_named($l2, 'X-Simhash-Duplicate-Of');
    my $want = 'http://127.0.0.1/r/a' . esc($b) . "b?p=$p&b=$b";
    if (@dup == 1 && $dup[0] eq $want && clean($l2)) {
        $checked++;
    } else {
        push @fail, sprintf('0x%02X: %s', $b, join(' | ', @$l2));
    }
}
cmp_ok($tried, '>=', 150, "\$request_uri: $tried raw byte values accepted");
is($checked, $tried, '$request_uri: every one escaped, one clean header')
    or diag(join("\n", @fail[0 .. ($#fail < 9 ? $#fail : 9)]));

# --- drop mode: the same header, as safe
raw('/k/c%0d%0aX-Injected:%201?p=514');
($st, $lines) = raw('/x/drop?p=514');
is($st, 204, 'drop mode: 204');
is((headers_named($lines, 'X-Simhash-Duplicate-Of'))[0],
   'http://127.0.0.1/k/c%0D%0AX-Injected:%201', 'drop mode: escaped');
ok(!headers_named($lines, 'X-Injected') && clean($lines),
   'drop mode: nothing injected');

# --- after a restart, the stored bad key is still sent escaped
$t->stop;
$t->start;
($st, $lines) = raw('/d/again?p=512');
is((headers_named($lines, 'X-Simhash-Duplicate-Of'))[0],
   'http://127.0.0.1/k/a%0D%0ASet-Cookie:%20pwn=1',
   'after a restart: still escaped');

# --- a key too long for a header: the header is left out, not cut
my $long = 'L' x 6000;
raw("/k/$long?p=515");
($st, $lines) = raw('/d/long?p=515');
is((headers_named($lines, 'X-Simhash-Status'))[0], 'duplicate',
   'a 6000-byte key: still a duplicate');
ok(!headers_named($lines, 'X-Simhash-Duplicate-Of'),
   '... without a Duplicate-Of header over 4096 bytes');
like($t->error_log, qr/the key of the duplicate is \d+ bytes, over 4096/,
     '... and an info line says why');

# --- an origin's own X-Simhash-* headers never reach the client
for my $case (['/spoof/council.html', 'GET', 200, 1],
              ['/spoof/notes.txt', 'GET', 200, 0],
              ['/spoof/nosuch.html', 'GET', 404, 0],
              ['/spoof/bicycle.html', 'HEAD', 200, 0])
{
    my ($path, $m, $want_st, $ours) = @$case;
    my ($s2, $l) = raw($path, $m);
    is($s2, $want_st, "$m $path: $want_st");
    my @all = grep { /^x-simhash/i } @$l;
    if ($ours) {
        my @status = headers_named($l, 'X-Simhash-Status');
        is_deeply(\@status, ['new'], "$m $path: one X-Simhash-Status, ours");
        ok(!headers_named($l, 'X-Simhash-Duplicate-Of'),
           "$m $path: the spoofed Duplicate-Of is gone");
        isnt((headers_named($l, 'X-Simhash'))[0], '0123456789abcdef',
             "$m $path: X-Simhash is the real fingerprint");
    } else {
        is_deeply(\@all, [], "$m $path: no X-Simhash-* header at all");
    }
}

$t->stop;
$t->check_log;
done_testing;
