#!/usr/bin/env python3
"""What open consoles cost a busy server: the background-job benchmark
(benches/load, --mode bg) against a fresh gearwheel with no console open, then with CONSOLES
open consoles, alternating (none, N, N, none, ...) so that the machine's drift hits both
alike; prints each run, the medians and the ratio of jobs/s.

Each console does what the page does on its default view (the overview), at its real rate:
two keep-alive connections (a browser opens more than one per origin), GET /status and GET
/ui/api/server at once, and the next round 800 ms after both answers (POLL_MS in
src/http/console/console.js). All consoles run in this one process on one event loop, so they
take little CPU from the server and the load generator on a small machine.

    cargo build --release
    benches/console_load.py               # about 1 minute
    CONSOLES=50 REPS=4 JOBS=200000 benches/console_load.py

Environment: CONSOLES (50), REPS (3: runs of each kind), JOBS (100000), VIEW (overview, or
jobs: /status, /ui/api/future and a page of the benchmark function's queued jobs, or failed:
/ui/api/failed, or workers: /workers), GEARWHEEL
(target/release/gearwheel), LOAD (the load generator; found with cargo when unset).
"""
import json
import os
import re
import selectors
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
import gearwheel_server  # noqa: E402 (beside this file, on the path of a script run)

CONSOLES = int(os.environ.get("CONSOLES", 50))
REPS = int(os.environ.get("REPS", 3))
JOBS = int(os.environ.get("JOBS", 100000))
VIEW = os.environ.get("VIEW", "overview")
BIN = os.environ.get("GEARWHEEL", "target/release/gearwheel")
POLL_S = 0.8
PATHS = {
    "overview": ["/status", "/ui/api/server"],
    "jobs": ["/status", "/ui/api/future", "/ui/api/jobs?function=bench&state=queued"],
    "failed": ["/ui/api/failed"],
    "workers": ["/workers"],
}[VIEW]


def load_binary():
    if os.environ.get("LOAD"):
        return os.environ["LOAD"]
    out = subprocess.run(["cargo", "bench", "--bench", "load", "--no-run", "--message-format=json"],
                         capture_output=True, text=True, check=True).stdout
    for line in reversed(out.splitlines()):
        m = json.loads(line)
        exe = m.get("executable")
        if exe and os.path.basename(exe).startswith("load-"):
            return exe
    sys.exit("cannot find the load generator binary")


def start_server():
    server, gport, hport = gearwheel_server.start(BIN, "-L", "127.0.0.1")
    # The Jobs view lists the benchmark's function: it is known before the load starts.
    with socket.create_connection(("127.0.0.1", gport)) as s:
        s.sendall(b"create function bench\n")
        s.recv(64)
    return server, gport, hport


class Consoles:
    """CONSOLES pages polling on one selector loop in a thread, until stopped."""

    def __init__(self, port, n):
        self.port, self.n = port, n
        self.stop_flag = threading.Event()
        self.requests = 0
        self.bytes = 0
        self.errors = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def request(self, path):
        return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                "Accept: application/json\r\nSec-Fetch-Site: same-origin\r\n"
                "Cache-Control: no-cache\r\n\r\n").encode()

    def run(self):
        sel = selectors.DefaultSelector()
        # One entry per console: its connections, the answers still awaited, when to ask next.
        pages = []
        for i in range(self.n):
            conns = []
            for path in PATHS:
                s = socket.create_connection(("127.0.0.1", self.port))
                s.setblocking(False)
                c = {"sock": s, "path": path, "buf": b"", "page": i}
                sel.register(s, selectors.EVENT_READ, c)
                conns.append(c)
            # Spread the first rounds over one period, as tabs opened at different times are.
            pages.append({"conns": conns, "waiting": 0, "next": time.monotonic() + POLL_S * i / self.n})
        while not self.stop_flag.is_set():
            now = time.monotonic()
            for pg in pages:
                if pg["waiting"] == 0 and now >= pg["next"]:
                    for c in pg["conns"]:
                        c["sock"].sendall(self.request(c["path"]))
                    pg["waiting"] = len(pg["conns"])
            due = min((pg["next"] for pg in pages if pg["waiting"] == 0), default=now + 0.05)
            for key, _ in sel.select(timeout=max(0.0, min(0.05, due - now))):
                c = key.data
                try:
                    data = c["sock"].recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.errors += 1
                    sel.unregister(c["sock"])
                    continue
                c["buf"] += data
                while True:
                    head_end = c["buf"].find(b"\r\n\r\n")
                    if head_end < 0:
                        break
                    head = c["buf"][:head_end].decode("latin-1")
                    m = re.search(r"(?im)^content-length:\s*(\d+)", head)
                    size = head_end + 4 + (int(m.group(1)) if m else 0)
                    if len(c["buf"]) < size:
                        break
                    if not head.startswith("HTTP/1.1 200"):
                        self.errors += 1
                    self.requests += 1
                    self.bytes += size
                    c["buf"] = c["buf"][size:]
                    pg = pages[c["page"]]
                    pg["waiting"] -= 1
                    if pg["waiting"] == 0:
                        pg["next"] = time.monotonic() + POLL_S
        for pg in pages:
            for c in pg["conns"]:
                c["sock"].close()


def one_run(load, consoles):
    server, gport, hport = start_server()
    try:
        c = None
        if consoles:
            c = Consoles(hport, consoles)
            c.start()
            time.sleep(2 * POLL_S)  # every console is polling before the benchmark starts
        t0 = time.monotonic()
        asked0 = c.requests if c else 0
        out = subprocess.run([load, "--bench", "--mode", "bg", "--jobs", str(JOBS), "--port", str(gport),
                              "--pid", str(server.pid), "--label", f"consoles{consoles}", "--timeout", "300"],
                             capture_output=True, text=True, check=True).stdout
        secs = time.monotonic() - t0
        polled = ""
        if c:
            c.stop()
            asked = c.requests - asked0
            polled = f", {asked} console requests meanwhile ({asked / secs:.0f}/s), {c.errors} errors"
            if c.errors:
                sys.exit(f"FAIL: {c.errors} console requests failed")
        line = next(l for l in out.splitlines() if l.startswith("RESULT"))
        jobs_s = float(re.search(r"\bjobs_per_s=([\d.]+)", line).group(1))
        cpu = float(re.search(r"\bserver_cpu_s=([\d.]+)", line).group(1))
        us_per_job = cpu / JOBS * 1e6
        print(f"  {consoles:3d} consoles: {jobs_s:9.0f} jobs/s, server CPU {cpu:.2f} s "
              f"({us_per_job:.2f} us/job){polled}", flush=True)
        return jobs_s, us_per_job
    finally:
        server.terminate()
        server.wait()


def main():
    load = load_binary()
    print(f"benches/console_load.py: CONSOLES={CONSOLES} REPS={REPS} JOBS={JOBS} VIEW={VIEW} "
          f"({' + '.join(PATHS)} every {POLL_S} s), {os.cpu_count()} cores", flush=True)
    runs = {0: [], CONSOLES: []}
    order = [0, CONSOLES]
    for rep in range(REPS):
        for n in (order if rep % 2 == 0 else order[::-1]):
            runs[n].append(one_run(load, n))
    med = lambda n, i: statistics.median(r[i] for r in runs[n])
    base, busy = med(0, 0), med(CONSOLES, 0)
    cpu0, cpu1 = med(0, 1), med(CONSOLES, 1)
    print(f"median jobs/s: no console {base:.0f}, {CONSOLES} consoles {busy:.0f}; "
          f"ratio {busy / base:.3f} ({(1 - busy / base) * 100:+.1f}% loss)")
    print(f"median server CPU per job: no console {cpu0:.2f} us, {CONSOLES} consoles {cpu1:.2f} us; "
          f"ratio {cpu1 / cpu0:.3f}")


if __name__ == "__main__":
    main()
