"""gearwheel for the python benches (imported, not run): `gearwheel serve` with an HTTP
listener on port 0, its Gearman and HTTP ports read from its "Listening on" lines."""
import re
import subprocess
import sys
import threading


def start(binary, *args):
    """`BINARY serve -p 0 --http-port 0 ARGS...`: (the process, Gearman port, HTTP port)."""
    p = subprocess.Popen([binary, "serve", "-p", "0", "--http-port", "0", *args],
                         stderr=subprocess.PIPE, text=True)
    gport = hport = None
    while gport is None or hport is None:
        line = p.stderr.readline()
        if not line:
            sys.exit("the server did not start")
        m = re.search(r"HTTP listening on .*:(\d+)", line)
        if m:
            hport = int(m.group(1))
        elif (m := re.search(r"Listening on .*:(\d+)", line)):
            gport = int(m.group(1))
    # The rest of its log is read and dropped, so that a full pipe never stops it.
    threading.Thread(target=lambda: p.stderr.read(), daemon=True).start()
    return p, gport, hport
