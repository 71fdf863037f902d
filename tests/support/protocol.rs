//! The protocol tests' helpers over `Conn`: predictable handles, raw packets, ERROR bodies,
//! a sync round trip, workers and grabs.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::gearman::{Conn, Packet, req, t};
use super::server::{Server, Serves};

/// The handle prefix every predictable-handle test uses.
pub const PREFIX: &str = "H:test";

/// A server with `--job-handle-prefix H:test` plus `extra`.
pub fn server(extra: &[&str]) -> Server {
    let mut args = vec!["--job-handle-prefix", PREFIX];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// `H:test:n`.
pub fn h(n: u32) -> String {
    format!("{PREFIX}:{n}")
}

/// Bytes of a packet with any magic.
pub fn raw_packet(magic: &[u8; 4], ptype: u32, body: &[u8]) -> Vec<u8> {
    let mut v = magic.to_vec();
    v.extend_from_slice(&ptype.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// Join byte strings with NUL.
pub fn body(args: &[&[u8]]) -> Vec<u8> {
    args.join(&0u8)
}

/// Split an ERROR body into (code, text).
pub fn split_error(b: &[u8]) -> (String, String) {
    let mut it = b.splitn(2, |&c| c == 0);
    let code = String::from_utf8_lossy(it.next().unwrap_or_default()).to_string();
    let text = String::from_utf8_lossy(it.next().unwrap_or_default()).to_string();
    (code, text)
}

/// Read an ERROR packet and check its exact code and text.
pub fn expect_error(c: &mut Conn, code: &str, text: &str) {
    let b = c.expect(t::ERROR);
    assert_eq!(
        split_error(&b),
        (code.to_string(), text.to_string()),
        "ERROR body {:?}",
        String::from_utf8_lossy(&b)
    );
}

/// Read an ERROR packet, check its code, return its text.
pub fn expect_error_code(c: &mut Conn, code: &str) -> String {
    let b = c.expect(t::ERROR);
    let (got, text) = split_error(&b);
    assert_eq!(got, code, "ERROR body {:?}", String::from_utf8_lossy(&b));
    text
}

/// An ECHO round trip: proves the connection is open, in sync, and that everything sent
/// before it has been processed by the server.
pub fn sync(c: &mut Conn) {
    let tag = format!("sync-{:?}", Instant::now());
    c.send_req(t::ECHO_REQ, &[tag.as_bytes()]);
    let p = c.read_packet();
    assert_eq!(
        (p.ptype, p.body.as_slice()),
        (t::ECHO_RES, tag.as_bytes()),
        "expected the ECHO_RES of a sync, got {p:?}"
    );
}

/// Read one packet with a short timeout: `None` if nothing came.
pub fn read_within(c: &mut Conn, ms: u64) -> Option<Packet> {
    c.read_within(ms)
}

/// Did a NOOP arrive within `ms`? Anything else is a failure.
pub fn got_noop(c: &mut Conn, ms: u64) -> bool {
    match read_within(c, ms) {
        None => false,
        Some(p) if p.ptype == t::NOOP && p.body.is_empty() => true,
        Some(p) => panic!("expected NOOP or nothing, got {p:?}"),
    }
}

/// Register functions and wait until the server has taken them.
pub fn worker(s: &impl Serves, funcs: &[&str]) -> Conn {
    let mut w = s.connect();
    w.can_do(funcs);
    sync(&mut w);
    w
}

/// Send a WORK_* packet from a worker.
pub fn work(c: &mut Conn, ptype: u32, handle: &str, args: &[&[u8]]) {
    let mut v: Vec<&[u8]> = vec![handle.as_bytes()];
    v.extend_from_slice(args);
    c.send_req(ptype, &v);
}

/// Body `HANDLE\0rest...`.
pub fn hb(handle: &str, rest: &[&[u8]]) -> Vec<u8> {
    let mut v: Vec<&[u8]> = vec![handle.as_bytes()];
    v.extend_from_slice(rest);
    body(&v)
}

/// GRAB_JOB (plain); returns (handle, func, data).
pub fn grab_plain(c: &mut Conn) -> Option<(String, String, Vec<u8>)> {
    c.send_req(t::GRAB_JOB, &[]);
    let p = c.read_packet();
    match p.ptype {
        t::NO_JOB => None,
        t::JOB_ASSIGN => {
            let mut it = p.body.splitn(3, |&b| b == 0);
            let s = |x: Option<&[u8]>| String::from_utf8_lossy(x.unwrap_or_default()).to_string();
            let (h, f) = (s(it.next()), s(it.next()));
            Some((h, f, it.next().unwrap_or_default().to_vec()))
        }
        other => panic!("unexpected reply to GRAB_JOB: {other} {p:?}"),
    }
}

/// Has the server closed this raw stream? Reads until EOF/reset or timeout.
pub fn closed_within(stream: &mut TcpStream, ms: u64) -> bool {
    use std::io::Read;
    stream
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Send raw bytes on a raw stream.
pub fn send_raw(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).expect("send");
}

/// A SUBMIT_JOB_BG request, for pipelining.
pub fn submit_bg_bytes(func: &str, unique: &str, data: &[u8]) -> Vec<u8> {
    req(
        t::SUBMIT_JOB_BG,
        &[func.as_bytes(), unique.as_bytes(), data],
    )
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
