//! What a peer can leave behind in the server's memory: a tiny job must not keep
//! the read buffer it arrived in, and names of functions nobody uses are bounded
//! (`--max-idle-functions`). Memory is read from /proc/PID/status of the real server.

use crate::support;

use support::*;

/// The server's anonymous resident memory (heap and buffers), in kB.
fn rss_anon_kb(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("RssAnon in /proc/PID/status")
}

/// One write: a 200 KiB ECHO_REQ and, behind it, a background job of one byte.
fn echo_then_tiny_job(c: &mut Conn, echo: &[u8], i: usize) {
    let mut bytes = req(t::ECHO_REQ, &[echo]);
    let unique = format!("tiny-{i}");
    bytes.extend(req(t::SUBMIT_JOB_BG, &[b"pinned", unique.as_bytes(), b"x"]));
    c.send(&bytes);
    assert_eq!(c.expect(t::ECHO_RES).len(), echo.len());
    c.expect(t::JOB_CREATED);
}

#[test]
fn a_tiny_job_does_not_keep_the_read_buffer_it_arrived_in() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let echo = vec![b'e'; 200 * 1024];
    for i in 0..20 {
        echo_then_tiny_job(&mut c, &echo, i);
    }
    let before = rss_anon_kb(&s);
    for i in 20..320 {
        echo_then_tiny_job(&mut c, &echo, i);
    }
    let grown = rss_anon_kb(&s).saturating_sub(before);
    eprintln!("300 one-byte jobs behind 200 KiB echoes: RssAnon grew {grown} kB");
    // Each job used to keep its whole read buffer: 300 jobs held some 60 MB. Owned, they are
    // a few hundred bytes each.
    assert!(
        grown < 8 * 1024,
        "300 one-byte jobs grew the server by {grown} kB"
    );
    assert!(
        c.admin("status", true).contains("pinned\t320\t0\t0\n"),
        "the jobs are all still queued"
    );
}

#[test]
fn names_from_workers_that_left_are_bounded_and_their_memory_given_back() {
    // The idle trim hands freed heap back to the OS after a quiet second; idle names past
    // --max-idle-functions are forgotten.
    let s = Server::start(&["--idle-trim", "1", "--max-idle-functions", "1000"]);
    let mut a = s.connect();
    assert_eq!(a.admin("status", true), ".\n");
    let before = rss_anon_kb(&s);
    let mut peak = 0;
    for round in 0..10 {
        let mut w = s.connect();
        let names: Vec<String> = (0..10_000)
            .map(|i| format!("a-function-name-of-some-length-{round}-{i}"))
            .collect();
        let mut bytes = Vec::new();
        for n in &names {
            bytes.extend(req(t::CAN_DO, &[n.as_bytes()]));
        }
        w.send(&bytes);
        w.send_req(t::ECHO_REQ, &[b"sync"]);
        w.expect(t::ECHO_RES);
        if round == 9 {
            peak = rss_anon_kb(&s);
        }
        drop(w);
    }
    // All but 1,000 of the last worker's are gone once their workers are (the last close may
    // take a moment).
    wait_admin(&mut a, "status", true, 5, |r| {
        r.lines().count() == 1001 && r.lines().all(|l| l == "." || l.contains("-9-"))
    });
    let end = std::time::Instant::now() + std::time::Duration::from_secs(6);
    let mut after = rss_anon_kb(&s);
    while after >= before + 4 * 1024 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = rss_anon_kb(&s);
    }
    eprintln!(
        "100,000 names: RssAnon {before} kB before, {peak} kB with the last 10,000, {after} kB after"
    );
    assert!(
        after < before + 4 * 1024,
        "memory not given back: {before} kB before, {after} kB after"
    );
}
