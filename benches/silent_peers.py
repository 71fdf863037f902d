#!/usr/bin/env python3
"""Loopback clients beside 10,000 silent connections from beyond loopback.

Run as root: the script runs itself again in a network namespace of its own (unshare -n),
where 10.200.0.0/16 is local on the loopback device, so that the far peers come from
addresses of no real network. In each case the far peers connect (from 200 addresses, 50
each) and send nothing; then 500 loopback clients each connect, send ECHO_REQ and read the
answer, and the time of each (connect to answer) is reported, with the server's VmRSS.

    cargo build --release
    sudo benches/silent_peers.py

Cases: --protected-mode no (all 10,000 held: under both caps); --protected-mode no with
--max-connections 1000 (500 held, the rest refused); protected mode (all refused at accept).
Environment: FAR (10000), NEAR (500), GEARWHEEL (target/release/gearwheel).
"""
import os, resource, socket, struct, subprocess, sys, time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
import gearwheel_server  # noqa: E402 (beside this file, on the path of a script run)

FAR = int(os.environ.get("FAR", 10000))
NEAR = int(os.environ.get("NEAR", 500))
BIN = os.path.abspath(os.environ.get("GEARWHEEL", "target/release/gearwheel"))

if os.environ.get("SILENT_PEERS_NETNS") is None:
    setup = "ip link set lo up && ip route add local 10.200.0.0/16 dev lo"
    env = dict(os.environ, SILENT_PEERS_NETNS="1", GEARWHEEL=BIN)
    sys.exit(subprocess.call(["unshare", "-n", "sh", "-c", f'{setup} && exec "$0"',
                              os.path.abspath(__file__)], env=env))

# Each side holds one descriptor per far peer: the client here, the server (which inherits
# the limit) there.
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
want = FAR + NEAR + 1000
if hard != resource.RLIM_INFINITY and hard < want:
    sys.exit(f"RLIMIT_NOFILE's hard limit {hard} is under {want}: raise it, or lower FAR")
resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])


def echo_req(data):
    return b"\0REQ" + struct.pack(">II", 16, len(data)) + data


def near_round_trip(port):
    t = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(echo_req(b"near"))
    got = b""
    while len(got) < 16:
        chunk = s.recv(64)
        if not chunk:
            raise SystemExit("a loopback client was refused")
        got += chunk
    s.close()
    return (time.perf_counter() - t) * 1000


def case(name, *args):
    server, gport, _ = gearwheel_server.start(BIN, "-L", "0.0.0.0", "--idle-trim", "0", *args)
    time.sleep(0.2)
    before = rss_kb(server.pid)
    far, held = [], 0
    for i in range(FAR):
        s = socket.socket()
        s.bind((f"10.200.{1 + i // 50 // 250}.{1 + (i // 50) % 250}", 0))
        s.connect(("10.200.0.1", gport))
        far.append(s)
    # One loopback round trip first, untimed: the kernel's accept queue is first come, first
    # served, so it waits behind every far connect still queued there. The timed ones then
    # measure the server with the far peers in place (held, or refused), not the storm of
    # their connects.
    near_round_trip(gport)
    times = sorted(near_round_trip(gport) for _ in range(NEAR))
    for s in far:  # after the loopback barrier: the server acted on every accept
        s.setblocking(False)
        try:
            s.recv(1, socket.MSG_PEEK)  # a refusal, or the close: not held
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    after = rss_kb(server.pid)
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"{name}: {held} of {FAR} far connections held; {NEAR} loopback round trips "
          f"p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, max {times[-1]:.2f} ms; "
          f"VmRSS {before} kB before, {after} kB with them")
    for s in far:
        s.close()
    server.kill()
    server.wait()


case("--protected-mode no", "--protected-mode", "no")
case("--protected-mode no --max-connections 1000", "--protected-mode", "no",
     "--max-connections", "1000")
case("protected mode", "--protected-mode", "yes")
