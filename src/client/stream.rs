//! The socket under a blocking client connection: plain TCP, or TLS over it (`--ssl` to a
//! Gearman server, the `--etcd-*` files to etcd), with the handshake bounded by a timeout.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Plain TCP or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::tls::ClientStream>),
}

impl Stream {
    /// TLS over `tcp` when `tls` is given, checked against `host` (the name the server's
    /// certificate must carry) and finished within `timeout`; else `tcp` as it is.
    pub(crate) fn open(
        tcp: TcpStream,
        host: &str,
        tls: Option<&super::ClientTls>,
        timeout: Duration,
    ) -> io::Result<Stream> {
        match tls {
            None => Ok(Stream::Plain(tcp)),
            #[cfg(feature = "tls")]
            Some(tls) => {
                tcp.set_read_timeout(Some(timeout))?;
                tcp.set_write_timeout(Some(timeout))?;
                let mut s = tls
                    .wrap(host, tcp)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                while s.conn.is_handshaking() {
                    s.conn.complete_io(&mut s.sock)?;
                }
                s.sock.set_read_timeout(None)?;
                s.sock.set_write_timeout(None)?;
                Ok(Stream::Tls(Box::new(s)))
            }
            #[cfg(not(feature = "tls"))]
            Some(never) => {
                let _ = (tcp, host, timeout);
                match *never {}
            }
        }
    }

    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "tls")]
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.flush(),
        }
    }
}
