//! The listeners and accept: the addresses bound, `--max-connections`, socket options, the TLS
//! session and the connection's identity at accept, its slot and `ConnId`, and the engine told
//! (an HTTP connection's OPTION_REQ at accept is in http_glue.rs).

use std::io;
use std::net::SocketAddr;

use log::{error, warn};
use mio::net::TcpListener;
use mio::{Interest, Poll};

use super::conn::Connection;
use super::token::{self, Listener, Source};
use super::{Server, listen};
use crate::access::peer::Peer;
use crate::config::Config;
use crate::engine::{ConnId, ConnInfo};

/// Bind and register the Gearman listeners, `--listen` then `--ssl-listen` (tokens 0..), with
/// the addresses they got.
pub(super) fn bind_listeners(
    config: &Config,
    poll: &Poll,
) -> io::Result<(Vec<TcpListener>, Vec<SocketAddr>)> {
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
    Ok((listeners, local_addrs))
}

impl Server {
    /// The `--listen` addresses actually bound (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs[..self.tls.first_tls_listener.min(self.local_addrs.len())]
    }

    /// The `--ssl-listen` addresses actually bound.
    pub fn ssl_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs[self.tls.first_tls_listener.min(self.local_addrs.len())..]
    }

    /// The listeners that speak plaintext (the ones protected mode guards), HTTP included.
    pub(super) fn plaintext_addrs(&self) -> impl Iterator<Item = &SocketAddr> {
        let https = self.tls.https();
        let gearman = self.local_addrs.iter().enumerate();
        let gearman = gearman.filter(|(i, _)| !self.tls.listener_is_tls(*i, false));
        let http = self.http_addrs().iter().filter(move |_| !https);
        gearman.map(|(_, a)| a).chain(http)
    }

    /// `--ssl`: every listener speaks TLS.
    pub fn tls_everywhere(&self) -> bool {
        self.tls.https()
    }

    pub(super) fn accept(&mut self, from: Listener) {
        let (li, http) = match from {
            Listener::Gearman(i) => (i, false),
            Listener::Http(i) => (i, true),
        };
        loop {
            let listener = if http {
                self.http.listener(li)
            } else {
                self.listeners.get(li)
            };
            let Some(listener) = listener else {
                return;
            };
            let (stream, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and friends: log and try again on the next readiness event.
                    error!("accept failed: {e}");
                    return;
                }
            };
            if self.conns.len() >= self.config.max_connections {
                warn!(
                    "refusing connection from {peer}: --max-connections {} reached",
                    self.config.max_connections
                );
                self.http.refused();
                drop(stream);
                continue;
            }
            let _ = stream.set_nodelay(true);
            if let Some(k) = &self.config.keepalive {
                listen::set_keepalive(&stream, k);
            }
            let session = match self.tls_session(li, http) {
                Ok(s) => s,
                Err(e) => {
                    error!("cannot start TLS with {peer}: {e}");
                    continue;
                }
            };
            let tls = session.is_some();
            let local = if http {
                self.http_addrs().get(li)
            } else {
                self.local_addrs.get(li)
            };
            // Protected mode is for plaintext listeners: a TLS one is not refused by it.
            let access = match local {
                Some(_) if tls => Peer::new(peer, false),
                Some(&local) => self.access_for(peer, local),
                None => Peer::new(peer, true),
            };
            let entry = self.conns.vacant_entry();
            let idx = entry.key();
            let id = ConnId {
                index: idx as u32,
                generation: token::next_generation(self.last_generation),
            };
            let registration = (self.poll.registry(), Source::Conn(id).token());
            let c = match Connection::accept(stream, id, registration, session, access) {
                Ok(c) => c,
                Err(e) => {
                    error!("cannot register connection from {peer}: {e}");
                    continue;
                }
            };
            self.last_generation = id.generation;
            let info = ConnInfo {
                fd: c.fd(),
                ip: peer.ip().to_canonical(),
            };
            entry.insert(c);
            self.engine.connect(id, info);
            if tls {
                self.tls_accepted(idx, self.turn_now);
            }
            self.http_accepted(idx, http);
        }
    }
}
