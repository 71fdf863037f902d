"""A python `gear` client for the interop tests (tests/interop/python.rs).

Usage: python3 gear_client.py PORT SCENARIO [ARG]
Each scenario prints one result per line; the Rust test compares the lines.
gear sends admin text commands on the same connection as its binary packets.
"""
import os
import sys
import time

import gear
from gear import constants

port, scenario = int(sys.argv[1]), sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ''

client = gear.Client('gear-client')
client.addServer('127.0.0.1', port)
client.waitForServer(10)


def wait_for(cond, secs=5.0):
    deadline = time.time() + secs
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return False


def run(name, args, **kw):
    job = gear.TextJob(name, args)
    client.submitJob(job, timeout=5, **kw)
    if not wait_for(lambda: job.complete):
        print('timeout waiting for', name, flush=True)
        sys.exit(1)
    return job


def admin(conn, req):
    conn.sendAdminRequest(req, timeout=5)
    return req.response.decode()


def show(text):
    """One line for a (possibly multi-line) admin reply."""
    return repr(text)


if scenario == 'do':
    print('option exceptions', client.setOption('exceptions', timeout=5))
    job = run('reverse', 'hello')
    print('normal', job.data, job.failure)
    job = run('reverse', 'high', precedence=gear.PRECEDENCE_HIGH)
    print('high', job.data, job.failure)
    job = run('reverse', 'low', precedence=gear.PRECEDENCE_LOW)
    print('low', job.data, job.failure)
    job = run('progress', 'p')
    print('progress', job.data, job.warning, job.numerator, job.denominator, job.failure)
    job = run('fail', 'x')
    print('fail', job.data, job.failure, job.exception)
    job = run('throw', 'x')
    print('throw', job.data, job.failure, job.exception)

elif scenario == 'background':
    # With no worker connected: queue jobs at each priority; a worker started later runs them.
    handles = set()
    for prec, data in ((gear.PRECEDENCE_LOW, 'L1'), (gear.PRECEDENCE_NORMAL, 'N1'),
                       (gear.PRECEDENCE_HIGH, 'H1'), (gear.PRECEDENCE_LOW, 'L2'),
                       (gear.PRECEDENCE_NORMAL, 'N2'), (gear.PRECEDENCE_HIGH, 'H2')):
        job = gear.TextJob('log', data, unique='gear-' + data)
        client.submitJob(job, background=True, precedence=prec, timeout=5)
        handles.add(job.handle)
        print('submitted', data, job.handle is not None)
    print('distinct', len(handles))

elif scenario == 'admin':
    # Admin text and binary packets on one connection, as gear does it.
    conn = client.getConnection()
    # (gear's Connection.echo() cannot be used: it calls notifyAll() on a Condition it does not
    # hold, which raises in its poll thread on Python 3.)
    print('version', show(admin(conn, gear.VersionAdminRequest())))
    # ARG is a file name: the worker holds the `hold` job until it exists.
    job = gear.TextJob('hold', arg, unique='gear-hold')
    client.submitJob(job, timeout=5)
    # While the job runs, its WORK_STATUS arrives on this connection, between admin replies.
    print('status-packet', wait_for(lambda: job.numerator == b'3'), job.numerator, job.denominator)
    print('status', show(admin(conn, gear.StatusAdminRequest())))
    print('show jobs', show(admin(conn, gear.ShowJobsAdminRequest())))
    print('show unique jobs', show(admin(conn, gear.ShowUniqueJobsAdminRequest())))
    # GET_STATUS for the running job, answered by STATUS_RES on the same connection.
    client.sendPacket(gear.Packet(constants.REQ, constants.GET_STATUS, job.handle), job.connection)
    print('get_status', wait_for(lambda: job.known is not None), job.known, job.running,
          job.numerator, job.denominator)
    workers = admin(conn, gear.WorkersAdminRequest())
    print('workers', [line.split(' ', 2)[2] for line in workers.splitlines() if 'gear-worker' in line])
    open(arg, 'w').close()
    print('complete', wait_for(lambda: job.complete), job.data)
    # A queued background job can be cancelled.
    bg = gear.TextJob('nobody', 'x', unique='gear-cancel')
    client.submitJob(bg, background=True, timeout=5)
    print('show unique jobs', show(admin(conn, gear.ShowUniqueJobsAdminRequest())))
    print('cancel', show(admin(conn, gear.CancelJobAdminRequest(bg.handle))))
    print('cancel again', show(admin(conn, gear.CancelJobAdminRequest(bg.handle))))
    print('show jobs', show(admin(conn, gear.ShowJobsAdminRequest())))

else:
    print('unknown scenario', scenario, file=sys.stderr)
    sys.exit(2)

client.shutdown()
