"""A python `gear` worker for the interop tests (tests/interop/python.rs).

Usage: python3 gear_worker.py PORT
Prints "ready" once connected and registered, and "job NAME ARGS" before each job.
"""
import os
import sys
import time

import gear

port = int(sys.argv[1])
worker = gear.TextWorker('gear-worker')
worker.addServer('127.0.0.1', port)
worker.waitForServer(10)
for name in ('reverse', 'progress', 'fail', 'throw', 'log', 'hold'):
    worker.registerFunction(name)
print('ready', flush=True)

while True:
    job = worker.getJob()
    print('job', job.name, job.arguments, flush=True)
    if job.name == 'reverse':
        job.sendWorkComplete(job.arguments[::-1])
    elif job.name == 'progress':
        job.sendWorkStatus(1, 2)
        job.sendWorkData('chunk')
        job.sendWorkWarning('careful')
        job.sendWorkStatus(2, 2)
        job.sendWorkComplete('done:' + job.arguments)
    elif job.name == 'fail':
        job.sendWorkFail()
    elif job.name == 'throw':
        job.sendWorkException('boom')
    elif job.name == 'log':
        job.sendWorkComplete('logged')
    elif job.name == 'hold':
        # Report 3/7, then hold the job until the file named by the arguments exists (<= 10 s).
        job.sendWorkStatus(3, 7)
        deadline = time.time() + 10
        while not os.path.exists(job.arguments) and time.time() < deadline:
            time.sleep(0.02)
        job.sendWorkComplete('released')
