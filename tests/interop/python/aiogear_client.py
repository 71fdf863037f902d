"""aiogear 0.2.6 (asyncio) against gearwheel (tests/interop/python_libs.rs).

Usage: python3 aiogear_client.py PORT worker
       python3 aiogear_client.py PORT client SCENARIO [ARG]
The worker prints "ready" once connected (the test then waits until the server lists its
functions) and "job NAME WORKLOAD" before each job.

What aiogear sends: its worker sends CAN_DO per function, then PRE_SLEEP first and waits for
NOOP before every GRAB_JOB; a task's exception is WORK_EXCEPTION with str(exception). Its
client matches replies to requests by packet type, not by handle, so one job at a time; any
ERROR packet crashes its reader (it casts the code to int). `submit_job_sched(name, dt)` sends
SUBMIT_JOB_SCHED with the fields of `dt.strftime('%M %H %d %m %w')` as plain integers: the day
of week counts from Sunday = 0, and all five fields are set.
"""
import asyncio
import datetime
import os
import sys

from aiogear import Client, Worker
from aiogear.packet import Type

port, role = int(sys.argv[1]), sys.argv[2]


async def worker():
    def reverse(job):
        print('job reverse', job.workload, flush=True)
        return job.workload[::-1]

    def throw(job):
        print('job throw', job.workload, flush=True)
        raise RuntimeError('boom')

    def log(job):
        print('job log', job.workload, flush=True)
        return 'logged'

    async def hold(job):
        print('job hold', job.workload, flush=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not os.path.exists(job.workload) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return 'released'

    loop = asyncio.get_running_loop()
    _, w = await loop.create_connection(
        lambda: Worker(reverse, throw, log, hold, loop=loop), '127.0.0.1', port)
    w.set_client_id('aiogear-worker')
    print('ready', flush=True)
    await asyncio.Event().wait()


async def run(c, submit, name, data, **kw):
    created = await submit(name, data, **kw)
    return await c.wait_job(created.handle)


async def client(scenario, arg):
    loop = asyncio.get_running_loop()
    _, c = await loop.create_connection(lambda: Client(loop=loop), '127.0.0.1', port)
    if scenario == 'do':
        print('option', await c.option_req('exceptions'))
        r = await run(c, c.submit_job, 'reverse', 'hello')
        print('normal', type(r).__name__, r.result)
        r = await run(c, c.submit_job_high, 'reverse', 'high')
        print('high', type(r).__name__, r.result)
        r = await run(c, c.submit_job_low, 'reverse', 'low', uuid='aio-low')
        print('low', type(r).__name__, r.result)
        r = await run(c, c.submit_job, 'throw', 'x')
        print('throw', type(r).__name__, r.exception)
    elif scenario == 'background':
        for data, submit in (('L1', c.submit_job_low_bg), ('N1', c.submit_job_bg),
                             ('H1', c.submit_job_high_bg)):
            created = await submit('log', data)
            print('submitted', data, created.handle.startswith('H:'))
    elif scenario == 'status':
        # A held job: GET_STATUS while it runs, then let it go (the file ARG).
        created = await c.submit_job('hold', arg, uuid='aio-hold')
        for _ in range(250):
            st = await c.get_status(created.handle)
            if st.running:
                break
            await asyncio.sleep(0.02)
        print('status', st.known, st.running, st.numerator, st.denominator)
        open(arg, 'w').close()
        r = await c.wait_job(created.handle)
        print('hold', type(r).__name__, r.result)
    elif scenario == 'sched':
        # A job for the minute ARG minutes from now (UTC), through submit_job_sched.
        dt = (datetime.datetime.now(datetime.timezone.utc)
              + datetime.timedelta(minutes=int(arg))).replace(second=0, microsecond=0)
        created = await c.submit_job_sched('log', dt, 'sched')
        print('sched', created.handle, dt.strftime('%Y-%m-%dT%H:%M:%SZ'),
              ' '.join(str(int(x)) for x in dt.strftime('%M %H %d %m %w').split()))
    else:
        raise SystemExit('unknown scenario ' + scenario)
    c.disconnect()


if role == 'worker':
    asyncio.run(worker())
elif role == 'client':
    asyncio.run(client(sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else ''))
else:
    raise SystemExit('usage: aiogear_client.py PORT worker|client SCENARIO [ARG]')
