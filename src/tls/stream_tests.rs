//! The server-side session over real non-blocking loopback sockets driven by mio (as the
//! reactor drives them), against a blocking rustls client in a thread.

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use rustls::pki_types::ServerName;

use super::tls_support::TestCa;

use super::{ServerTls, TlsFiles, TlsStream, client_config};

/// A server session on one accepted socket, polled by mio.
struct Served {
    poll: Poll,
    sock: mio::net::TcpStream,
    tls: TlsStream,
}

impl Served {
    /// Reads until `want` plaintext bytes came, the end, or an error.
    fn read_exact(&mut self, want: usize) -> io::Result<Vec<u8>> {
        let mut got = Vec::new();
        let mut events = Events::with_capacity(4);
        let mut buf = [0u8; 4096];
        while got.len() < want {
            match self.tls.read(&mut self.sock, &mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.poll.poll(&mut events, Some(Duration::from_secs(10)))?;
                    if events.is_empty() {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    /// Writes all of `data`, waiting for writability when the session is full.
    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        let mut events = Events::with_capacity(4);
        while !data.is_empty() || self.tls.wants_write() {
            let step = match data.is_empty() {
                true => self.tls.flush(&mut self.sock).map(|_| 0),
                false => self.tls.write(&mut self.sock, data),
            };
            let blocked = match step {
                Ok(n) => {
                    data = &data[n..];
                    data.is_empty() && self.tls.wants_write()
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
                Err(e) => return Err(e),
            };
            // Wait only when the socket refused bytes: its next writable edge wakes us.
            if blocked {
                self.poll.poll(&mut events, Some(Duration::from_secs(10)))?;
            }
        }
        Ok(())
    }
}

/// A TLS listener with a mutual-TLS configuration and the CA; `serve` accepts one client.
fn setup(ca: &TestCa) -> (TcpListener, ServerTls) {
    let (certificate, key) = ca.issue("server", "gearwheel", &["localhost"]);
    let tls = ServerTls::load(TlsFiles {
        certificate,
        key,
        ca_file: Some(ca.ca()),
    })
    .unwrap();
    (TcpListener::bind("127.0.0.1:0").unwrap(), tls)
}

fn serve(listener: &TcpListener, tls: &ServerTls) -> Served {
    let (sock, _) = listener.accept().unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut sock = mio::net::TcpStream::from_std(sock);
    let poll = Poll::new().unwrap();
    poll.registry()
        .register(&mut sock, Token(0), Interest::READABLE | Interest::WRITABLE)
        .unwrap();
    Served {
        poll,
        sock,
        tls: TlsStream::new(tls.accept().unwrap()),
    }
}

fn client(
    ca: &TestCa,
    port: u16,
    cn: &str,
) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    let (cert, key) = ca.issue(cn, cn, &[]);
    let config = client_config(Some(&ca.ca()), Some((&cert, &key))).unwrap();
    let conn = rustls::ClientConnection::new(
        Arc::clone(&config),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

#[test]
fn plaintext_flows_both_ways_and_the_peer_is_named() {
    let ca = TestCa::new("stream-trip");
    let (listener, tls) = setup(&ca);
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::scope(|scope| {
        let c = scope.spawn(|| {
            let mut c = client(&ca, port, "worker-1");
            c.write_all(b"\0REQ\0\0\0\x10\0\0\0\0").unwrap();
            // A reply larger than the session's buffer: written in parts as the client reads.
            let mut reply = vec![0u8; 1 << 20];
            c.read_exact(&mut reply).unwrap();
            reply
        });
        let mut s = serve(&listener, &tls);
        assert_eq!(s.read_exact(12).unwrap(), b"\0REQ\0\0\0\x10\0\0\0\0");
        assert!(!s.tls.is_handshaking());
        assert_eq!(s.tls.peer_name(), Some("worker-1"));
        let big: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        s.write_all(&big).unwrap();
        (c.join().unwrap(), big)
    });
    assert!(handle.0 == handle.1, "the large reply arrives intact");
}

#[test]
fn gearman_plaintext_and_garbage_on_a_tls_port_are_refused_at_once() {
    let ca = TestCa::new("stream-garbage");
    let (listener, tls) = setup(&ca);
    let port = listener.local_addr().unwrap().port();
    for bytes in [
        &b"\0REQ\0\0\0\x10\0\0\0\0"[..],
        b"status\n",
        b"\x16\x03\x01\xff\xffjunk",
    ] {
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        raw.write_all(bytes).unwrap();
        let mut s = serve(&listener, &tls);
        let err = s.read_exact(1).expect_err("not TLS");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{bytes:?}: {err}");
        assert!(s.tls.is_handshaking());
    }
}

#[test]
fn a_client_that_goes_away_mid_handshake_is_an_end() {
    let ca = TestCa::new("stream-eof");
    let (listener, tls) = setup(&ca);
    let port = listener.local_addr().unwrap().port();
    let raw = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut s = serve(&listener, &tls);
    drop(raw);
    assert_eq!(s.read_exact(1).unwrap(), b"");
    assert!(
        s.tls.is_handshaking(),
        "never finished: the reactor counts it"
    );
}

/// A socket that takes up to `room` more bytes, then would block; it has nothing to read.
struct Pipe {
    room: usize,
    sent: usize,
}

impl Read for Pipe {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::ErrorKind::WouldBlock.into())
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.room);
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.room -= n;
        self.sent += n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_session_takes_more_once_the_socket_took_all_it_held() {
    // The reactor's sockets are edge-triggered: after `WouldBlock` it waits for the socket's
    // next writable edge, which comes only if the socket itself refused bytes. A session whose
    // buffer was full, flushed whole into a socket that had room since, must take more then
    // and there; a `WouldBlock` with no refusal behind it stalled the output for good.
    let ca = TestCa::new("stream-full");
    let (listener, tls) = setup(&ca);
    let port = listener.local_addr().unwrap().port();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut c = client(&ca, port, "worker-1");
            c.write_all(b"ping").unwrap();
        });
        let mut s = serve(&listener, &tls);
        assert_eq!(s.read_exact(4).unwrap(), b"ping");
        let data = vec![7u8; 1 << 20];
        let mut pipe = Pipe { room: 0, sent: 0 };
        // The socket is full: the session takes what its buffer holds, then no more.
        let mut taken = s.tls.write(&mut pipe, &data).unwrap();
        assert!(taken > 0);
        let full = s.tls.write(&mut pipe, &data[taken..]);
        assert_eq!(full.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert!(s.tls.wants_write());
        // The peer read a lot: the socket takes all the session holds, and then more.
        pipe.room = usize::MAX;
        let n = s.tls.write(&mut pipe, &data[taken..]).unwrap();
        assert!(n > 0);
        taken += n;
        assert!(pipe.sent >= taken, "{} sent for {taken} taken", pipe.sent);
    });
}
