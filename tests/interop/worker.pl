#!/usr/bin/perl
# A Gearman::Worker (libgearman-client-perl) worker for the interop tests (tests/interop_perl.rs).
# Usage: perl worker.pl PORT
# Prints "ready" once its functions are registered, and "job FUNC ARG" before each job.
use strict;
use warnings;
use Gearman::Worker;
use Time::HiRes qw(time sleep);

$| = 1;
my $port   = shift or die "usage: worker.pl PORT\n";
my $worker = Gearman::Worker->new(job_servers => ["127.0.0.1:$port"]);

sub note { my ($job) = @_; print "job ", $job->{func}, " ", $job->arg, "\n"; }

$worker->register_function(reverse => sub { note($_[0]); return scalar reverse $_[0]->arg; });

$worker->register_function(
    progress => sub {
        my $job = shift;
        note($job);
        $job->set_status(1, 2);
        $worker->send_work_data($job, "chunk");
        $worker->send_work_warning($job, "careful");
        $job->set_status(2, 2);
        return "done:" . $job->arg;
    }
);

# Returning undef makes the worker send WORK_FAIL.
$worker->register_function(fail => sub { note($_[0]); return undef; });

# An explicit WORK_EXCEPTION; the worker then sends nothing more for the job.
$worker->register_function(
    throw => sub {
        my $job = shift;
        note($job);
        $worker->send_work_exception($job, "boom");
        return undef;
    }
);

# A handler that dies: Gearman::Worker sends WORK_EXCEPTION (the error, frozen with Storable)
# and then WORK_FAIL for the same handle.
$worker->register_function(die => sub { note($_[0]); die "died\n"; });

$worker->register_function(log => sub { note($_[0]); return "logged"; });

# Reports 3/7, then holds the job until the file named by the argument exists (at most 10 s).
$worker->register_function(
    hold => sub {
        my $job = shift;
        note($job);
        $job->set_status(3, 7);
        my $deadline = time + 10;
        sleep 0.02 while !-e $job->arg && time < $deadline;
        return "released";
    }
);

print "ready\n";
$worker->work() while 1;
