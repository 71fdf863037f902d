#!/usr/bin/env python3
"""Memory, journal and start-up with many jobs that print much (--keep-output and its bounds).

JOBS background jobs are submitted, then WORKERS workers each take jobs and send OUTPUT bytes
of WORK_DATA and a short WORK_COMPLETE per job. The server's RSS and the journal directory's
size are sampled every 200 ms; then the server is killed with SIGKILL and started again on the
same --data-dir, timing its start-up (the replay) until it listens, and the last job's output
is read back with `show output`.

    cargo build --release
    benches/kept_output.py                          # the defaults: 64 KiB a job, 64 MiB in all
    benches/kept_output.py --keep-output-total 0    # nothing kept: the baseline

Environment: JOBS (100000), OUTPUT (65536), WORKERS (2), GEARWHEEL (target/release/gearwheel).
Extra arguments go to `gearwheel serve`.
"""
import os, shutil, socket, struct, subprocess, sys, tempfile, threading, time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
import gearwheel_server  # noqa: E402 (beside this file, on the path of a script run)

JOBS = int(os.environ.get("JOBS", 100000))
OUTPUT = int(os.environ.get("OUTPUT", 65536))
WORKERS = int(os.environ.get("WORKERS", 2))
BIN = os.environ.get("GEARWHEEL", "target/release/gearwheel")

SUBMIT_JOB_BG, JOB_CREATED, GRAB_JOB, NO_JOB, JOB_ASSIGN = 18, 8, 9, 10, 11
WORK_DATA, WORK_COMPLETE = 28, 13


def req(ptype, *args):
    body = b"\0".join(args)
    return b"\0REQ" + struct.pack(">II", ptype, len(body)) + body


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def packet(self):
        while True:
            if len(self.buf) >= 12:
                _, ptype, n = struct.unpack(">4sII", self.buf[:12])
                if len(self.buf) >= 12 + n:
                    body, self.buf = self.buf[12:12 + n], self.buf[12 + n:]
                    return ptype, body
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) / 1024
    return 0


def dir_mib(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / (1 << 20)


def submit_all(port):
    s = socket.create_connection(("127.0.0.1", port))
    r = Reader(s)
    handles = []
    batch = 1000
    for start in range(0, JOBS, batch):
        n = min(batch, JOBS - start)
        s.sendall(b"".join(req(SUBMIT_JOB_BG, b"out", b"", b"%d" % (start + i)) for i in range(n)))
        for _ in range(n):
            ptype, body = r.packet()
            assert ptype == JOB_CREATED, ptype
            handles.append(body)
    s.close()
    return handles


def work(port, done):
    s = socket.create_connection(("127.0.0.1", port))
    r = Reader(s)
    s.sendall(req(1, b"out") + req(GRAB_JOB))
    data = b"o" * (OUTPUT - 1) + b"\n"
    n = 0
    while True:
        ptype, body = r.packet()
        if ptype == NO_JOB:
            break
        assert ptype == JOB_ASSIGN, ptype
        handle = body.split(b"\0", 1)[0]
        s.sendall(req(WORK_DATA, handle, data) + req(WORK_COMPLETE, handle, b"ok") + req(GRAB_JOB))
        n += 1
    s.close()
    done.append(n)


def show_output(port, handle):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"show output " + handle + b"\n")
    data = b""
    while b"\n" not in data:
        data += s.recv(65536)
    head = data.split(b"\n", 1)[0]
    s.close()
    return head.decode()


def main():
    data_dir = tempfile.mkdtemp(prefix="kept-output-")
    args = ["--data-dir", data_dir, *sys.argv[1:]]
    server, gport, _ = gearwheel_server.start(BIN, *args)
    peak = {"rss": 0.0, "journal": 0.0}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak["rss"] = max(peak["rss"], rss_mib(server.pid))
            peak["journal"] = max(peak["journal"], dir_mib(data_dir))
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    t0 = time.time()
    handles = submit_all(gport)
    t1 = time.time()
    done = []
    ws = [threading.Thread(target=work, args=(gport, done)) for _ in range(WORKERS)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    t2 = time.time()
    time.sleep(1)
    stop.set()
    rss_end, journal_end = rss_mib(server.pid), dir_mib(data_dir)
    print(f"jobs {sum(done)} of {JOBS}, {OUTPUT} bytes of output each, {WORKERS} workers, "
          f"serve {' '.join(sys.argv[1:]) or '(defaults)'}")
    print(f"submit {t1 - t0:.1f} s, work {t2 - t1:.1f} s ({sum(done) / (t2 - t1):,.0f} jobs/s, "
          f"{sum(done) * OUTPUT / (t2 - t1) / (1 << 20):,.0f} MiB/s of output)")
    print(f"RSS peak {peak['rss']:.1f} MiB, at the end {rss_end:.1f} MiB")
    print(f"journal peak {peak['journal']:.1f} MiB, at the end {journal_end:.1f} MiB")
    server.kill()
    server.wait()
    t3 = time.time()
    server, gport, _ = gearwheel_server.start(BIN, *args)
    t4 = time.time()
    print(f"after kill -9: start-up to listening {1000 * (t4 - t3):.0f} ms, "
          f"RSS {rss_mib(server.pid):.1f} MiB, journal {dir_mib(data_dir):.1f} MiB")
    print(f"show output of the last job: {show_output(gport, handles[-1])}")
    server.kill()
    server.wait()
    shutil.rmtree(data_dir)


main()
