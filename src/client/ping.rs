//! A ping to a gearwheel server's HTTP port (`/ping/ID[/WHAT]`): one blocking POST on a
//! connection of its own (plain, or TLS for an `https://` server), with a deadline, for
//! `gearwheel ping`. The answer's status is all it reads.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::ClientTls;
use super::stream::Stream;

/// The most of an answer read: its status line is all that matters.
const MAX_ANSWER: usize = 16 * 1024;

/// Where pings go: `[http://|https://]HOST[:PORT][/PREFIX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PingServer {
    pub tls: bool,
    /// `HOST:PORT`, as connected to.
    pub authority: String,
    /// The host alone, for the `Host` header and the certificate's name.
    pub host: String,
    /// A path the server is reached under (a reverse proxy's), without a trailing `/`.
    pub prefix: String,
}

impl PingServer {
    /// `127.0.0.1:8080`, `http://jobs:8080`, `https://jobs.example.net/gearwheel`. Without a
    /// port: 80, or 443 for https.
    pub fn parse(text: &str) -> Result<PingServer, String> {
        let (tls, rest) = if let Some(r) = text.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = text.strip_prefix("http://") {
            (false, r)
        } else if text.contains("://") {
            return Err(format!("{text}: use http:// or https://"));
        } else {
            (false, text)
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(format!("{text}: no host"));
        }
        // A port is what follows the last colon, unless that colon is inside [IPv6].
        let has_port = authority
            .rfind(':')
            .is_some_and(|i| !authority[i..].contains(']'));
        let (host, authority) = if has_port {
            let i = authority.rfind(':').unwrap_or(authority.len());
            let port = &authority[i + 1..];
            if port.parse::<u16>().is_err() {
                return Err(format!("{text}: {port:?} is not a port"));
            }
            (authority[..i].to_string(), authority.to_string())
        } else {
            let port = if tls { 443 } else { 80 };
            (authority.to_string(), format!("{authority}:{port}"))
        };
        Ok(PingServer {
            tls,
            authority,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// The request target of a ping: `PREFIX/ping/ID[/WHAT]`, the id percent-encoded.
    pub fn target(&self, id: &str, what: &str) -> String {
        let mut t = format!("{}/ping/", self.prefix);
        for b in id.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                t.push(b as char);
            } else {
                t.push_str(&format!("%{b:02X}"));
            }
        }
        if !what.is_empty() {
            t.push('/');
            t.push_str(what);
        }
        t
    }
}

/// One ping: POST `body` to `/ping/ID[/WHAT]` and return the answer's status code.
pub fn send(
    server: &PingServer,
    tls: Option<&ClientTls>,
    token: Option<&str>,
    (id, what): (&str, &str),
    body: &[u8],
    timeout: Duration,
) -> io::Result<u16> {
    let addr = server
        .authority
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let tls = if server.tls {
        Some(tls.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "https needs a TLS build")
        })?)
    } else {
        None
    };
    let mut s = Stream::open(tcp, &server.host, tls, timeout)?;
    let _ = s.tcp().set_read_timeout(Some(timeout));
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
        server.target(id, what),
        server.authority,
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()?;
    let mut answer = Vec::with_capacity(256);
    let mut buf = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < MAX_ANSWER {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    status(&answer).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an HTTP answer"))
}

/// The status code of an answer's first line (`HTTP/1.1 200 OK`).
fn status(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    if !words.next()?.starts_with("HTTP/1.") {
        return None;
    }
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_as_written() {
        let s = PingServer::parse("127.0.0.1:8080").unwrap();
        assert_eq!(
            (
                s.tls,
                s.authority.as_str(),
                s.host.as_str(),
                s.prefix.as_str()
            ),
            (false, "127.0.0.1:8080", "127.0.0.1", "")
        );
        let s = PingServer::parse("https://jobs.example.net/gw/").unwrap();
        assert_eq!(
            (
                s.tls,
                s.authority.as_str(),
                s.host.as_str(),
                s.prefix.as_str()
            ),
            (true, "jobs.example.net:443", "jobs.example.net", "/gw")
        );
        let s = PingServer::parse("http://[::1]:81").unwrap();
        assert_eq!((s.authority.as_str(), s.host.as_str()), ("[::1]:81", "::1"));
        let s = PingServer::parse("http://[::1]").unwrap();
        assert_eq!(s.authority, "[::1]:80");
        assert!(PingServer::parse("ftp://x").is_err());
        assert!(PingServer::parse("x:http").is_err());
        assert!(PingServer::parse("http://").is_err());
        assert_eq!(
            s.target("backup db/1", "3"),
            "/ping/backup%20db%2F1/3".to_string()
        );
        assert_eq!(s.target("a.b", ""), "/ping/a.b");
    }

    #[test]
    fn status_lines() {
        assert_eq!(status(b"HTTP/1.1 200 OK\r\n\r\n"), Some(200));
        assert_eq!(status(b"HTTP/1.0 404 Not Found\r\n"), Some(404));
        assert_eq!(status(b"SSH-2.0\r\n"), None);
        assert_eq!(status(b""), None);
    }
}
