#!/usr/bin/perl
# tools/deps.sh, the first step of `make run` and `make test`: nothing to
# do when everything is installed; run by root, it installs what is
# missing; run by anyone else, one line says what to install, and it fails
# before apt.  Nothing is uninstalled to test this: the system's
# dpkg-query, id and apt-get are replaced by scripts in a directory put
# first in PATH, which answer as told and write down how they were called.

use strict;
use warnings;
use FindBin;
use Test::More;
use File::Temp qw(tempdir);

my $deps = "$FindBin::Bin/../tools/deps.sh";
my $dir = tempdir(CLEANUP => 1);
my $calls = "$dir/calls";

sub script {
    my ($name, $body) = @_;
    open(my $fh, '>', "$dir/bin/$name") or die "$name: $!";
    print $fh "#!/bin/sh\n$body";
    close $fh;
    chmod 0755, "$dir/bin/$name";
}
mkdir "$dir/bin";
# dpkg-query -W -f='${Status}' PKG: not installed when PKG is in MISSING
script('dpkg-query', <<'EOF');
for p; do :; done
case " $MISSING " in
    *" $p "*) echo "dpkg-query: no packages found matching $p" >&2; exit 1 ;;
esac
printf 'install ok installed'
EOF
script('id', 'echo "$FAKE_UID"' . "\n");
for my $tool (qw(apt-get sudo)) {
    script($tool, qq{echo "$tool \$*" >> "$calls"\n});
}

# Runs deps.sh as user `uid` with `missing` packages; returns (exit status,
# stdout and stderr, the apt-get/sudo calls).
sub run {
    my ($uid, $missing, @args) = @_;
    unlink $calls;
    local $ENV{PATH} = "$dir/bin:$ENV{PATH}";
    local $ENV{MISSING} = $missing;
    local $ENV{FAKE_UID} = $uid;
    my $out = `sh $deps @args 2>&1`;
    my $rc = $? >> 8;
    open(my $fh, '<', $calls) or return ($rc, $out, '');
    local $/;
    return ($rc, $out, scalar <$fh>);
}

my ($rc, $out, $apt) = run(1000, '');
is($rc, 0, 'everything installed, not root: passes');
is($out, '', '... silently');
is($apt, '', '... and calls neither apt-get nor sudo');

($rc, $out, $apt) = run(1000, 'valgrind gdb');
isnt($rc, 0, 'two packages missing, not root: fails');
is($out, "deps: missing valgrind gdb; as root, run: apt-get install"
         . " --no-install-recommends valgrind gdb\n",
   '... with one line naming them and the command');
is($apt, '', '... before apt-get or sudo');

($rc, $out, $apt) = run(1000, 'wrk', 'stress');
like($out, qr/^deps: missing wrk;[^\n]*\n\z/,
     'a target\'s own package, not root: one line too');

($rc, $out, $apt) = run(0, 'valgrind gdb');
is($rc, 0, 'two packages missing, root: installs them');
is($apt, "apt-get -o DPkg::Lock::Timeout=0 -o APT::Status-Fd=3 update -qq\n"
         . "apt-get -o DPkg::Lock::Timeout=0 -o APT::Status-Fd=3 install -y"
         . " -qq --no-install-recommends valgrind gdb\n",
   '... with apt-get, only those two, its progress on a descriptor');
like($out, qr/^deps: installed valgrind gdb$/m, '... and says when done');

# another apt-get holds the package lists' lock: deps.sh waits for it,
# saying so once, and goes on when it is free
script('apt-get', <<EOF);
echo "apt-get \$*" >> "$calls"
n=\$(cat "$dir/held" 2>/dev/null || echo 0)
if [ "\$n" -gt 0 ]; then
    echo \$((n - 1)) > "$dir/held"
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
    exit 100
fi
EOF
{
    open(my $fh, '>', "$dir/held") or die $!;
    print $fh "3\n";
    close $fh;
    local $ENV{DEPS_LOCK_POLL} = 0;
    ($rc, $out, $apt) = run(0, 'valgrind');
}
is($rc, 0, 'the lock held three times: installs once it is free');
is(scalar(() = $out =~ /waiting for/g), 1, '... saying it waits, once')
    or diag($out);
like($out, qr{^deps: waiting for process 4242 \(.*\), which holds the package lock /var/lib/apt/lists/lock, to finish}m,
     '... for what: the process apt names, and its lock') or diag($out);
is(scalar(() = $apt =~ /^apt-get .* update/mg), 4,
   '... asking again until it is free');
like($apt, qr/install -y -qq --no-install-recommends valgrind\n\z/,
     '... then installing');
{
    open(my $fh, '>', "$dir/held") or die $!;
    print $fh "1000\n";
    close $fh;
    local $ENV{DEPS_LOCK_POLL} = 0;
    local $ENV{DEPS_LOCK_WAIT} = 3;
    ($rc, $out) = run(0, 'valgrind');
}
isnt($rc, 0, 'a lock never freed: fails after DEPS_LOCK_WAIT');
like($out, qr/still held after 3s by process 4242/, '... saying so, and by what');

# progress: a line per step from apt's status descriptor, none of what
# apt-get prints on its output (kept for a failure)
script('apt-get', <<EOF);
echo "apt-get \$*" >> "$calls"
echo "Selecting previously unselected package valgrind."
echo "(Reading database ... 45% noise"
echo "dlstatus:1:30.5:Retrieving file 1 of 2" >&3
echo "dlstatus:1:60:Retrieving file 1 of 2" >&3
echo "pmstatus:valgrind:10:Preparing valgrind (amd64)" >&3
echo "pmstatus:valgrind:20:Unpacking valgrind (amd64)" >&3
echo "pmstatus:valgrind:20:Unpacking valgrind (amd64)" >&3
echo "pmstatus:valgrind:60:Configuring valgrind (amd64)" >&3
echo "pmstatus:valgrind:80:Installed valgrind: 1:3.19" >&3
EOF
($rc, $out, $apt) = run(0, 'valgrind');
is($rc, 0, 'progress: installs');
like($out, qr/^deps: \[ 20%\] Unpacking valgrind \(amd64\)\n(?!.*Unpacking)/ms,
     '... a line when a package is unpacked, once') or diag($out);
like($out, qr/^deps: \[ 80%\] Installed valgrind: 1:3\.19$/m,
     '... and when it is installed, the text whole') or diag($out);
unlike($out, qr/Preparing|Configuring/, '... not every step of dpkg');
like($out, qr/^deps: downloading, 50%$/m, '... the download by quarters')
    or diag($out);
unlike($out, qr/Selecting|Reading database/, '... none of apt\'s own output');

# a failure shows the end of apt-get's output
script('apt-get', <<EOF);
echo "E: Unable to locate package valgrind"
exit 100
EOF
($rc, $out) = run(0, 'valgrind');
isnt($rc, 0, 'apt-get fails: deps fails');
like($out, qr/E: Unable to locate package valgrind\ndeps: apt-get update -qq failed/,
     '... showing why') or diag($out);

($rc, $out, $apt) = run(0, '');
is($apt, '', 'everything installed, root: apt-get is not called');

# no dpkg-query at all: a PATH of our scripts only (deps.sh needs no other
# program), without dpkg-query
unlink "$dir/bin/dpkg-query";
{
    local $ENV{PATH} = "$dir/bin";
    local $ENV{FAKE_UID} = 0;
    unlink $calls;
    $out = `/bin/sh $deps 2>&1`;
    $rc = $? >> 8;
}
isnt($rc, 0, 'no dpkg-query: fails');
like($out, qr/^deps: no dpkg-query[^\n]*\n\z/, '... with one line');
ok(!-e $calls, '... before apt-get');

done_testing;
