package SimhashTest;

# A small harness for the module's integration tests, core Perl only.
#
# Each test object owns a temporary prefix (conf/ logs/ html/ data/ tmp/),
# writes an nginx.conf into it that loads the built module ($SH_MODULE) and
# has two servers on free loopback ports:
#
#   origin  serves html/ (the fixture pages of t/fixtures/site plus whatever
#           the test writes), also gzip-compressed under /gz/, chunked under
#           /chunked/, labelled ISO-8859-1 under /latin1/;
#   proxy   the server block the test gives, where %%ORIGIN%% stands for
#           127.0.0.1:PORT of the origin.
#
# It starts one nginx (daemon, master + workers), talks to it with
# HTTP::Tiny or raw sockets, and stops it at the end.  check_log() fails the
# test if the error log has an [alert], [crit] or [emerg] line.
#
#   my $t = SimhashTest->new(http => 'simhash_zone zone=z:1m;',
#                            proxy => 'location / { simhash z; '
#                                   . 'proxy_pass http://%%ORIGIN%%; }');
#   $t->start;
#   my $r = $t->get('/sourdough.html');
#   is($r->{headers}{'x-simhash-status'}, 'new');
#   $t->stop;
#   $t->check_log;
#
# Environment: SH_MODULE (absolute path of the .so, required), SH_CLI (the
# simhash tool, for reference fingerprints), SH_NGINX (default: nginx from
# PATH, else /usr/sbin/nginx, which a user's PATH often lacks), SH_KEEP=1
# keeps the prefix for inspection.
#
# Where nginx runs: the prefix is made under tools/nginx-tmpdir.sh's
# directory (/tmp, or $TMPDIR when everyone can reach it), never in the
# checkout.  Started by root, nginx's workers run as nobody and open the
# pages they serve, the temporary files and the snapshots themselves; a
# checkout under ~root or under `mktemp -d` (0700) is out of their reach.
# So every file the workers read is a copy in the prefix, readable by all,
# and data/ (the snapshots) belongs to the worker user, named in the
# configuration.  The master, still root, reads the configuration and the
# module wherever they are.  Run by another user, nginx's processes all
# run as that user, and there is nothing to arrange.
#
# Two checking modes fail a test file (non-zero exit, with the report as a
# diagnostic) after its own tests have run:
#   SANITIZE=1    the module was built with ASan+UBSan: any sanitizer report
#                 in an error log (nginx sends its stderr there) fails.
#   SH_VALGRIND=1 every nginx runs as one process (master_process off) under
#                 valgrind; any invalid access, or a definite leak outside
#                 nginx's own known one, fails.  Tests that need a master
#                 and workers call needs_master() and are skipped.

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
our @EXPORT_OK = qw(wait_until);
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Socket::INET;
use Socket qw(AF_UNIX SOCK_STREAM pack_sockaddr_un);
use JSON::PP;
use POSIX qw(:sys_wait_h);
use Test::More;
use Time::HiRes qw(sleep time);

our $NGINX = $ENV{SH_NGINX}
          || ((grep { -x "$_/nginx" } split /:/, $ENV{PATH} // '')
              ? 'nginx' : '/usr/sbin/nginx');

my $TOP = abs_path(dirname(__FILE__) . '/../..');

# Files this process makes in a prefix (the tests write pages, snapshots,
# IDF tables) are read by the workers: a umask of 077 would hide them.
umask 022;

# As root: the workers' user and group, written into the configuration and
# given data/.  nobody/nogroup is what nginx uses when `user` is not set;
# naming it keeps the two in step.
our @WORKER;    # (user, group, uid, gid), or () when not root
if ($> == 0) {
    my ($name, undef, $uid, $gid) = getpwnam('nobody')
        or die "no user nobody for nginx's workers\n";
    @WORKER = ($name, scalar(getgrgid($gid)) // $gid, $uid, $gid);
}

# The directory for prefixes (see tools/nginx-tmpdir.sh).
sub nginx_tmpdir {
    my $d = `$TOP/tools/nginx-tmpdir.sh`;
    chomp $d;
    die "tools/nginx-tmpdir.sh failed\n" if $? || $d eq '';
    return $d;
}

# A module built with SANITIZE=1 (ASan + UBSan) needs the sanitizer runtime
# in the stock nginx: nginx_cmd() preloads it (for nginx only: other tools
# may hang with it preloaded).  Leak checking stays off (nginx does not free
# everything at exit; the valgrind test covers leaks).
our $PRELOAD = '';
if (($ENV{SANITIZE} // '') eq '1') {
    my $asan = `gcc -print-file-name=libasan.so`;
    chomp $asan;
    $PRELOAD = "env LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0 "
             . 'UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 '
        if -e $asan;
}
our $VALGRIND = ($ENV{SH_VALGRIND} // '') eq '1';

# Waiting.  Nothing here waits a fixed time: every wait polls a
# condition (the pid file, the port, a log line, a counter in the
# statistics), first every few milliseconds, then every 0.1 s.  None has a
# short limit of its own either: a test file has one overall limit,
# generous, and a wait that reaches it fails the file saying what it was
# waiting for.  SH_TEST_LIMIT (seconds) sets it: 300 by default, 6 times as
# much once an nginx runs under valgrind (20 to 50 times slower).  Past the
# limit by 30 s, an alarm ends a file stuck where no wait polls (a read
# that never returns), naming the last thing awaited.
our $LIMIT = $ENV{SH_TEST_LIMIT} || 300;
our $VALGRIND_LIMIT = 6 * $LIMIT;
my $T0 = time;
my $DEADLINE;
# Outside a test file (bench/replicate.pl starts Redis through RedisTest)
# each wait has the limit to itself.
my $IN_TEST = $0 =~ /\.t\z/;
our $AWAITING = 'the start of the test';
# The longest step between two polls; a test that times what it awaits
# sets a shorter one (local $SimhashTest::POLL_MAX = 0.01).
our $POLL_MAX = 0.1;

sub _arm {
    my ($limit) = @_;
    my $d = $T0 + $limit;
    return if defined $DEADLINE && $DEADLINE >= $d;
    $DEADLINE = $d;
    # the alarm only in a test file: make stress and make bench load this
    # file for its free ports and may run longer
    return unless $IN_TEST;
    $SIG{ALRM} = sub {
        my $file = $0;
        Test::More::diag(sprintf("%s: the file's limit of %d s "
            . "(SH_TEST_LIMIT) ran out while waiting for %s", $file,
            $DEADLINE - $T0, $AWAITING));
        exit 124;
    };
    alarm(int($DEADLINE - time) + 30);
}
_arm($VALGRIND ? $VALGRIND_LIMIT : $LIMIT);

# The limit of a file that starts an nginx under valgrind itself
# (t/valgrind.t does, without SH_VALGRIND).
sub valgrind_limit { _arm($VALGRIND_LIMIT) }

# Seconds left before the file's limit.
sub time_left {
    return $LIMIT unless $IN_TEST;
    my $l = $DEADLINE - time;
    return $l > 1 ? $l : 1;
}

# wait_until(WHAT, COND): COND's first true value; the file fails (dies)
# with "gave up waiting for WHAT" if the limit comes first.  Without WHAT,
# the condition is named by where it is written (file and line).
sub wait_until {
    my ($what, $cond) = @_ == 1 ? (undef, $_[0]) : @_;
    if (!defined $what) {
        my (undef, $file, $line) = caller;
        $what = "the condition at $file line $line";
    }
    local $AWAITING = $what;
    my $deadline = $IN_TEST ? $DEADLINE : time + $LIMIT;
    my $step = 0.002;
    while (1) {
        my $v = $cond->();
        return $v if $v;
        croak(sprintf("gave up waiting for %s: the file's limit of %d s "
                      . '(SH_TEST_LIMIT) ran out', $what, $DEADLINE - $T0))
            if time > $deadline;
        sleep $step;
        $step = $step * 1.5 < $POLL_MAX ? $step * 1.5 : $POLL_MAX;
    }
}

sub nginx_cmd { return "$PRELOAD$NGINX" }

# The version of the nginx the tests start, as nginx_version is written
# in C (1029004 for 1.29.4), for what an nginx release changed in front
# of the module.
sub nginx_version {
    my $v = `$NGINX -v 2>&1`;
    $v =~ m{nginx/(\d+)\.(\d+)\.(\d+)}
        or die "no version in $NGINX -v: $v\n";
    return $1 * 1000000 + $2 * 1000 + $3;
}

# The options that put an nginx in this object's prefix.  -e: the error
# log nginx uses until it has read the configuration (by default
# /var/log/nginx/error.log, which only root may open: an [alert] for
# anyone else); logs/error.log, or `stderr` for nginx -t, whose messages
# are its output and must not land in the log check_log() reads.
sub nginx_args {
    my ($self, $early_log) = @_;
    my $p = $self->{prefix};
    return ('-p', "$p/", '-c', "$p/conf/nginx.conf",
            '-e', $early_log // "$p/logs/error.log");
}

our $FIXTURES = abs_path(dirname(__FILE__) . '/../fixtures/site');

my @live;   # objects whose nginx must be stopped at exit
my @all;    # every object, for the sanitizer and valgrind checks at exit

# A test that needs a master process and several workers (signals to
# workers, worker counts, reloads under traffic) cannot run as one process
# under valgrind.
sub needs_master {
    plan(skip_all => 'needs a master and workers (SH_VALGRIND runs one '
                   . 'process)') if $VALGRIND;
}

# Why reloads are skipped, or '': nginx 1.22 with master_process off
# re-reads its configuration without setting up the new cycle's connections
# and thread pools ("worker_connections are not enough", then a crash in
# ngx_thread_task_post), so a reload is only tested with a master.
our $NO_RELOAD = $VALGRIND ? 'reload needs a master process' : '';

sub module_path {
    my $m = $ENV{SH_MODULE};
    if (!$m || !-f $m) {
        plan(skip_all => 'SH_MODULE is not set to the built module '
                       . '(run through `make itest`)');
    }
    return $m;
}

# A port nothing listens on, reserved for this process until it exits.
#
# Test files run side by side (prove -j), and a port that one of them was
# given by bind(0) and closed is free again for the next bind(0) -- in
# another test file -- or for any outgoing connection, before the nginx
# meant to listen there starts ("bind() ... Address already in use", CI
# run of session 24).  So ports come from below the kernel's ephemeral
# range, which neither bind(0) nor connect() hands out, and each is
# reserved by binding an abstract Unix socket named after it: that name is
# unique machine-wide, needs no file, works across users, and goes away
# with the process that holds it.
my %ports_given;

sub ephemeral_low {
    open(my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range')
        or return 32768;
    my ($low) = split ' ', scalar <$fh>;
    return $low && $low > 0 ? $low : 32768;
}

# SH_PORTS=LO-HI: the range the ports come from (default 20000 to just
# below the ephemeral range), shared with tools/free-ports.sh and so with
# the demo, the benchmarks and the DUST evaluation.
sub port_range {
    my $r = $ENV{SH_PORTS};
    if (defined $r && $r ne '') {
        my ($lo, $hi) = $r =~ /^\s*(\d+)\s*-\s*(\d+)\s*$/
            or die "SH_PORTS=$r: want LO-HI, e.g. SH_PORTS=40000-40999\n";
        die "SH_PORTS=$r: want 1024 <= LO < HI <= 65535\n"
            unless $lo >= 1024 && $hi <= 65535 && $lo < $hi;
        return ($lo, $hi);
    }
    my $lo = 20000;
    my $hi = ephemeral_low() - 1;
    ($lo, $hi) = (1024, 19999) if $hi < $lo + 1000;
    return ($lo, $hi);
}

sub free_port {
    my ($lo, $hi) = port_range();
    for (1 .. 5000) {
        my $port = $lo + int(rand($hi - $lo + 1));
        next if $ports_given{$port};
        socket(my $lock, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
        bind($lock, pack_sockaddr_un("\0simhash-test-port-$port")) or next;
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                      LocalPort => $port, Proto => 'tcp',
                                      ReuseAddr => 1)
            or next;
        close $s;
        $ports_given{$port} = $lock;
        return $port;
    }
    die "cannot find a free port in $lo..$hi"
        . ($ENV{SH_PORTS} ? " (SH_PORTS)" : '') . "\n";
}

sub new {
    my ($class, %args) = @_;

    my $self = bless {
        workers => 1,
        http    => '',
        proxy   => '',
        origin  => '',
        %args,
    }, $class;

    $self->{module} = module_path();
    $self->{prefix} = tempdir('simhash-t-XXXXXX', DIR => nginx_tmpdir(),
                              CLEANUP => !$ENV{SH_KEEP});
    diag("prefix $self->{prefix}") if $ENV{SH_KEEP};

    for my $d (qw(conf logs html data tmp)) {
        make_path("$self->{prefix}/$d");
    }

    # tempdir() made the prefix 0700; the workers must get through it.
    # They write only in data/ (snapshots); nginx makes tmp/'s
    # subdirectories itself and gives them to the worker user.
    chmod 0755, $self->{prefix}, map { "$self->{prefix}/$_" }
                                 qw(conf logs html data tmp);
    chown $WORKER[2], $WORKER[3], "$self->{prefix}/data" if @WORKER;

    opendir(my $dh, $FIXTURES) or die "$FIXTURES: $!";
    for my $f (grep { !/^\./ } readdir $dh) {
        copy("$FIXTURES/$f", "$self->{prefix}/html/$f") or die "$f: $!";
        chmod 0644, "$self->{prefix}/html/$f";
    }
    closedir $dh;

    $self->{origin_port} = free_port();
    $self->{port} = free_port();
    $self->{ua} = ua();
    push @all, $self;

    return $self;
}

# An HTTP client whose timeout is the file's limit: a slow answer is
# waited for, not failed (a busy machine, valgrind).
sub ua {
    return HTTP::Tiny->new(max_redirect => 0, keep_alive => 0, @_,
                           timeout => time_left());
}

sub prefix { $_[0]{prefix} }
sub port { $_[0]{port} }
sub origin { "127.0.0.1:$_[0]{origin_port}" }
sub url { my ($self, $path) = @_; "http://127.0.0.1:$self->{port}$path" }

# Replace the configuration pieces (before start or before a reload).
sub set {
    my ($self, %args) = @_;
    @$self{keys %args} = values %args;
    return $self;
}

sub write_file {
    my ($self, $name, $content) = @_;
    my $path = "$self->{prefix}/$name";
    make_path(dirname($path));
    chmod 0755, dirname($path);
    open(my $fh, '>:raw', "$path.new") or die "$path: $!";
    print $fh $content;
    close $fh;
    chmod 0644, "$path.new";
    rename("$path.new", $path) or die "$path: $!";
    return $path;
}

sub read_file {
    my ($self, $name) = @_;
    my $path = $name =~ m{^/} ? $name : "$self->{prefix}/$name";
    open(my $fh, '<:raw', $path) or return undef;
    local $/;
    my $c = <$fh>;
    close $fh;
    return $c;
}

sub fixture {
    my ($self, $name) = @_;
    return $self->read_file("$FIXTURES/$name");
}

sub _expand {
    my ($self, $text) = @_;
    my $origin = $self->origin;
    $text =~ s/%%ORIGIN%%/$origin/g;
    $text =~ s/%%PREFIX%%/$self->{prefix}/g;
    $text =~ s/%%PORT%%/$self->{port}/g;
    return $text;
}

sub config_text {
    my ($self) = @_;
    my $p = $self->{prefix};

    my $user = @WORKER ? "user $WORKER[0] $WORKER[1];" : '';
    my $conf = <<"EOF";
load_module $self->{module};

$user
worker_processes $self->{workers};
pid $p/logs/nginx.pid;
error_log $p/logs/error.log info;

events {
    worker_connections 1024;
}

http {
    types {
        text/html  html htm;
        text/plain txt;
        image/png  png;
    }
    default_type application/octet-stream;

    log_format simhash '\$pid \$request_uri \$status \$simhash_status '
                       '\$simhash \$simhash_distance \$simhash_duplicate_of';
    access_log $p/logs/access.log simhash;

    client_body_temp_path $p/tmp/body;
    proxy_temp_path       $p/tmp/proxy;
    fastcgi_temp_path     $p/tmp/fastcgi;
    uwsgi_temp_path       $p/tmp/uwsgi;
    scgi_temp_path        $p/tmp/scgi;

    $self->{http}

    server {
        listen 127.0.0.1:$self->{origin_port};
        root $p/html;

        location /gz/ {
            alias $p/html/;
            gzip on;
            gzip_types text/plain;
            gzip_min_length 1;
            gzip_http_version 1.0;
            gzip_proxied any;
        }

        location /chunked/ {
            alias $p/html/;
            sub_filter '</html>' '</html>';
        }

        location /latin1/ {
            alias $p/html/;
            charset iso-8859-1;
        }

        $self->{origin}
    }

    server {
        listen 127.0.0.1:$self->{port};

        $self->{proxy}
    }
}
EOF
    return $self->_expand($conf);
}

sub write_config {
    my ($self) = @_;
    $self->write_file('conf/nginx.conf', $self->config_text);
}

# nginx -t on the current configuration: (exit status, output).
sub nginx_t {
    my ($self) = @_;
    $self->write_config;
    my @args = $self->nginx_args('stderr');
    my $out = `${\ nginx_cmd()} -t @args 2>&1`;
    return ($? >> 8, $out);
}

sub conf_path { "$_[0]{prefix}/conf/nginx.conf" }

# The line of the written configuration that contains `text`.
sub line_of {
    my ($self, $text) = @_;
    my @lines = split /\n/, $self->config_text;
    for my $i (0 .. $#lines) {
        return $i + 1 if index($lines[$i], $text) >= 0;
    }
    return 0;
}

sub pid {
    my ($self) = @_;
    my $pid = $self->read_file('logs/nginx.pid');
    # (not chomp: a test may have undefined $/ for its own reads)
    return defined $pid && $pid =~ /^(\d+)\n?\z/ ? $1 : undef;
}

# The frames of a snapshot in the store's format (src/sh_store_file.h,
# src/sh_image.h): a list of { type => RECS|TEXT|END, at => offset of
# its payload, size => its bytes, n => records or text bytes }.
sub store_frames {
    my ($bytes) = @_;
    my ($magic, $version, $endian, $meta_len) = unpack('a8 V V Q<', $bytes);
    return () unless $magic eq 'SHZSTOR1';
    my $at = 32 + $meta_len;
    $at += (8 - $at % 8) % 8;
    my @frames;
    my %name = (1 => 'RECS', 2 => 'TEXT', 3 => 'END');
    while ($at + 24 <= length $bytes) {
        my ($type, $n) = unpack('V V', substr($bytes, $at, 8));
        my $size = $type == 1 ? $n * 56 : $type == 2 ? ($n + 7) & ~7 : 112;
        push @frames, { type => $name{$type} // '?', at => $at + 24,
                        size => $size, n => $n };
        last if $type == 3;
        $at += 24 + $size;
    }
    return @frames;
}

sub error_log { $_[0]->read_file('logs/error.log') // '' }

# The master's child processes (its workers, cache helpers), from /proc:
# no procps needed, which a minimal system (the package test's chroot)
# does not have.
sub children {
    my ($self) = @_;
    my $master = $self->pid // return ();
    my @kids;
    opendir(my $dh, '/proc') or return ();
    for my $p (grep { /^\d+$/ } readdir $dh) {
        open(my $fh, '<', "/proc/$p/stat") or next;
        my $stat = <$fh> // '';
        close $fh;
        push @kids, $p if $stat =~ /\) \S (\d+) / && $1 == $master;
    }
    closedir $dh;
    return sort { $a <=> $b } @kids;
}

# Whether something accepts connections on a loopback port.
sub port_open {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Proto => 'tcp') or return 0;
    close $s;
    return 1;
}

sub _wait_port {
    my ($self, $port) = @_;
    return wait_until("nginx to listen on port $port",
                      sub { port_open($port) });
}

sub start {
    my ($self) = @_;
    if ($VALGRIND) {
        $self->start_valgrind($self->valgrind_options);
        push @live, $self;
        $self->{running} = 1;
        return $self;
    }
    $self->write_config;
    unlink "$self->{prefix}/logs/nginx.pid";
    my @args = $self->nginx_args;
    my $out = `${\ nginx_cmd()} @args 2>&1`;
    if ($? != 0) {
        croak "nginx failed to start: $out\n" . $self->error_log;
    }
    wait_until("nginx's pid file", sub { $self->pid });
    $self->_wait_port($self->{port});
    # the master listens before it forks: a test that looks at a worker
    # (its memory, its CPU time) needs them to exist.  (In list context:
    # `!$self->children` called sort in scalar context, which is undef, and
    # so waited its whole 20 s at every start.)
    wait_until("nginx's $self->{workers} worker(s)",
               sub { (() = $self->children) >= $self->{workers} });
    push @live, $self;
    $self->{running} = 1;
    return $self;
}

# One nginx process (master_process off) under valgrind, in the foreground;
# stop() ends it with TERM and waits.  The report goes to logs/valgrind.log.
sub start_valgrind {
    my ($self, @vg) = @_;
    $self->{workers} = 1;
    $self->write_config;
    unlink "$self->{prefix}/logs/nginx.pid";
    my $log = "$self->{prefix}/logs/valgrind.log";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', "$self->{prefix}/logs/stderr.log");
        exec('valgrind', "--log-file=$log", @vg, $NGINX,
             $self->nginx_args, '-g', 'daemon off; master_process off;')
            or POSIX::_exit(127);
    }
    $self->{vg_pid} = $pid;
    # valgrind's nginx is 20 to 50 times slower: so are its answers
    valgrind_limit();
    $self->{ua}->timeout(time_left());
    # nginx listens before its modules' init_module (snapshots are loaded
    # there) and writes its pid file after: a test that reads the log of
    # the load right after start needs both
    wait_until("nginx under valgrind: its pid file and port $self->{port}",
               sub {
        croak "valgrind exited: " . ($self->read_file($log) // '')
            if waitpid($pid, WNOHANG) == $pid;
        return $self->pid && port_open($self->{port});
    });
    return $self;
}

# With master_process off, a TERM that arrives while nginx is busy sets its
# flag, and the process may then block in epoll_wait with no timer to wake
# it (the master avoids this with sigsuspend; valgrind's slow signal
# delivery makes the race likely): TERM again until it exits.
sub stop_valgrind {
    my ($self) = @_;
    my $pid = delete $self->{vg_pid} or return;
    my $next = 0;
    my $gone = eval {
        wait_until("nginx under valgrind (pid $pid) to exit after TERM",
                   sub {
            return 1 if waitpid($pid, WNOHANG) == $pid;
            # a TERM every 2 s: the first may be lost (above)
            if (time >= $next) { kill 'TERM', $pid; $next = time + 2 }
            return 0;
        });
    };
    if (!$gone) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        die $@ if $@;
    }
    return $self->read_file('logs/valgrind.log') // '';
}

# The options of the suite-wide valgrind mode: every error counts, and a
# definite leak too, except the allocations nginx (and the module's HMAC)
# make once and hold for the process's life (tools/valgrind-nginx.supp
# says which and why).
sub valgrind_options {
    my ($self) = @_;
    my $supp = "$TOP/tools/valgrind-nginx.supp";
    return ('--leak-check=full', '--show-leak-kinds=definite',
            '--errors-for-leak-kinds=definite', '--num-callers=30',
            "--suppressions=$supp");
}

# What the checking modes found in this object's logs, or ''.
sub postmortem {
    my ($self) = @_;
    my $found = '';
    my $log = $self->error_log;
    if ($log =~ /AddressSanitizer|LeakSanitizer|runtime error:/) {
        $found .= "sanitizer report in $self->{prefix}/logs/error.log:\n"
                . $log;
    }
    my $vg = $self->read_file('logs/valgrind.log') // '';
    if ($VALGRIND && $vg ne '' && $vg !~ /ERROR SUMMARY: 0 errors/) {
        $found .= "valgrind report $self->{prefix}/logs/valgrind.log:\n$vg";
    }
    return $found;
}

sub _count {
    my ($self, $re) = @_;
    my @m = $self->error_log =~ /$re/g;
    return scalar @m;
}

# The lines of a file in the prefix, 0 if there is none: with an access
# log, the requests that reached that server block.
sub lines_of {
    my ($self, $file) = @_;
    my $text = $self->read_file($file) // '';
    return scalar(() = $text =~ /\n/g);
}

# The same, once it has at least n lines: a server logs a request as it
# ends, which may be after its client (the proxy) has the answer.
sub wait_lines {
    my ($self, $file, $n) = @_;
    wait_until("$n lines in $file", sub { $self->lines_of($file) >= $n });
    return $self->lines_of($file);
}

# The lines of a file once one of them matches re: a count to compare with
# later (`before`) that has the request of that line in it, whichever
# process logs it and however late.  A count taken right after a request
# may miss its line: the server that answered logs it as the request ends,
# which may be after its client (a proxy, the test) has the answer.
sub lines_after {
    my ($self, $file, $re) = @_;
    wait_until("a line matching $re in $file",
               sub { ($self->read_file($file) // '') =~ $re });
    return $self->lines_of($file);
}

# Wait until `n` (default 1) more lines of the error log match re than the
# `before` there were.
sub wait_log {
    my ($self, $re, $before, $n) = @_;
    $n //= 1;
    return wait_until("$n more error log line(s) matching $re (after "
                      . "$before)", sub { $self->_count($re) >= $before + $n });
}

# nginx -s reload, then wait for the new workers.
sub reload {
    my ($self) = @_;
    $self->write_config;
    croak $NO_RELOAD if $NO_RELOAD;
    my $re = qr/start worker process/;
    my $before = $self->_count($re);
    my $fail = $self->_count(qr/\[emerg\]/);
    my @old = $self->children;
    kill 'HUP', $self->pid or croak "no nginx to reload";
    wait_until("$self->{workers} new worker(s) after the reload", sub {
        croak "reload failed: " . $self->error_log
            if $self->_count(qr/\[emerg\]/) > $fail;
        return $self->_count($re) >= $before + $self->{workers};
    });
    # The old workers close their listening sockets right after they log
    # "gracefully shutting down", in one go: from then on only new workers
    # answer (was: a fixed 0.2 s).
    wait_until("the old workers (@old) to shut down", sub {
        my $log = $self->error_log;
        return !grep { alive($_) && $log !~ /\b$_#\d+: gracefully shutting down/ }
               @old;
    });
    return $self;
}

# Stop (fast shutdown by default, "quit" for graceful); wait for the master.
sub stop {
    my ($self, $how) = @_;
    return unless $self->{running};
    if ($self->{vg_pid}) {
        $self->{running} = 0;
        @live = grep { $_ != $self } @live;
        $self->stop_valgrind;
        return $self;
    }
    my $pid = $self->pid;
    $self->{running} = 0;
    return unless $pid;
    my $sig = ($how && $how eq 'quit') ? 'QUIT' : 'TERM';
    kill $sig, $pid;
    @live = grep { $_ != $self } @live;
    wait_until("nginx (pid $pid) to exit after $sig",
               sub { !alive($pid) });
    return $self;
}

# stop(), and if even that runs out of time (the file's limit is past),
# SIGKILL to the master and its workers: nothing is left running.
sub _stop_or_kill {
    my ($self) = @_;
    my @pids = ($self->pid // (), $self->children);
    return if eval { $self->stop; 1 };
    Test::More::diag($@);
    kill 'KILL', @pids if @pids;
}

# The daemonized master is not our child: once it exits it may stay a
# zombie until init reaps it.
sub alive {
    my ($pid) = @_;
    return 0 unless kill(0, $pid);
    open(my $fh, '<', "/proc/$pid/stat") or return 1;
    my $stat = <$fh> // '';
    close $fh;
    return $stat !~ /^\d+ \(.*\) Z/;
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $!, $@);
    $self->_stop_or_kill if $self->{running};
    if ($self->{vg_pid}) {
        kill 'KILL', $self->{vg_pid};
        waitpid($self->{vg_pid}, 0);
    }
    kill 'TERM', $_ for @{ $self->{children} || [] };
    waitpid($_, 0) for @{ $self->{children} || [] };
}

# Stop what still runs; then, in a checking mode, a report in any log fails
# the file: this END runs before Test::Builder's, which exits with our $?.
END {
    my $status = $?;
    $_->_stop_or_kill for @live;
    my $found = join '', map { $_->postmortem } @all;
    if ($found ne '') {
        diag($found);
        $status ||= 1;
    }
    $? = $status;
}

# The error log holds no [alert], [crit] or [emerg]; `also` adds patterns.
sub check_log {
    my ($self, $name, @also) = @_;
    my @bad = grep { /\[(alert|crit|emerg)\]/ } split /\n/, $self->error_log;
    for my $re (@also) {
        push @bad, grep { /$re/ } split /\n/, $self->error_log;
    }
    ok(!@bad, $name || 'error log has no alert, crit or emerg')
        or diag(join("\n", @bad));
}

# HTTP through the proxy.  Returns HTTP::Tiny's response hash (header names
# lowercased).
sub get {
    my ($self, $path, %headers) = @_;
    return $self->{ua}->get($self->url($path), { headers => \%headers });
}

sub head {
    my ($self, $path, %headers) = @_;
    return $self->{ua}->head($self->url($path), { headers => \%headers });
}

sub status_of {
    my ($self, $path, %headers) = @_;
    return $self->get($path, %headers)->{headers}{'x-simhash-status'} // '';
}

# Raw HTTP/1.0 exchange: returns (status, headers hashref, body bytes).
# `path` may be an absolute URI (what a forward proxy receives); a Host
# header given replaces the default 127.0.0.1, and Host => undef sends
# none.
sub raw_get {
    my ($self, $path, %headers) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $headers{_port} || $self->{port},
                                  Proto => 'tcp', Timeout => 20)
        or die "connect: $!";
    delete $headers{_port};
    my $host = exists $headers{Host} ? delete $headers{Host} : '127.0.0.1';
    my $req = "GET $path HTTP/1.0\r\n";
    $req .= "Host: $host\r\n" if defined $host;
    $req .= "$_: $headers{$_}\r\n" for sort keys %headers;
    print $s "$req\r\n";
    local $/;
    my $resp = <$s> // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    return (0, {}, '') unless defined $head;
    my @lines = split /\r\n/, $head;
    my ($status) = (shift(@lines) // '') =~ m{^HTTP/\S+ (\d+)};
    my %h;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $h{lc $k} = $v;
    }
    return ($status // 0, \%h, $body // '');
}

sub stats {
    my ($self, $path) = @_;
    my $r = $self->get($path || '/stats');
    die "stats: $r->{status} $r->{content}" unless $r->{success};
    return decode_json($r->{content});
}

# The simhash CLI's fingerprint of a file: 16 hex digits, or '-'.
sub cli_fingerprint {
    my ($self, $file, @opts) = @_;
    my $cli = $ENV{SH_CLI};
    return undef unless $cli && -x $cli;
    my $path = $file =~ m{^/} ? $file : "$self->{prefix}/html/$file";
    my $out = `$cli fingerprint @opts '$path'`;
    return undef if $?;
    my ($hash) = split /\t/, $out;
    return $hash;
}

sub distance {
    my ($a, $b) = @_;
    my $x = hex_to_bits($a) ^ hex_to_bits($b);
    return unpack('%32b*', $x);
}

sub hex_to_bits { pack('H*', $_[0]) }

# A tiny origin in Perl for what nginx will not produce (truncated bodies,
# deflate, slow drips).  `handler` gets the request path and returns a list
# of (chunk, delay_seconds) pairs to write; the connection closes after.
# Each chunk written is logged in logs/raw-origin.log as "PATH N" (N from
# 1), for a test to wait on how far an answer went.
sub raw_origin {
    my ($self, $handler) = @_;
    my $srv = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1',
                                    LocalPort => 0, Proto => 'tcp',
                                    ReuseAddr => 1)
        or die "raw origin: $!";
    my $port = $srv->sockport;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        $SIG{PIPE} = 'IGNORE';
        while (my $c = $srv->accept) {
            my $req = '';
            while (defined(my $line = <$c>)) {
                $req .= $line;
                last if $line eq "\r\n";
            }
            my ($path) = $req =~ m{^\S+ (\S+)};
            my @out = $handler->($path // '/');
            my $n = 0;
            while (@out) {
                my ($chunk, $delay) = splice(@out, 0, 2);
                $c->syswrite($chunk) if length $chunk;
                if (open(my $log, '>>', "$self->{prefix}/logs/raw-origin.log")) {
                    print $log ($path // '/'), ' ', ++$n, "\n";
                    close $log;
                }
                sleep $delay if $delay;
            }
            close $c;
        }
        POSIX::_exit(0);
    }
    close $srv;
    push @{ $self->{children} }, $pid;
    return $port;
}

# Deterministic pseudo-random pages that are not near-duplicates of each
# other: `n` pages of `words` words from the fixture vocabulary.
sub random_pages {
    my ($self, $n, $words, $seed) = @_;
    my %vocab;
    opendir(my $dh, $FIXTURES) or die $!;
    for my $f (grep { /\.html$/ && !/latin1/ } readdir $dh) {
        my $c = $self->read_file("$FIXTURES/$f");
        $c =~ s/<[^>]*>/ /g;
        $vocab{lc $1}++ while $c =~ /([A-Za-z]{4,})/g;
    }
    closedir $dh;
    my @vocab = sort keys %vocab;
    my $x = $seed || 12345;
    my $rand = sub { $x = ($x * 1103515245 + 12345) % 2147483648; $x };
    my @pages;
    for my $i (1 .. $n) {
        my @w = map { $vocab[$rand->() % @vocab] } 1 .. $words;
        my @p;
        push @p, '<p>' . join(' ', splice(@w, 0, 40)) . ".</p>\n" while @w;
        push @pages, "<!DOCTYPE html>\n<html><head><title>Page $i</title>"
                   . "</head><body><h1>Page number $i</h1>\n@p</body></html>\n";
    }
    return @pages;
}

1;
