//! A connection's wire, private to `conn.rs`: the socket and what runs over it (plain TCP, or
//! a rustls session over it: `crate::tls::TlsStream`), with reading, writing, write interest, half-close, the peer's address and
//! (de)registration with mio. Nothing else in the reactor touches the `TcpStream`.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

/// The socket and its protocol layer.
enum Wire {
    Plain(TcpStream),
    /// TLS: the codec above sees the same plaintext bytes.
    #[cfg(feature = "tls")]
    Tls(TcpStream, Box<crate::tls::TlsStream>),
}

pub(super) struct Transport {
    wire: Wire,
    peer: SocketAddr,
    /// Registered for writability too (a write would have blocked).
    write_interest: bool,
    /// The poller said the peer hung up: read until EOF rather than stop at a short read.
    hung_up: bool,
}

impl Transport {
    /// Plain TCP on an accepted socket.
    pub(super) fn plain(stream: TcpStream, peer: SocketAddr) -> Transport {
        Transport {
            wire: Wire::Plain(stream),
            peer,
            write_interest: false,
            hung_up: false,
        }
    }

    /// TLS on an accepted socket: the handshake runs as the peer's bytes are read.
    #[cfg(feature = "tls")]
    pub(super) fn tls(
        stream: TcpStream,
        peer: SocketAddr,
        session: crate::tls::TlsStream,
    ) -> Transport {
        Transport {
            wire: Wire::Tls(stream, Box::new(session)),
            peer,
            write_interest: false,
            hung_up: false,
        }
    }

    fn socket(&mut self) -> &mut TcpStream {
        match &mut self.wire {
            Wire::Plain(s) => s,
            #[cfg(feature = "tls")]
            Wire::Tls(s, _) => s,
        }
    }

    fn socket_ref(&self) -> &TcpStream {
        match &self.wire {
            Wire::Plain(s) => s,
            #[cfg(feature = "tls")]
            Wire::Tls(s, _) => s,
        }
    }

    pub(super) fn is_tls(&self) -> bool {
        !matches!(self.wire, Wire::Plain(_))
    }

    /// A TLS session whose handshake has not finished.
    pub(super) fn handshaking(&self) -> bool {
        match &self.wire {
            Wire::Plain(_) => false,
            #[cfg(feature = "tls")]
            Wire::Tls(_, t) => t.is_handshaking(),
        }
    }

    /// The client certificate's name (CN, else first DNS SAN) after a TLS handshake.
    pub(super) fn peer_name(&self) -> Option<&str> {
        match &self.wire {
            Wire::Plain(_) => None,
            #[cfg(feature = "tls")]
            Wire::Tls(_, t) => t.peer_name(),
        }
    }

    /// Why a TLS session failed, as a metrics label.
    pub(super) fn failure(&self) -> Option<&'static str> {
        match &self.wire {
            Wire::Plain(_) => None,
            #[cfg(feature = "tls")]
            Wire::Tls(_, t) => t.failure(),
        }
    }

    /// Readable only: writability is asked for when a write would block, so that every ACK
    /// does not wake the loop.
    pub(super) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(self.socket(), token, Interest::READABLE)
    }

    pub(super) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(self.socket());
    }

    /// Ask for writability exactly while something waits for the socket.
    pub(super) fn want_writable(
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
        registry.reregister(self.socket(), token, interest)?;
        self.write_interest = want;
        Ok(())
    }

    /// Bytes from the peer into `buf`: `Ok(0)` at its end, `WouldBlock` when none wait.
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.wire {
            Wire::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Wire::Tls(s, t) => t.read(s, buf),
        }
    }

    /// Bytes toward the peer: how many were taken, or `WouldBlock`.
    pub(super) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.wire {
            Wire::Plain(s) => s.write(data),
            #[cfg(feature = "tls")]
            Wire::Tls(s, t) => t.write(s, data),
        }
    }

    /// Bytes the transport itself still holds for the socket (none for plain TCP).
    pub(super) fn holds_output(&self) -> bool {
        match &self.wire {
            Wire::Plain(_) => false,
            #[cfg(feature = "tls")]
            Wire::Tls(_, t) => t.wants_write(),
        }
    }

    /// Send what the transport itself holds, as far as the socket takes it.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        match &mut self.wire {
            Wire::Plain(_) => Ok(()),
            #[cfg(feature = "tls")]
            Wire::Tls(s, t) => t.flush(s),
        }
    }

    /// A read shorter than asked means the socket is drained (plain TCP): edge-triggered
    /// polling raises a new event for what comes later. Not under TLS, where one record's
    /// plaintext says nothing about what else the socket holds.
    pub(super) fn short_read_drains(&self) -> bool {
        !self.hung_up && matches!(self.wire, Wire::Plain(_))
    }

    /// Shut our sending side (after a final answer, while the peer's bytes are drained).
    pub(super) fn shutdown_write(&mut self) {
        #[cfg(feature = "tls")]
        if let Wire::Tls(s, t) = &mut self.wire {
            t.close();
            let _ = t.flush(s);
        }
        let _ = self.socket().shutdown(std::net::Shutdown::Write);
    }

    pub(super) fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(super) fn fd(&self) -> i32 {
        std::os::fd::AsRawFd::as_raw_fd(self.socket_ref())
    }

    pub(super) fn hung_up(&self) -> bool {
        self.hung_up
    }

    pub(super) fn set_hung_up(&mut self) {
        self.hung_up = true;
    }
}
