package FakeRedis;

# A hostile or broken Redis on loopback, for the module's reader and
# publisher: it speaks RESP well enough to pass the handshake (AUTH, SELECT,
# PING), then does what the test scripted.  Each connection is served by a
# process of its own, so that a reply that never ends does not stop the
# next connection from being accepted.
#
#   my $fake = FakeRedis->new(on => { PING => sub { ... }, ... });
#   $fake->start; ... $fake->url ... $fake->connections; $fake->stop;
#
# A handler gets the connection (FakeRedis::Conn: ->send(BYTES),
# ->bulk(STR), ->array(LIST of STR), ->n (its number, from 1), ->count (how
# many commands of this name it got)) and the command's arguments; what it
# returns is ignored.  Commands without a handler get what a real Redis
# with an empty keyspace says: +PONG, +OK, -ERR no such key for XINFO, nil
# after BLOCK ms for XREAD, an id for XADD.
#
# What the server got is appended to DIR/commands (one line per command,
# "CONN NAME ARG..." with arguments cut to 60 bytes), so that a test can
# check what the module sent.

use strict;
use warnings;
use IO::Socket::INET;
use File::Temp qw(tempdir);
use POSIX qw(_exit);
use Time::HiRes qw(sleep time);

my @live;

sub new {
    my ($class, %args) = @_;
    my $self = bless { on => {}, %args }, $class;
    $self->{dir} = tempdir('fakeredis-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $self->{listen} = IO::Socket::INET->new(
        Listen => 64, LocalAddr => '127.0.0.1', LocalPort => 0,
        Proto => 'tcp', ReuseAddr => 1) or die "fake redis: $!";
    $self->{port} = $self->{listen}->sockport;
    return $self;
}

sub port { $_[0]{port} }
sub url { "redis://127.0.0.1:$_[0]{port}" }

sub start {
    my ($self) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        $SIG{CHLD} = 'IGNORE';
        my $n = 0;
        while (my $c = $self->{listen}->accept) {
            $n++;
            my $kid = fork;
            if (defined $kid && $kid == 0) {
                close $self->{listen};
                $self->_serve($c, $n);
                _exit(0);
            }
            close $c;
        }
        _exit(0);
    }
    close $self->{listen};
    $self->{pid} = $pid;
    push @live, $self;
    return $self;
}

# The commands received, as [conn, name, args...] in order.
sub commands {
    my ($self) = @_;
    open(my $fh, '<', "$self->{dir}/commands") or return ();
    return map { chomp; [ split / /, $_ ] } <$fh>;
}

sub connections {
    my ($self) = @_;
    my %c = map { $_->[0] => 1 } $self->commands;
    return scalar keys %c;
}

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    # a connection's process ends when its peer closes, or after its
    # next command once this one is gone
    kill 'KILL', $pid;
    waitpid($pid, 0);
    @live = grep { $_ != $self } @live;
}

sub DESTROY { local ($?, $!, $@); $_[0]->stop }
END { local $?; $_->stop for @live }

sub _serve {
    my ($self, $sock, $n) = @_;
    my $c = bless { sock => $sock, n => $n, counts => {} }, 'FakeRedis::Conn';
    $SIG{PIPE} = 'IGNORE';
    # the connection's process dies with the test even if stop() is missed
    my $parent = getppid;
    while (my @cmd = $c->read_command) {
        my $name = uc $cmd[0];
        $c->{counts}{$name}++;
        if (open(my $log, '>>', "$self->{dir}/commands")) {
            print $log join(' ', $n, $name,
                            map { my $a = substr($_, 0, 60); $a =~ s/\s/_/g;
                                  $a } @cmd[1 .. $#cmd]), "\n";
            close $log;
        }
        my $h = $self->{on}{$name};
        if ($h) {
            $h->($c, @cmd[1 .. $#cmd]);
        } else {
            $c->default($name, @cmd[1 .. $#cmd]);
        }
        last unless kill 0, $parent;
    }
}

package FakeRedis::Conn;

use Time::HiRes qw(sleep);

sub n { $_[0]{n} }
sub count { $_[0]{counts}{ uc $_[1] } // 0 }

sub send {
    my ($self, $bytes) = @_;
    my $s = $self->{sock};
    while (length $bytes) {
        my $w = syswrite($s, $bytes);
        return 0 unless defined $w && $w > 0;
        substr($bytes, 0, $w) = '';
    }
    return 1;
}

sub bulk { '$' . length($_[1]) . "\r\n$_[1]\r\n" }

sub array {
    my ($self, @items) = @_;
    return '*' . @items . "\r\n"
           . join('', map { ref $_ ? $_->[0] : $self->bulk($_) } @items);
}

# Send $chunk again and again until $bytes went or the peer closed.
sub flood {
    my ($self, $chunk, $bytes) = @_;
    my $sent = 0;
    while ($sent < $bytes) {
        $self->send($chunk) or return $sent;
        $sent += length $chunk;
    }
    return $sent;
}

sub default {
    my ($self, $name, @args) = @_;
    if ($name eq 'PING') { return $self->send("+PONG\r\n") }
    if ($name eq 'XINFO') { return $self->send("-ERR no such key\r\n") }
    if ($name eq 'XADD') {
        return $self->send($self->bulk(int(Time::HiRes::time() * 1000)
                                       . '-' . $self->{counts}{XADD}));
    }
    if ($name eq 'XREAD') {
        my %o;
        for my $i (0 .. $#args - 1) { $o{uc $args[$i]} = $args[$i + 1] }
        sleep(($o{BLOCK} // 0) / 1000);
        return $self->send("*-1\r\n");
    }
    return $self->send("+OK\r\n");
}

sub _line {
    my ($self) = @_;
    my $s = $self->{sock};
    my $l = <$s>;
    return undef unless defined $l;
    $l =~ s/\r\n\z//;
    return $l;
}

sub read_command {
    my ($self) = @_;
    my $l = $self->_line // return ();
    return split ' ', $l unless $l =~ /^\*(\d+)$/;
    my @args;
    for (1 .. $1) {
        my $h = $self->_line // return ();
        $h =~ /^\$(\d+)$/ or return ();
        my $buf = '';
        while (length $buf < $1 + 2) {
            my $r = read($self->{sock}, $buf, $1 + 2 - length $buf,
                         length $buf);
            return () unless $r;
        }
        push @args, substr($buf, 0, $1);
    }
    return @args;
}

1;
