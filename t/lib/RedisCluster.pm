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
#   $c->replica_of($node);          # its live replica
#   $c->wait_ok;                    # every live node: state ok, all slots
#   $c->stop;
#
# ACL users (users => { NAME => [PASSWORD, RULES] }): the default user is
# turned off, an administrator ("admin", every right) is what the harness,
# redis-cli --cluster and the replicas' links to their masters
# (masteruser/masterauth) use, and each user given is made on every node
# as `user NAME on >PASSWORD RULES`:
#
#   RedisCluster->new(users => { simhash => ['pw', '~sh:* +get'] });
#   $c->url_of('simhash');          # "redis://simhash:pw@127.0.0.1:PORT,..."
#
# TLS only (tls => 1): a CA made by openssl in a directory of its own
# ($c->tls_dir: ca.crt, node.crt/.key for every node and client.crt/.key
# for clients, both signed by it, for 127.0.0.1; otherca.crt, a CA that
# signed neither), every node on its tls-port alone (port 0), the cluster
# bus and the replication over TLS too (tls-cluster, tls-replication),
# joined by redis-cli --tls; the harness's own commands go over TLS.
#   $c->tls_args;                   # redis-cli's --tls --cacert ... options
#
# RedisCluster::available() adds redis-cli to RedisTest's check.

use strict;
use warnings;

use Carp qw(croak);
use File::Temp ();
use RedisTest ();
use SimhashTest ();

sub available {
    return RedisTest::available()
        && scalar grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};
}

sub new {
    my ($class, %args) = @_;
    my $self = bless { masters => 3, replicas => 1, node_timeout => 2000,
                       appendonly => 0, host => '127.0.0.1', %args }, $class;
    # host: the address every node announces (and listens on, beside
    # loopback), for a client in another network namespace
    my $bind = $self->{host} eq '127.0.0.1' ? ''
             : "bind 127.0.0.1 $self->{host}
"
             . "cluster-announce-ip $self->{host}
";
    my $n = $self->{masters} * (1 + $self->{replicas});
    my $acl = '';
    if ($self->{users}) {
        $self->{admin} = ['admin', 'admin-pass-' . $$];
        $acl = "user default off\n"
             . "user admin on >$self->{admin}[1] ~* &* +\@all\n"
             . "masteruser admin\nmasterauth $self->{admin}[1]\n";
        for my $u (sort keys %{ $self->{users} }) {
            my ($pass, $rules) = @{ $self->{users}{$u} };
            $acl .= "user $u on \">$pass\" $rules\n";
        }
    }
    my $tls = $self->{tls} ? $self->_tls_conf : '';
    for (1 .. $n) {
        my $bus = SimhashTest::free_port();
        push @{ $self->{nodes} }, RedisTest->new(
            ($self->{tls} ? (tls => $self->{tls_files}) : ()),
            appendonly => $self->{appendonly},
            ($self->{admin} ? (auth => $self->{admin}) : ()),
            extra => "cluster-enabled yes\n"
                   . "cluster-port $bus\n"
                   . "cluster-config-file nodes.conf\n"
                   . "cluster-node-timeout $self->{node_timeout}\n"
                   # a replica whose master just died may take over at
                   # once, however long it was cut off (the tests kill
                   # masters on purpose)
                   . "cluster-replica-validity-factor 0\n"
                   . $bind . $acl . $tls
                   . ($self->{extra} // ''));
        # TLS only: the port RedisTest chose is the TLS one
        $self->{nodes}[-1]{extra} .= "port 0\ntls-port "
                                     . $self->{nodes}[-1]->port . "\n"
            if $self->{tls};
    }
    return $self;
}

sub nodes { @{ $_[0]{nodes} } }
sub addr { '127.0.0.1:' . $_[0]{nodes}[0]->port }
sub urls {
    my ($self) = @_;
    my $scheme = $self->{tls} ? 'rediss' : 'redis';
    return join ',', map { "$scheme://$self->{host}:" . $_->port }
                     grep { $_->{pid} } $self->nodes;
}

sub tls_dir { $_[0]{tls_dir} }

sub tls_args {
    my ($self) = @_;
    my $f = $self->{tls_files};
    return "--tls --cacert $f->{ca} --cert $f->{cert} --key $f->{key}";
}

# The CA and certificates, and the configuration lines of a TLS node
# (its tls-port is added by the node: the port RedisTest chose).
sub _tls_conf {
    my ($self) = @_;
    my $d = $self->{tls_dir} = File::Temp::tempdir(
        'simhash-redis-tls-XXXXXX', TMPDIR => 1, CLEANUP => !$ENV{SH_KEEP});
    my $ossl = sub {
        system("openssl @_ >/dev/null 2>&1") == 0 or croak "openssl @_";
    };
    open(my $fh, '>', "$d/ext") or croak "$d/ext: $!";
    print $fh "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            . "basicConstraints=CA:FALSE\n";
    close $fh;
    for my $ca ('ca', 'otherca') {
        $ossl->("req -x509 -newkey rsa:2048 -nodes -keyout $d/$ca.key"
                . " -out $d/$ca.crt -days 2 -subj '/CN=simhash test $ca'");
    }
    for my $name ('node', 'client') {
        $ossl->("req -newkey rsa:2048 -nodes -keyout $d/$name.key"
                . " -out $d/$name.csr -subj /CN=127.0.0.1");
        $ossl->("x509 -req -in $d/$name.csr -CA $d/ca.crt -CAkey $d/ca.key"
                . " -CAcreateserial -out $d/$name.crt -days 2"
                . " -extfile $d/ext");
    }
    # nginx's workers may run as nobody
    chmod 0755, $d;
    chmod 0644, glob("$d/*");
    $self->{tls_files} = { ca => "$d/ca.crt", cert => "$d/client.crt",
                           key => "$d/client.key" };
    return "tls-cert-file $d/node.crt\ntls-key-file $d/node.key\n"
         . "tls-ca-cert-file $d/ca.crt\ntls-cluster yes\n"
         . "tls-replication yes\n";
}

# The seeds' URLs as a user of users => gives them, credentials
# percent-encoded.
sub url_of {
    my ($self, $user, $pass) = @_;
    $pass //= $self->{users}{$user}[0];
    my $enc = sub { (my $v = shift) =~ s/([^A-Za-z0-9_.~-])/sprintf '%%%02X', ord $1/ge; $v };
    my $cred = $enc->($user) . ':' . $enc->($pass) . '@';
    my $scheme = $self->{tls} ? 'rediss' : 'redis';
    return join ',', map { "$scheme://${cred}127.0.0.1:" . $_->port }
                     grep { $_->{pid} } $self->nodes;
}

sub start {
    my ($self) = @_;
    $_->start for $self->nodes;
    my @addrs = map { '127.0.0.1:' . $_->port } $self->nodes;
    my $auth = $self->{admin}
             ? "--user $self->{admin}[0] --pass $self->{admin}[1] --no-auth-warning"
             : '';
    $auth .= ' ' . $self->tls_args if $self->{tls};
    my $out = `redis-cli $auth --cluster create @addrs --cluster-replicas $self->{replicas} --cluster-yes 2>&1`;
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

# The live replica of a master (ROLE: its master's port), or undef.
sub replica_of {
    my ($self, $master) = @_;
    for my $n (grep { $_->{pid} && $_ != $master } $self->nodes) {
        my $role = eval { $n->cmd('ROLE') };
        return $n if ref $role eq 'ARRAY' && $role->[0] eq 'slave'
                     && $role->[2] == $master->port;
    }
    return undef;
}

sub kill_master_of_slot {
    my ($self, $slot) = @_;
    my $n = $self->master_of_slot($slot);
    $n->kill9;
    return $n;
}

sub stop { $_->stop for grep { $_->{pid} } $_[0]->nodes }

# A file of n random documents for `simhash cluster load` (key hash,
# fingerprint, digest, second, sketches), the same ones for the same
# seed of Perl's rand: every `every`-th as [id, fingerprint] (hex), the
# ones a test looks up.
sub random_docs {
    my ($path, $n, $every, $seed) = @_;
    my @known;
    srand($seed);
    open(my $fh, '>', $path) or croak "$path: $!";
    for my $i (1 .. $n) {
        my @v = map { sprintf '%08x', int(rand(2**32)) } 1 .. 6;
        print $fh "$v[0]$v[1] $v[2]$v[3] $v[4]$v[5] 1700000000 0 0\n";
        push @known, ["$v[0]$v[1]", "$v[2]$v[3]"] if $i % $every == 0;
    }
    close $fh or croak "$path: $!";
    return @known;
}


# A network namespace joined to this one by a veth pair, for a partition
# as Jepsen makes one: packets dropped (nftables, inside the namespace),
# not refused, so that a client sees silence, not an error.
#
#   my $why = RedisCluster::Netns::why_not();   # '' or why it cannot run
#   my $ns = RedisCluster::Netns->new;          # dies saying why
#   $ns->host;    # the address of this side ("10.x.y.1")
#   $ns->inside;  # the namespace's own ("10.x.y.2")
#   $ns->prefix;  # "ip netns exec NAME": a command run inside
#   $ns->cut(6379, 6380);   # drop every packet to/from those ports of host
#   $ns->heal;
#   $ns->remove;  # also at exit
package RedisCluster::Netns;

use Carp qw(croak);
use File::Temp ();

my @made;

sub why_not {
    return 'needs root (network namespaces, nftables)' if $> != 0;
    for my $tool (qw(ip nft)) {
        return "no $tool (iproute2, nftables: tools/deps.sh)"
            unless grep { -x "$_/$tool" }
                   split /:/, ($ENV{PATH} // '') . ':/usr/sbin:/sbin';
    }
    my $name = "shchk$$";
    my $out = `ip netns add $name 2>&1 && ip netns exec $name nft list tables 2>&1`;
    my $ok = $? == 0;
    system("ip netns del $name >/dev/null 2>&1");
    return $ok ? '' : "no network namespaces or nftables here: $out";
}

sub _run {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    croak "$cmd: $out" if $?;
    return $out;
}

sub new {
    my ($class) = @_;
    # a /30 of its own a process: two test files never share one
    my ($a, $b) = (128 + ($$ >> 8) % 64, $$ % 256);
    my $self = bless { name => "shpart$$", veth => "shp$$",
                       host => "10.$a.$b.1", inside => "10.$a.$b.2" }, $class;
    push @made, $self;
    my ($n, $v) = @$self{qw(name veth)};
    _run("ip netns add $n");
    _run("ip link add ${v}h type veth peer name ${v}n");
    _run("ip link set ${v}n netns $n");
    _run("ip addr add $self->{host}/30 dev ${v}h");
    _run("ip link set ${v}h up");
    _run("ip netns exec $n ip addr add $self->{inside}/30 dev ${v}n");
    _run("ip netns exec $n ip link set ${v}n up");
    _run("ip netns exec $n ip link set lo up");
    return $self;
}

sub host { $_[0]{host} }
sub inside { $_[0]{inside} }
sub prefix { "ip netns exec $_[0]{name}" }

sub cut {
    my ($self, @ports) = @_;
    my $set = join ', ', @ports;
    my $h = $self->{host};
    my $rules = File::Temp->new;
    print $rules <<"EOF";
table inet shpart {
    chain out {
        type filter hook output priority 0; policy accept;
        ip daddr $h tcp dport { $set } drop
    }
    chain in {
        type filter hook input priority 0; policy accept;
        ip saddr $h tcp sport { $set } drop
    }
}
EOF
    close $rules;
    _run("ip netns exec $self->{name} nft -f $rules");
}

sub heal {
    my ($self) = @_;
    _run("ip netns exec $self->{name} nft delete table inet shpart");
}

sub remove {
    my ($self) = @_;
    my $n = delete $self->{name} or return;
    local ($?, $!);
    # the namespace's end of the pair goes with it, and so the pair
    system("ip netns del $n >/dev/null 2>&1");
    system("ip link del $self->{veth}h >/dev/null 2>&1");
}

sub DESTROY { $_[0]->remove }

END { $_->remove for @made }

1;
