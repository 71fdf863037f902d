//! A blocking etcd client on the gateway codec (`cluster::etcd`), for commands such as
//! `schedules push`: one keep-alive connection (plain, or TLS for `https://` URLs), the first
//! endpoint that answers, a deadline on every call. The server's running etcd connections
//! belong to the reactor; it uses this client only at exit, to revoke its lease.

use super::ClientTls;
use super::stream::Stream;
use crate::cluster::etcd::{EtcdError, Reply, Request, ResponseReader, host_name};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The TLS client's files for etcd, named like the server's `--ssl-*` ones (`--etcd-ca-file`,
/// `--etcd-certificate`, `--etcd-key`). Here, below `config` (which checks the flags into it
/// and re-exports it) and the reactor's etcd link, which both build `client_tls` from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdTls {
    /// The CA etcd's server certificate must chain to (`None`: the system's CA bundle).
    pub ca_file: Option<PathBuf>,
    /// The client certificate and its key, for an etcd with `--client-cert-auth`.
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// The TLS client settings made from the `--etcd-*` files (read now).
pub fn client_tls(files: &EtcdTls) -> Result<ClientTls, String> {
    #[cfg(feature = "tls")]
    {
        let identity = files
            .identity
            .as_ref()
            .map(|(c, k)| (c.as_path(), k.as_path()));
        ClientTls::new(files.ca_file.as_deref(), identity)
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = files;
        Err("this gearwheel was built without TLS (cargo feature tls)".into())
    }
}

/// The largest reply read (a schedules file is far smaller).
pub const MAX_MESSAGE: usize = 4 << 20;

#[derive(Debug)]
pub enum Error {
    /// No endpoint could be reached: each one and why.
    Unreachable(String),
    /// The connection failed or closed during a call.
    Io(String),
    /// No reply within the deadline.
    Timeout(Duration),
    /// etcd answered with an error, or with bytes that are not a reply.
    Etcd(EtcdError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unreachable(why) => write!(f, "etcd is unreachable: {why}"),
            Error::Io(why) => write!(f, "etcd connection failed: {why}"),
            Error::Timeout(d) => write!(f, "etcd did not answer within {} ms", d.as_millis()),
            Error::Etcd(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

struct Link {
    stream: Stream,
    host: String,
    reader: ResponseReader,
}

/// Unary calls over one connection, reconnecting (to the first endpoint that answers) after a
/// failure.
pub struct Client {
    endpoints: Vec<String>,
    timeout: Duration,
    tls: Option<ClientTls>,
    link: Option<Link>,
}

impl Client {
    /// `endpoints`: `host:port` of each etcd (see `cluster::etcd::endpoints`); `timeout`: for
    /// a connect (with its TLS handshake), and for a whole call.
    pub fn new(endpoints: Vec<String>, timeout: Duration) -> Client {
        Client {
            endpoints,
            timeout,
            tls: None,
            link: None,
        }
    }

    /// TLS to every endpoint (`https://` URLs): see `client_tls`.
    pub fn with_tls(mut self, tls: Option<ClientTls>) -> Client {
        self.tls = tls;
        self
    }

    /// One call to etcd at `addr` (already resolved: no DNS), the whole of it, connect and
    /// TLS handshake included, within `timeout`: the server's lease revoke at exit.
    pub fn call_once(
        host: &str,
        addr: SocketAddr,
        tls: Option<&ClientTls>,
        req: &Request,
        timeout: Duration,
    ) -> Result<Reply, Error> {
        let mut link = open(host, addr, tls, timeout)
            .map_err(|e| Error::Unreachable(format!("{host}: {e}")))?;
        exchange(&mut link, req, timeout)
    }

    /// Send `req` and wait for its reply. A watch needs its own connection: see `Watch`.
    pub fn call(&mut self, req: &Request) -> Result<Reply, Error> {
        assert!(
            !matches!(req, Request::Watch { .. }),
            "a watch streams: use Watch::start"
        );
        if self.link.is_none() {
            self.link = Some(connect(&self.endpoints, self.tls.as_ref(), self.timeout)?);
        }
        let link = self.link.as_mut().expect("connected above");
        let result = exchange(link, req, self.timeout);
        if matches!(
            result,
            Err(Error::Io(_) | Error::Timeout(_) | Error::Etcd(EtcdError::Malformed(_)))
                | Err(Error::Etcd(EtcdError::TooLarge))
        ) {
            self.link = None; // the connection's state is unknown: start over next time
        }
        result
    }
}

/// A watch on its own connection: `next` gives each streamed reply.
pub struct Watch {
    link: Link,
}

impl Watch {
    pub fn start(endpoints: &[String], req: &Request, timeout: Duration) -> Result<Watch, Error> {
        Watch::start_tls(endpoints, None, req, timeout)
    }

    /// `start` over TLS when `tls` is given (`https://` URLs).
    pub fn start_tls(
        endpoints: &[String],
        tls: Option<&ClientTls>,
        req: &Request,
        timeout: Duration,
    ) -> Result<Watch, Error> {
        let mut link = connect(endpoints, tls, timeout)?;
        send(&mut link, req)?;
        Ok(Watch { link })
    }

    /// The next watch message, waiting at most `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Result<Reply, Error> {
        receive(&mut self.link, timeout)
    }
}

/// A connection to `addr`, TLS over it when `tls` is given (checked against `host`'s name).
fn open(
    host: &str,
    addr: SocketAddr,
    tls: Option<&ClientTls>,
    timeout: Duration,
) -> io::Result<Link> {
    let tcp = TcpStream::connect_timeout(&addr, timeout)?;
    let _ = tcp.set_nodelay(true);
    Ok(Link {
        stream: Stream::open(tcp, host_name(host), tls, timeout)?,
        host: host.to_string(),
        reader: ResponseReader::new(MAX_MESSAGE),
    })
}

fn connect(
    endpoints: &[String],
    tls: Option<&ClientTls>,
    timeout: Duration,
) -> Result<Link, Error> {
    let mut why = Vec::new();
    for host in endpoints {
        let addrs = match host.to_socket_addrs() {
            Ok(a) => a,
            Err(e) => {
                why.push(format!("{host}: {e}"));
                continue;
            }
        };
        for addr in addrs {
            match open(host, addr, tls, timeout) {
                Ok(link) => return Ok(link),
                Err(e) if addr.to_string() == *host => why.push(format!("{host}: {e}")),
                Err(e) => why.push(format!("{host} ({addr}): {e}")),
            }
        }
    }
    if why.is_empty() {
        why.push("no endpoint given".into());
    }
    Err(Error::Unreachable(why.join("; ")))
}

fn exchange(link: &mut Link, req: &Request, timeout: Duration) -> Result<Reply, Error> {
    send(link, req)?;
    receive(link, timeout)
}

fn send(link: &mut Link, req: &Request) -> Result<(), Error> {
    let mut out = Vec::new();
    crate::cluster::etcd::encode(req, &link.host, &mut out);
    link.reader.expect(req.kind());
    link.stream
        .write_all(&out)
        .and_then(|()| link.stream.flush())
        .map_err(|e| Error::Io(e.to_string()))
}

fn receive(link: &mut Link, timeout: Duration) -> Result<Reply, Error> {
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(r) = link.reader.next() {
            return r.map_err(Error::Etcd);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout(timeout));
        }
        link.stream
            .tcp()
            .set_read_timeout(Some(left))
            .map_err(|e| Error::Io(e.to_string()))?;
        match link.stream.read(&mut buf) {
            Ok(0) => return Err(Error::Io("etcd closed the connection".into())),
            Ok(n) => link.reader.feed(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Error::Timeout(timeout));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::Io(e.to_string())),
        }
    }
}
