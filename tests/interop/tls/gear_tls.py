"""python `gear` over mutual TLS, for tests/interop/tls_clients.rs.

Usage:
  gear_tls.py worker HOST PORT KEY CERT CA NAME   registers reverse and who; prints "ready",
                                                  then "job FUNC BYTES" before each job
  gear_tls.py client HOST PORT KEY CERT CA FUNC FILE
                                                  submits FILE's bytes to FUNC, prints the result
  gear_tls.py bare HOST PORT CA TLSVERSION        a TLS client trusting CA but without a
                                                  certificate: prints "served" or "refused: WHY"

gear turns TLS 1.3 off (create_ssl_context), so the worker and client speak TLS 1.2.
"""
import socket
import ssl
import struct
import sys
import time

import gear


def worker(host, port, key, cert, ca, name):
    w = gear.Worker(name)
    w.addServer(host, int(port), key, cert, ca)
    w.waitForServer(10)
    w.registerFunction('reverse')
    w.registerFunction('who')
    print('ready', flush=True)
    while True:
        job = w.getJob()
        # gear gives the function name as text and the workload as bytes.
        print('job', job.name, len(job.arguments), flush=True)
        if job.name == 'reverse':
            job.sendWorkComplete(job.arguments[::-1])
        else:
            job.sendWorkComplete(name.encode())


def client(host, port, key, cert, ca, func, path):
    c = gear.Client('gear-tls-client')
    c.addServer(host, int(port), key, cert, ca)
    c.waitForServer(10)
    with open(path, 'rb') as f:
        payload = f.read()
    job = gear.Job(func.encode(), payload)
    c.submitJob(job, timeout=10)
    deadline = time.time() + 20
    while not job.complete and time.time() < deadline:
        time.sleep(0.01)
    if not job.complete or job.failure:
        sys.exit('job did not complete: complete=%s failure=%s' % (job.complete, job.failure))
    sys.stdout.buffer.write(b''.join(job.data))
    sys.stdout.flush()
    c.shutdown()


def bare(host, port, ca, version):
    """What gear does, minus the certificate: refused by a server that requires one."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(ca)
    ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, version)
    try:
        s = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10))
        # With TLS 1.3 the client finishes its handshake before the server has judged the
        # (missing) certificate: the refusal arrives on the first read.
        s.sendall(b'\0REQ' + struct.pack('>II', 16, 4) + b'ping')
        reply = s.recv(64)
        if reply:
            print('served', reply, flush=True)
        else:
            print('refused: closed without a reply', flush=True)
    except (ssl.SSLError, OSError) as e:
        print('refused:', e, flush=True)


if __name__ == '__main__':
    role, args = sys.argv[1], sys.argv[2:]
    {'worker': worker, 'client': client, 'bare': bare}[role](*args)
