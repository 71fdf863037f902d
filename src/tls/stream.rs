//! One TLS session over a non-blocking socket, server side (an accepted connection) or client
//! side (the cluster's connections to etcd), shaped like the socket itself:
//! `read` gives plaintext or `WouldBlock`, `write` takes plaintext or says `WouldBlock`, so
//! the reactor's transport calls it where it would call the socket, and nothing above the
//! transport (codec, engine) sees TLS.

use std::io::{self, Read, Write};

use rustls::{ClientConnection, Connection, ServerConnection};

use super::name::unnamed;
use super::peer_name;

/// Plaintext rustls holds per direction before `write` says `WouldBlock` (it also bounds what
/// a peer can make the server buffer before the reactor reads it).
const BUFFER_LIMIT: usize = 64 * 1024;

/// A TLS session: the rustls state and, once a server-side handshake is done, the name of
/// the client's certificate.
pub struct TlsStream {
    conn: Connection,
    name: Option<String>,
    handshake_done: bool,
    /// Why the session failed, as a metrics label (see [`failure_reason`]).
    failure: Option<&'static str>,
    /// Why a client certificate was refused for naming no one, in words.
    refusal: Option<&'static str>,
}

impl TlsStream {
    /// A session for an accepted connection (from `ServerTls::accept`).
    pub fn new(conn: ServerConnection) -> TlsStream {
        TlsStream::over(conn.into())
    }

    /// A session for an outgoing connection (its ClientHello goes out at the first flush).
    pub fn client(conn: ClientConnection) -> TlsStream {
        TlsStream::over(conn.into())
    }

    fn over(mut conn: Connection) -> TlsStream {
        conn.set_buffer_limit(Some(BUFFER_LIMIT));
        TlsStream {
            conn,
            name: None,
            handshake_done: false,
            failure: None,
            refusal: None,
        }
    }

    /// Still in the handshake: the reactor closes a session that stays here past the
    /// handshake timeout.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// The client certificate's name (subject CN, else first DNS SAN) once the handshake is
    /// done; `None` before, or without a client certificate.
    pub fn peer_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// TLS records are waiting for the socket to take them (register for writability).
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Plaintext from the peer: `Ok(0)` at the end (close_notify or EOF), `WouldBlock` when
    /// the socket has nothing more, `InvalidData` for bytes that are not TLS or a failed
    /// handshake (the alert is sent on a best-effort basis; the caller closes).
    pub fn read<S: Read + Write>(&mut self, sock: &mut S, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // EOF without close_notify: the peer went away; an end like any other here.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            match self.conn.read_tls(sock) {
                Ok(0) => return Ok(0),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            if let Err(e) = self.conn.process_new_packets() {
                self.failure = Some(failure_reason(&e));
                self.refusal = unnamed(&e).map(|u| u.0);
                let _ = self.flush(sock);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("TLS: {e}"),
                ));
            }
            if !self.handshake_done && !self.conn.is_handshaking() {
                self.handshake_done = true;
                if let Connection::Server(server) = &self.conn {
                    self.name = peer_name(server);
                }
            }
            // Handshake replies go out as they are made, not at the next reply.
            self.flush(sock)?;
        }
    }

    /// Takes what plaintext fits under the buffer limit and sends what the socket takes;
    /// `WouldBlock` when nothing fits until the socket drains.
    pub fn write<S: Read + Write>(&mut self, sock: &mut S, data: &[u8]) -> io::Result<usize> {
        let mut n = self.conn.writer().write(data)?;
        self.flush(sock)?;
        // The buffer was full, and the flush sent all of it: the socket refused nothing, so
        // no writable edge will come to try again (the reactor's polling is edge-triggered).
        // Take the data now. Once only: plaintext buffered before the end of a handshake
        // does not go by a flush.
        if n == 0 && !self.conn.wants_write() {
            n = self.conn.writer().write(data)?;
            self.flush(sock)?;
        }
        if n == 0 && !data.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Sends queued TLS records until the socket would block (`Ok` then too: `wants_write`
    /// says whether records are left).
    pub fn flush<S: Read + Write>(&mut self, sock: &mut S) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Why the session failed (`read` gave `InvalidData`), as a short label: `not_tls`,
    /// `no_client_certificate`, `bad_certificate`, `unnamed_certificate`, `alert`,
    /// `incompatible` or `other` (rustls's own words are in the error `read` gave).
    pub fn failure(&self) -> Option<&'static str> {
        self.failure
    }

    /// For `unnamed_certificate`: why the certificate names no one, in words for the log.
    pub fn refusal(&self) -> Option<&'static str> {
        self.refusal
    }

    /// Queues a close_notify (a clean TLS end) for the next flush.
    pub fn close(&mut self) {
        self.conn.send_close_notify();
    }
}

/// A failed session's reason as a metrics label: bytes that are not TLS, a client without a
/// certificate under mutual TLS, a certificate that does not verify or that names no one, an
/// alert from the peer (it refused ours), nothing in common, or anything else.
fn failure_reason(e: &rustls::Error) -> &'static str {
    use rustls::Error as E;
    if unnamed(e).is_some() {
        return "unnamed_certificate";
    }
    match e {
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => "not_tls",
        E::InappropriateHandshakeMessage { .. } => "not_tls",
        E::NoCertificatesPresented => "no_client_certificate",
        E::InvalidCertificate(_) => "bad_certificate",
        E::AlertReceived(_) => "alert",
        E::PeerIncompatible(_) => "incompatible",
        _ => "other",
    }
}
