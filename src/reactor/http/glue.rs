//! What all HTTP connections share: the HTTP listeners, bound at start-up, the request limits
//! and timeouts, the replies set aside for HTTP connections, and the guard's and console's
//! counters.

use std::io;
use std::net::SocketAddr;

use mio::net::TcpListener;
use mio::{Interest, Poll};

use super::super::listen;
use super::super::token::{self, Listener, Source};
use crate::config::Config;
use crate::engine::ConnId;
use crate::http::HttpLimits;
use crate::http::guard::Refusal;
use crate::proto::response::Response;

/// What all HTTP connections share.
pub(in crate::reactor) struct HttpGlue {
    listeners: Vec<TcpListener>,
    addrs: Vec<SocketAddr>,
    pub(in crate::reactor) limits: HttpLimits,
    pub(in crate::reactor) header_timeout_ms: u64,
    pub(in crate::reactor) idle_timeout_ms: u64,
    /// Engine replies for HTTP connections, set aside by `dispatch` and answered after it.
    pub(in crate::reactor) inbox: Vec<(ConnId, Response)>,
    /// The hosts requests may name (guard.rs).
    pub(in crate::reactor) allowed: crate::http::guard::Allowed,
    pub(in crate::reactor) refusals: Refusals,
    /// Job counts of the last minutes, for the console's chart (console.rs).
    pub(in crate::reactor) rates: crate::http::console::rates::Rates,
    /// Console actions refused (not loopback, or no sign of the console's page).
    pub(in crate::reactor) console_refused: u64,
}

impl HttpGlue {
    /// Bind the HTTP listeners of `config` (none without `--http-port`/`--http-listen`).
    pub(in crate::reactor) fn bind(config: &Config, poll: &Poll) -> io::Result<HttpGlue> {
        let mut glue = HttpGlue {
            listeners: Vec::new(),
            addrs: Vec::new(),
            limits: HttpLimits {
                max_body: config.limits.max_packet,
                ..HttpLimits::default()
            },
            header_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            inbox: Vec::new(),
            allowed: Default::default(),
            refusals: Default::default(),
            rates: Default::default(),
            console_refused: 0,
        };
        let Some(http) = &config.http else {
            return Ok(glue);
        };
        glue.header_timeout_ms = http.header_timeout.as_millis() as u64;
        glue.idle_timeout_ms = http.idle_timeout.as_millis() as u64;
        for (i, addr) in http.listen.iter().enumerate() {
            token::check_listener(i)?;
            let mut l = listen::bind(*addr, config.backlog).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot listen for HTTP on {addr}: {e}"))
            })?;
            let token = Source::Listener(Listener::Http(i)).token();
            poll.registry()
                .register(&mut l, token, Interest::READABLE)?;
            glue.addrs.push(l.local_addr()?);
            glue.listeners.push(l);
        }
        glue.allowed = crate::http::guard::Allowed::new(&glue.addrs, &http.allowed_hosts);
        Ok(glue)
    }

    /// HTTP listener `i`.
    pub(in crate::reactor) fn listener(&self, i: usize) -> Option<&TcpListener> {
        self.listeners.get(i)
    }

    /// The HTTP listeners' addresses (port 0 resolved).
    pub(in crate::reactor) fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }
}

/// Refusals by reason, for `/metrics`.
#[derive(Debug, Default)]
pub(in crate::reactor) struct Refusals([u64; Refusal::ALL.len()]);

impl Refusals {
    pub(in crate::reactor) fn count(&mut self, why: Refusal) {
        if let Some(n) = Refusal::ALL.iter().position(|r| *r == why) {
            self.0[n] += 1;
        }
    }

    pub(in crate::reactor) fn by_reason(&self) -> Vec<(&'static str, u64)> {
        Refusal::ALL
            .iter()
            .zip(self.0)
            .map(|(r, n)| (r.reason(), n))
            .collect()
    }
}
