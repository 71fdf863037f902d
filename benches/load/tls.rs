//! TLS for the load generator (`--tls-ca` and a client certificate): every peer's connection
//! becomes a rustls client session over its non-blocking socket, handshaken before the run
//! starts; and `--mode handshake`, full and resumed handshakes per second. The server under
//! test is gearwheel's own TLS or a TLS terminator (stunnel) in front of any Gearman server.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::Instant;

use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, HandshakeKind, RootCertStore};

use crate::opts::Opts;
use crate::packet::{ECHO_REQ, ECHO_RES, put};
use crate::procfs::{self_cpu, server_snap};
use crate::report::Report;

/// A client session.
pub(crate) type Session = ClientConnection;

/// The client side of every connection of a run: the CA that signed the server, the client
/// certificate it requires, the server's name, the protocol versions.
#[derive(Clone, Debug)]
pub(crate) struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl Tls {
    /// `--tls-ca CA --tls-cert C --tls-key K [--tls-name NAME] [--tls-version 1.2|1.3]`.
    pub(crate) fn new(
        ca: &Path,
        identity: (&Path, &Path),
        name: &str,
        version: Option<&str>,
    ) -> Result<Tls, String> {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs(ca)?);
        let versions: &[&rustls::SupportedProtocolVersion] = match version {
            None => rustls::DEFAULT_VERSIONS,
            Some("1.2") => &[&rustls::version::TLS12],
            Some("1.3") => &[&rustls::version::TLS13],
            Some(v) => return Err(format!("--tls-version {v}: 1.2 or 1.3")),
        };
        let key = PrivateKeyDer::from_pem_file(identity.1)
            .map_err(|e| format!("{}: {e}", identity.1.display()))?;
        let config =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(versions)
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_client_auth_cert(certs(identity.0)?, key)
                .map_err(|e| e.to_string())?;
        Ok(Tls {
            config: Arc::new(config),
            name: ServerName::try_from(name.to_string()).map_err(|e| format!("{name}: {e}"))?,
        })
    }

    /// The same settings without session resumption: every handshake is a full one.
    fn without_resumption(&self) -> Tls {
        let mut config = (*self.config).clone();
        config.resumption = Resumption::disabled();
        Tls {
            config: Arc::new(config),
            name: self.name.clone(),
        }
    }

    /// Handshake on a blocking socket (before the run, so that the run measures jobs only).
    pub(crate) fn handshake(&self, tcp: &mut TcpStream) -> io::Result<ClientConnection> {
        let mut c = ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(io::Error::other)?;
        while c.is_handshaking() {
            c.complete_io(tcp)?;
        }
        // Plaintext is buffered without a bound: the generator's window bounds it.
        c.set_buffer_limit(None);
        Ok(c)
    }
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Plaintext out of the session, reading TLS records off the socket as needed: like a
/// non-blocking socket's read (`WouldBlock` once both are dry, `Ok(0)` at the end).
pub(crate) fn read(
    c: &mut ClientConnection,
    s: &mut impl Read,
    buf: &mut [u8],
) -> io::Result<usize> {
    loop {
        match c.reader().read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            r => return r,
        }
        if c.read_tls(s)? == 0 {
            return Ok(0);
        }
        c.process_new_packets().map_err(io::Error::other)?;
    }
}

/// Plaintext into the session (all of it: no buffer limit), then as much TLS as the socket takes.
pub(crate) fn write(c: &mut ClientConnection, s: &mut impl Write, buf: &[u8]) -> io::Result<usize> {
    let n = c.writer().write(buf)?;
    flush(c, s)?;
    Ok(n)
}

/// Send what the session holds until the socket would block.
pub(crate) fn flush(c: &mut ClientConnection, s: &mut impl Write) -> io::Result<()> {
    while c.wants_write() {
        match c.write_tls(s) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One connection: TCP connect, handshake, one ECHO round trip (the server has accepted the
/// client certificate once it answers), close. Whether the session was resumed.
fn one_handshake(o: &Opts, tls: &Tls) -> io::Result<bool> {
    let mut tcp = TcpStream::connect(o.addr()?)?;
    tcp.set_nodelay(true)?;
    let mut c = tls.handshake(&mut tcp)?;
    let resumed = c.handshake_kind() == Some(HandshakeKind::Resumed);
    let mut req = Vec::new();
    put(&mut req, ECHO_REQ, &[b"hs"]);
    let mut stream = rustls::Stream::new(&mut c, &mut tcp);
    stream.write_all(&req)?;
    let mut head = [0u8; 14];
    stream.read_exact(&mut head)?;
    if u32::from_be_bytes([head[4], head[5], head[6], head[7]]) != ECHO_RES {
        return Err(io::Error::other("not an ECHO_RES"));
    }
    c.send_close_notify();
    let _ = c.write_tls(&mut tcp);
    Ok(resumed)
}

/// `--mode handshake`: `--jobs` connections, each a handshake and one ECHO, from `--clients`
/// threads; first with resumption off (full handshakes), then on (one uncounted handshake
/// fills the session cache; the rest resume if the server lets them).
pub(crate) fn mode_handshake(o: &Opts) -> io::Result<Report> {
    let tls = o
        .tls
        .as_ref()
        .ok_or_else(|| io::Error::other("--mode handshake needs --tls-ca"))?;
    let n = o.jobs_or(5_000);
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("handshakes", n);
    for (what, tls) in [("full", tls.without_resumption()), ("resumed", tls.clone())] {
        let resumed = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        // The first handshake fills the session cache (shared by the threads' clones).
        one_handshake(o, &tls)?;
        let s0 = server_snap(o);
        let c0 = self_cpu();
        let start = Instant::now();
        let threads: Vec<_> = (0..o.clients)
            .map(|k| {
                let share = n / o.clients as u64 + u64::from((k as u64) < n % o.clients as u64);
                let (o, tls) = (o.clone(), tls.clone());
                let (resumed, errors) = (resumed.clone(), errors.clone());
                thread::spawn(move || {
                    for _ in 0..share {
                        match one_handshake(&o, &tls) {
                            Ok(true) => {
                                resumed.fetch_add(1, SeqCst);
                            }
                            Ok(false) => {}
                            Err(e) => {
                                if errors.fetch_add(1, SeqCst) == 0 {
                                    eprintln!("load: handshake: {e}");
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            let _ = t.join();
        }
        let secs = start.elapsed().as_secs_f64();
        let s1 = server_snap(o);
        let c1 = self_cpu();
        r.putf(&format!("{what}_per_s"), n as f64 / secs, 0);
        r.put(&format!("{what}_resumed"), resumed.load(SeqCst));
        r.put(&format!("{what}_errors"), errors.load(SeqCst));
        if let (Some(a), Some(b)) = (s0, s1) {
            r.putf(
                &format!("{what}_server_cpu_us_each"),
                (b.cpu - a.cpu) * 1e6 / n as f64,
                1,
            );
        }
        r.putf(&format!("{what}_loadgen_cpu_s"), c1 - c0, 2);
    }
    Ok(r)
}

/// Does the session hold TLS bytes the socket has not taken yet?
pub(crate) fn wants_write(c: &Session) -> bool {
    c.wants_write()
}
