#!/usr/bin/env python3
"""Memory under peers that ask and never read (--max-total-output).

N clients each send M echoes of 1 MiB (ECHO_REQ) and read none of the replies. The server's
RSS and its unsent bytes (/metrics gearman_output_buffered_bytes) are sampled every 200 ms for
SECS seconds; then the clients leave and the RSS is read again 2 s later.

    cargo build --release
    benches/output_bound.py                           # the default bound (256 MiB)
    benches/output_bound.py --max-total-output 1000000000000   # no global bound: the old way

Environment: CLIENTS (40), ECHOES (70), SECS (20), GEARWHEEL (target/release/gearwheel).
Extra arguments go to `gearwheel serve`.
"""
import os, socket, struct, sys, threading, time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
import gearwheel_server  # noqa: E402 (beside this file, on the path of a script run)

CLIENTS = int(os.environ.get("CLIENTS", 40))
ECHOES = int(os.environ.get("ECHOES", 70))
SECS = float(os.environ.get("SECS", 20))
BIN = os.environ.get("GEARWHEEL", "target/release/gearwheel")

server, gport, hport = gearwheel_server.start(BIN, *sys.argv[1:])

def rss_mib():
    with open(f"/proc/{server.pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) / 1024

def metric(name):
    s = socket.create_connection(("127.0.0.1", hport))
    s.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while (chunk := s.recv(65536)):
        data += chunk
    s.close()
    for l in data.decode().splitlines():
        if l.startswith(name + " "):
            return int(float(l.split()[1]))
    return 0

payload = b"e" * (1 << 20)
packet = b"\0REQ" + struct.pack(">II", 16, len(payload)) + payload

def ask(s):
    try:
        for _ in range(ECHOES):
            s.sendall(packet)
    except OSError:
        pass

start_rss = rss_mib()
socks = [socket.create_connection(("127.0.0.1", gport)) for _ in range(CLIENTS)]
writers = [threading.Thread(target=ask, args=(s,)) for s in socks]
for w in writers:
    w.start()
peak_rss = peak_unsent = 0
end = time.time() + SECS
while time.time() < end:
    peak_rss = max(peak_rss, rss_mib())
    peak_unsent = max(peak_unsent, metric("gearman_output_buffered_bytes"))
    time.sleep(0.2)
held = metric("gearman_output_held_connections")
closed = metric("gearman_output_closed_total")
for s in socks:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
for w in writers:
    w.join()
time.sleep(2)
after = rss_mib()
server.terminate()
server.wait()
print(f"{CLIENTS} clients x {ECHOES} x 1 MiB echoes, never read ({' '.join(sys.argv[1:]) or 'default bound'}):")
print(f"  RSS at start {start_rss:.1f} MiB, peak {peak_rss:.0f} MiB, 2 s after they left {after:.1f} MiB")
print(f"  unsent bytes peak {peak_unsent / (1 << 20):.0f} MiB; held at the end {held}, closed {closed}")
