package RedisCluster;

# A Redis Cluster of its own: redis-server processes started with
# cluster-enabled on free ports (the client port and the cluster bus port,
# both chosen free: the bus is not assumed at port + 10000), joined by
# `redis-cli --cluster create`, and waited on until every node says
# cluster_state:ok and serves the same slot map.  Everything is stopped at
# the end (or at the file's exit, by RedisTest's END).
#
#   my $c = RedisCluster->new(masters => 3, replicas => 1,
#                             node_timeout => 1000);
#   $c->start;                      # dies saying why if it cannot
#   $c->addr;                       # "127.0.0.1:PORT" of the first node
#   $c->urls;                       # "redis://127.0.0.1:PORT,..." of all
#   $c->master_of_slot(1234);       # the RedisTest node serving it
#   $c->kill_master_of_slot(1234);  # kill -9; returns the node
#   $c->wait_ok;                    # every live node: state ok, all slots
#   $c->stop;
#
# RedisCluster::available() adds redis-cli to RedisTest's check.

use strict;
use warnings;

use Carp qw(croak);
use RedisTest ();
use SimhashTest ();

sub available {
    return RedisTest::available()
        && scalar grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};
}

sub new {
    my ($class, %args) = @_;
    my $self = bless { masters => 3, replicas => 1, node_timeout => 2000,
                       appendonly => 0, %args }, $class;
    my $n = $self->{masters} * (1 + $self->{replicas});
    for (1 .. $n) {
        my $bus = SimhashTest::free_port();
        push @{ $self->{nodes} }, RedisTest->new(
            appendonly => $self->{appendonly},
            extra => "cluster-enabled yes\n"
                   . "cluster-port $bus\n"
                   . "cluster-config-file nodes.conf\n"
                   . "cluster-node-timeout $self->{node_timeout}\n"
                   # a replica whose master just died may take over at
                   # once, however long it was cut off (the tests kill
                   # masters on purpose)
                   . "cluster-replica-validity-factor 0\n"
                   . ($self->{extra} // ''));
    }
    return $self;
}

sub nodes { @{ $_[0]{nodes} } }
sub addr { '127.0.0.1:' . $_[0]{nodes}[0]->port }
sub urls {
    my ($self) = @_;
    return join ',', map { 'redis://127.0.0.1:' . $_->port }
                     grep { $_->{pid} } $self->nodes;
}

sub start {
    my ($self) = @_;
    $_->start for $self->nodes;
    my @addrs = map { '127.0.0.1:' . $_->port } $self->nodes;
    my $out = `redis-cli --cluster create @addrs --cluster-replicas $self->{replicas} --cluster-yes 2>&1`;
    croak "redis-cli --cluster create failed:\n$out" if $?;
    $self->wait_ok;
    return $self;
}

# Every live node's view: cluster_state:ok, and the 16384 slots served
# by live masters (not one this harness killed, which the others take
# for alive until cluster-node-timeout has passed), a map every live node
# agrees on.
sub wait_ok {
    my ($self) = @_;
    SimhashTest::wait_until('the cluster to be ok on every node', sub {
        my $first;
        for my $n (grep { $_->{pid} } $self->nodes) {
            my $info = eval { $n->cmd('CLUSTER', 'INFO') } // '';
            return 0 unless !ref $info && $info =~ /cluster_state:ok/
                            && $info =~ /cluster_slots_ok:16384/;
            my $map = $self->_map($n) // return 0;
            $first //= $map;
            return 0 unless $map eq $first;
        }
        return 1;
    });
}

# A node's slot map as text: "LO-HI PORT" a line.
sub _map {
    my ($self, $n) = @_;
    my $slots = eval { $n->cmd('CLUSTER', 'SLOTS') };
    return undef unless ref $slots eq 'ARRAY';
    for my $r (@$slots) {
        my $owner = $self->node_of_port($r->[2][1]);
        return undef unless $owner && $owner->{pid};
    }
    return join "\n", sort map { "$_->[0]-$_->[1] $_->[2][1]" } @$slots;
}

sub node_of_port {
    my ($self, $port) = @_;
    my ($n) = grep { $_->port == $port } $self->nodes;
    return $n;
}

sub master_of_slot {
    my ($self, $slot) = @_;
    for my $n (grep { $_->{pid} } $self->nodes) {
        my $slots = eval { $n->cmd('CLUSTER', 'SLOTS') };
        next unless ref $slots eq 'ARRAY';
        for my $r (@$slots) {
            return $self->node_of_port($r->[2][1])
                if $r->[0] <= $slot && $slot <= $r->[1];
        }
    }
    croak "no node serves slot $slot";
}

sub masters {
    my ($self) = @_;
    return grep {
        my $role = eval { $_->cmd('ROLE') };
        ref $role eq 'ARRAY' && $role->[0] eq 'master'
    } grep { $_->{pid} } $self->nodes;
}

# The sum of used_memory over the masters (INFO memory), in bytes.
sub used_memory {
    my ($self) = @_;
    my $sum = 0;
    for my $n ($self->masters) {
        my ($m) = $n->cmd('INFO', 'memory') =~ /used_memory:(\d+)/;
        $sum += $m;
    }
    return $sum;
}

sub kill_master_of_slot {
    my ($self, $slot) = @_;
    my $n = $self->master_of_slot($slot);
    $n->kill9;
    return $n;
}

sub stop { $_->stop for grep { $_->{pid} } $_[0]->nodes }

1;
