//! One connection's socket and buffers. Reads are bounded per turn and by the packet limit
//! before any byte of an oversized body is buffered.

use std::io::{self, Read, Write};

use bytes::{Buf, BytesMut};
use mio::net::TcpStream;

use crate::engine::ConnId;
use crate::proto::frame::{HEADER_LEN, Limits, frame_len};

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

pub struct Connection {
    pub stream: TcpStream,
    pub id: ConnId,
    pub rbuf: BytesMut,
    pub wbuf: BytesMut,
    /// Being torn down this turn.
    pub closing: bool,
    /// Read no more; close once the write buffer is empty (after an error reply or EOF).
    pub close_after_flush: bool,
    /// Already on the pending-write list this turn.
    pub write_pending: bool,
    /// The peer shut its side; buffered requests are still served.
    pub read_closed: bool,
    /// An HTTP connection's state; `None` for a Gearman connection.
    pub http: Option<Box<super::http_glue::HttpConn>>,
    /// Bytes read from and written to the socket, for `/metrics`.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The poller said the peer hung up: read until EOF rather than stop at a short read.
    pub hup_seen: bool,
    /// Registered for writability too (a write would have blocked).
    pub write_interest: bool,
    /// The engine holds this connection's GRAB: serve nothing more from it until answered.
    pub paused: bool,
    /// The socket became readable (or hung up) while paused: read it when resumed.
    pub read_deferred: bool,
    /// The write buffer holds a lazy reply waiting to share a write (on `Server::corked`).
    pub corked: bool,
    /// Unsent bytes as last counted toward `--max-total-output` (output_bound.rs).
    pub counted: usize,
    /// Not read because of `--max-total-output` until its peer reads.
    pub output_held: bool,
    /// Who the peer is, for the gate (gate.rs).
    pub access: super::gate::Access,
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
    pub fn new(stream: TcpStream, id: ConnId, access: super::gate::Access) -> Self {
        Connection {
            stream,
            id,
            rbuf: BytesMut::new(),
            wbuf: BytesMut::new(),
            closing: false,
            close_after_flush: false,
            write_pending: false,
            read_closed: false,
            http: None,
            bytes_in: 0,
            bytes_out: 0,
            hup_seen: false,
            write_interest: false,
            paused: false,
            read_deferred: false,
            corked: false,
            counted: 0,
            output_held: false,
            access,
        }
    }

    /// Read what the socket has until the buffer holds `cap` bytes: HTTP, where the frame
    /// lengths of `fill` do not apply and the caller knows how much one request needs.
    pub fn fill_upto(&mut self, cap: usize) -> io::Result<ReadStatus> {
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
                match self.stream.read(&mut chunk[..want]) {
                    Ok(0) => return Ok(Some(ReadStatus::Eof)),
                    Ok(n) => {
                        self.bytes_in += n as u64;
                        self.rbuf.extend_from_slice(&chunk[..n]);
                        let short = n < want && !self.hup_seen;
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
            match self.stream.write(&self.wbuf) {
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
