#!/usr/bin/perl
# Perl Gearman::Client / Gearman::Worker over mutual TLS (use_ssl, with IO::Socket::SSL), for
# tests/interop_tls_clients.rs.
# Usage: gearman_tls.pl worker HOST PORT KEY CERT CA NAME   (prints "ready", "job FUNC BYTES")
#        gearman_tls.pl client HOST PORT KEY CERT CA FUNC FILE   (prints the result)
use strict;
use warnings;
use Gearman::Client;
use Gearman::Worker;

$| = 1;
my ($role, $host, $port, $key, $cert, $ca, @rest) = @ARGV;
die "usage: gearman_tls.pl worker|client HOST PORT KEY CERT CA ...\n" unless defined $ca;

my $server = {
    host      => $host,
    port      => $port,
    use_ssl   => 1,
    ca_file   => $ca,
    cert_file => $cert,
    key_file  => $key,
    # socket_cb sees IO::Socket::SSL's options before the connection: check the server's
    # name against its certificate, and allow more than Gearman::Objects' 1 s default.
    socket_cb => sub {
        my ($opts) = @_;
        $opts->{SSL_verifycn_scheme} = 'default';
        $opts->{SSL_verifycn_name}   = 'localhost';
        $opts->{Timeout}             = 10;
    },
};

if ($role eq 'worker') {
    my ($name) = @rest;
    my $worker = Gearman::Worker->new(job_servers => [$server]);
    $worker->register_function(
        reverse => sub {
            my $job = shift;
            print "job reverse ", length($job->arg), "\n";
            return scalar reverse $job->arg;
        }
    );
    $worker->register_function(who => sub { print "job who 0\n"; return $name; });
    print "ready\n";
    $worker->work while 1;
}
elsif ($role eq 'client') {
    my ($func, $path) = @rest;
    open(my $fh, '<:raw', $path) or die "$path: $!\n";
    my $payload = do { local $/; <$fh> };
    my $client = Gearman::Client->new(job_servers => [$server]);
    my $result = $client->do_task($func => $payload, { timeout => 20 });
    die "the job failed\n" unless defined $result;
    binmode STDOUT;
    print $$result;
}
else {
    die "unknown role $role\n";
}
