package StressNginx;

# One nginx instance of `make stress`: its prefix, configuration, processes
# and error log.  Core Perl, and t/lib/SimhashTest.pm for free ports.
#
#   my $ng = StressNginx->new(name => 'proxy', dir => $dir, conf => $text);
#   $ng->start;  $ng->workers;  $ng->reload;  $ng->kill_master;  $ng->stop;
#
# Every process this object sees (master and workers) is remembered, so that
# cleanup() ends exactly those, by pid, and only while /proc still shows
# them as nginx (a pid is never signalled after it was reused).

use strict;
use warnings;

use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

# The integration tests' harness, for its port allocation only.
use lib dirname(__FILE__) . '/../../t/lib';
use SimhashTest ();

our $NGINX = -x '/usr/sbin/nginx' ? '/usr/sbin/nginx' : 'nginx';

# Started by root, nginx runs its workers as an unprivileged user, and they
# open what they serve and write the snapshots themselves: run.pl puts the
# prefixes and the origin's corpus where that user can reach them (see
# tools/nginx-tmpdir.sh), and data/ belongs to it.  The user is named in
# the configuration (user_directive) rather than left to nginx's
# compiled-in default (nobody), so that the two agree.  Run by anyone
# else, every nginx process runs as that user: nothing to arrange.
our @WORKER;    # (user, group, uid, gid), or () when not root
if ($> == 0) {
    my ($name, undef, $uid, $gid) = getpwnam('nobody')
        or die "no user nobody for nginx's workers\n";
    @WORKER = ($name, scalar(getgrgid($gid)) // $gid, $uid, $gid);
}

sub user_directive { @WORKER ? "user $WORKER[0] $WORKER[1];\n" : '' }

my @instances;

# The tests' rule: never a port handed out before in this process.
sub free_port { SimhashTest::free_port() }

sub write_file {
    my ($path, $content) = @_;
    open(my $fh, '>:raw', "$path.new") or die "$path: $!";
    print $fh $content;
    close $fh or die "$path: $!";
    rename("$path.new", $path) or die "$path: $!";
    return $path;
}

sub read_file {
    my ($path) = @_;
    open(my $fh, '<:raw', $path) or return undef;
    local $/;
    my $c = <$fh>;
    close $fh;
    return $c;
}

sub new {
    my ($class, %args) = @_;
    my $self = bless { %args, seen => {} }, $class;
    my $d = $self->{dir};
    remove_tree($d);
    make_path(map { "$d/$_" } qw(conf logs tmp data));
    # the workers write only the snapshots, in data/
    chmod 0755, $d, map { "$d/$_" } qw(conf logs tmp data);
    chown $WORKER[2], $WORKER[3], "$d/data" if @WORKER;
    $self->{ua} = HTTP::Tiny->new(timeout => 30, keep_alive => 1);
    push @instances, $self;
    return $self;
}

sub dir { $_[0]{dir} }
sub conf_file { "$_[0]{dir}/conf/nginx.conf" }
sub log_file { "$_[0]{dir}/logs/error.log" }
sub error_log { read_file($_[0]->log_file) // '' }
sub log_size { -s $_[0]->log_file || 0 }

# The error log from byte `from` on.
sub log_since {
    my ($self, $from) = @_;
    my $log = $self->error_log;
    return length($log) > $from ? substr($log, $from) : '';
}

sub set_conf { my ($self, $conf) = @_; $self->{conf} = $conf; $self }

sub pid {
    my ($self) = @_;
    my $pid = read_file("$self->{dir}/logs/nginx.pid") // '';
    return $pid =~ /^(\d+)/ ? $1 : undef;
}

sub cmdline {
    my ($pid) = @_;
    my $c = read_file("/proc/$pid/cmdline") // '';
    $c =~ s/\0+$//;
    $c =~ s/\0/ /g;
    return $c;
}

sub ppid_of {
    my ($pid) = @_;
    my $stat = read_file("/proc/$pid/stat") // '';
    return $stat =~ /^\d+ \(.*\) \S (\d+)/ ? $1 : 0;
}

# Alive and not a zombie.
sub alive {
    my ($pid) = @_;
    my $stat = read_file("/proc/$pid/stat") // return 0;
    return $stat !~ /^\d+ \(.*\) Z/;
}

# Children of the master: [pid, title] for every nginx process of ours.
sub children {
    my ($self, $master) = @_;
    $master //= $self->pid or return ();
    my @kids;
    opendir(my $dh, '/proc') or die "/proc: $!";
    for my $pid (grep { /^\d+$/ } readdir $dh) {
        next unless ppid_of($pid) == $master;
        my $title = cmdline($pid);
        next unless $title =~ /^nginx: /;
        $self->{seen}{$pid} = 1;
        push @kids, [$pid, $title];
    }
    closedir $dh;
    return @kids;
}

# Workers of the current generation (not those shutting down).
sub workers {
    my ($self) = @_;
    return sort { $a <=> $b }
           map { $_->[0] }
           grep { $_->[1] =~ /worker process$/ } $self->children;
}

sub nworkers { my @w = $_[0]->workers; return scalar @w }

sub wait_port {
    my ($self, $port, $timeout) = @_;
    my $end = time + ($timeout || 15);
    while (time < $end) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $port, Proto => 'tcp');
        if ($s) { close $s; return 1 }
        sleep 0.05;
    }
    return 0;
}

sub wait_workers {
    my ($self, $n, $timeout) = @_;
    my $end = time + ($timeout || 15);
    while (time < $end) {
        return 1 if $self->nworkers >= $n;
        sleep 0.05;
    }
    return 0;
}

# The options that put nginx in this instance's prefix.  -e: the log nginx
# opens before reading the configuration (by default
# /var/log/nginx/error.log, which only root may open).
sub nginx_args {
    my ($self) = @_;
    return ('-p', "$self->{dir}/", '-c', $self->conf_file,
            '-e', $self->log_file);
}

# Start the daemon; dies with the error log when it does not come up.
sub start {
    my ($self) = @_;
    write_file($self->conf_file, $self->{conf});
    unlink "$self->{dir}/logs/nginx.pid";
    my $cmd = join(' ', $NGINX, $self->nginx_args) . ' 2>&1';
    local %ENV = (%ENV, %{ $self->{env} || {} });
    my $out = `$cmd`;
    die "$self->{name}: nginx failed to start: $out\n" . $self->error_log
        if $? != 0;
    my $end = time + 15;
    sleep 0.02 while !$self->pid && time < $end;
    my $pid = $self->pid or die "$self->{name}: no pid file\n";
    $self->{seen}{$pid} = 1;
    $self->wait_port($self->{port})
        or die "$self->{name}: port $self->{port} not answering\n";
    $self->wait_workers($self->{workers} || 1);
    return $self;
}

# nginx -s reload; returns once the new generation of workers runs.
sub reload {
    my ($self) = @_;
    write_file($self->conf_file, $self->{conf});
    my %old = map { $_ => 1 } $self->workers;
    kill 'HUP', $self->pid or die "$self->{name}: no master to reload\n";
    my $end = time + 15;
    while (time < $end) {
        my @new = grep { !$old{$_} } $self->workers;
        return scalar @new if @new >= ($self->{workers} || 1);
        sleep 0.05;
    }
    return 0;
}

sub kill_master {
    my ($self) = @_;
    my $pid = $self->pid or return;
    kill 'KILL', $pid;
    my $end = time + 5;
    sleep 0.02 while alive($pid) && time < $end;
    return $pid;
}

# Stop the master (TERM: fast shutdown, which saves the zone) and wait.
sub stop {
    my ($self, $timeout) = @_;
    my $pid = $self->pid or return 1;
    return 1 unless alive($pid) && cmdline($pid) =~ /^nginx: master/;
    kill 'TERM', $pid;
    my $end = time + ($timeout || 30);
    sleep 0.05 while alive($pid) && time < $end;
    return !alive($pid);
}

# Every process of ours still running, by pid, then forget them.
sub cleanup {
    my ($self) = @_;
    $self->stop(10);
    for my $pid (keys %{ $self->{seen} }) {
        kill 'KILL', $pid if alive($pid) && cmdline($pid) =~ /^nginx: /;
    }
}

sub cleanup_all { $_->cleanup for @instances }

# HTTP GET on this instance; HTTP::Tiny's response.
sub get {
    my ($self, $path, %opt) = @_;
    my $port = $opt{port} || $self->{port};
    return $self->{ua}->get("http://127.0.0.1:$port$path",
                            { headers => $opt{headers} || {} });
}

sub stats {
    my ($self) = @_;
    my $r = $self->get('/simhash-stats');
    return undef unless $r->{success};
    my $z = eval { decode_json($r->{content}) } or return undef;
    return $z->{zones}{crawl};
}

# VmRSS and Pss of a process, in KB ([] when it is gone).
sub memory {
    my ($pid) = @_;
    my $status = read_file("/proc/$pid/status") // return ();
    my ($rss) = $status =~ /^VmRSS:\s+(\d+)/m;
    my $roll = read_file("/proc/$pid/smaps_rollup") // '';
    my ($pss) = $roll =~ /^Pss:\s+(\d+)/m;
    return ($rss // 0, $pss // 0);
}

1;
