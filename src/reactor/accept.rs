//! The listeners and accept: the addresses bound, `--max-connections`, socket options, the TLS
//! session and the connection's identity at accept, its slot and `ConnId`, and the engine told
//! (an HTTP connection's OPTION_REQ at accept is in http/mod.rs); an accept that fails (out
//! of descriptors) tried again on a deadline.

use std::io::{self, Write};
use std::net::SocketAddr;

use log::{debug, error, info};
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Poll, Registry};

use super::conn::{Connection, Conns};
use super::deadlines::{Deadline, Deadlines};
use super::door::Door;
use super::gate::Gate;
use super::http::HttpGlue;
use super::listen;
use super::stats::Stats;
use super::tls_glue::TlsGlue;
use super::token::{self, Listener, Source};
use crate::access::peer::Peer;
use crate::config::Config;
use crate::engine::{ConnId, ConnInfo, Engine};
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
    sockets: Vec<TcpListener>,
    /// As bound (port 0 resolved); kept after the sockets close.
    pub(super) addrs: Vec<SocketAddr>,
    retries: Vec<(Listener, crate::timer::TimerKey)>,
}

impl Listeners {
    /// A graceful shutdown begins: no more Gearman connections (the addresses stay known).
    pub(super) fn close(&mut self, registry: &Registry) {
        for mut l in self.sockets.drain(..) {
            let _ = registry.deregister(&mut l);
        }
    }

    /// The `--listen` addresses bound, then the `--ssl-listen` ones from `first_tls`.
    pub(super) fn split_at(&self, first_tls: usize) -> (&[SocketAddr], &[SocketAddr]) {
        self.addrs.split_at(first_tls.min(self.addrs.len()))
    }

    /// The listeners beyond loopback that do not authenticate their peers (the ones
    /// protected mode guards), HTTP ones (`http`) included: plaintext ones, and TLS ones that
    /// ask no client certificate; and the plaintext HTTP ones beyond loopback, where no bearer
    /// token may go.
    pub(super) fn beyond_loopback(
        &self,
        tls: &TlsGlue,
        http: &[SocketAddr],
    ) -> (Vec<SocketAddr>, Vec<SocketAddr>) {
        let certified = tls.asks_client_certificate();
        let https = tls.https();
        let gearman = self.addrs.iter().enumerate();
        let gearman = gearman.filter(|(i, _)| !(certified && tls.listener_is_tls(*i, false)));
        let unauthenticated = gearman
            .map(|(_, a)| a)
            .chain(http.iter().filter(|_| !(https && certified)));
        let beyond = unauthenticated.filter(|a| !a.ip().is_loopback());
        let open_http = http.iter().filter(|a| !https && !a.ip().is_loopback());
        (beyond.copied().collect(), open_http.copied().collect())
    }

    /// Has accept failed on `from`, with a retry armed?
    pub(super) fn failing(&self, from: Listener) -> bool {
        self.retries.iter().any(|&(l, _)| l == from)
    }

    /// A listener's retry is due (see `ACCEPT_RETRY_MS`): its deadline is spent.
    pub(super) fn retry_due(&mut self, from: Listener) {
        self.retries.retain(|&(l, _)| l != from);
    }

    /// The address of a listener, for the log.
    fn addr(&self, l: Listener, http: &HttpGlue) -> Option<SocketAddr> {
        match l {
            Listener::Gearman(i) => self.addrs.get(i).copied(),
            Listener::Http(i) => http.addrs().get(i).copied(),
        }
    }

    /// Accept failed on `from` for a reason other than an empty backlog: try again after
    /// `ACCEPT_RETRY_MS` unless a retry is armed already. Logged at most once a minute
    /// (door.rs), with the failures since the last line: a server at its descriptor limit,
    /// where every freed descriptor lets one accept through before the next fails, would
    /// otherwise write a line per client.
    fn failed(&mut self, from: Listener, e: io::Error, a: &mut Admission<'_>) {
        let said = a.door.accept_failed(a.now);
        let addr = self.addr(from, a.http);
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
        if self.failing(from) {
            return;
        }
        let at = a.now.saturating_add(ACCEPT_RETRY_MS);
        let key = a.deadlines.arm(at, Deadline::AcceptRetry(from));
        self.retries.push((from, key));
    }

    /// Accept works again on `from` (a client came, or the backlog is empty): a retry armed
    /// for it is not needed any more. Said only after a line said it failed.
    fn works(&mut self, from: Listener, a: &mut Admission<'_>) {
        if let Some(p) = self.retries.iter().position(|&(l, _)| l == from) {
            let (_, key) = self.retries.swap_remove(p);
            a.deadlines.cancel(key);
        }
        if a.door.accept_works() {
            let addr = self.addr(from, a.http);
            let addr = addr.map_or_else(|| "?".to_string(), |a| a.to_string());
            info!("accept on {addr} works again");
        }
    }

    /// Accept the next client waiting on `from` (`failing`: accept failed on it before, and
    /// the failure is over once the backlog is empty; a client taken and then another
    /// failure is the same failure going on, not a new one to log). `None`: no client is
    /// left to take; `Some(Some(idx))`: a connection took slot `idx`; `Some(None)`: a client
    /// was refused or lost, and the next one may be there.
    pub(super) fn accept(
        &mut self,
        from: Listener,
        failing: bool,
        a: &mut Admission<'_>,
    ) -> Option<Option<usize>> {
        let (li, http) = match from {
            Listener::Gearman(i) => (i, false),
            Listener::Http(i) => (i, true),
        };
        let listener = if http {
            a.http.listener(li)
        } else {
            self.sockets.get(li)
        };
        let (stream, peer) = match listener?.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if failing {
                    self.works(from, a);
                }
                return None;
            }
            // A client that gave up before its turn: the next one may be there.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) =>
            {
                return Some(None);
            }
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS...: clients may wait in the backlog, and no
                // readiness event will say so again.
                self.failed(from, e, a);
                return None;
            }
        };
        let local = if http {
            a.http.addrs().get(li)
        } else {
            self.addrs.get(li)
        };
        Some(a.admit(stream, peer, local.copied(), li, http))
    }
}

/// What accepting a connection borrows from the server: the parts a new peer is judged by
/// and let into.
pub(super) struct Admission<'a> {
    pub(super) conns: &'a mut Conns,
    pub(super) door: &'a mut Door,
    pub(super) gate: &'a mut Gate,
    pub(super) tls: &'a mut TlsGlue,
    pub(super) stats: &'a mut Stats,
    pub(super) engine: &'a mut Engine,
    pub(super) deadlines: &'a mut Deadlines,
    pub(super) http: &'a HttpGlue,
    pub(super) registry: &'a Registry,
    pub(super) config: &'a Config,
    pub(super) now: u64,
}

impl Admission<'_> {
    /// A client accepted on listener `li` (`http`: an HTTP one, bound at `local`): refused
    /// at `--max-connections`, by protected mode or by the door, or given a slot, its TLS
    /// session and identity, and told to the engine. The slot taken, if any.
    fn admit(
        &mut self,
        stream: TcpStream,
        peer: SocketAddr,
        local: Option<SocketAddr>,
        li: usize,
        http: bool,
    ) -> Option<usize> {
        if self.conns.slab.len() >= self.config.max_connections {
            peer_log!(
                self.now,
                Cause::Accept,
                Warn,
                "refusing connection from {peer}: --max-connections {} reached",
                self.config.max_connections
            );
            self.stats.refused += 1;
            drop(stream);
            return None;
        }
        let tls = self.tls.listener_is_tls(li, http);
        // Protected mode covers every listener whose peers are not authenticated:
        // plaintext ones, and TLS ones that ask no client certificate.
        let authenticated = tls && self.tls.asks_client_certificate();
        let access = match local {
            Some(_) if authenticated => Peer::new(peer, false),
            Some(local) => self.gate.access_for(peer, local),
            None => Peer::new(peer, true),
        };
        if access.protected && !tls {
            // Refused before a byte is read: the peer costs the accept and one short
            // write, never a buffered request.
            let refusal = self.gate.protected_at_accept(&access, http, self.now);
            let _ = (&stream).write(&refusal);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            drop(stream);
            return None;
        }
        let unserved = match self.door.enter(access.ip()) {
            Ok(counted) => counted,
            Err(full) => {
                peer_log!(
                    self.now,
                    Cause::Accept,
                    Warn,
                    "refusing connection from {peer}: {full}"
                );
                self.stats.refused += 1;
                drop(stream);
                return None;
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
                return None;
            }
        };
        let entry = self.conns.slab.vacant_entry();
        let idx = entry.key();
        let id = ConnId {
            index: idx as u32,
            generation: token::next_generation(self.conns.last_generation),
        };
        let registration = (self.registry, Source::Conn(id).token());
        let ip = access.ip();
        let mut c = match Connection::accept(stream, id, registration, session, access) {
            Ok(c) => c,
            Err(e) => {
                error!("cannot register connection from {peer}: {e}");
                if unserved {
                    self.door.leave(ip);
                }
                return None;
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
            self.tls.accepted(self.conns, self.deadlines, idx, self.now);
        }
        Some(idx)
    }
}
