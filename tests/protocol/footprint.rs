//! The idle trim (src/footprint.rs) on a real server: after start-up, and after a quiet spell,
//! the server unmaps the code it ran and still serves. The timing rules themselves are unit
//! tests beside `IdleTrim`, with a manual clock.

use crate::support;

use std::time::Duration;

use support::*;

/// A server logging at DEBUG, where the trims are logged.
fn debug_server(extra: &[&str]) -> Server {
    let mut args = vec!["serve", "-p", "0", "--verbose", "DEBUG"];
    args.extend_from_slice(extra);
    Server::start_args(&args)
}

/// The server's file-backed resident pages, in kB, from /proc.
fn rss_file_kb(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssFile:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("RssFile in /proc/PID/status")
}

fn echo_works(s: &Server) {
    let mut c = s.connect();
    c.send_req(t::ECHO_REQ, &[b"still here"]);
    assert_eq!(c.expect(t::ECHO_RES), b"still here");
}

#[test]
fn start_up_pages_are_unmapped_at_the_first_sleep() {
    let trimmed = debug_server(&[]);
    trimmed.wait_log("idle trim:", 10);
    let kept = Server::start(&["--idle-trim", "0"]);
    // Let the untrimmed server reach its first sleep too: after "started" its one thread
    // blocks only in poll (state S in /proc/PID/stat).
    kept.wait_log("started", 10);
    wait_until(10, "the untrimmed server to sleep", || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", kept.child.id())).unwrap();
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('S'))
    });
    let (a, b) = (rss_file_kb(&trimmed), rss_file_kb(&kept));
    assert!(
        a * 4 < b * 3,
        "trimmed server maps {a} kB of files, untrimmed {b} kB"
    );
    assert!(!kept.log().contains("idle trim"));
    echo_works(&trimmed);
}

#[test]
fn a_quiet_spell_after_work_trims_again_once() {
    let s = debug_server(&["--idle-trim", "1"]);
    s.wait_log("idle trim:", 10);
    echo_works(&s);
    let trims = || s.log().matches("idle trim:").count();
    wait_until(10, "a trim after the quiet spell", || trims() >= 2);
    assert_eq!(trims(), 2, "one trim at start, one after the quiet spell");
    // Idle now: no further trim (no wake-up) without new events. Wall time on purpose: this is
    // a real process that does not wake, which only a stretch of real time can show (an
    // in-process server would trim the test harness's pages, and a manual clock's move is
    // itself a wake-up).
    std::thread::sleep(Duration::from_millis(1500));
    // The log is read by another thread: a line the server writes after the quiet spell (an
    // unknown packet's WARNING) is the barrier, and every trim of the spell is logged before it.
    let mut bad = s.connect();
    bad.send(&req(99, &[]));
    let barrier = s.log_line("UnknownType(99)", 5);
    let log = s.log();
    let spell = &log[..log.find(&barrier).expect("the barrier line")];
    assert_eq!(spell.matches("idle trim:").count(), 2, "{log}");
    echo_works(&s);
}
