//! The reactor's webhook client: POSTs the alerts the engine's webhook queue hands out
//! (src/engine/hooks.rs) over outgoing connections on the reactor's `Transport`, plain
//! (loopback only) or TLS (a rustls client session, as etcd_link.rs's), never blocking the
//! loop: the connect does not block, a host name is resolved on a short-lived thread (the
//! loop looks for its answer each turn), and each delivery has `--webhook-timeout` from its
//! start to the receiver's status line. At most `SLOTS` deliveries run at once; only the
//! status decides (2xx delivered); the engine decides what comes next.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::thread::JoinHandle;

use mio::Registry;
use mio::net::TcpStream;

use super::conn::transport::Transport;
use super::token::Source;
use crate::engine::{Engine, HookAttempt, HookSend};
use crate::schedule::webhook::HookUrl;

use super::token::HOOK_SLOTS as SLOTS;
/// A receiver's response head larger than this is an error (only its status is read).
const MAX_HEAD: usize = 16 << 10;
/// How often the loop looks for a name being resolved.
const RESOLVE_POLL_MS: u64 = 20;

type Resolving = JoinHandle<io::Result<Vec<SocketAddr>>>;

enum Stage {
    /// Between two stages (never in a slot).
    Waiting,
    /// A host name being resolved on its own thread.
    Resolving(Resolving),
    /// Connected or connecting: the request going out, the response coming in.
    Talking {
        wire: Transport,
        connected: bool,
        wbuf: Vec<u8>,
        rbuf: Vec<u8>,
    },
}

struct Delivery {
    id: u64,
    url: HookUrl,
    request: Vec<u8>,
    /// The whole attempt ends by then (wall ms).
    deadline: u64,
    stage: Stage,
}

pub(super) struct HookClient {
    slots: Vec<Option<Delivery>>,
    /// Resolutions whose delivery ended first (its timeout): left to finish on their own,
    /// and counted, so that a resolver that hangs cannot pile up threads (at most `SLOTS`).
    stray: Vec<Resolving>,
    timeout_ms: u64,
    ca_file: Option<std::path::PathBuf>,
    /// Made when an https:// webhook is first configured (`prepare`: the CA bundle is read
    /// at start-up or a schedules reload, never in a delivery's turn): a server without one
    /// never reads it.
    #[cfg(feature = "tls")]
    tls: Option<Result<crate::client::ClientTls, String>>,
}

impl HookClient {
    pub(super) fn new(timeout_ms: u64, ca_file: Option<std::path::PathBuf>) -> HookClient {
        HookClient {
            slots: (0..SLOTS).map(|_| None).collect(),
            stray: Vec::new(),
            timeout_ms,
            ca_file,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Read the CA bundle (`--webhook-ca-file`, else the system's) when an https:// webhook
    /// may be delivered (`https`) and it is not read yet, or its last read failed: called at
    /// start-up and after each schedules (re)load, so that a delivery never reads a file in
    /// the loop. A bundle that changes later is read at the next restart.
    pub(super) fn prepare(&mut self, https: bool) {
        #[cfg(feature = "tls")]
        if https && !matches!(self.tls, Some(Ok(_))) {
            let tls = crate::client::ClientTls::new(self.ca_file.as_deref(), None);
            if let Err(e) = &tls {
                log::error!(
                    "webhooks: cannot read the CA bundle: {e}; https:// alerts fail until a reload reads it"
                );
            }
            self.tls = Some(tls);
        }
        #[cfg(not(feature = "tls"))]
        let _ = https;
    }

    /// Its sockets open now.
    pub(super) fn open_sockets(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .filter(|d| matches!(d.stage, Stage::Talking { .. }))
            .count() as u64
    }

    fn free(&self) -> usize {
        self.slots.iter().filter(|s| s.is_none()).count()
    }

    /// When the client wants the loop back: a delivery's deadline, a name being resolved,
    /// or at once when alerts wait and a slot is free.
    pub(super) fn wake_at(&self, engine: &Engine, now: u64) -> Option<u64> {
        let mut at = None::<u64>;
        for d in self.slots.iter().flatten() {
            let t = match d.stage {
                Stage::Resolving(_) => d.deadline.min(now + RESOLVE_POLL_MS),
                Stage::Talking { .. } | Stage::Waiting => d.deadline,
            };
            at = Some(at.map_or(t, |a| a.min(t)));
        }
        if self.free() > 0 && engine.hooks_waiting(now) {
            at = Some(now);
        }
        at
    }

    /// Once a turn, after the journal commit (an alert is sent only once its HookQueued is
    /// written): finish resolutions, end overdue deliveries, start what is due.
    pub(super) fn turn(&mut self, engine: &mut Engine, registry: &Registry, now: u64) {
        self.stray.retain(|h| !h.is_finished());
        for i in 0..SLOTS {
            let resolved = match &self.slots[i] {
                Some(Delivery {
                    stage: Stage::Resolving(h),
                    ..
                }) => h.is_finished(),
                _ => false,
            };
            if resolved {
                self.resolved(i, engine, registry, now);
            }
            if self.slots[i].as_ref().is_some_and(|d| d.deadline <= now) {
                let ms = self.timeout_ms;
                self.end(
                    i,
                    engine,
                    registry,
                    now,
                    HookAttempt::Failed(format!("no answer within {ms} ms (--webhook-timeout)")),
                );
            }
        }
        let free = self.free();
        if free == 0 {
            return;
        }
        for send in engine.hooks_due(now, free) {
            let Some(i) = self.slots.iter().position(|s| s.is_none()) else {
                break;
            };
            self.start(i, send, engine, registry, now);
        }
    }

    fn start(
        &mut self,
        i: usize,
        send: HookSend,
        engine: &mut Engine,
        registry: &Registry,
        now: u64,
    ) {
        let url = match HookUrl::parse(&send.url) {
            Ok(u) => u,
            Err(e) => return engine.hook_attempt(send.id, HookAttempt::Failed(e), now),
        };
        let request = request(&url, &send);
        let d = Delivery {
            id: send.id,
            url,
            request,
            deadline: now.saturating_add(self.timeout_ms),
            stage: Stage::Waiting,
        };
        let (host, port) = (d.url.host.clone(), d.url.port);
        let literal = if host.eq_ignore_ascii_case("localhost") {
            Some(IpAddr::from([127, 0, 0, 1]))
        } else {
            host.parse::<IpAddr>().ok()
        };
        if let Some(ip) = literal {
            return self.connect(i, d, SocketAddr::new(ip, port), engine, registry, now);
        }
        if self.stray.len() >= SLOTS {
            let why = format!("cannot resolve {host}: {SLOTS} earlier resolutions still hang");
            return engine.hook_attempt(d.id, HookAttempt::Failed(why), now);
        }
        // DNS may block: on a thread of its own, looked at each turn.
        let spawned = std::thread::Builder::new()
            .name("webhook-dns".into())
            .spawn(move || {
                (host.as_str(), port)
                    .to_socket_addrs()
                    .map(Iterator::collect)
            });
        match spawned {
            Ok(h) => {
                self.slots[i] = Some(Delivery {
                    stage: Stage::Resolving(h),
                    ..d
                })
            }
            Err(e) => {
                let why = HookAttempt::Failed(format!("cannot resolve: {e}"));
                engine.hook_attempt(d.id, why, now);
            }
        }
    }

    /// A name's resolution came back: connect to its first address.
    fn resolved(&mut self, i: usize, engine: &mut Engine, registry: &Registry, now: u64) {
        let Some(mut d) = self.slots[i].take() else {
            return;
        };
        let Stage::Resolving(h) = std::mem::replace(&mut d.stage, Stage::Waiting) else {
            self.slots[i] = Some(d);
            return;
        };
        let addrs = match h.join() {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let why = format!("cannot resolve {}: {e}", d.url.host);
                return engine.hook_attempt(d.id, HookAttempt::Failed(why), now);
            }
            Err(_) => {
                let why = format!("cannot resolve {}", d.url.host);
                return engine.hook_attempt(d.id, HookAttempt::Failed(why), now);
            }
        };
        let Some(addr) = addrs.first().copied() else {
            let why = format!("{} has no address", d.url.host);
            return engine.hook_attempt(d.id, HookAttempt::Failed(why), now);
        };
        self.connect(i, d, addr, engine, registry, now);
    }

    /// Connect delivery `d` to `addr` (without blocking) in slot `i`.
    fn connect(
        &mut self,
        i: usize,
        d: Delivery,
        addr: SocketAddr,
        engine: &mut Engine,
        registry: &Registry,
        now: u64,
    ) {
        let wire = TcpStream::connect(addr)
            .map_err(|e| format!("cannot connect to {addr}: {e}"))
            .and_then(|s| {
                let _ = s.set_nodelay(true);
                self.wire(s, &d.url)
            });
        let mut wire = match wire {
            Ok(w) => w,
            Err(e) => return engine.hook_attempt(d.id, HookAttempt::Failed(e), now),
        };
        let token = Source::Hook(i).token();
        if let Err(e) = wire
            .register(registry, token)
            .and_then(|()| wire.want_writable(registry, token, true))
        {
            wire.deregister(registry);
            let why = HookAttempt::Failed(format!("cannot register: {e}"));
            return engine.hook_attempt(d.id, why, now);
        }
        let wbuf = d.request.clone();
        self.slots[i] = Some(Delivery {
            stage: Stage::Talking {
                wire,
                connected: false,
                wbuf,
                rbuf: Vec::new(),
            },
            ..d
        });
    }

    /// The wire for a new socket: plain, or a TLS client session checked against the host.
    fn wire(&mut self, s: TcpStream, url: &HookUrl) -> Result<Transport, String> {
        if !url.tls {
            return Ok(Transport::plain(s));
        }
        #[cfg(feature = "tls")]
        {
            let tls = match &self.tls {
                Some(Ok(tls)) => tls,
                Some(Err(e)) => return Err(format!("TLS: {e}")),
                // `prepare` saw every https:// URL an alert can carry; not reached.
                None => return Err("TLS: the CA bundle was not read".into()),
            };
            let session = tls.session(&url.host)?;
            Ok(Transport::tls(s, crate::tls::TlsStream::client(session)))
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = (s, &self.ca_file);
            Err("this gearwheel was built without TLS (cargo feature tls)".into())
        }
    }

    /// A readiness event on delivery `i`'s socket: connect's end, writes, the response.
    pub(super) fn event(&mut self, i: usize, engine: &mut Engine, registry: &Registry, now: u64) {
        let Some(Some(d)) = self.slots.get_mut(i) else {
            return;
        };
        let Stage::Talking {
            wire,
            connected,
            wbuf,
            rbuf,
        } = &mut d.stage
        else {
            return;
        };
        let outcome = talk(wire, connected, wbuf, rbuf, registry, i);
        if let Some(r) = outcome {
            self.end(i, engine, registry, now, r);
        }
    }

    /// Delivery `i` is over: its socket closed, its outcome to the engine.
    fn end(
        &mut self,
        i: usize,
        engine: &mut Engine,
        registry: &Registry,
        now: u64,
        r: HookAttempt,
    ) {
        let Some(d) = self.slots[i].take() else {
            return;
        };
        match d.stage {
            Stage::Talking { mut wire, .. } => wire.deregister(registry),
            // A thread still resolving is left to finish on its own; its answer is dropped.
            Stage::Resolving(h) => self.stray.push(h),
            Stage::Waiting => {}
        }
        engine.hook_attempt(d.id, r, now);
    }
}

/// Move delivery bytes: `Some` once it is over (the status read, or a failure).
fn talk(
    wire: &mut Transport,
    connected: &mut bool,
    wbuf: &mut Vec<u8>,
    rbuf: &mut Vec<u8>,
    registry: &Registry,
    i: usize,
) -> Option<HookAttempt> {
    let failed = |w: &Transport, what: &str, e: io::Error| {
        let tls = w
            .failure()
            .map_or(String::new(), |r| format!(" (TLS: {r})"));
        Some(HookAttempt::Failed(format!("{what}: {e}{tls}")))
    };
    if !*connected {
        match wire.connected() {
            Ok(true) => *connected = true,
            Ok(false) => return None,
            Err(e) => return failed(wire, "cannot connect", e),
        }
    }
    while !wbuf.is_empty() {
        match wire.write(wbuf) {
            Ok(0) => return failed(wire, "write", io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                wbuf.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return failed(wire, "write", e),
        }
    }
    if let Err(e) = wire.flush() {
        if e.kind() != io::ErrorKind::WouldBlock {
            return failed(wire, "write", e);
        }
    }
    let token = Source::Hook(i).token();
    let pending = !wbuf.is_empty() || wire.holds_output();
    if let Err(e) = wire.want_writable(registry, token, pending) {
        return failed(wire, "poll", e);
    }
    let mut buf = [0u8; 4096];
    loop {
        match wire.read(&mut buf) {
            Ok(0) => {
                return Some(status(rbuf).unwrap_or_else(|| {
                    HookAttempt::Failed(
                        "the receiver closed the connection before answering".into(),
                    )
                }));
            }
            Ok(n) => {
                rbuf.extend_from_slice(&buf[..n]);
                if let Some(s) = status(rbuf) {
                    return Some(s);
                }
                if rbuf.len() > MAX_HEAD {
                    return Some(HookAttempt::Failed(format!(
                        "a response head over {MAX_HEAD} bytes"
                    )));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return failed(wire, "read", e),
        }
    }
}

/// The status of a complete response head in `rbuf`; a malformed one is a failure.
fn status(rbuf: &[u8]) -> Option<HookAttempt> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(rbuf) {
        Ok(httparse::Status::Complete(_)) => r.code.map(HookAttempt::Status),
        Ok(httparse::Status::Partial) => None,
        Err(e) => Some(HookAttempt::Failed(format!("a malformed response: {e}"))),
    }
}

/// The POST request for `send` to `url`: the body with its length, the idempotency key as a
/// header too, and `Connection: close` (one request a connection).
fn request(url: &HookUrl, send: &HookSend) -> Vec<u8> {
    let default = if url.tls { 443 } else { 80 };
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    let host = if url.port == default {
        host
    } else {
        format!("{host}:{}", url.port)
    };
    let mut r = format!(
        "POST {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: gearwheel/{}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nIdempotency-Key: {}\r\n\
         Connection: close\r\n\r\n",
        url.target,
        env!("CARGO_PKG_VERSION"),
        send.body.len(),
        send.key
    )
    .into_bytes();
    r.extend_from_slice(&send.body);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_and_the_status() {
        let url = HookUrl::parse("https://hooks.example.com/services/x?y=1").unwrap();
        let send = HookSend {
            id: 3,
            url: "https://hooks.example.com/services/x?y=1".into(),
            body: bytes::Bytes::from_static(b"{\"text\":\"hi\"}"),
            key: "H:a:hook:5:3".into(),
        };
        let r = String::from_utf8(request(&url, &send)).unwrap();
        assert!(
            r.starts_with("POST /services/x?y=1 HTTP/1.1\r\nHost: hooks.example.com\r\n")
                && r.contains("Content-Length: 13\r\nIdempotency-Key: H:a:hook:5:3\r\n")
                && r.ends_with("\r\n\r\n{\"text\":\"hi\"}"),
            "{r}"
        );
        assert_eq!(status(b"HTTP/1.1 20"), None);
        assert_eq!(
            status(b"HTTP/1.1 204 No Content\r\n\r\n"),
            Some(HookAttempt::Status(204))
        );
        assert!(matches!(
            status(b"garbage\r\n\r\n"),
            Some(HookAttempt::Failed(_))
        ));
    }
}
