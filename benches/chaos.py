#!/usr/bin/env python3
"""Chaos run of a gearwheel cluster (docs/cluster.md, "Evidence under faults").

Three `gearwheel serve --etcd` servers and one real etcd on loopback run two `@every 1s`
entries (catchup=last and catchup=none). Each server reaches etcd through a TCP relay this
script owns, so it can cut one server off from etcd (a silent partition: bytes are dropped,
nothing is closed). Workers, one set per server, record every run they execute (entry,
scheduled time, server, when it arrived) in runs.log. The faults, in a cycle, for as long as
told (--minutes N):

  kill9      kill -9 of the leader, restarted (same --data-dir) once another server fires
  stop       SIGSTOP of the leader for the lease TTL + 2 s, then SIGCONT
  partition  the leader cut off from etcd for the TTL + 3 s, then healed
  clock      the leader's wall clock stepped forward by --clock-step seconds for 10 s, then
             back (CLOCK_REALTIME shifted by benches/chaos_clock.c, preloaded; the
             monotonic clock is left alone, as a real step leaves it)
  flap       five short partitions of whichever server leads, 1.5 s to TTL + 1.5 s each,
             2 to 4 s apart

Then it checks every scheduled time of both entries between the first run and the end of
the faults, and prints one table: times checked, run once, run twice (must be 0), missed,
and how many misses lie inside a fault window (from the fault until it was removed, or until
the entry's next run, whichever is later), how many misses the cluster itself counted (each
entry's SKIPS on the leader, from the start to the end), and the failover time (from the
fault to the first run by another server) p50/p99. runs.log and faults.log in the run's directory (--keep) hold
the raw evidence, server*.log the servers' logs. Exit code 1 if any time ran twice or a miss lies outside every window.

    cargo build --release && python3 benches/chaos.py --minutes 30 --keep DIR
    python3 benches/chaos.py --report DIR    # the table again, from DIR's files
"""
import argparse
import bisect
import datetime
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REQ, RES = b"\0REQ", b"\0RES"
CAN_DO, PRE_SLEEP, NOOP, GRAB_JOB, NO_JOB, JOB_ASSIGN, WORK_COMPLETE = 1, 4, 6, 9, 10, 11, 13
ENTRIES = ("last", "none")
SCHEDULES = ("CRON_TZ=UTC\n"
             "@every 1s chaos id=last overlap=allow catchup=last -- last {time}\n"
             "@every 1s chaos id=none overlap=allow catchup=none -- none {time}\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg):
    print(f"{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S} {msg}", flush=True)


class Relay:
    """A TCP relay from a port of its own to etcd; `cut` drops every byte both ways (nothing
    is closed, as in a real partition), `heal` closes what was cut and relays again."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.cut_now = False
        self.lock = threading.Lock()
        self.conns = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return  # closed at the end of the run
            up = None
            if not self.cut_now:
                try:
                    up = socket.create_connection(("127.0.0.1", self.upstream), timeout=2)
                    up.settimeout(None)
                except OSError:
                    c.close()
                    continue
            with self.lock:
                self.conns.append((c, up))
            threading.Thread(target=self.pump, args=(c, up), daemon=True).start()
            if up is not None:
                threading.Thread(target=self.pump, args=(up, c), daemon=True).start()

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if dst is not None and not self.cut_now:
                    dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                if s is not None:
                    s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.cut_now = True

    def heal(self):
        # What was sent during the cut is lost, so those connections are dead anyway (the
        # server's request timeout closes them too): close them, relay new ones.
        with self.lock:
            conns, self.conns = self.conns, []
            self.cut_now = False
        for pair in conns:
            for s in pair:
                try:
                    if s is not None:
                        s.shutdown(socket.SHUT_RDWR)
                        s.close()
                except OSError:
                    pass


class Records:
    """Every run a worker executed: (entry, scheduled unix second, server, arrival)."""

    def __init__(self, path):
        self.lock = threading.Lock()
        self.runs = []
        self.file = open(path, "a", buffering=1)

    def add(self, workload, server):
        at = time.time()
        try:
            entry, stamp = workload.split(" ", 1)
            t = int(datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
        except ValueError:
            entry, t = "?", 0
        with self.lock:
            self.runs.append((entry, t, server, at))
            self.file.write(f"{entry} {t} {server} {at:.3f}\n")

    def since(self, after, not_server=None):
        with self.lock:
            return [r for r in self.runs if r[3] > after and r[2] != not_server]


def read_packet(sock, buf):
    while True:
        if len(buf) >= 12:
            size = struct.unpack(">I", bytes(buf[8:12]))[0]
            if len(buf) >= 12 + size:
                ptype = struct.unpack(">I", bytes(buf[4:8]))[0]
                body = bytes(buf[12:12 + size])
                del buf[:12 + size]
                return ptype, body
        data = sock.recv(65536)  # socket.timeout propagates to the caller
        if not data:
            raise ConnectionError("closed")
        buf.extend(data)


def packet(ptype, *args):
    body = b"\0".join(args)
    return REQ + struct.pack(">II", ptype, len(body)) + body


def worker(idx, port, records, stop):
    """A worker on server `idx`: takes `chaos` jobs, records them, completes them; reconnects
    while the server is down."""
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            time.sleep(0.2)
            continue
        s.settimeout(2)
        buf = bytearray()
        try:
            s.sendall(packet(CAN_DO, b"chaos"))
            while not stop.is_set():
                s.sendall(packet(GRAB_JOB))
                while True:
                    try:
                        ptype, body = read_packet(s, buf)
                        break
                    except socket.timeout:
                        if stop.is_set():
                            raise ConnectionError("stopping")
                if ptype == NO_JOB:
                    s.sendall(packet(PRE_SLEEP))
                    try:
                        while read_packet(s, buf)[0] != NOOP:
                            pass
                    except socket.timeout:
                        pass  # grab again
                elif ptype == JOB_ASSIGN:
                    handle, _function, workload = body.split(b"\0", 2)
                    records.add(workload.decode(errors="replace"), idx)
                    s.sendall(packet(WORK_COMPLETE, handle, b""))
        except (OSError, ConnectionError, ValueError):
            pass
        s.close()
        time.sleep(0.2)


def skips(port):
    """Each entry's SKIPS as the server at `port` shows it (the cluster's account), or None."""
    text = show_cluster(port, b"show schedules\n")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        cols = line.split("\t")
        if cols[0] in ENTRIES and len(cols) > 9 and cols[9].isdigit():
            out[cols[0]] = int(cols[9])
    return out if len(out) == len(ENTRIES) else None


def show_cluster(port, line=b"show cluster\n"):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.settimeout(0.5)
            s.sendall(line)
            got = b""
            while not got.endswith(b".\n"):
                data = s.recv(4096)
                if not data:
                    return None
                got += data
            return got.decode()
    except OSError:
        return None


class Cluster:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.binary = os.path.abspath(args.binary)
        self.shim = os.path.join(work, "libchaosclock.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", self.shim,
                        os.path.join(HERE, "chaos_clock.c"), "-ldl", "-lpthread"], check=True)
        self.etcd_port, peer = free_port(), free_port()
        client = f"http://127.0.0.1:{self.etcd_port}"
        self.etcd = subprocess.Popen(
            ["etcd", "--name", "chaos", "--data-dir", os.path.join(work, "etcd"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"chaos=http://127.0.0.1:{peer}"],
            stdout=open(os.path.join(work, "etcd.log"), "w"), stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.etcd_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        self.file = os.path.join(work, "schedules.cron")
        with open(self.file, "w") as f:
            f.write(SCHEDULES)
        self.relays = [Relay(self.etcd_port) for _ in range(3)]
        self.ports = [free_port() for _ in range(3)]
        self.clocks = []
        for i in range(3):
            path = os.path.join(work, f"clock{i}")
            with open(path, "wb") as f:
                f.write(struct.pack("<q", 0))
            self.clocks.append(path)
        self.procs = [None] * 3
        for i in range(3):
            self.start(i)

    def start(self, i):
        env = dict(os.environ, LD_PRELOAD=self.shim, CHAOS_CLOCK_FILE=self.clocks[i])
        self.procs[i] = subprocess.Popen(
            [self.binary, "serve", "-L", "127.0.0.1", "-p", str(self.ports[i]),
             "--etcd", f"http://127.0.0.1:{self.relays[i].port}", "--cluster", "chaos",
             "--etcd-lease-ttl", str(self.args.ttl), "--etcd-request-timeout", "1000",
             "--schedules", self.file, "--data-dir", os.path.join(self.work, f"data{i}"),
             "--log-file", os.path.join(self.work, f"server{i}.log"), "--verbose", "INFO"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def step_clock(self, i, ms):
        with open(self.clocks[i], "r+b") as f:
            f.write(struct.pack("<q", ms))

    def leader(self, wait=30.0):
        end = time.time() + wait
        while time.time() < end:
            for i, p in enumerate(self.ports):
                text = show_cluster(p)
                if text and "role\tleader\n" in text:
                    return i
            time.sleep(0.05)
        return None

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.terminate()
        for p in self.procs:
            if p:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.etcd.terminate()
        self.etcd.wait(10)


class Faults:
    def __init__(self, cl, records, args, rng):
        self.cl, self.records, self.args, self.rng = cl, records, args, rng
        self.done = []  # (kind, server, start, end, failover seconds or None)

    def first_run_by_other(self, after, server, wait):
        end = time.time() + wait
        while time.time() < end:
            runs = self.records.since(after, not_server=server)
            if runs:
                return min(r[3] for r in runs)
            time.sleep(0.02)
        return None

    def settle(self):
        """Until a leader answers and the schedule has run for two seconds since."""
        l = self.cl.leader()
        t = time.time()
        while time.time() - t < 15 and len(self.records.since(t)) < 4:
            time.sleep(0.1)
        return l

    def record(self, kind, l, t0, t1, failover_at):
        fo = None if failover_at is None else failover_at - t0
        self.done.append((kind, l, t0, t1, fo))
        with open(os.path.join(self.cl.work, "faults.log"), "a") as f:
            f.write(f"{kind} {l} {t0:.3f} {t1:.3f} {'-' if fo is None else f'{fo:.3f}'}\n")
        log(f"{kind} of server {l}: failover {'-' if fo is None else f'{fo:.2f} s'}")

    def kill9(self):
        l = self.settle()
        p = self.cl.procs[l]
        t0 = time.time()
        p.kill()
        p.wait()
        fo = self.first_run_by_other(t0, l, 30)
        self.cl.start(l)
        self.record("kill9", l, t0, time.time(), fo)

    def stop(self):
        l = self.settle()
        pid = self.cl.procs[l].pid
        t0 = time.time()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(self.args.ttl + 2)
        fo = self.first_run_by_other(t0, l, 0.1)
        os.kill(pid, signal.SIGCONT)
        self.record("stop", l, t0, time.time(), fo)

    def partition(self, seconds=None, kind="partition"):
        l = self.settle()
        t0 = time.time()
        self.cl.relays[l].cut()
        time.sleep(seconds if seconds is not None else self.args.ttl + 3)
        fo = self.first_run_by_other(t0, l, 0.1)
        self.cl.relays[l].heal()
        self.record(kind, l, t0, time.time(), fo)

    def clock(self):
        l = self.settle()
        t0 = time.time()
        self.cl.step_clock(l, self.args.clock_step * 1000)
        time.sleep(10)
        self.cl.step_clock(l, 0)
        # Until the real time reaches what the stepped leader claimed.
        time.sleep(self.args.clock_step)
        self.record("clock", l, t0, time.time(), None)

    def flap(self):
        for _ in range(5):
            self.partition(self.rng.uniform(1.5, self.args.ttl + 1.5), "flap")
            time.sleep(self.rng.uniform(2, 4))


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def report(runs, done, start, end, minutes, ttl, counted=None):
    """The table, from the runs the workers executed and the faults applied (`done`), for
    the scheduled times from `start` to `end` - 3 s; 1 if a time ran twice or a miss lies
    outside every fault window. `counted`: each entry's SKIPS at the start and at the end,
    as the leader showed them, to set beside the misses the workers saw."""
    counts = {}
    for entry, t, _, _ in runs:
        counts[(entry, t)] = counts.get((entry, t), 0) + 1
    twice = {k: n for k, n in counts.items() if n > 1}
    firsts = [t for (e, t) in counts if e in ENTRIES and t >= start]
    lo = min(firsts) if firsts else start
    hi = int(end) - 3
    ran = {e: sorted(t for (x, t) in counts if x == e) for e in ENTRIES}

    def window(f, entry):
        """From the fault until it was removed, or until the entry's first run at a later
        scheduled time, whichever is later."""
        kind, _, t0, t1, _ = f
        i = bisect.bisect_right(ran[entry], int(t0))
        after = ran[entry][i] if i < len(ran[entry]) else hi + 1
        return int(t0) - 1, max(int(t1) + 1, after)

    windows = {e: [(f[0], *window(f, e)) for f in done] for e in ENTRIES}
    checked = once = missed = 0
    inside = {}
    outside = []
    missed_by = {e: 0 for e in ENTRIES}
    for e in ENTRIES:
        for t in range(lo, hi + 1):
            checked += 1
            n = counts.get((e, t), 0)
            if n == 1:
                once += 1
            elif n == 0:
                missed += 1
                missed_by[e] += 1
                kinds = [k for (k, a, b) in windows[e] if a <= t <= b]
                if kinds:
                    inside[kinds[0]] = inside.get(kinds[0], 0) + 1
                else:
                    outside.append((e, t))
    fos = [f[4] for f in done if f[4] is not None]
    kinds = {}
    for f in done:
        kinds[f[0]] = kinds.get(f[0], 0) + 1
    rows = [
        ("run", f"{minutes:g} min, lease TTL {ttl} s, 3 servers, 1 etcd, "
                f"2 entries @every 1s (catchup=last, catchup=none)"),
        ("faults", ", ".join(f"{k} x{n}" for k, n in kinds.items())),
        ("scheduled times checked", str(checked)),
        ("run once", str(once)),
        ("run twice", str(len(twice))),
        ("missed", str(missed)),
        ("  inside a fault window", ", ".join(f"{k} {n}" for k, n in inside.items()) or "0"),
        ("  outside every window", str(len(outside))),
        ("  counted missed by the cluster (SKIPS)",
         ", ".join(f"{e} {counted[e][1] - counted[e][0]} of {missed_by[e]}" for e in ENTRIES)
         if counted else "-"),
        ("failover time p50 / p99", (f"{percentile(fos, 50) * 1000:.0f} ms / "
                                     f"{percentile(fos, 99) * 1000:.0f} ms ({len(fos)} failovers)")
         if fos else "-"),
    ]
    print("| | |\n|---|---|")
    for k, v in rows:
        print(f"| {k.strip() if not k.startswith('  ') else '&nbsp;&nbsp;' + k.strip()} | {v} |")
    if twice:
        print("RUN TWICE:", sorted(twice.items())[:50])
    if outside:
        print("MISSED OUTSIDE EVERY WINDOW:", outside[:50])
    return 1 if twice or outside else 0


def report_again(work):
    """The table of a finished run, from its files: runs.log, faults.log and span (the
    checked times' start and end; without it, the first fault to 5 s after the last)."""
    runs = []
    with open(os.path.join(work, "runs.log")) as f:
        for line in f:
            e, t, server, at = line.split()
            runs.append((e, int(t), int(server), float(at)))
    done = []
    with open(os.path.join(work, "faults.log")) as f:
        for line in f:
            kind, l, t0, t1, fo = line.split()
            done.append((kind, int(l), float(t0), float(t1), None if fo == "-" else float(fo)))
    counted = None
    try:
        with open(os.path.join(work, "skips")) as f:
            counted = {e: (int(a), int(b)) for e, a, b in (line.split() for line in f)}
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(work, "span")) as f:
            start, last, minutes, ttl = f.read().split()
            start, last, minutes, ttl = int(start), float(last), float(minutes), int(ttl)
    except FileNotFoundError:
        start, last = int(done[0][2]), done[-1][3] + 5
        minutes, ttl = round((last - start) / 60), 3
    return report(runs, done, start, last, minutes, ttl, counted)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--binary", default=os.path.join(HERE, "..", "target", "release", "gearwheel"))
    ap.add_argument("--ttl", type=int, default=3)
    ap.add_argument("--clock-step", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="a directory for the logs (default: a temporary one)")
    ap.add_argument("--report", metavar="DIR",
                    help="print the table again from a finished run's --keep directory")
    args = ap.parse_args()
    if args.report:
        sys.exit(report_again(args.report))
    work = args.keep or tempfile.mkdtemp(prefix="gearwheel-chaos-")
    os.makedirs(work, exist_ok=True)
    log(f"files in {work}")
    rng = random.Random(args.seed)
    cl = Cluster(args, work)
    records = Records(os.path.join(work, "runs.log"))
    stop = threading.Event()
    for i in range(3):
        for _ in range(2):
            threading.Thread(target=worker, args=(i, cl.ports[i], records, stop),
                             daemon=True).start()
    faults = Faults(cl, records, args, rng)
    code = 2
    try:
        if cl.leader(30) is None:
            sys.exit("no leader within 30 s")
        first = faults.settle()
        base = skips(cl.ports[first]) if first is not None else None
        start = int(time.time()) + 1
        end = start + args.minutes * 60
        cycle = [faults.kill9, faults.stop, faults.partition, faults.clock, faults.flap]
        k = 0
        while time.time() < end:
            cycle[k % len(cycle)]()
            k += 1
        faults.settle()
        last = time.time()
        time.sleep(5)  # the runs of the last seconds reach their workers
        l = cl.leader()
        final = skips(cl.ports[l]) if l is not None else None
        counted = None
        if base and final:
            counted = {e: (base[e], final[e]) for e in ENTRIES}
            with open(os.path.join(work, "skips"), "w") as f:
                f.writelines(f"{e} {a} {b}\n" for e, (a, b) in counted.items())
        with open(os.path.join(work, "span"), "w") as f:
            f.write(f"{start} {last:.3f} {args.minutes} {args.ttl}\n")
        code = report(list(records.runs), faults.done, start, last, args.minutes, args.ttl,
                      counted)
    finally:
        stop.set()
        cl.stop()
        for r in cl.relays:
            r.listener.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
