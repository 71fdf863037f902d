//! The listeners and accept: the addresses bound, `--max-connections`, socket options, the TLS
//! session and the connection's identity at accept, its slot and `ConnId`, and the engine told
//! (an HTTP connection's OPTION_REQ at accept is in http/mod.rs); an accept that fails (out
//! of descriptors) tried again on a deadline.

use std::io::{self, Write};
use std::net::SocketAddr;

use log::{debug, error, info};
use mio::net::TcpListener;
use mio::{Interest, Poll};

use super::conn::Connection;
use super::deadlines::Deadline;
use super::token::{self, Listener, Source};
use super::{Server, listen};
use crate::access::peer::Peer;
use crate::config::Config;
use crate::engine::{ConnId, ConnInfo};
use crate::log_budget::Cause;
use crate::peer_log;

/// How long a listener whose accept failed waits before it tries again. Listeners are
/// edge-triggered: clients already waiting in the backlog raise no new event, so without a
/// retry they would wait for the next client to arrive. Often enough that they are served
/// soon after descriptors free up, seldom enough that a server out of them spends nothing.
const ACCEPT_RETRY_MS: u64 = 100;

/// Bind and register the Gearman listeners, `--listen` then `--ssl-listen` (tokens 0..), with
/// the addresses they got.
pub(super) fn bind_listeners(config: &Config, poll: &Poll) -> io::Result<Listeners> {
    let mut listeners = Vec::new();
    let mut local_addrs = Vec::new();
    for (i, addr) in config.listen.iter().enumerate() {
        token::check_listener(i)?;
        let mut l = listen::bind(*addr, config.backlog)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        let token = Source::Listener(Listener::Gearman(i)).token();
        poll.registry()
            .register(&mut l, token, Interest::READABLE)?;
        local_addrs.push(l.local_addr()?);
        listeners.push(l);
    }
    let ssl_listen = config.tls.iter().flat_map(|t| t.listen.iter());
    for addr in ssl_listen {
        let i = listeners.len();
        token::check_listener(i)?;
        let mut l = listen::bind(*addr, config.backlog).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen for TLS on {addr}: {e}"))
        })?;
        let token = Source::Listener(Listener::Gearman(i)).token();
        poll.registry()
            .register(&mut l, token, Interest::READABLE)?;
        local_addrs.push(l.local_addr()?);
        listeners.push(l);
    }
    Ok(Listeners {
        sockets: listeners,
        addrs: local_addrs,
        retries: Vec::new(),
    })
}

/// The Gearman listeners (`--listen`, then `--ssl-listen`), their addresses, and those whose
/// accept failed with the deadline of their next try.
pub(super) struct Listeners {
    /// Emptied when a graceful shutdown begins.
    pub(super) sockets: Vec<TcpListener>,
    /// As bound (port 0 resolved); kept after the sockets close.
    pub(super) addrs: Vec<SocketAddr>,
    pub(super) retries: Vec<(Listener, crate::timer::TimerKey)>,
}

impl Server {
    /// The `--listen` addresses actually bound (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.listeners.addrs[..self.tls.first_tls_listener.min(self.listeners.addrs.len())]
    }

    /// The `--ssl-listen` addresses actually bound.
    pub fn ssl_addrs(&self) -> &[SocketAddr] {
        &self.listeners.addrs[self.tls.first_tls_listener.min(self.listeners.addrs.len())..]
    }

    /// The listeners that do not authenticate their peers (the ones protected mode guards),
    /// HTTP included: plaintext ones, and TLS ones that ask no client certificate.
    pub(super) fn unauthenticated_addrs(&self) -> impl Iterator<Item = &SocketAddr> {
        let certified = self.tls.asks_client_certificate();
        let https = self.tls.https() && certified;
        let gearman = self.listeners.addrs.iter().enumerate();
        let gearman =
            gearman.filter(move |(i, _)| !(certified && self.tls.listener_is_tls(*i, false)));
        let http = self.http_addrs().iter().filter(move |_| !https);
        gearman.map(|(_, a)| a).chain(http)
    }

    /// `--ssl`: every listener speaks TLS.
    pub fn tls_everywhere(&self) -> bool {
        self.tls.https()
    }

    /// A listener's retry is due (see `ACCEPT_RETRY_MS`).
    pub(super) fn accept_retry(&mut self, from: Listener) {
        self.listeners.retries.retain(|&(l, _)| l != from);
        self.accept_on(from, true);
    }

    /// The address of a listener, for the log.
    fn listener_addr(&self, l: Listener) -> Option<SocketAddr> {
        match l {
            Listener::Gearman(i) => self.listeners.addrs.get(i).copied(),
            Listener::Http(i) => self.http_addrs().get(i).copied(),
        }
    }

    /// Accept failed on `from` for a reason other than an empty backlog: try again after
    /// `ACCEPT_RETRY_MS` unless a retry is armed already. Logged at most once a minute
    /// (door.rs), with the failures since the last line: a server at its descriptor limit,
    /// where every freed descriptor lets one accept through before the next fails, would
    /// otherwise write a line per client.
    fn accept_failed(&mut self, from: Listener, e: io::Error) {
        let said = self.door.accept_failed(self.time.now);
        let addr = self.listener_addr(from);
        let addr = addr.map_or_else(|| "?".to_string(), |a| a.to_string());
        match said {
            Some(n) => error!(
                "accept on {addr} failed: {e} ({}); trying again every {ACCEPT_RETRY_MS} ms, and saying so again at most once a minute",
                crate::plural::count(
                    n,
                    "failure since the last such line",
                    "failures since the last such line"
                )
            ),
            None => debug!("accept on {addr} failed again: {e}"),
        }
        if self.listeners.retries.iter().any(|&(l, _)| l == from) {
            return;
        }
        let at = self.time.now.saturating_add(ACCEPT_RETRY_MS);
        let key = self.deadlines.arm(at, Deadline::AcceptRetry(from));
        self.listeners.retries.push((from, key));
    }

    /// Accept works again on `from` (a client came, or the backlog is empty): a retry armed
    /// for it is not needed any more. Said only after a line said it failed.
    fn accept_works(&mut self, from: Listener) {
        if let Some(p) = self.listeners.retries.iter().position(|&(l, _)| l == from) {
            let (_, key) = self.listeners.retries.swap_remove(p);
            self.deadlines.cancel(key);
        }
        if self.door.accept_works() {
            let addr = self.listener_addr(from);
            let addr = addr.map_or_else(|| "?".to_string(), |a| a.to_string());
            info!("accept on {addr} works again");
        }
    }

    /// A listener is readable: accept every client waiting.
    pub(super) fn accept(&mut self, from: Listener) {
        self.accept_on(from, false);
    }

    /// Accept every client waiting on `from`; `retrying`: a retry after a failure.
    fn accept_on(&mut self, from: Listener, retrying: bool) {
        let (li, http) = match from {
            Listener::Gearman(i) => (i, false),
            Listener::Http(i) => (i, true),
        };
        // Accept failed on this listener before: the failure is over once the backlog is
        // empty. (A client taken and then another failure is the same failure going on,
        // not a new one to log.)
        let failing = retrying || self.listeners.retries.iter().any(|&(l, _)| l == from);
        loop {
            let listener = if http {
                self.http.listener(li)
            } else {
                self.listeners.sockets.get(li)
            };
            let Some(listener) = listener else {
                return;
            };
            let (stream, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if failing {
                        self.accept_works(from);
                    }
                    return;
                }
                // A client that gave up before its turn: the next one may be there.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue;
                }
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS...: clients may wait in the backlog, and no
                    // readiness event will say so again.
                    self.accept_failed(from, e);
                    return;
                }
            };
            if self.conns.slab.len() >= self.config.max_connections {
                peer_log!(
                    self.time.now,
                    Cause::Accept,
                    Warn,
                    "refusing connection from {peer}: --max-connections {} reached",
                    self.config.max_connections
                );
                self.stats.refused += 1;
                drop(stream);
                continue;
            }
            let tls = self.tls.listener_is_tls(li, http);
            let local = if http {
                self.http_addrs().get(li)
            } else {
                self.listeners.addrs.get(li)
            };
            // Protected mode covers every listener whose peers are not authenticated:
            // plaintext ones, and TLS ones that ask no client certificate.
            let authenticated = tls && self.tls.asks_client_certificate();
            let access = match local {
                Some(_) if authenticated => Peer::new(peer, false),
                Some(&local) => self.access_for(peer, local),
                None => Peer::new(peer, true),
            };
            if access.protected && !tls {
                // Refused before a byte is read: the peer costs the accept and one short
                // write, never a buffered request.
                let refusal = self.protected_at_accept(&access, http);
                let _ = (&stream).write(&refusal);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                drop(stream);
                continue;
            }
            let unserved = match self.door.enter(access.ip()) {
                Ok(counted) => counted,
                Err(full) => {
                    peer_log!(
                        self.time.now,
                        Cause::Accept,
                        Warn,
                        "refusing connection from {peer}: {full}"
                    );
                    self.stats.refused += 1;
                    drop(stream);
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            if let Some(k) = &self.config.keepalive {
                listen::set_keepalive(&stream, k);
            }
            let session = match self.tls.session(li, http) {
                Ok(s) => s,
                Err(e) => {
                    error!("cannot start TLS with {peer}: {e}");
                    if unserved {
                        self.door.leave(access.ip());
                    }
                    continue;
                }
            };
            let entry = self.conns.slab.vacant_entry();
            let idx = entry.key();
            let id = ConnId {
                index: idx as u32,
                generation: token::next_generation(self.conns.last_generation),
            };
            let registration = (self.poll.registry(), Source::Conn(id).token());
            let ip = access.ip();
            let mut c = match Connection::accept(stream, id, registration, session, access) {
                Ok(c) => c,
                Err(e) => {
                    error!("cannot register connection from {peer}: {e}");
                    if unserved {
                        self.door.leave(ip);
                    }
                    continue;
                }
            };
            c.unserved = unserved;
            self.conns.last_generation = id.generation;
            let info = ConnInfo {
                fd: c.fd(),
                ip: peer.ip().to_canonical(),
            };
            entry.insert(c);
            self.engine.connect(id, info);
            if tls {
                self.tls
                    .accepted(&mut self.conns, &mut self.deadlines, idx, self.time.now);
            }
            self.http_accepted(idx, http);
        }
    }
}
