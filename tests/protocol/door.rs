//! What a peer costs before it is served, over real sockets, with far peers from an address
//! of a network namespace of the test's own (support/netns.rs): protected mode refuses at
//! accept, before a byte is read, so a refused peer that sends a huge request costs no
//! memory; silent connections from beyond loopback hold only the slots
//! `--max-connections-per-address` and `--max-unserved-connections` give them, and loopback
//! clients are served beside them; accept failing at the descriptor limit is logged once a
//! minute, not once per client.

use crate::support;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::netns::{self, FAR, FAR2, far, near, stream_from};
use support::*;

/// The server's resident memory, in kB (`VmRSS` of /proc/PID/status).
fn rss_kb(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Is this far connection still open (the server has taken it) or closed (refused)? Asked
/// after a barrier: the server has acted on its accept.
fn open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    let open = match (&mut &*s).read(&mut b) {
        Ok(0) => false,
        Ok(n) => panic!("the server said {:?} to a silent peer", &b[..n]),
        Err(e) if e.kind() == ErrorKind::WouldBlock => true,
        Err(_) => false,
    };
    s.set_nonblocking(false).unwrap();
    open
}

/// Write `head` then `body_len` bytes of body as fast as the server takes them, until done or
/// refused; how many bytes went.
fn flood(mut s: TcpStream, head: Vec<u8>, body_len: usize) -> usize {
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    if s.write_all(&head).is_err() {
        return 0;
    }
    while sent < body_len {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    sent
}

/// One loopback round trip: a new connection, an ECHO answered; how long it took.
fn near_echo(port: u16) -> Duration {
    let t = Instant::now();
    let mut c = Conn::connect(near(port));
    c.send_req(t::ECHO_REQ, &[b"near"]);
    assert_eq!(c.expect(t::ECHO_RES), b"near");
    t.elapsed()
}

#[test]
fn protected_mode_refuses_at_accept_and_a_refused_peer_costs_no_memory() {
    if !netns::inside(
        module_path!(),
        "protected_mode_refuses_at_accept_and_a_refused_peer_costs_no_memory",
    ) {
        return;
    }
    let s = Server::start(&["-L", "0.0.0.0", "--http-listen", "0.0.0.0:0"]);
    let (port, http) = (s.port(), http_addr(&s).port());
    // The refusal comes unasked: the far peer has sent nothing.
    let mut g = Conn::from_stream(stream_from(FAR, far(port)));
    let text = expect_error_code(&mut g, "PROTECTED_MODE");
    assert!(text.contains("--acl FILE"), "{text}");
    g.expect_eof();
    let mut h = stream_from(FAR, far(http));
    h.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = String::new();
    h.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 403 "), "{reply}");
    assert!(reply.contains("protected mode"), "{reply}");
    s.wait_log("denied: connection from 10.200.0.1:", 5);

    // Three Gearman peers declare a 60 MiB packet and send 32 MiB of it, and an HTTP one
    // a 60 MiB body it asks leave to send: nothing of theirs is buffered.
    near_echo(port);
    let before = rss_kb(s.pid());
    let mut peers = Vec::new();
    for _ in 0..3 {
        let mut head = b"\0REQ".to_vec();
        head.extend_from_slice(&t::SUBMIT_JOB_BG.to_be_bytes());
        head.extend_from_slice(&(60u32 << 20).to_be_bytes());
        head.extend_from_slice(b"f\0u\0");
        let st = stream_from(FAR, far(port));
        peers.push(std::thread::spawn(move || flood(st, head, 32 << 20)));
    }
    let head = format!(
        "POST /job/f HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        60 << 20
    );
    let st = stream_from(FAR, far(http));
    peers.push(std::thread::spawn(move || {
        flood(st, head.into_bytes(), 32 << 20)
    }));
    let sent: Vec<usize> = peers.into_iter().map(|p| p.join().unwrap()).collect();
    // Every accept is behind us once a later loopback client is served.
    let took = near_echo(port);
    let after = rss_kb(s.pid());
    println!(
        "VmRSS {before} kB before 4 refused peers, {after} kB after; they got {sent:?} bytes into the socket; a loopback round trip after: {took:?}"
    );
    assert!(
        after <= before + 2048,
        "VmRSS grew from {before} to {after} kB\n{}",
        s.log()
    );
    assert!(sent.iter().all(|&n| n < 32 << 20), "{sent:?}");
    // Counted as protected mode's refusals always were.
    let mut m = Http::connect(near(http));
    m.send(&request("GET", "/metrics", &[], b""));
    let want = format!(
        "gearman_access_denied_total{{identity=\"addr:{FAR}\",operation=\"protected_mode\"}} 6"
    );
    let text = m.read().text();
    assert!(text.lines().any(|l| l == want), "{want} not in {text}");
}

#[test]
fn silent_far_connections_leave_room_for_loopback_clients() {
    if !netns::inside(
        module_path!(),
        "silent_far_connections_leave_room_for_loopback_clients",
    ) {
        return;
    }
    // Far peers are served (no protected mode), 64 slots in all: by default half of them
    // may be held by far connections not yet served.
    let s = Server::start(&[
        "-L",
        "0.0.0.0",
        "--protected-mode",
        "no",
        "--max-connections",
        "64",
    ]);
    let port = s.port();
    let mut silent: Vec<TcpStream> = (0..100).map(|_| stream_from(FAR, far(port))).collect();
    // Loopback clients fill the rest, each served at once.
    let mut slowest = Duration::ZERO;
    let mut held = Vec::new();
    for _ in 0..32 {
        let t = Instant::now();
        let mut c = Conn::connect(near(port));
        sync(&mut c);
        slowest = slowest.max(t.elapsed());
        held.push(c);
    }
    println!("32 loopback clients beside 100 silent far ones: the slowest served in {slowest:?}");
    let admitted = silent.iter().filter(|c| open(c)).count();
    assert_eq!(admitted, 32, "{}", s.log());
    s.wait_log("refusing connection from 10.200.0.1:", 5);
    s.wait_log(
        "32 connections from beyond loopback not yet served (--max-unserved-connections)",
        5,
    );
    // A far connection that is served leaves its unserved slot: another far one may come
    // (in a slot loopback clients left: 64 is the most in all).
    let i = silent.iter().position(open).unwrap();
    let mut served = Conn::from_stream(silent.swap_remove(i));
    sync(&mut served);
    held.truncate(held.len() - 3);
    // Once the loopback clients' leaving is seen, a slot is free for the far one.
    wait_until(5, "a loopback client served again", || {
        let mut c = Conn::connect(near(port));
        c.send_req(t::ECHO_REQ, &[b"near"]);
        c.read_within(1000).is_some()
    });
    let next = stream_from(FAR, far(port));
    // The barrier: a later loopback client is served after that accept.
    near_echo(port);
    assert!(open(&next), "{}", s.log());

    // One address may hold only --max-connections-per-address unserved slots.
    let s = Server::start(&[
        "-L",
        "0.0.0.0",
        "--protected-mode",
        "no",
        "--max-connections-per-address",
        "4",
    ]);
    let port = s.port();
    let silent: Vec<TcpStream> = (0..10).map(|_| stream_from(FAR, far(port))).collect();
    let mut other = Conn::from_stream(stream_from(FAR2, far(port)));
    sync(&mut other);
    near_echo(port);
    assert_eq!(silent.iter().filter(|c| open(c)).count(), 4);
    s.wait_log(
        "4 connections from its address not yet served (--max-connections-per-address)",
        5,
    );
    // Closing one gives its address the slot back.
    let mut kept: Vec<TcpStream> = silent.into_iter().filter(open).collect();
    kept.pop();
    wait_until(5, "the closed slot to be given back", || {
        let again = stream_from(FAR, far(port));
        near_echo(port);
        open(&again).then(|| kept.push(again)).is_some()
    });
}

/// Fill the server's descriptor table, keep two clients waiting in the backlog, then let one
/// client leave and another come, five times: each time accept works for one and fails for
/// the next. One line says accept fails, with the count; not one per client.
#[test]
fn accept_failing_at_the_descriptor_limit_is_logged_once_a_minute() {
    const LIMIT: usize = 32;
    let s = Server::start_with_fd_limit(&["--idle-trim", "0"], LIMIT as u64);
    let mut held = Vec::new();
    let mut waiting = std::collections::VecDeque::new();
    // Connect until clients wait in the backlog: the server has failed to accept.
    while !s.log().contains("Too many open files") {
        assert!(
            held.len() < 2 * LIMIT,
            "{} clients and not full",
            held.len()
        );
        let mut c = s.connect();
        c.send_req(t::ECHO_REQ, &[b"w"]);
        match c.read_within(200) {
            Some(_) => held.push(c),
            None => waiting.push_back(c),
        }
    }
    while waiting.len() < 2 {
        let mut c = s.connect();
        c.send_req(t::ECHO_REQ, &[b"w"]);
        waiting.push_back(c);
    }
    for _ in 0..5 {
        drop(held.pop());
        // The first waiting client is accepted and answered; the next still waits.
        let mut first = waiting.pop_front().unwrap();
        assert_eq!(first.expect(t::ECHO_RES), b"w");
        held.push(first);
        let mut c = s.connect();
        c.send_req(t::ECHO_REQ, &[b"w"]);
        waiting.push_back(c);
        sync(&mut held[0]);
    }
    // Room again: the backlog drains, and the server says accepting works again, once.
    drop(waiting);
    held.truncate(held.len().saturating_sub(3));
    s.wait_log("works again", 5);
    let log = s.log();
    let failed = log
        .lines()
        .filter(|l| l.contains("accept on ") && l.contains(" failed: "))
        .count();
    let works = log.matches("works again").count();
    assert_eq!((failed, works), (1, 1), "{log}");
    assert!(log.contains("at most once a minute"), "{log}");
}
