//! The one gate into the engine: every Gearman packet, admin line and HTTP request passes
//! `Server::gate` before the engine (or the loop's own admin lines) acts on it. The gate knows
//! the connection's identity, which the engine never sees; `crate::access::classify` says what
//! a request needs, and the rules stand here, in order.

use std::net::IpAddr;

use bytes::Bytes;
use log::warn;

use super::Server;
use crate::access::Identity;
use crate::access::classify::{self, Need};
use crate::engine::ConnId;
use crate::http::response::Reply;
use crate::proto::request::Request;
use crate::proto::response::Response;

/// What the gate knows about a connection, fixed at accept (the transport names a certificate
/// after a TLS handshake by setting `identity` to `Identity::Cn`).
#[derive(Clone, Debug)]
pub(super) struct Access {
    /// `addr:IP` of the peer at accept; `cn:NAME` once a client certificate names it.
    pub identity: Identity,
    /// The peer's address, for the log whatever the identity.
    pub peer: IpAddr,
    pub loopback: bool,
}

impl Access {
    pub(super) fn new(peer: IpAddr) -> Access {
        let peer = peer.to_canonical();
        Access {
            identity: Identity::Addr(peer),
            peer,
            loopback: peer.is_loopback(),
        }
    }
}

/// Why the gate refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Denial {
    /// `shutdown` from a non-loopback peer while no ACL decides.
    ShutdownRefused,
}

impl Denial {
    /// The reply to an admin line.
    pub(super) fn admin_line(&self) -> Bytes {
        match self {
            Denial::ShutdownRefused => Bytes::from_static(
                b"ERR SHUTDOWN_REFUSED shutdown+is+only+accepted+from+a+loopback+address\r\n",
            ),
        }
    }

    /// The reply to a Gearman packet.
    pub(super) fn packet(&self) -> Response {
        match self {
            Denial::ShutdownRefused => Response::text(self.admin_line()),
        }
    }

    /// The reply to an HTTP request.
    pub(super) fn http(&self) -> Reply {
        match self {
            Denial::ShutdownRefused => Reply::text(403, "forbidden"),
        }
    }
}

impl Server {
    /// May connection `idx` have `need` served? The rules, first match wins:
    /// 1. `shutdown` only from a loopback address.
    pub(super) fn gate(&mut self, idx: usize, need: Need<'_>) -> Result<(), Denial> {
        let Some(c) = self.conns.get(idx) else {
            return Ok(());
        };
        let a = &c.access;
        if need == Need::Shutdown && !a.loopback {
            warn!(
                "connection {idx} ({}, from {}): shutdown refused: not a loopback address",
                a.identity, a.peer
            );
            return Err(Denial::ShutdownRefused);
        }
        Ok(())
    }

    /// A Gearman packet through the gate into the engine (or its refusal back).
    pub(super) fn enter_packet(&mut self, idx: usize, id: ConnId, req: Request, now: u64) {
        match self.gate(idx, classify::packet(&req)) {
            Ok(()) => self.engine.handle(id, req, now, &mut self.outbox),
            Err(d) => self.outbox.push(id, d.packet()),
        }
    }
}
