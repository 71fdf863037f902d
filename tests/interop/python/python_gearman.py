"""python-gearman's Python 3 forks against gearwheel (tests/interop/python_libs.rs): PyPI
`python3-gearman` 0.1.0 (module python3_gearman) and `pygearman` 0.2.6 (module gearman). They
share python-gearman 2.0's API; pygearman adds getpid, show jobs and cancel job to its admin
client.

Usage: python3 python_gearman.py MODULE PORT worker
       python3 python_gearman.py MODULE PORT client SCENARIO [ARG]
The worker prints "ready" before it starts working (the test then waits until the server lists
its functions) and "job NAME DATA" before each job.
"""
import importlib
import os
import sys
import time

module, port, role = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gearman = importlib.import_module(module)
server = '127.0.0.1:%d' % port


def text(b):
    return b.decode() if isinstance(b, bytes) else b


class Worker(gearman.GearmanWorker):
    def on_job_exception(self, current_job, exc_info):
        # The library's own answer to an exception is a bare WORK_FAIL; the documented way to
        # send the message is this override: WORK_EXCEPTION and then WORK_FAIL, which the
        # library always sends together.
        if text(current_job.task) == 'throw':
            self.send_job_exception(current_job, str(exc_info[1]))
            return False
        return super().on_job_exception(current_job, exc_info)


def worker():
    w = Worker([server])
    w.set_client_id('%s-worker' % module)

    def reverse(worker, job):
        return text(job.data)[::-1]

    def progress(worker, job):
        worker.send_job_status(job, 1, 2)
        worker.send_job_data(job, 'chunk')
        worker.send_job_warning(job, 'careful')
        worker.send_job_status(job, 2, 2)
        return 'done:' + text(job.data)

    def fail(worker, job):
        # An exception in the task is a WORK_FAIL.
        raise RuntimeError('nope')

    def throw(worker, job):
        raise RuntimeError('boom')

    def log(worker, job):
        return 'logged'

    def hold(worker, job):
        worker.send_job_status(job, 3, 7)
        deadline = time.time() + 10
        while not os.path.exists(text(job.data)) and time.time() < deadline:
            time.sleep(0.02)
        return 'released'

    for f in (reverse, progress, fail, throw, log, hold):
        def task(worker, job, f=f):
            print('job', text(job.task), text(job.data), flush=True)
            return f(worker, job)
        # pygearman hands its worker the function name of JOB_ASSIGN_UNIQ as bytes and looks
        # it up among the registered names: registered as str, the worker dies on its first
        # job (an AssertionError, against gearmand too). python3-gearman decodes every packet
        # to str and refuses bytes.
        w.register_task(f.__name__.encode() if module == 'gearman' else f.__name__, task)
    print('ready', flush=True)
    w.work(poll_timeout=0.1)


def describe(req):
    """One line for a finished foreground request."""
    return '%s %r data=%r warnings=%r status=%r exception=%r' % (
        req.state, text(req.result), [text(d) for d in req.data_updates],
        [text(d) for d in req.warning_updates], req.status.get('numerator'), text(req.exception))


def client(scenario, arg):
    c = gearman.GearmanClient([server])
    if scenario == 'do':
        print('normal', describe(c.submit_job('reverse', 'hello', poll_timeout=5)))
        print('high', describe(c.submit_job('reverse', 'high', priority=gearman.PRIORITY_HIGH,
                                            poll_timeout=5)))
        print('low', describe(c.submit_job('reverse', 'low', unique='pg-low',
                                           priority=gearman.PRIORITY_LOW, poll_timeout=5)))
        print('progress', describe(c.submit_job('progress', 'p', poll_timeout=5)))
        print('fail', describe(c.submit_job('fail', 'x', poll_timeout=5)))
        print('throw', describe(c.submit_job('throw', 'x', poll_timeout=5)))
        many = c.submit_multiple_jobs(
            [dict(task='reverse', data=d) for d in ('one', 'two', 'three')], poll_timeout=5)
        print('multiple', [text(r.result) for r in many])
    elif scenario == 'background':
        for data, priority in (('L1', gearman.PRIORITY_LOW), ('N1', gearman.PRIORITY_NONE),
                               ('H1', gearman.PRIORITY_HIGH)):
            req = c.submit_job('log', data, priority=priority, background=True,
                               wait_until_complete=False, poll_timeout=5)
            print('submitted', data, req.state, text(req.job.handle).startswith('H:'))
    elif scenario == 'admin':
        # While the worker holds a job, released when the file ARG exists.
        held = c.submit_job('hold', arg, unique='pg-hold', wait_until_complete=False,
                            poll_timeout=5)
        admin = gearman.GearmanAdminClient([server], poll_timeout=5)
        print('ping', admin.ping_server() >= 0)
        print('version', admin.get_version())
        deadline = time.time() + 5
        while time.time() < deadline:
            st = c.get_job_status(held, poll_timeout=5)
            if st.status.get('running') and st.status.get('numerator') == 3:
                break
            time.sleep(0.02)
        print('job status', st.status['known'], st.status['running'], st.status['numerator'],
              st.status['denominator'])
        status = sorted((s['task'], s['queued'], s['running'], s['workers'])
                        for s in admin.get_status())
        print('status', status)
        workers = [w for w in admin.get_workers() if w['client_id'] == '%s-worker' % module]
        print('workers', len(workers), sorted(workers[0]['tasks']) if workers else None)
        if hasattr(admin, 'get_pid'):
            print('getpid', admin.get_pid().split(' ')[-1].isdigit())
            jobs = admin.get_jobs()
            print('show jobs', [(j['queued'], j['canceled'], j['enabled']) for j in jobs],
                  [j['handle'] == text(held.job.handle) for j in jobs])
            print('show unique jobs', admin.get_unique_jobs())
        open(arg, 'w').close()
        c.wait_until_jobs_completed([held], poll_timeout=5)
        print('hold', describe(held))
    else:
        raise SystemExit('unknown scenario ' + scenario)


if role == 'worker':
    worker()
elif role == 'client':
    client(sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else '')
else:
    raise SystemExit('usage: python_gearman.py MODULE PORT worker|client SCENARIO [ARG]')
