//! A connection's wire: the socket and what runs over it (plain TCP, or a rustls session over
//! it: `crate::tls::TlsStream`), with reading, writing, write interest and half-close,
//! (de)registration with mio, and what only a TLS connection keeps (its handshake's deadline,
//! the name its certificate gives it), out of line. Used by `conn/mod.rs` for accepted
//! connections and by `etcd_link.rs` for the outgoing ones to etcd (a client session, and
//! `connected` to learn when a non-blocking connect ended); nothing else in the reactor
//! reads, writes or registers the `TcpStream` (accept.rs and etcd_link.rs only set its
//! socket options, TCP_NODELAY and keepalive, before they hand it over).

use std::io::{self, Read, Write};

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use crate::access::Identity;
use crate::timer::TimerKey;

/// A TLS session, server or client side (none exists in a build without TLS).
#[cfg(feature = "tls")]
pub type TlsSession = crate::tls::TlsStream;
#[cfg(not(feature = "tls"))]
pub type TlsSession = std::convert::Infallible;

/// What a TLS connection has beyond the socket, in one allocation made at accept: a rustls
/// session is over a kilobyte, and a plaintext connection carries only the pointer's room.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
struct Tls {
    session: TlsSession,
    /// The handshake's deadline while it runs (tls_glue.rs).
    handshake: Option<TimerKey>,
    /// `cn:NAME` once the handshake ends with a named client certificate.
    identity: Option<Identity>,
}

pub(in crate::reactor) struct Transport {
    socket: TcpStream,
    /// TLS over the socket: the codec above sees the same plaintext bytes.
    tls: Option<Box<Tls>>,
    /// Registered for writability too (a write would have blocked).
    write_interest: bool,
    /// The poller said the peer hung up: read until EOF rather than stop at a short read.
    hung_up: bool,
}

impl Transport {
    /// Plain TCP on an accepted socket.
    pub(in crate::reactor) fn plain(socket: TcpStream) -> Transport {
        Transport {
            socket,
            tls: None,
            write_interest: false,
            hung_up: false,
        }
    }

    /// TLS on an accepted socket (a server session), or on a connecting one (a client
    /// session: its ClientHello goes out at the first `flush`): the handshake runs as the
    /// peer's bytes are read.
    #[cfg(feature = "tls")]
    pub(in crate::reactor) fn tls(socket: TcpStream, session: crate::tls::TlsStream) -> Transport {
        let tls = Tls {
            session,
            handshake: None,
            identity: None,
        };
        Transport {
            tls: Some(Box::new(tls)),
            ..Transport::plain(socket)
        }
    }

    /// An outgoing connect: `Ok(true)` once it is made, `Ok(false)` while in progress, the
    /// error when it failed.
    pub(in crate::reactor) fn connected(&mut self) -> io::Result<bool> {
        let s = &self.socket;
        if let Some(e) = s.take_error()? {
            return Err(e);
        }
        match s.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub(in crate::reactor) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A TLS session whose handshake has not finished.
    pub(in crate::reactor) fn handshaking(&self) -> bool {
        match &self.tls {
            #[cfg(feature = "tls")]
            Some(t) => t.session.is_handshaking(),
            #[cfg(not(feature = "tls"))]
            Some(t) => match t.session {},
            None => false,
        }
    }

    /// The client certificate's name (CN, else first DNS SAN) after a TLS handshake.
    pub(in crate::reactor) fn peer_name(&self) -> Option<&str> {
        match &self.tls {
            #[cfg(feature = "tls")]
            Some(t) => t.session.peer_name(),
            #[cfg(not(feature = "tls"))]
            Some(t) => match t.session {},
            None => None,
        }
    }

    /// Why a TLS session failed, as a metrics label.
    pub(in crate::reactor) fn failure(&self) -> Option<&'static str> {
        match &self.tls {
            #[cfg(feature = "tls")]
            Some(t) => t.session.failure(),
            #[cfg(not(feature = "tls"))]
            Some(t) => match t.session {},
            None => None,
        }
    }

    /// Why a client certificate was refused for naming no one, in words.
    pub(in crate::reactor) fn refusal(&self) -> Option<&'static str> {
        match &self.tls {
            #[cfg(feature = "tls")]
            Some(t) => t.session.refusal(),
            #[cfg(not(feature = "tls"))]
            Some(t) => match t.session {},
            None => None,
        }
    }

    /// The TLS handshake's deadline while it runs (`None` for plain TCP).
    pub(in crate::reactor) fn handshake_deadline(&self) -> Option<TimerKey> {
        self.tls.as_ref().and_then(|t| t.handshake)
    }

    /// Set or clear the handshake's deadline (plain TCP has none to keep).
    pub(in crate::reactor) fn set_handshake_deadline(&mut self, key: Option<TimerKey>) {
        if let Some(t) = self.tls.as_mut() {
            t.handshake = key;
        }
    }

    /// The identity the TLS handshake gave (`cn:NAME`), if any.
    pub(in crate::reactor) fn identity(&self) -> Option<&Identity> {
        self.tls.as_ref().and_then(|t| t.identity.as_ref())
    }

    /// Name the peer after its client certificate (plain TCP has none).
    pub(in crate::reactor) fn set_identity(&mut self, identity: Identity) {
        if let Some(t) = self.tls.as_mut() {
            t.identity = Some(identity);
        }
    }

    /// Readable only: writability is asked for when a write would block, so that every ACK
    /// does not wake the loop.
    pub(in crate::reactor) fn register(
        &mut self,
        registry: &Registry,
        token: Token,
    ) -> io::Result<()> {
        registry.register(&mut self.socket, token, Interest::READABLE)
    }

    pub(in crate::reactor) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.socket);
    }

    /// Ask for writability exactly while something waits for the socket.
    pub(in crate::reactor) fn want_writable(
        &mut self,
        registry: &Registry,
        token: Token,
        want: bool,
    ) -> io::Result<()> {
        if want == self.write_interest {
            return Ok(());
        }
        let interest = match want {
            true => Interest::READABLE | Interest::WRITABLE,
            false => Interest::READABLE,
        };
        registry.reregister(&mut self.socket, token, interest)?;
        self.write_interest = want;
        Ok(())
    }

    /// Bytes from the peer into `buf`: `Ok(0)` at its end, `WouldBlock` when none wait.
    pub(in crate::reactor) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(feature = "tls")]
        if let Some(t) = self.tls.as_mut() {
            return t.session.read(&mut self.socket, buf);
        }
        self.socket.read(buf)
    }

    /// Bytes toward the peer: how many were taken, or `WouldBlock`.
    pub(in crate::reactor) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        #[cfg(feature = "tls")]
        if let Some(t) = self.tls.as_mut() {
            return t.session.write(&mut self.socket, data);
        }
        self.socket.write(data)
    }

    /// Bytes the transport itself still holds for the socket (none for plain TCP).
    pub(in crate::reactor) fn holds_output(&self) -> bool {
        match &self.tls {
            #[cfg(feature = "tls")]
            Some(t) => t.session.wants_write(),
            #[cfg(not(feature = "tls"))]
            Some(t) => match t.session {},
            None => false,
        }
    }

    /// Send what the transport itself holds, as far as the socket takes it.
    pub(in crate::reactor) fn flush(&mut self) -> io::Result<()> {
        #[cfg(feature = "tls")]
        if let Some(t) = self.tls.as_mut() {
            return t.session.flush(&mut self.socket);
        }
        Ok(())
    }

    /// A read shorter than asked means the socket is drained (plain TCP): edge-triggered
    /// polling raises a new event for what comes later. Not under TLS, where one record's
    /// plaintext says nothing about what else the socket holds.
    pub(in crate::reactor) fn short_read_drains(&self) -> bool {
        !self.hung_up && !self.is_tls()
    }

    /// Queue the end of a TLS session (close_notify) behind what it holds; nothing for plain
    /// TCP. Once is enough: rustls sends it only once.
    pub(in crate::reactor) fn end_session(&mut self) {
        #[cfg(feature = "tls")]
        if let Some(t) = self.tls.as_mut() {
            t.session.close();
        }
    }

    /// Shut our sending side (after a final answer, while the peer's bytes are drained).
    pub(in crate::reactor) fn shutdown_write(&mut self) {
        #[cfg(feature = "tls")]
        if let Some(t) = self.tls.as_mut() {
            t.session.close();
            let _ = t.session.flush(&mut self.socket);
        }
        let _ = self.socket.shutdown(std::net::Shutdown::Write);
    }

    pub(in crate::reactor) fn fd(&self) -> i32 {
        std::os::fd::AsRawFd::as_raw_fd(&self.socket)
    }

    pub(in crate::reactor) fn hung_up(&self) -> bool {
        self.hung_up
    }

    pub(in crate::reactor) fn set_hung_up(&mut self) {
        self.hung_up = true;
    }
}
