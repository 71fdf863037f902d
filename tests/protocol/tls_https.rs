//! HTTPS answers over real loopback sockets: a refusal after long pipelined answers arrives
//! whole before the close, across the sizes where the socket fills.

#![cfg(feature = "tls")]

use crate::support;
use crate::tls_server::client_tls;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use gearwheel::tls::{ClientStream, ClientTls};
use support::*;

/// One HTTPS connection, its handshake done.
fn https_connect(addr: SocketAddr, tls: &ClientTls) -> ClientStream {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut s = tls.wrap("127.0.0.1", tcp).unwrap();
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    s
}

/// The server's count of HTTP responses with `code`, from /metrics.
fn responses(addr: SocketAddr, tls: &ClientTls, code: u16) -> u64 {
    let mut s = https_connect(addr, tls);
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = Vec::new();
    // The answer ends with a close_notify, so the end is a clean one to rustls.
    s.read_to_end(&mut body)
        .expect("a clean TLS end after Connection: close");
    let body = String::from_utf8_lossy(&body);
    let line = format!("gearman_http_responses_total{{code=\"{code}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&line))
        .map_or(0, |n| n.parse().unwrap())
}

/// What loopback takes from one writer before it blocks while its peer does not read: the
/// window inside which a TLS session, not the write buffer, holds the tail of the output.
fn loopback_capacity() -> usize {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _peer = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    // About a TLS record's size, as the server writes them.
    let chunk = vec![0u8; 16 * 1024 + 22];
    let mut n = 0;
    loop {
        match s.write(&chunk) {
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return n,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_closing_error_after_long_answers_arrives_whole_over_https() {
    // Pipelined GETs and then a request that is refused and closes the connection, from a
    // client that reads only after the refusal: the server half-closes once nothing waits
    // for the socket. Over TLS that includes the records the session still holds (up to
    // 64 KiB) once the socket is full; a half-close before they are sent cut off the end of
    // the answers and the refusal. Where that happens depends on what the socket takes, so
    // the sizes sweep across it. (The sweep also caught a full session that stalled the
    // output once the client read: src/tls/stream.rs, `write`.)
    let ca = TestCa::new("srv-linger");
    let cert = ca.server("gearwheel");
    let server = start_tls(&cert, &["--ssl", "--http-port", "0"]);
    let addr = http_addr(&server);
    let tls = client_tls(&ca.ca(), None);
    // A response whose body is as long as its Content-Length says.
    let whole = |r: &str| {
        let Some((head, body)) = r.split_once("\r\n\r\n") else {
            return false;
        };
        head.lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .is_some_and(|n| n.parse() == Ok(body.len()))
    };
    let get = b"GET /ui/console.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let one = {
        let mut s = https_connect(addr, &tls);
        s.write_all(b"GET /ui/console.js HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v)
            .expect("a clean TLS end (close_notify) after Connection: close");
        assert!(whole(&String::from_utf8_lossy(&v)), "{}", v.len());
        // The same answer kept open is one `Connection: close` line shorter.
        v.len() - "Connection: close\r\n".len()
    };
    let window = 64 * 1024;
    let capacity = loopback_capacity();
    let from = capacity.saturating_sub(2 * window) / one;
    let to = (capacity + 3 * window) / one + 1;
    for n in from..=to {
        let refused = responses(addr, &tls, 400);
        let mut s = https_connect(addr, &tls);
        let mut ask = get.repeat(n);
        ask.extend_from_slice(b"NOT HTTP\r\n\r\n");
        s.write_all(&ask).unwrap();
        wait_until(10, "the refusal", || responses(addr, &tls, 400) > refused);
        let mut got = Vec::new();
        // Whether the server's last word is a close_notify (after a half-close) or not (a
        // plain close once all is sent) does not matter here: the bytes do.
        let end = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        let answers = text.matches("HTTP/1.1 200 OK").count();
        let last = text.rfind("HTTP/1.1 ").unwrap();
        assert!(
            answers == n && whole(&text[last..]),
            "{n} answers and a refusal ({} bytes) cut off after {} bytes ({end:?}): {answers} answers, last {:?}",
            n * one,
            got.len(),
            &text[last..text.len().min(last + 200)]
        );
        assert!(
            text[last..].starts_with("HTTP/1.1 400"),
            "{}",
            &text[last..]
        );
    }
}
