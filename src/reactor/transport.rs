//! A connection's wire, private to `conn.rs`: the socket and what runs over it (plain TCP
//! now; TLS next), with reading, writing, write interest, half-close, the peer's address and
//! (de)registration with mio. Nothing else in the reactor touches the `TcpStream`.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

/// The socket and its protocol layer.
enum Wire {
    Plain(TcpStream),
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

    fn socket(&mut self) -> &mut TcpStream {
        match &mut self.wire {
            Wire::Plain(s) => s,
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
        }
    }

    /// Bytes toward the peer: how many were taken, or `WouldBlock`.
    pub(super) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.wire {
            Wire::Plain(s) => s.write(data),
        }
    }

    /// Bytes the transport itself still holds for the socket (none for plain TCP).
    pub(super) fn holds_output(&self) -> bool {
        match &self.wire {
            Wire::Plain(_) => false,
        }
    }

    /// Send what the transport itself holds, as far as the socket takes it.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        match &mut self.wire {
            Wire::Plain(_) => Ok(()),
        }
    }

    /// A read shorter than asked means the socket is drained (plain TCP): edge-triggered
    /// polling raises a new event for what comes later.
    pub(super) fn short_read_drains(&self) -> bool {
        !self.hung_up && matches!(self.wire, Wire::Plain(_))
    }

    /// Shut our sending side (after a final answer, while the peer's bytes are drained).
    pub(super) fn shutdown_write(&mut self) {
        let _ = self.socket().shutdown(std::net::Shutdown::Write);
    }

    pub(super) fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(super) fn fd(&self) -> i32 {
        match &self.wire {
            Wire::Plain(s) => std::os::fd::AsRawFd::as_raw_fd(s),
        }
    }

    pub(super) fn hung_up(&self) -> bool {
        self.hung_up
    }

    pub(super) fn set_hung_up(&mut self) {
        self.hung_up = true;
    }
}
