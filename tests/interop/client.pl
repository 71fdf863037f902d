#!/usr/bin/perl
# A Gearman::Client (libgearman-client-perl) client for the interop tests (tests/interop_perl.rs).
# Usage: perl client.pl PORT SCENARIO [ARG]
# Each scenario prints one result per line; the Rust test compares the lines.
use strict;
use warnings;
use Gearman::Client;
use Time::HiRes qw(time sleep);

$| = 1;
my ($port, $scenario, $arg) = @ARGV;
my $client = Gearman::Client->new(job_servers => ["127.0.0.1:$port"], exceptions => 1);

sub show { my ($r) = @_; return defined $r ? (ref $r ? $$r : $r) : 'undef'; }

# Poll $f until it returns a true value, at most 5 s.
sub poll {
    my ($f) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        my $v = $f->();
        return $v if $v;
        sleep 0.02;
    }
    return undef;
}

sub status_str {
    my ($st) = @_;
    return 'undef' unless $st;
    return join ' ', ($st->known ? 1 : 0), ($st->running ? 1 : 0), map { defined $_ ? $_ : '-' } @{ $st->progress || [] };
}

if ($scenario eq 'do') {
    print "normal ", show($client->do_task(reverse => "hello")), "\n";
    print "high ", show($client->do_task(reverse => "high", { priority => 'high' })), "\n";
    print "low ", show($client->do_task(reverse => "low", { priority => 'low' })), "\n";
    my @events;
    my $r = $client->do_task(
        progress => "p",
        {
            on_status  => sub { push @events, "status:$_[0]/$_[1]" },
            on_data    => sub { push @events, "data:" . show($_[0]) },
            on_warning => sub { push @events, "warning:" . show($_[0]) },
        }
    );
    print "progress ", show($r), " ", join(' ', @events), "\n";
    my $failed = 0;
    $r = $client->do_task(fail => "x", { on_fail => sub { $failed++ } });
    print "fail ", show($r), " on_fail=$failed\n";
    my $exc = 'none';
    $failed = 0;
    $r = $client->do_task(throw => "x", { on_exception => sub { $exc = $_[0] }, on_fail => sub { $failed++ } });
    print "throw ", show($r), " on_exception=$exc on_fail=$failed\n";
}
elsif ($scenario eq 'die') {
    # The handler dies: the worker sends WORK_EXCEPTION, then WORK_FAIL for the same handle.
    # (gearmand, and gearwheel, answer that WORK_FAIL with ERROR JOB_NOT_FOUND, which the Perl
    # worker reads as the reply to its next GRAB_JOB and dies on: "unexpected packet type".)
    my ($exc, $failed) = ('none', 0);
    my $r = $client->do_task(die => "x", { on_exception => sub { $exc = $_[0] }, on_fail => sub { $failed++ } });
    # The worker froze the error with Storable; look for its text.
    print "die ", show($r), " on_exception=", ($exc =~ /died/ ? 'died' : 'other'), " on_fail=$failed\n";
}
elsif ($scenario eq 'background') {
    # With no worker connected: queue jobs at each priority; a worker started later runs them.
    my %seen;
    for my $p (['low', 'L1'], ['normal', 'N1'], ['high', 'H1'], ['low', 'L2'], ['normal', 'N2'], ['high', 'H2']) {
        my $h = $client->dispatch_background(log => $p->[1], { priority => $p->[0], uniq => "perl-$p->[1]" });
        $seen{$h}++ if defined $h;
        print "$p->[0] $p->[1] ", (defined $h && $h =~ m{^127\.0\.0\.1:\d+//H:.+:\d+$} ? 'handle' : 'bad-handle:' . show($h)), "\n";
    }
    print "distinct ", scalar(keys %seen), "\n";
    my $st = $client->get_job_server_status;
    my $log = $st->{"127.0.0.1:$port"}{log};
    print "status log ", ($log ? "$log->{queued} $log->{running} $log->{capable}" : 'missing'), "\n";
}
elsif ($scenario eq 'status') {
    # ARG is a file name: the worker holds the job until it exists.
    my $h = $client->dispatch_background(hold => $arg, { uniq => 'perl-unique-1' });
    print "submitted ", (defined $h ? 'ok' : 'undef'), "\n";
    my $st = poll(sub { my $s = $client->get_status($h); ($s && $s->running && ($s->progress || [0])->[0]) ? $s : undef });
    print "get_status ", ($st ? status_str($st) : 'timeout'), "\n";
    open(my $fh, '>', $arg) or die "touch $arg: $!";
    close $fh;
    # Once done, the server no longer knows the handle.
    my $gone = poll(sub { my $s = $client->get_status($h); ($s && !$s->known) ? $s : undef });
    print "finished ", ($gone ? status_str($gone) : 'timeout'), "\n";
}
elsif ($scenario eq 'prefix') {
    # The documented `prefix` option: the client asks for "pre\treverse" (joined with a TAB).
    my $c = Gearman::Client->new(job_servers => ["127.0.0.1:$port"], prefix => 'pre');
    print "prefix ", show($c->do_task(reverse => "abc")), "\n";
    my $h = $c->dispatch_background(reverse => "bg");
    print "background ", (defined $h ? 'handle' : 'undef'), "\n";
}
else {
    die "unknown scenario $scenario\n";
}
