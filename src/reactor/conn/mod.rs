//! Connections: each one's kind (Gearman or HTTP), life (open to closing), buffers and
//! transport, and what the loop keeps about all of them for the turn's write side. Reads are
//! bounded per turn and by the packet limit before any byte of an oversized body is buffered.
//!
//! This file: `Connection`, one connection's state and its bounded reads.
//!
//! - `conns`: `Conns`, the slab and the turn's lists about the connections.
//! - `transport`: a connection's wire: the socket, plain or under a TLS session.
//! - `output`: `Conns`' side of a turn's writes: the outbox encoded, lazy replies corked,
//!   flushes, a connection taken out to close.
//! - `output_bound`: the server-wide bound on unsent output (`--max-total-output`).

mod conns;
pub(super) mod output;
pub(super) mod output_bound;
pub(super) mod transport;

use std::borrow::Cow;
use std::io;
use std::net::SocketAddr;

use bytes::{Buf, BytesMut};
use mio::net::TcpStream;
use mio::{Registry, Token};

use super::http::conn::HttpConn;
use crate::access::Identity;
use crate::access::peer::Peer;
use crate::engine::ConnId;
use crate::proto::frame::{HEADER_LEN, Limits, frame_len};
use crate::timer::TimerKey;
use transport::{TlsSession, Transport};

pub(super) use conns::Conns;

/// Bytes one connection may have buffered unparsed before reading pauses for a turn (a
/// larger declared packet raises this to exactly its own size).
pub const READ_CAP: usize = 256 * 1024;
/// The most a declared-but-unread body reserves ahead of the bytes that came.
const RESERVE_STEP: usize = 1024 * 1024;
/// Size of the one read buffer every connection reads through.
const SCRATCH_LEN: usize = 64 * 1024;
/// Buffers larger than this are given back when they empty.
const KEEP_CAPACITY: usize = 64 * 1024;

thread_local! {
    // Zeroed once for the life of the loop rather than per read (a stack array was a memset
    // of 16 KiB per readable event, most of the server's instructions).
    static SCRATCH: std::cell::RefCell<Box<[u8]>> = std::cell::RefCell::new(vec![0u8; SCRATCH_LEN].into_boxed_slice());
}

/// Create the read buffer now. Its first use registers a thread-local destructor, which goes
/// through the dynamic loader (glibc's `__cxa_thread_atexit_impl`); done during start-up, the
/// loader's pages are among those the idle trim unmaps, and the first connection does not map
/// them again (about 300 kB of VmRSS).
pub fn prepare_read_buffer() {
    SCRATCH.with(|_| ());
}

/// What a connection speaks.
pub enum Kind {
    Gearman,
    /// HTTP, with its session and the request being answered.
    Http(Box<HttpConn>),
}

/// Where a connection is in its life; each state includes the ones before it in what it stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Life {
    Open,
    /// The peer shut its side; buffered requests are still served.
    ReadClosed,
    /// Read no more; close once everything is written (after an error reply or EOF).
    CloseAfterFlush,
    /// Being torn down this turn.
    Closing,
}

pub struct Connection {
    pub id: ConnId,
    pub kind: Kind,
    pub life: Life,
    transport: Transport,
    pub rbuf: BytesMut,
    pub wbuf: BytesMut,
    /// Already on the pending-write list this turn.
    pub write_pending: bool,
    /// On the revisit list (`Conns::revisit`): read again before the turn ends. A flag, so
    /// that asking costs O(1) however many connections wait there.
    pub revisit: bool,
    /// Bytes read from and written to the socket, for `/metrics`.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The engine holds this connection's GRAB: serve nothing more from it until answered.
    pub paused: bool,
    /// The socket became readable (or hung up) while paused: read it when resumed.
    pub read_deferred: bool,
    /// The write buffer holds a lazy reply waiting to share a write (on `Conns::corked`).
    pub corked: bool,
    /// Unsent bytes as last counted toward `--max-total-output` (output_bound.rs).
    pub counted: usize,
    /// Not read because of `--max-total-output` until its peer reads.
    pub output_held: bool,
    /// Who the peer is, for the gate (gate.rs).
    pub access: Peer,
    /// From beyond loopback, and no request of it has reached the gate yet: it holds one of
    /// the slots `--max-unserved-connections` allows (door.rs).
    pub unserved: bool,
}

/// What a read pass found.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadStatus {
    /// The socket has nothing more for now.
    Drained,
    /// Reading stopped at the buffer cap; more may be waiting in the socket.
    Capped,
    /// The peer closed its side.
    Eof,
}

impl Connection {
    /// A Gearman connection on an accepted socket (over TLS when `tls` is given), registered
    /// for readability at `token`.
    pub fn accept(
        stream: TcpStream,
        id: ConnId,
        (registry, token): (&Registry, Token),
        tls: Option<TlsSession>,
        access: Peer,
    ) -> io::Result<Connection> {
        let mut transport = match tls {
            None => Transport::plain(stream),
            #[cfg(feature = "tls")]
            Some(session) => Transport::tls(stream, session),
            #[cfg(not(feature = "tls"))]
            Some(never) => match never {},
        };
        transport.register(registry, token)?;
        Ok(Connection {
            id,
            kind: Kind::Gearman,
            life: Life::Open,
            transport,
            rbuf: BytesMut::new(),
            wbuf: BytesMut::new(),
            write_pending: false,
            revisit: false,
            bytes_in: 0,
            bytes_out: 0,
            paused: false,
            read_deferred: false,
            corked: false,
            counted: 0,
            output_held: false,
            access,
            unserved: false,
        })
    }

    /// The HTTP state of an HTTP connection.
    pub fn http(&self) -> Option<&HttpConn> {
        match &self.kind {
            Kind::Http(h) => Some(h),
            Kind::Gearman => None,
        }
    }

    pub fn http_mut(&mut self) -> Option<&mut HttpConn> {
        match &mut self.kind {
            Kind::Http(h) => Some(h),
            Kind::Gearman => None,
        }
    }

    pub fn is_http(&self) -> bool {
        matches!(self.kind, Kind::Http(_))
    }

    /// Still read and served: neither closing nor waiting to close.
    pub fn serving(&self) -> bool {
        self.life < Life::CloseAfterFlush
    }

    pub fn closing(&self) -> bool {
        self.life == Life::Closing
    }

    /// The peer shut its side (and the connection is not yet closing).
    pub fn read_closed(&self) -> bool {
        self.life == Life::ReadClosed
    }

    /// The peer's end came: serve what is buffered.
    pub fn set_read_closed(&mut self) {
        self.life = self.life.max(Life::ReadClosed);
    }

    /// Read no more; close once everything is written.
    pub fn close_after_flush(&mut self) {
        self.life = self.life.max(Life::CloseAfterFlush);
    }

    /// Marked for closing at the end of this turn; false if it already was.
    pub fn set_closing(&mut self) -> bool {
        let was = self.life == Life::Closing;
        self.life = Life::Closing;
        !was
    }

    /// Waiting to close, and everything is written.
    pub fn flushed_to_close(&self) -> bool {
        self.life == Life::CloseAfterFlush && !self.has_unsent()
    }

    /// Bytes wait for the socket: in the write buffer or in the transport.
    pub fn has_unsent(&self) -> bool {
        !self.wbuf.is_empty() || self.transport.holds_output()
    }

    /// Ask the poller for writability exactly while bytes wait for the socket.
    pub fn update_interest(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let want = self.has_unsent();
        self.transport.want_writable(registry, token, want)
    }

    pub fn deregister(&mut self, registry: &Registry) {
        self.transport.deregister(registry);
    }

    /// The peer's address, as accepted.
    pub fn peer(&self) -> SocketAddr {
        self.access.peer()
    }

    /// Who the peer is for the access list: `cn:NAME` once its client certificate named it,
    /// else `addr:IP`.
    pub fn identity(&self) -> Cow<'_, Identity> {
        match self.transport.identity() {
            Some(named) => Cow::Borrowed(named),
            None => Cow::Owned(Identity::Addr(self.access.ip())),
        }
    }

    /// The client certificate's name becomes the peer's identity (TLS connections only).
    pub fn name_peer(&mut self, identity: Identity) {
        self.transport.set_identity(identity);
    }

    /// The TLS handshake's deadline while it runs (tls_glue.rs).
    pub fn handshake_deadline(&self) -> Option<TimerKey> {
        self.transport.handshake_deadline()
    }

    pub fn set_handshake_deadline(&mut self, key: Option<TimerKey>) {
        self.transport.set_handshake_deadline(key);
    }

    pub fn fd(&self) -> i32 {
        self.transport.fd()
    }

    /// The poller said the peer hung up (or the socket has an error).
    pub fn hung_up(&self) -> bool {
        self.transport.hung_up()
    }

    pub fn set_hung_up(&mut self) {
        self.transport.set_hung_up();
    }

    pub fn is_tls(&self) -> bool {
        self.transport.is_tls()
    }

    /// A TLS handshake is under way.
    pub fn handshaking(&self) -> bool {
        self.transport.handshaking()
    }

    /// The client certificate's name once a TLS handshake is done (`None` without one).
    pub fn peer_name(&self) -> Option<&str> {
        self.transport.peer_name()
    }

    /// A plaintext connection whose first byte is a TLS handshake record's (0x16): a TLS
    /// client on a plaintext port.
    pub fn starts_with_tls_handshake(&self) -> bool {
        !self.is_tls()
            && self.bytes_in == self.rbuf.len() as u64
            && self.rbuf.first() == Some(&0x16)
    }

    /// Why a TLS session failed, as a metrics label.
    pub fn tls_failure(&self) -> Option<&'static str> {
        self.transport.failure()
    }

    /// With `unnamed_certificate`: why the client certificate names no one.
    pub fn tls_refusal(&self) -> Option<&'static str> {
        self.transport.refusal()
    }

    /// Shut our sending side; the peer's bytes may still be read.
    pub fn shutdown_write(&mut self) {
        self.transport.shutdown_write();
    }

    /// A peer protected mode refuses (on a TLS listener that asks no client certificate,
    /// refused once its handshake ends) is read no further than its handshake needs: a byte
    /// of what follows at most, never a request. Once refused, an HTTP connection's lingering
    /// close reads on, into a buffer it empties after each read.
    fn unserved_cap(&self, cap: usize) -> usize {
        let lingering = self.http().is_some_and(|h| h.lingering);
        if self.access.protected && !lingering {
            cap.min(1)
        } else {
            cap
        }
    }

    /// Read what the socket has until the buffer holds `cap` bytes: HTTP, where the frame
    /// lengths of `fill` do not apply and the caller knows how much one request needs.
    pub fn fill_upto(&mut self, cap: usize) -> io::Result<ReadStatus> {
        let cap = self.unserved_cap(cap);
        loop {
            if self.rbuf.len() >= cap {
                return Ok(ReadStatus::Capped);
            }
            if cap > READ_CAP && self.rbuf.capacity() < cap {
                self.rbuf.reserve((cap - self.rbuf.len()).min(RESERVE_STEP));
            }
            if let Some(done) = self.read_some(cap - self.rbuf.len())? {
                return Ok(done);
            }
        }
    }

    /// Read what the socket has, up to the cap.
    pub fn fill(&mut self, limits: &Limits) -> io::Result<ReadStatus> {
        loop {
            if self.access.protected && !self.rbuf.is_empty() {
                return Ok(ReadStatus::Capped);
            }
            let cap = match frame_len(&self.rbuf) {
                // An oversized header is left for the decoder to refuse; nothing more is read.
                Some(n) if n > limits.max_packet + HEADER_LEN => return Ok(ReadStatus::Capped),
                Some(n) => {
                    // Grow toward the declared size as bytes arrive, never ahead of them by
                    // more than a step: a bare header must not pin megabytes per connection.
                    if self.rbuf.capacity() < n {
                        self.rbuf.reserve((n - self.rbuf.len()).min(RESERVE_STEP));
                    }
                    n.max(READ_CAP)
                }
                None => READ_CAP,
            };
            if self.rbuf.len() >= cap {
                return Ok(ReadStatus::Capped);
            }
            if let Some(done) = self.read_some(cap - self.rbuf.len())? {
                return Ok(done);
            }
        }
    }

    /// One read of at most `want` bytes into the read buffer. `Some` ends the pass: EOF, or
    /// nothing left in the socket. A short read counts as nothing left: with edge-triggered
    /// polling, bytes that arrive later raise a new event, so the read that would only say
    /// EAGAIN is saved (half of all reads, measured); after a hang-up reads go on to EOF.
    fn read_some(&mut self, want: usize) -> io::Result<Option<ReadStatus>> {
        SCRATCH.with(|scratch| {
            let mut chunk = scratch.borrow_mut();
            let want = want.min(chunk.len());
            loop {
                match self.transport.read(&mut chunk[..want]) {
                    Ok(0) => return Ok(Some(ReadStatus::Eof)),
                    Ok(n) => {
                        self.bytes_in += n as u64;
                        self.rbuf.extend_from_slice(&chunk[..n]);
                        let short = n < want && self.transport.short_read_drains();
                        return Ok(short.then_some(ReadStatus::Drained));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return Ok(Some(ReadStatus::Drained));
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        })
    }

    /// Write as much of the write buffer as the socket takes.
    pub fn flush(&mut self) -> io::Result<()> {
        while !self.wbuf.is_empty() {
            match self.transport.write(&self.wbuf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.bytes_out += n as u64;
                    self.wbuf.advance(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if self.life == Life::CloseAfterFlush {
            // The last answer is in the transport: under TLS, end the session cleanly after
            // it, so that the peer can tell the end from a cut (a close without close_notify
            // is an error to a TLS client).
            self.transport.end_session();
        }
        self.transport.flush()?;
        if self.wbuf.capacity() > KEEP_CAPACITY {
            self.wbuf = BytesMut::new();
        }
        Ok(())
    }

    /// Give a large read buffer back once it is empty, so idle connections stay small.
    pub fn release_idle_buffer(&mut self) {
        if self.rbuf.is_empty() && self.rbuf.capacity() > KEEP_CAPACITY {
            self.rbuf = BytesMut::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::*;

    /// mio's `TcpStream` carries a selector id in debug builds (`cargo test`): what it adds to
    /// a struct holding one, beyond the release build's 4-byte descriptor.
    fn debug_socket_extra() -> usize {
        (size_of::<TcpStream>() - size_of::<i32>()).next_multiple_of(8)
    }

    /// Every connection, a thousand idle ones too, has one in the reactor's slab (and the slab
    /// doubles as it grows, so a byte here costs about two in `benches/compare.sh`'s idle bytes
    /// per connection). It was 112 bytes before connections got one kind and transport and grew to 256 with the
    /// peer's `SocketAddr` twice, the gate's `Access` with a `String`-carrying identity and the
    /// TLS handshake's deadline inline. Now: buffers, counters, the gate's 24-byte `Peer`
    /// (address, flags, denials), the output bound's count and one pointer for everything
    /// TLS; an HTTP connection's state is behind `Kind::Http`'s pointer. Raise this bound only
    /// for something every plaintext connection needs, and say so.
    #[test]
    fn a_connection_stays_small() {
        assert!(
            size_of::<Connection>() <= 152 + debug_socket_extra(),
            "Connection is {} bytes",
            size_of::<Connection>()
        );
        assert!(size_of::<Transport>() <= 16 + debug_socket_extra());
        assert!(size_of::<crate::access::peer::Peer>() <= 24);
        assert_eq!(size_of::<Kind>(), size_of::<usize>());
    }
}
