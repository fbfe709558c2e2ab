package RedisTest;

# A redis-server of its own for the replication tests: a temporary
# directory with its own configuration, a free loopback port, append-only
# persistence (a kill -9 keeps every acknowledged write, as in production),
# no snapshots.  Core Perl only, with a small RESP client for what the tests
# do by hand (XADD of garbage, XTRIM, XLEN, XRANGE).
#
#   my $redis = RedisTest->new(password => 'secret');   # or none
#   $redis->start;
#   my $url = $redis->url;              # redis://:secret@127.0.0.1:PORT
#   RedisTest->new(unixsocket => 1)->unix_url   # unix:DIR/redis.sock too
#   $redis->cmd('XLEN', 'simhash:crawl');
#   $redis->kill9; $redis->start;       # same port, same data
#   $redis->stop;
#   RedisTest->new(extra => "maxmemory 1gb\n")   # more configuration lines
#
# RedisTest::available() says whether redis-server is installed; tests skip
# without it (tools/deps.sh installs it for `make test`).  No Test::More
# here: `make bench` (bench/replicate.pl) uses it too.

use strict;
use warnings;

use Carp qw(croak);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);
use SimhashTest ();

our $SERVER = $ENV{SH_REDIS_SERVER} || 'redis-server';

my @live;

sub available {
    return scalar grep { -x "$_/$SERVER" } split /:/, $ENV{PATH};
}

sub new {
    my ($class, %args) = @_;
    my $self = bless { password => undef, appendonly => 1, %args }, $class;
    $self->{dir} = tempdir('simhash-redis-XXXXXX', TMPDIR => 1,
                           CLEANUP => !$ENV{SH_KEEP});
    $self->{port} = SimhashTest::free_port();
    return $self;
}

# CPU seconds Redis has used (INFO cpu), for what a benchmark costs it.
sub cpu {
    my ($self) = @_;
    my $info = $self->cmd('INFO', 'cpu');
    my ($sys) = $info =~ /used_cpu_sys:([\d.]+)/;
    my ($user) = $info =~ /used_cpu_user:([\d.]+)/;
    return ($sys // 0) + ($user // 0);
}

sub port { $_[0]{port} }
sub dir { $_[0]{dir} }
sub unix_url { "unix:$_[0]{dir}/redis.sock" }

# The URL for simhash_replicate, with the password if there is one (or
# the one given).
sub url {
    my ($self, $password) = @_;
    $password //= $self->{password};
    return defined $password ? "redis://:$password\@127.0.0.1:$self->{port}"
                             : "redis://127.0.0.1:$self->{port}";
}

sub start {
    my ($self) = @_;
    my $conf = "$self->{dir}/redis.conf";
    open(my $fh, '>', $conf) or die "$conf: $!";
    print $fh "port $self->{port}\nbind 127.0.0.1\ndir $self->{dir}\n"
            . "save \"\"\nappendonly " . ($self->{appendonly} ? 'yes' : 'no')
            . "\nappendfsync no\nlogfile $self->{dir}/redis.log\n"
            . "daemonize no\nprotected-mode no\n";
    print $fh "requirepass $self->{password}\n" if defined $self->{password};
    print $fh $self->{extra} if defined $self->{extra};
    if ($self->{unixsocket}) {
        # nginx's workers may run as nobody: the directory must let them by
        chmod(0755, $self->{dir});
        print $fh "unixsocket $self->{dir}/redis.sock\nunixsocketperm 777\n";
    }
    close $fh;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', '/dev/null');
        exec($SERVER, $conf) or POSIX::_exit(127);
    }
    $self->{pid} = $pid;
    push @live, $self;
    SimhashTest::wait_until("redis-server to answer PING on port "
                            . $self->{port}, sub {
        my $r = eval { $self->cmd('PING') };
        return 1 if defined $r && !ref $r;
        croak "redis-server exited: " . $self->log
            if waitpid($pid, WNOHANG) == $pid;
        return 0;
    });
    return $self;
}

sub log {
    my ($self) = @_;
    open(my $fh, '<', "$self->{dir}/redis.log") or return '';
    local $/;
    return <$fh> // '';
}

sub _end {
    my ($self, $sig) = @_;
    my $pid = delete $self->{pid} or return;
    kill $sig, $pid;
    waitpid($pid, 0);
    @live = grep { defined $_ && $_ != $self } @live;
}

sub stop { $_[0]->_end('TERM') }
sub kill9 { $_[0]->_end('KILL') }

sub DESTROY { local ($?, $!, $@); $_[0]->_end('KILL') }
END { local $?; $_->_end('KILL') for @live }

# One command; the reply decoded: a string, an integer, undef (nil), an
# array ref, or { error => 'MESSAGE' }.
sub cmd {
    my ($self, @args) = @_;
    my $s = $self->{sock};
    if (!$s || !$s->connected) {
        # tls => { ca, cert, key }: a server that speaks TLS only
        # (RedisCluster's tls), its certificate verified
        $s = $self->{sock} = $self->{tls}
            ? do {
                require IO::Socket::SSL;
                IO::Socket::SSL->new(
                    PeerAddr => '127.0.0.1', PeerPort => $self->{port},
                    Timeout => 5, SSL_ca_file => $self->{tls}{ca},
                    SSL_cert_file => $self->{tls}{cert},
                    SSL_key_file => $self->{tls}{key})
                  or die "redis connect (TLS): $!, "
                         . IO::Socket::SSL::errstr();
              }
            : IO::Socket::INET->new(
                PeerAddr => '127.0.0.1', PeerPort => $self->{port},
                Proto => 'tcp', Timeout => 5) or die "redis connect: $!";
        # auth => [USER, PASSWORD]: an ACL user (RedisCluster's users)
        my @auth = $self->{auth} ? @{ $self->{auth} }
                 : defined $self->{password} ? ($self->{password}) : ();
        if (@auth) {
            $self->_send($s, 'AUTH', @auth);
            my $r = $self->_read($s);
            die "redis AUTH: $r->{error}" if ref $r eq 'HASH';
        }
    }
    $self->_send($s, @args);
    my $r = eval { $self->_read($s) };
    if ($@) {
        delete $self->{sock};
        die $@;
    }
    return $r;
}

# entry(node => ID, key => K, fp => HEX, [digest, time, xv, seq], [seed =>
# SECRET]) -> the field/value list of a stream entry as a node of a tier
# with those extraction defaults (and that simhash_seed) writes it, signed
# by `simhash entry` ($ENV{SH_CLI}; its seq: now in microseconds unless
# given).
sub entry {
    my (%e) = @_;
    my @args = map { ("--$_" => $e{$_}) } grep { defined $e{$_} }
               qw(seed node key fp digest time xv seq);
    my $cmd = join ' ', $ENV{SH_CLI}, 'entry',
                        map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @args;
    my @pairs = map { split / /, $_, 2 } split /\n/, `$cmd`;
    die "$cmd failed" unless @pairs >= 18 && @pairs % 2 == 0;
    return @pairs;
}

# Many page entries signed by one run of `simhash entry --batch`: common
# options (seed, time, digest) in %opt, then [node, key, fp] each; returns
# a list of [field, value, ...], their seqs rising.  One process, not one
# per entry: 300 entries took 12 s one at a time.
sub entries {
    my ($opt, @list) = @_;
    my @args = map { ("--$_" => $opt->{$_}) } grep { defined $opt->{$_} }
               qw(seed time digest xv);
    my $cmd = join ' ', $ENV{SH_CLI}, 'entry', '--batch',
                        map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @args;
    my $in = File::Temp->new;
    print $in join(' ', @$_), "\n" for @list;
    close $in;
    my @out = map { [ map { split / /, $_, 2 } split /\n/ ] }
              grep { /\S/ } split /\n\n/, `$cmd < $in`;
    die "$cmd failed" unless $? == 0 && @out == @list
                             && !grep { @$_ < 18 || @$_ % 2 } @out;
    return @out;
}

sub _send {
    my ($self, $s, @args) = @_;
    my $out = '*' . @args . "\r\n";
    $out .= '$' . length($_) . "\r\n$_\r\n" for @args;
    print $s $out;
}

sub _line {
    my ($s) = @_;
    my $l = <$s>;
    die "redis: connection closed\n" unless defined $l;
    $l =~ s/\r\n\z//;
    return $l;
}

sub _read {
    my ($self, $s) = @_;
    my $l = _line($s);
    my ($t, $rest) = (substr($l, 0, 1), substr($l, 1));
    return $rest if $t eq '+';
    return { error => $rest } if $t eq '-';
    return 0 + $rest if $t eq ':';
    if ($t eq '$') {
        return undef if $rest < 0;
        my $buf = '';
        while (length $buf < $rest + 2) {
            my $n = read($s, $buf, $rest + 2 - length $buf, length $buf);
            die "redis: short read\n" unless $n;
        }
        return substr($buf, 0, $rest);
    }
    if ($t eq '*') {
        return undef if $rest < 0;
        return [ map { $self->_read($s) } 1 .. $rest ];
    }
    die "redis: unexpected reply '$l'\n";
}

1;
