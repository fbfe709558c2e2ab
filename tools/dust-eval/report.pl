#!/usr/bin/perl
# tools/dust-eval/report.pl GEN RUN_DIR... -- the DUST evaluation's report
# for each crawl (run.sh): from the proxy's log (requests in order, with
# the rule changes among them), the ground truth (GEN/truth.tsv: every URL
# the site links -> its document) and the final stats.
#
# Definitions:
#   fetched      the request reached the origin ($upstream_status set)
#   avoidable    a request for a document already fetched under another
#                URL earlier in the crawl
#   avoided      an avoidable request answered by a prediction, unfetched
#   warm-up      per learner scope (host and first path component), the
#                requests before the first prediction in that scope
#   wrong        a prediction whose URL is another document than the
#                original it names
#   lost         a document never fetched in the crawl although a
#                prediction answered one of its URLs (the rules named)
#   kind         sid when the document was fetched under the same URL but
#                for the session id; else what the URL differs in from its
#                document's own URL: alias (www.), print (/print/),
#                index (index.html), slash (a trailing slash), utm
#                (utm_source), lang (lang=en), default (page=1, sort=name
#                written out), other (the session id and the order of the
#                parameters)
# DUST_MISSED=FILE: every avoidable request after the first quarter that
# was fetched, one a line (index, kind, rule or -, URL, original, the
# action: verified, passed), and
# every wrong prediction (kind "wrong"), to read what the learner missed.
use strict;
use warnings;
use JSON::PP;

my ($gen, @runs) = @ARGV;
die "usage: $0 GEN RUN...\n" unless @runs;
my $missed;
if ($ENV{DUST_MISSED}) {
    open($missed, '>', $ENV{DUST_MISSED}) or die "$ENV{DUST_MISSED}: $!\n";
}
my (%truth, %forms, %label_of, $named);
open(my $t, '<', "$gen/truth.tsv") or die "$gen/truth.tsv: $!";
while (<$t>) {
    chomp;
    my ($s, $u, $d, $f) = split /\t/;
    $truth{$s}{$u} = $d;
    if (defined $f) { $forms{$s}{$u} = $f; $named = 1 }  # the second site's
}
close $t;
# GEN/hosts.tsv (the second site): host -> label
if (open(my $h, '<', "$gen/hosts.tsv")) {
    while (<$h>) { chomp; my ($host, $label) = split /\t/; $label_of{$host} = $label }
    close $h;
}
my %all_docs;
for my $s (keys %truth) { $all_docs{$s}{$_} = 1 for values %{ $truth{$s} } }

sub split_url {
    my ($url) = @_;
    my ($host, $uri) = $url =~ m{^https?://([^/]+)(/.*)?$} or return;
    $uri //= '/';
    my $site = %label_of ? $label_of{$host}
             : $host eq 'nodust.test' ? 'nodust'
             : $host =~ /^(?:www\.)?site\.test$/ ? 'site' : undef;
    return ($site, $host, $uri);
}
sub doc_of {
    my ($url) = @_;
    my ($site, $host, $uri) = split_url($url) or return;
    return unless $site;
    return $truth{$site}{$uri} // ($uri =~ m{^/(?:\?|$)} ? 'home' : undef);
}
sub scope {
    my ($url) = @_;
    my ($site, $host, $uri) = split_url($url) or return '?';
    my $p = $uri =~ s/\?.*//r;
    return $p =~ m{^(/[^/]*/)} ? "$host $1" : "$host /";
}
# The second site's forms (gensite2.pl's truth): the most telling form
# of the URL, a session alone last.
# The fourth site's (gensite4.pl): stable (/docs/en/stable/), title
# (MediaWiki's index.php?title=), node (Drupal's /node/N), post (phpBB's
# p=), ref, highlight, context (a parent's id written out), sess-aspnet
# (ASP.NET's /(S(...))/ path segment).
my @form_rank = qw(alias case amp stable title node post index cache-buster
                   tracking ref highlight context default order
                   slash print reply
                   sess-jsessionid sess-s sess-PHPSESSID sess-sid sess-sessionid
                   sess-aspnet);
sub kind2 {
    my ($host, $f) = @_;
    return 'alias' if $host =~ /^(?:m|www)\./;    # the second, third site's
    my %f = map { $_ => 1 } split /,/, $f;
    for (@form_rank) { return $_ if $f{$_} }
    return $f;
}
sub kind {
    my ($url, $doc) = @_;
    my ($site, $host, $uri) = split_url($url);
    return kind2($host, $forms{$site}{$uri}) if $named && defined $forms{$site}{$uri};
    my ($p, $q) = split /\?/, $uri, 2;
    $q //= '';
    return 'alias' if $host =~ /^www\./;
    return 'print' if $p =~ m{^/print/};
    return 'index' if $p =~ m{/index\.html$};
    if ($doc =~ /^(?:en|de):(.*)$/) { return 'slash' if $p ne "/doc/$1" }
    return 'utm' if $q =~ /utm_source/;
    return 'lang' if $q =~ /lang=en/;
    return 'default' if $q =~ /(?:^|&)(?:page=1|sort=name)(?:&|$)/;
    return 'other';
}
sub nosid {
    my ($url) = @_;
    my ($base, $q) = split /\?/, $url, 2;
    $base =~ s/;jsessionid=[0-9A-F]+$//;
    $base =~ s{/\(S\([a-z0-5]{24}\)\)/}{/};     # the fourth site's ASP.NET
    my @q = grep { !/^(?:sid|PHPSESSID|s|sessionid)=/ } split /&/, $q // '';
    return @q ? "$base?" . join('&', @q) : $base;
}
sub pct { $_[1] ? sprintf('%.1f%%', 100 * $_[0] / $_[1]) : '-' }

# a content parameter dropped whatever its value, or one of its values
# that selects another page (drop_value: page=1, sort=name, lang=en, hl=en
# are the defaults, v=6.1 the second site's version switch)
# (the fourth site's: t, p, f, start, sd, sk, oldid, title, ProductID,
# CategoryID, SortBy; page=0 and sk=t, sd=d, SortBy=Name its defaults)
my $changing = qr/^(?:drop_param\((?:page|sort|lang|q|id|hl|v
                                  |t|p|start|sd|sk|oldid|title
                                  |productid|categoryid|sortby)\)
                   |drop_value\((?:page=(?![01]\)).*|sort=(?!name\)).*
                                 |lang=(?!en\)).*|hl=(?!en\)).*|q=.*|id=.*
                                 |v=6\.1|t=.*|p=.*|start=(?!0\)).*|sd=(?!d\)).*
                                 |sk=(?!t\)).*|oldid=.*|title=.*|productid=.*
                                 |categoryid=.*|sortby=(?!name\)).*)\))$/xi;
my @summary;
for my $run (@runs) {
    my $what = do { local $/; open(my $f, '<', "$run/what") or die; <$f> };
    chomp $what;
    my ($crawler, $site) = split ' ', $what;
    my (@req, @changes);
    open(my $l, '<', "$run/proxy.log") or die "$run/proxy.log: $!";
    while (<$l>) {
        chomp;
        if (/^A\t/) {
            my (undef, $ms, $st, $ss, $pred, $up, $url, $dup, $act)
                = split /\t/, $_, -1;
            push @req, { status => $st, ss => $ss, pred => $pred,
                         fetched => ($up ne '' && $up ne '-'), up => $up,
                         url => $url, dup => $dup, action => $act // '' };
        } elsif (/rule (\S+) for (\S+) (\S+) (on|off) \(was (\w+)\): (\d+) pairs, (\d+) against, precision >= ([\d.]+)/) {
            push @changes, { rule => $1, host => $2, pattern => $3, to => $4,
                             was => $5, support => $6, against => $7,
                             lower => $8, at => scalar @req };
        }
    }
    close $l;
    my $stats = eval { decode_json(do { local $/; open(my $f, '<', "$run/stats.json") or die; <$f> }) } // {};
    my $z = $stats->{zones}{crawl} // {};

    my (%fetched_doc, %first_pred_scope, %kinds, %wrong_by, %pred_docs, %miss, %miss_kind);
    my ($n, $nf, $npred, $nsaved, $avoidable, $avoided, $aw, $aw_avoided,
        $unknown, $wrong) = (0) x 10;
    my (%fetched_url, %fetched_nosid);
    my ($q_avoidable, $q_avoided) = (0, 0);
    for my $i (0 .. $#req) {
        my $r = $req[$i];
        $n++;
        $nf++ if $r->{fetched};
        my $doc = doc_of($r->{url});
        my $sc = scope($r->{url});
        if ($r->{pred} ne '') {
            $npred++;
            $first_pred_scope{$sc} //= $i;
            $nsaved++ unless $r->{fetched};
        }
        unless (defined $doc) { $unknown++; next }
        my $dupdoc = $r->{dup} ne '' ? doc_of($r->{dup}) : undef;
        if ($r->{pred} ne '' && !$r->{fetched}) {
            push @{ $pred_docs{$doc} }, $r->{pred};
            if (!defined $dupdoc || $dupdoc ne $doc) {
                $wrong++;
                $wrong_by{$r->{pred}}++;
                printf {$missed} "%d\twrong\t%s\t%s\t%s\n", $i, $r->{pred},
                    $r->{url}, $r->{dup} if $missed;
            }
        }
        # sid: the document was fetched under this URL but for the
        # session id; else what the URL differs in from the document's own
        my $nosid = nosid($r->{url});
        my $k = $fetched_nosid{$doc}{$nosid} ? 'sid' : kind($r->{url}, $doc);
        if ($k eq 'sid' && $named) {    # which session, on the second site
            my $uri = (split_url($r->{url}))[2];
            $k = $uri =~ m{/\(S\(} ? 'sess-aspnet'
               : $uri =~ /;jsessionid=/ ? 'sess-jsessionid'
               : $uri =~ /[?&]s=/ ? 'sess-s' : $uri =~ /[?&]sid=/ ? 'sess-sid'
               : $uri =~ /[?&]sessionid=/ ? 'sess-sessionid'
               : $uri =~ /[?&]PHPSESSID=/ ? 'sess-PHPSESSID'
               : 'no-session';     # its session form was fetched first
        }
        if ($fetched_doc{$doc} && !($fetched_url{$r->{url}})) {
            $avoidable++;
            my $saved = $r->{pred} ne '' && !$r->{fetched};
            $avoided++ if $saved;
            # the measure of docs/DUST.md: after the first quarter of the crawl
            if ($i >= @req / 4) {
                $q_avoidable++;
                $q_avoided++ if $saved;
                # DUST_MISSED=FILE: each one missed, to read why
                printf {$missed} "%d\t%s\t%s\t%s\t%s\t%s\n", $i, $k,
                    $r->{pred} eq '' ? '-' : $r->{pred}, $r->{url},
                    $r->{dup} // '', $r->{action} if $missed && !$saved;
            }
            $kinds{$k}{avoidable}++;
            $kinds{$k}{avoided}++ if $saved;
            if (defined $first_pred_scope{$sc} && $first_pred_scope{$sc} < $i) {
                $aw++;
                $aw_avoided++ if $saved;
                unless ($saved) {
                    my $why = 'not predicted';
                    if ($r->{pred} ne '' && $r->{action} ne '') {
                        # $simhash_action (logs of 2026-11-28 on)
                        $why = $r->{action} eq 'verified'
                             ? 'predicted, fetched to verify'
                             : 'predicted, fetched: keys=path (the original under another path)';
                    } elsif ($r->{pred} ne '') {
                        my $p1 = (split_url($r->{url}))[2] =~ s/\?.*//r;
                        my $p2 = $r->{dup} =~ m{^https?://[^/]+([^?]*)} ? $1 : '';
                        $why = $p1 eq $p2 ? 'predicted, fetched to verify'
                             : 'predicted, fetched, the original under another path (keys=path, or a verification)';
                    }
                    $miss{$why}++;
                    $miss_kind{$k}++ if $why eq 'not predicted';
                }
                $kinds{$k}{aw}++;
                $kinds{$k}{aw_avoided}++ if $saved;
            }
        }
        if ($r->{fetched} && $r->{up} =~ /^200/) {
            $fetched_doc{$doc} = 1;
            $fetched_url{$r->{url}} = 1;
            $fetched_nosid{$doc}{$nosid} = 1;
        }
    }
    my @docs = sort keys %{ $all_docs{$site} };
    my @never = grep { !$fetched_doc{$_} } @docs;
    my @lost = grep { $pred_docs{$_} } @never;
    my %lost_by;
    $lost_by{$_}++ for map { $pred_docs{$_}[0] } @lost;

    my $o = '';
    $o .= sprintf "== %s: crawler %s, site %s.test, zone dust=8m %s\n",
                  ($run =~ s{.*/}{}r), $crawler, $site,
                  (split(' ', $what, 3))[2] // '(defaults)';
    $o .= sprintf "  %-44s %d\n", 'requests (proxy)', $n;
    $o .= sprintf "  %-44s %d (%s of requests)\n", 'fetched (reached the origin)', $nf, pct($nf, $n);
    $o .= sprintf "  %-44s %d of %d\n", 'distinct documents fetched', scalar(keys %fetched_doc), scalar @docs;
    $o .= sprintf "  %-44s %d, of which answered unfetched %d\n", 'predictions', $npred, $nsaved;
    $o .= sprintf "  %-44s %d\n", 'requests outside the ground truth', $unknown;
    $o .= sprintf "  %-44s %d\n", 'avoidable duplicate requests', $avoidable;
    $o .= sprintf "  %-44s %d (%s)\n", 'avoided by prediction, whole crawl', $avoided, pct($avoided, $avoidable);
    $o .= sprintf "  %-44s %d of %d (%s)\n", 'avoided after the first quarter', $q_avoided, $q_avoidable, pct($q_avoided, $q_avoidable);
    $o .= sprintf "  %-44s %d of %d (%s)\n", 'avoided after warm-up', $aw_avoided, $aw, pct($aw_avoided, $aw);
    $o .= sprintf "    not avoided after warm-up: %-16s %d\n", "$_:", $miss{$_} for sort keys %miss;
    $o .= sprintf "      not predicted, by kind: %s\n", join(', ', map { "$_ $miss_kind{$_}" }
        sort { $miss_kind{$b} <=> $miss_kind{$a} } keys %miss_kind) if %miss_kind;
    $o .= sprintf "  %-44s %d\n", 'wrong predictions (another document)', $wrong;
    $o .= sprintf "    %-42s %d\n", $_, $wrong_by{$_} for sort keys %wrong_by;
    $o .= sprintf "  %-44s %d (%s of %d documents)\n", 'lost content (never fetched, predicted)', scalar @lost, pct(scalar @lost, scalar @docs), scalar @docs;
    $o .= sprintf "    %-42s %d\n", $_, $lost_by{$_} for sort keys %lost_by;
    $o .= sprintf "    %s\n", $_ for @lost[0 .. ($#lost < 9 ? $#lost : 9)];
    $o .= sprintf "  %-44s %d\n", 'never fetched, never predicted (unreached)', @never - @lost;
    if ($avoidable) {
        $o .= "  avoidable requests by kind of variant: avoided / avoidable (after warm-up)\n";
        for my $k (sort { ($kinds{$b}{avoidable} // 0) <=> ($kinds{$a}{avoidable} // 0) } keys %kinds) {
            my $x = $kinds{$k};
            $o .= sprintf "    %-8s %6d / %-6d %7s    (%d / %d %s)\n", $k, $x->{avoided} // 0,
                $x->{avoidable}, pct($x->{avoided} // 0, $x->{avoidable}),
                $x->{aw_avoided} // 0, $x->{aw} // 0, pct($x->{aw_avoided} // 0, $x->{aw});
        }
    }
    if (@changes) {
        $o .= "  rule changes (requests before it, from the log):\n";
        $o .= sprintf "    %7s  %-3s %-40s %-16s %6s %4s %6s\n", 'request', '', 'rule', 'scope', 'pairs', 'agst', 'lower';
        $o .= sprintf "    %7d  %-3s %-40s %-16s %6d %4d %6s\n", $_->{at}, $_->{to},
            $_->{rule}, "$_->{host} $_->{pattern}", $_->{support}, $_->{against}, $_->{lower}
            for @changes;
    }
    my @rules = @{ $z->{dust_rules} // [] };
    if (@rules) {
        $o .= "  rules at the end (stats):\n";
        $o .= sprintf "    %-8s %-38s %-20s %7s %5s %6s\n", 'state', 'rule', 'scope', 'support', 'agst', 'lower';
        for my $r (sort { $a->{host} cmp $b->{host} || $a->{pattern} cmp $b->{pattern} } @rules) {
            my $name = $r->{kind} . (defined $r->{arg} && $r->{arg} ne '' ? "($r->{arg})" : '');
            $o .= sprintf "    %-8s %-38s %-20s %7d %5d %6.3f\n", $r->{state}, $name,
                "$r->{host} $r->{pattern}", $r->{support}, $r->{against}, $r->{precision_lower};
        }
    }
    my $d = $z->{dust} // {};
    $o .= sprintf "  stats: observations %d, predictions %d, saved %d, support %d, against %d, candidates %d, active %d, activations %d, retirements %d\n",
        map { $d->{$_} // 0 } qw(observations predictions saved support against candidates active activations retirements);
    # CategoryID is the listing on Category.aspx, only where a product was
    # reached from on Product.aspx (a script's scope names its script)
    my @bad = grep { $_->{to} eq 'on' && $_->{rule} =~ $changing
                     && !($_->{rule} =~ /categoryid/i
                          && $_->{pattern} =~ m{/product\.aspx$}i) }
              @changes;
    $o .= sprintf "  content-changing parameters (page, sort, lang, q, id, hl, v, and the fourth site's; values other than the defaults) ever active: %s\n",
        @bad ? join(', ', map { "$_->{rule} $_->{host} $_->{pattern}" } @bad) : 'none';
    print $o, "\n";
    push @summary, { run => ($run =~ s{.*/}{}r), crawler => $crawler, site => $site,
                     opts => (split(' ', $what, 3))[2] // '', n => $n, nf => $nf,
                     avoidable => $avoidable, avoided => $avoided, aw => $aw,
                     aw_avoided => $aw_avoided, lost => scalar @lost,
                     q => $q_avoidable, q_avoided => $q_avoided,
                     docs => scalar @docs, npred => $npred, bad => scalar @bad,
                     wrong => $wrong };
}

print "== summary (targets: >= 80% avoided after warm-up, lost <= 0.1%, no content-changing rule, 0 predictions without DUST)\n";
printf "  %-14s %-5s %-7s %-27s %8s %8s %9s %8s %8s %8s %11s %6s %6s\n",
    'run', 'crawl', 'site', 'zone', 'requests', 'fetched', 'avoidable', 'avoided', 'after1/4', 'warm', 'lost', 'wrong', 'predic';
for (@summary) {
    printf "  %-14s %-5s %-7s %-27s %8d %8d %9d %8s %8s %8s %4d %6s %6d %6d\n",
        $_->{run}, $_->{crawler}, $_->{site}, $_->{opts} || 'defaults', $_->{n}, $_->{nf},
        $_->{avoidable}, pct($_->{avoided}, $_->{avoidable}), pct($_->{q_avoided}, $_->{q}),
        pct($_->{aw_avoided}, $_->{aw}),
        $_->{lost}, pct($_->{lost}, $_->{docs}), $_->{wrong}, $_->{npred};
}
