#!/usr/bin/env python3
"""Runs python gear's own functional tests, as its sdist ships them, against an external server.

gear's tests (gear/tests/test_functional.py) start gear's own Python server with
`gear.Server(0[, key, cert, ca])` in each setUp and read `server.port`; one test also reads
`len(server.normal_queue)`, the jobs waiting in that server. The test code is run unchanged:
only `gear.Server` is replaced, before the tests run, by a stand-in that starts the server under
test (gearwheel through tests/client_suites/gearwheel-as-gearmand, or gearmand itself) with
gearmand's flags on a free loopback port, the same TLS files when the test passes them, and
answers `normal_queue` from the admin `status` command (queued minus running, over all
functions). Each test gets a new server, as it gets a new gear.Server, and, as gear's servers,
each lives until the run ends: the tests never stop their clients and workers, which would
otherwise reconnect to whatever server takes the port next.

usage: gear_functional.py SDIST_DIR SERVER_LAUNCHER LOG_DIR
Prints one line per test, `ok NAME` / `FAIL NAME` / `skip NAME`, then details of failures.
Exit status 0 when the run itself worked (whatever the tests did), 2 on a usage error.
"""

import os
import socket
import ssl
import subprocess
import sys
import time
import unittest

if len(sys.argv) != 4:
    print(__doc__.strip().splitlines()[-3], file=sys.stderr)
    sys.exit(2)
SDIST, LAUNCHER, LOG_DIR = sys.argv[1:]
# The gear the tests were written with: the sdist's own package, ahead of any installed one.
sys.path.insert(0, SDIST)

import gear  # noqa: E402

STARTED = []
COUNT = [0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExternalServer:
    """Stands in for gear.Server(port, keyfile, certfile, cafile): the server under test."""

    def __init__(self, port=4730, keyfile=None, certfile=None, cafile=None, **_ignored):
        self.port = free_port() if not port else port
        self.tls = None
        args = [LAUNCHER, "--listen", "127.0.0.1", "--port", str(self.port)]
        if keyfile and certfile:
            args += ["--ssl", "--ssl-key", keyfile, "--ssl-certificate", certfile]
            if cafile:
                args += ["--ssl-ca-file", cafile]
            # The admin queries below speak TLS as a client; the server's own certificate,
            # signed by the same CA, serves as the client certificate mutual TLS asks for.
            ctx = ssl.create_default_context(cafile=cafile)
            ctx.check_hostname = False
            ctx.load_cert_chain(certfile, keyfile)
            self.tls = ctx
        COUNT[0] += 1
        self.log_path = os.path.join(LOG_DIR, "server-%d.log" % COUNT[0])
        args += ["--log-file", self.log_path]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        STARTED.append(self)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("%s did not start on port %d (see %s)"
                                       % (LAUNCHER, self.port, self.log_path))
                time.sleep(0.05)
        if self.tls:
            # gear's own server would serve TLS or fail here; so does the stand-in, at once,
            # rather than leaving the test to time out in waitForServer.
            try:
                self._admin("version", until=b"\n")
            except (OSError, ssl.SSLError) as e:
                self.shutdown()
                raise RuntimeError("%s accepts no TLS connection on port %d: %s (see %s)"
                                   % (LAUNCHER, self.port, e, self.log_path))

    def _admin(self, command, until=b".\n"):
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        if self.tls:
            sock = self.tls.wrap_socket(sock)
        with sock:
            sock.sendall(command.encode() + b"\n")
            data = b""
            while not data.endswith(until):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data.decode(errors="replace")

    @property
    def normal_queue(self):
        waiting = 0
        for line in self._admin("status").splitlines():
            cols = line.split("\t")
            if len(cols) == 4 and cols[1].isdigit() and cols[2].isdigit():
                waiting += int(cols[1]) - int(cols[2])
        return [None] * waiting

    def shutdown(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


gear.Server = ExternalServer


def main():
    os.makedirs(LOG_DIR, exist_ok=True)
    # fixtures.Timeout in gear's BaseTestCase: a test that hangs fails after this long.
    os.environ.setdefault("OS_TEST_TIMEOUT", "20")
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromName("gear.tests.test_functional")
    outcome = {}

    class Recording(unittest.TextTestResult):
        def addSuccess(self, test):
            super().addSuccess(test)
            outcome[test.id()] = "ok"

        def addFailure(self, test, err):
            super().addFailure(test, err)
            outcome[test.id()] = "FAIL"

        def addError(self, test, err):
            super().addError(test, err)
            outcome[test.id()] = "FAIL"

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            outcome[test.id()] = "skip"

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            outcome[test.id()] = "ok"

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            outcome[test.id()] = "FAIL"

    with open(os.path.join(LOG_DIR, "unittest.log"), "w") as log:
        runner = unittest.TextTestRunner(stream=log, verbosity=2, resultclass=Recording)
        try:
            runner.run(suite)
        finally:
            for server in STARTED:
                server.shutdown()
    for name in sorted(outcome):
        print("%s %s" % (outcome[name], name.replace("gear.tests.test_functional.", "")))


if __name__ == "__main__":
    main()
