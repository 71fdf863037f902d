//! One blocking connection to a Gearman server: connect with a timeout, send request packets,
//! read response packets and admin lines with the server's codec, and typed helpers for the
//! client and worker exchanges.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::stream::Stream;
use super::{DEFAULT_PORT, encode_request, split_args};
use crate::proto::frame::{DecodeError, Frame, Incoming, Limits, decode};
use crate::proto::packet::{Magic, PacketType};

/// What went wrong talking to a server.
#[derive(Debug)]
pub enum Error {
    /// A socket error, including a read timeout (see `is_timeout`).
    Io(io::Error),
    /// The server closed the connection.
    Closed,
    /// Bytes that are not a Gearman response, or a reply that does not fit the request.
    Protocol(String),
    /// An ERROR packet: its code and text.
    Server { code: String, text: String },
}

/// An ERROR packet's code and text.
fn server_error(f: &Frame) -> Error {
    let a = split_args(&f.body, 2);
    Error::Server {
        code: String::from_utf8_lossy(&a[0]).into_owned(),
        text: String::from_utf8_lossy(&a[1]).into_owned(),
    }
}

impl Error {
    /// A read timed out; the connection and any partial packet are still good.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Closed => write!(f, "the server closed the connection"),
            Error::Protocol(s) => write!(f, "protocol error: {s}"),
            Error::Server { code, text } => write!(f, "server error {code}: {text}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Protocol(format!("{e:?}"))
    }
}

/// How a job is submitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitKind {
    Normal,
    High,
    Low,
    NormalBg,
    HighBg,
    LowBg,
    /// SUBMIT_JOB_EPOCH: a background job that runs at these seconds since 1970 UTC.
    Epoch(u64),
}

impl SubmitKind {
    pub fn background(self) -> bool {
        !matches!(
            self,
            SubmitKind::Normal | SubmitKind::High | SubmitKind::Low
        )
    }

    fn packet_type(self) -> PacketType {
        match self {
            SubmitKind::Normal => PacketType::SubmitJob,
            SubmitKind::High => PacketType::SubmitJobHigh,
            SubmitKind::Low => PacketType::SubmitJobLow,
            SubmitKind::NormalBg => PacketType::SubmitJobBg,
            SubmitKind::HighBg => PacketType::SubmitJobHighBg,
            SubmitKind::LowBg => PacketType::SubmitJobLowBg,
            SubmitKind::Epoch(_) => PacketType::SubmitJobEpoch,
        }
    }
}

/// A job handed to a worker by JOB_ASSIGN_UNIQ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub handle: Bytes,
    pub function: Bytes,
    pub unique: Bytes,
    pub data: Bytes,
}

/// Resolve `HOST`, `HOST:PORT`, `IP`, `IPv6`, `[IPv6]` or `[IPv6]:PORT`; no port means 4730.
pub fn resolve(addr: &str) -> io::Result<Vec<SocketAddr>> {
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(vec![sa]);
    }
    let bare = addr.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, DEFAULT_PORT)]);
    }
    let (host, port) = match super::servers::port_text(addr) {
        Some(p) => {
            let port = super::servers::port(p).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{addr:?}: {e}"))
            })?;
            let host = &addr[..addr.len() - p.len() - 1];
            (host.trim_start_matches('[').trim_end_matches(']'), port)
        }
        None => (addr, DEFAULT_PORT),
    };
    let found: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    if found.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{addr:?} resolves to no address"),
        ));
    }
    Ok(found)
}

/// The host part of a server address: the name its TLS certificate must carry.
pub fn host_of(addr: &str) -> &str {
    let host = match addr.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && (!h.contains(':') || h.ends_with(']')) => h,
        _ => addr,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

/// A blocking connection to one server.
pub struct Conn {
    stream: Stream,
    buf: BytesMut,
    limits: Limits,
    peer: String,
}

impl Conn {
    /// Connect to `addr` (see `resolve`), trying each address it resolves to within `timeout`.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Conn, Error> {
        Conn::connect_secure(addr, timeout, None)
    }

    /// `connect`, then TLS over the socket when `tls` is given (`--ssl`).
    pub fn connect_secure(
        addr: &str,
        timeout: Duration,
        tls: Option<&super::ClientTls>,
    ) -> Result<Conn, Error> {
        let mut last = None;
        for sa in resolve(addr)? {
            match TcpStream::connect_timeout(&sa, timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    // A worker sleeps on its connection for hours; keepalive notices a server
                    // machine that vanished without a FIN, so the worker reconnects elsewhere.
                    let ka = socket2::TcpKeepalive::new()
                        .with_time(Duration::from_secs(60))
                        .with_interval(Duration::from_secs(10))
                        .with_retries(6);
                    let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&ka);
                    // The handshake is bounded like the connect.
                    let stream = Stream::open(stream, host_of(addr), tls, timeout)?;
                    return Ok(Conn {
                        stream,
                        buf: BytesMut::with_capacity(4096),
                        // The server bounds what it sends; accept any length a header can say.
                        limits: Limits {
                            max_packet: u32::MAX as usize,
                            max_admin_line: 1 << 20,
                        },
                        peer: addr.to_string(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(Error::Io(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "no address")
        })))
    }

    /// The address as given to `connect`.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// `None` blocks for ever; a timed-out read returns an error for which `is_timeout` holds,
    /// and keeps whatever part of a packet had arrived.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> Result<(), Error> {
        Ok(self.stream.tcp().set_read_timeout(t)?)
    }

    /// Send one request packet.
    pub fn send(&mut self, ptype: PacketType, args: &[&[u8]]) -> Result<(), Error> {
        self.stream.write_all(&encode_request(ptype, args))?;
        Ok(())
    }

    /// Send raw bytes (an admin line).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.stream.write_all(bytes)?;
        Ok(())
    }

    fn fill(&mut self) -> Result<(), Error> {
        let mut chunk = [0u8; 16384];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Error::Closed),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }

    fn next(&mut self) -> Result<Incoming, Error> {
        loop {
            if let Some(i) = decode(&mut self.buf, &self.limits)? {
                return Ok(i);
            }
            self.fill()?;
        }
    }

    /// Read one response packet. An ERROR packet comes back as `Error::Server`.
    pub fn recv(&mut self) -> Result<Frame, Error> {
        match self.next()? {
            Incoming::Packet(f) if f.magic == Magic::Res => {
                if f.ptype == PacketType::Error {
                    return Err(server_error(&f));
                }
                Ok(f)
            }
            Incoming::Packet(f) => Err(Error::Protocol(format!(
                "a request packet ({}) from the server",
                f.ptype.name()
            ))),
            Incoming::Admin(line) => Err(Error::Protocol(format!(
                "text where a packet was expected: {:?}",
                String::from_utf8_lossy(&line)
            ))),
        }
    }

    /// Read one admin text line, without its line ending.
    pub fn recv_line(&mut self) -> Result<String, Error> {
        Ok(String::from_utf8_lossy(&self.recv_line_bytes()?).into_owned())
    }

    /// The next admin line as the server sent it (uniques may hold any byte). An ERROR
    /// packet instead (a server that refuses the connection at accept sends one, whatever
    /// was asked) comes back as `Error::Server`.
    pub fn recv_line_bytes(&mut self) -> Result<Bytes, Error> {
        match self.next()? {
            Incoming::Admin(line) => Ok(line),
            Incoming::Packet(f) if f.magic == Magic::Res && f.ptype == PacketType::Error => {
                Err(server_error(&f))
            }
            Incoming::Packet(f) => Err(Error::Protocol(format!(
                "a {} packet where an admin line was expected",
                f.ptype.name()
            ))),
        }
    }

    /// Send an admin command and read its reply lines. A list reply ends with a `.` line,
    /// which is included; an `ERR ...` or `OK ...` first line ends a list reply too.
    pub fn admin(&mut self, line: &str, list: bool) -> Result<Vec<String>, Error> {
        let lines = self.admin_bytes(line, list)?;
        Ok(lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect())
    }

    /// `admin`, with the lines as the server sent them.
    pub fn admin_bytes(&mut self, line: &str, list: bool) -> Result<Vec<Bytes>, Error> {
        self.send_raw(format!("{line}\n").as_bytes())?;
        let mut lines = Vec::new();
        loop {
            let l = self.recv_line_bytes()?;
            let done = !list
                || &l[..] == b"."
                || (lines.is_empty()
                    && !l.contains(&b'\t')
                    && is_single_reply(&String::from_utf8_lossy(&l)));
            lines.push(l);
            if done {
                return Ok(lines);
            }
        }
    }

    /// An admin command whose reply is `OK KEPT PRINTED` and then exactly KEPT raw bytes
    /// (`show output`): the bytes and PRINTED, or the error line the server sent instead.
    pub fn admin_block(&mut self, line: &str) -> Result<Result<(Bytes, u64), String>, Error> {
        // More than any --keep-output a server would be given: a garbled header is an error,
        // not an allocation.
        const MAX_BLOCK: usize = 1 << 30;
        self.send_raw(format!("{line}\n").as_bytes())?;
        let head = self.recv_line()?;
        let Some(rest) = head.strip_prefix("OK ") else {
            return Ok(Err(head));
        };
        let mut nums = rest.split(' ').map(str::parse::<u64>);
        let (Some(Ok(kept)), Some(Ok(printed))) = (nums.next(), nums.next()) else {
            return Err(Error::Protocol(format!("a reply of {head:?} to {line:?}")));
        };
        let kept = usize::try_from(kept)
            .ok()
            .filter(|&k| k <= MAX_BLOCK)
            .ok_or_else(|| Error::Protocol(format!("{kept} bytes announced")))?;
        while self.buf.len() < kept {
            self.fill()?;
        }
        Ok(Ok((self.buf.split_to(kept).freeze(), printed)))
    }

    /// OPTION_REQ `exceptions`: the server then sends WORK_EXCEPTION instead of WORK_FAIL.
    pub fn option_exceptions(&mut self) -> Result<(), Error> {
        self.send(PacketType::OptionReq, &[b"exceptions"])?;
        let f = self.recv()?;
        if f.ptype != PacketType::OptionRes {
            return Err(unexpected("OPTION_REQ", &f));
        }
        Ok(())
    }

    /// Submit a job; returns its handle.
    pub fn submit(
        &mut self,
        kind: SubmitKind,
        function: &[u8],
        unique: &[u8],
        data: &[u8],
    ) -> Result<Bytes, Error> {
        match kind {
            SubmitKind::Epoch(t) => {
                let epoch = t.to_string();
                self.send(
                    kind.packet_type(),
                    &[function, unique, epoch.as_bytes(), data],
                )?
            }
            _ => self.send(kind.packet_type(), &[function, unique, data])?,
        }
        loop {
            let f = self.recv()?;
            match f.ptype {
                PacketType::JobCreated => return Ok(f.body),
                // A NOOP may precede the reply on a connection that is also a worker.
                PacketType::Noop => continue,
                _ => return Err(unexpected("SUBMIT_JOB", &f)),
            }
        }
    }

    /// SET_CLIENT_ID (shown by the admin `workers` command); no reply.
    pub fn set_client_id(&mut self, id: &str) -> Result<(), Error> {
        self.send(PacketType::SetClientId, &[id.as_bytes()])
    }

    /// CAN_DO, or CAN_DO_TIMEOUT with the timeout in milliseconds; no reply.
    pub fn can_do(&mut self, function: &[u8], timeout: Option<Duration>) -> Result<(), Error> {
        match timeout {
            None => self.send(PacketType::CanDo, &[function]),
            Some(t) => {
                let ms = t.as_millis().max(1).to_string();
                self.send(PacketType::CanDoTimeout, &[function, ms.as_bytes()])
            }
        }
    }

    /// GRAB_JOB_UNIQ; `None` on NO_JOB. NOOPs that arrive first are skipped.
    pub fn grab_uniq(&mut self) -> Result<Option<Assignment>, Error> {
        self.send(PacketType::GrabJobUniq, &[])?;
        loop {
            let f = self.recv()?;
            match f.ptype {
                PacketType::Noop => continue,
                PacketType::NoJob => return Ok(None),
                PacketType::JobAssignUniq => {
                    let mut a = split_args(&f.body, 4).into_iter();
                    let mut next = || a.next().unwrap_or_default();
                    return Ok(Some(Assignment {
                        handle: next(),
                        function: next(),
                        unique: next(),
                        data: next(),
                    }));
                }
                _ => return Err(unexpected("GRAB_JOB_UNIQ", &f)),
            }
        }
    }

    /// PRE_SLEEP: the server sends NOOP when there may be work.
    pub fn pre_sleep(&mut self) -> Result<(), Error> {
        self.send(PacketType::PreSleep, &[])
    }

    /// WORK_COMPLETE, WORK_EXCEPTION, WORK_DATA or WORK_WARNING with a handle and data.
    pub fn work(&mut self, ptype: PacketType, handle: &[u8], data: &[u8]) -> Result<(), Error> {
        self.send(ptype, &[handle, data])
    }

    /// WORK_FAIL.
    pub fn work_fail(&mut self, handle: &[u8]) -> Result<(), Error> {
        self.send(PacketType::WorkFail, &[handle])
    }

    /// ECHO_REQ and its ECHO_RES.
    pub fn echo(&mut self, data: &[u8]) -> Result<Bytes, Error> {
        self.send(PacketType::EchoReq, &[data])?;
        let f = self.recv()?;
        if f.ptype != PacketType::EchoRes {
            return Err(unexpected("ECHO_REQ", &f));
        }
        Ok(f.body)
    }
}

/// A reply that is one line even to a list command: `OK`, `OK x` or `ERR ...`.
fn is_single_reply(l: &str) -> bool {
    l == "OK" || l.starts_with("OK ") || l.starts_with("ERR ")
}

fn unexpected(what: &str, f: &Frame) -> Error {
    Error::Protocol(format!("unexpected {} in reply to {what}", f.ptype.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn addresses_resolve_with_the_default_port() {
        assert_eq!(
            resolve("127.0.0.1").unwrap(),
            vec!["127.0.0.1:4730".parse().unwrap()]
        );
        assert_eq!(
            resolve("127.0.0.1:5000").unwrap(),
            vec!["127.0.0.1:5000".parse().unwrap()]
        );
        assert_eq!(resolve("::1").unwrap(), vec!["[::1]:4730".parse().unwrap()]);
        assert_eq!(
            resolve("[::1]").unwrap(),
            vec!["[::1]:4730".parse().unwrap()]
        );
        assert!(
            resolve("localhost:4731")
                .unwrap()
                .iter()
                .all(|a| a.port() == 4731)
        );
        assert!(resolve("localhost:port").is_err());
    }

    /// A fake server that answers with canned bytes, split oddly, to exercise the reader.
    fn fake(reply: Vec<u8>) -> Conn {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = [0u8; 1024];
            let _ = s.read(&mut req);
            for chunk in reply.chunks(5) {
                s.write_all(chunk).unwrap();
                s.flush().unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let c = Conn::connect(&addr, Duration::from_secs(2)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c
    }

    fn res(t: PacketType, body: &[u8]) -> Vec<u8> {
        let mut v = b"\0RES".to_vec();
        v.extend_from_slice(&(t as u32).to_be_bytes());
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn grab_skips_noops_and_splits_the_assignment() {
        let mut r = res(PacketType::Noop, b"");
        r.extend(res(PacketType::JobAssignUniq, b"H:x:1\0up\0u1\0da\0ta"));
        let mut c = fake(r);
        let a = c.grab_uniq().unwrap().unwrap();
        assert_eq!(&a.handle[..], b"H:x:1");
        assert_eq!(&a.function[..], b"up");
        assert_eq!(&a.unique[..], b"u1");
        assert_eq!(&a.data[..], b"da\0ta");
    }

    #[test]
    fn error_packets_become_server_errors() {
        let mut c = fake(res(PacketType::Error, b"QUEUE_ERROR\0Job queue is full"));
        match c.submit(SubmitKind::NormalBg, b"f", b"", b"x") {
            Err(Error::Server { code, text }) => {
                assert_eq!(code, "QUEUE_ERROR");
                assert_eq!(text, "Job queue is full");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn admin_lists_end_at_the_dot_and_errors_at_once() {
        let mut c = fake(b"up\t1\t0\t1\r\n\ndown\t0\t0\t0\n.\n".to_vec());
        assert_eq!(
            c.admin("status", true).unwrap(),
            vec!["up\t1\t0\t1", "", "down\t0\t0\t0", "."]
        );
        let mut c = fake(b"ERR UNKNOWN_COMMAND Unknown+server+command\r\n".to_vec());
        assert_eq!(
            c.admin("show schedules", true).unwrap(),
            vec!["ERR UNKNOWN_COMMAND Unknown+server+command"]
        );
        let mut c = fake(b"OK 1.0\n".to_vec());
        assert_eq!(c.admin("version", false).unwrap(), vec!["OK 1.0"]);
    }

    #[test]
    fn a_closed_connection_is_reported() {
        let mut c = fake(Vec::new());
        assert!(matches!(c.grab_uniq(), Err(Error::Closed)));
    }
}
