//! `--max-total-output`: peers that ask and never read cannot pile up unsent replies past the
//! bound all together; they stop being read (or, for output other peers cause, the largest are
//! closed), everyone else is served meanwhile, and the memory comes back once they leave.

use crate::support;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use support::*;

const MIB: u64 = 1 << 20;

fn metric(s: &HttpServer, name: &str) -> u64 {
    let text = s.get("/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} in /metrics"))
        .parse()
        .unwrap()
}

fn rss(s: &HttpServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.server.child.id())).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb << 10
}

/// A connection that reads nothing, with a small receive buffer so that what it is sent stays
/// in the server rather than in the kernel.
fn deaf(addr: std::net::SocketAddr) -> TcpStream {
    let c = TcpStream::connect(addr).unwrap();
    support::set_socket_option(&c, libc::SO_RCVBUF, &(4096 as libc::c_int));
    c
}

/// Write `bytes` from a thread (it blocks once the server stops reading); the writes end
/// when the socket is shut down.
fn write_behind(c: &TcpStream, bytes: Vec<u8>, times: usize) -> std::thread::JoinHandle<()> {
    let mut w = c.try_clone().unwrap();
    std::thread::spawn(move || {
        for _ in 0..times {
            if w.write_all(&bytes).is_err() {
                return;
            }
        }
    })
}

/// Sample `f` every 20 ms for `ms`, returning the largest value seen.
fn peak(ms: u64, mut f: impl FnMut() -> u64) -> u64 {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut top = 0;
    while Instant::now() < end {
        top = top.max(f());
        std::thread::sleep(Duration::from_millis(20));
    }
    top
}

#[test]
fn clients_that_never_read_are_held_at_the_bound_and_others_are_served() {
    let s = HttpServer::start(&["--max-total-output", "4194304"]);
    let base = rss(&s);
    // 8 clients each ask 128 echoes of 64 KiB (64 MiB in all) and read none of them.
    let echo = req(t::ECHO_REQ, &[&vec![b'e'; 64 * 1024]]);
    let clients: Vec<TcpStream> = (0..8).map(|_| deaf(s.server.addr)).collect();
    let writers: Vec<_> = clients
        .iter()
        .map(|c| write_behind(c, echo.clone(), 128))
        .collect();
    wait_until(20, "connections held", || {
        metric(&s, "gearman_output_held_connections") >= 1
    });
    let top = peak(1500, || metric(&s, "gearman_output_buffered_bytes"));
    let top_rss = peak(500, || rss(&s));
    // The bound, plus what one read pass (256 KiB, and the echo it completes) adds per
    // connection before it is held; never the twice the bound where closing starts.
    assert!(
        top <= 4 * MIB + 8 * 320 * 1024,
        "unsent bytes peaked at {top}"
    );
    assert!(
        top_rss < base + 40 * MIB,
        "RSS {top_rss} against {base} at start"
    );
    // Someone else is served at once.
    let mut c = s.gearman();
    c.send_req(t::ECHO_REQ, &[b"still here"]);
    assert_eq!(c.expect(t::ECHO_RES), b"still here");
    assert!(c.submit(t::SUBMIT_JOB_BG, "f", "", b"x").starts_with("H:"));
    assert!(metric(&s, "gearman_output_holds_total") >= 1);
    assert_eq!(metric(&s, "gearman_output_closed_total"), 0);
    s.server.wait_log("--max-total-output 4194304 reached", 3);
    // They leave: the count goes to zero and the memory comes back.
    for c in &clients {
        let _ = c.shutdown(Shutdown::Both);
    }
    for w in writers {
        w.join().unwrap();
    }
    drop(clients);
    wait_until(30, "the unsent bytes forgotten", || {
        metric(&s, "gearman_output_buffered_bytes") == 0
            && metric(&s, "gearman_output_held_connections") == 0
    });
    // The trim runs at most once a second and a busy machine delays it: the test is that the
    // memory comes back, not how fast.
    wait_until(30, "the memory given back", || rss(&s) < base + 8 * MIB);
}

#[test]
fn output_other_peers_cause_closes_the_largest_holder_past_twice_the_bound() {
    let s = HttpServer::start(&["--max-total-output", "1048576"]);
    let mut w = worker(&s.server, &["stream"]);
    let client = deaf(s.server.addr);
    (&client)
        .write_all(&req(t::SUBMIT_JOB, &[b"stream", b"", b"go"]))
        .unwrap();
    let (handle, _) = grab(&mut w);
    // The worker streams 16 MiB of WORK_DATA to a client that reads none of it. Nothing stops
    // the worker: it reads its replies, and its output is the client's.
    let chunk = vec![b'd'; 256 * 1024];
    for _ in 0..64 {
        w.send_req(t::WORK_DATA, &[handle.as_bytes(), &chunk]);
    }
    w.send_req(t::ECHO_REQ, &[b"worker"]);
    assert_eq!(w.expect(t::ECHO_RES), b"worker");
    s.server
        .wait_log("hold more than twice --max-total-output 1048576", 10);
    assert_eq!(metric(&s, "gearman_output_closed_total"), 1);
    assert!(metric(&s, "gearman_output_buffered_bytes") <= 2 * MIB);
    // The job goes on, as for any client that left; the worker finishes it unbothered.
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    w.send_req(t::ECHO_REQ, &[b"again"]);
    assert_eq!(w.expect(t::ECHO_RES), b"again");
}
