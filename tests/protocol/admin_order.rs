//! Pipelined admin lines get their replies in request order, whichever part of the server
//! answers them: the engine (`version`, `getpid`, `status`), or the loop itself (`reload
//! schedules` reads the schedules file, `show journal` the journal), and mixed with binary
//! packets in one write.

use crate::support;

use support::*;

#[test]
fn reload_and_show_journal_answer_in_request_order() {
    let dir = TempDir::new("admin");
    let sched = dir.join("schedules.cron");
    std::fs::write(&sched, "@every 1h tick\n").unwrap();
    let data = dir.join("data");
    let s = Server::start(&[
        "--schedules",
        sched.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let mut c = s.connect();
    c.send(b"reload schedules\nversion\ngetpid\nshow journal\nstatus\nreload schedules\nverbose\n");
    assert_eq!(c.read_text(false), "OK 1\n");
    assert!(c.read_text(false).starts_with("OK 0."));
    let pid = c.read_text(false);
    assert_eq!(pid, format!("OK {}\n", s.child.id()), "getpid third");
    let journal = c.read_text(true);
    assert!(
        journal.starts_with("dir\t"),
        "show journal fourth: {journal:?}"
    );
    assert_eq!(c.read_text(true), ".\n", "status fifth");
    assert_eq!(c.read_text(false), "OK 1\n", "the second reload sixth");
    assert!(c.read_text(false).starts_with("OK "), "verbose last");
}

#[test]
fn a_reload_is_seen_by_the_next_line_and_binary_packets_keep_their_place() {
    let dir = TempDir::new("mixed");
    let sched = dir.join("schedules.cron");
    std::fs::write(&sched, "@every 1h tick\n").unwrap();
    let s = Server::start(&["--schedules", sched.to_str().unwrap()]);
    let mut c = s.connect();
    std::fs::write(&sched, "@every 1h tick\n@every 1h tock\n").unwrap();
    let mut bytes = req(t::ECHO_REQ, &[b"one"]);
    bytes.extend_from_slice(b"reload schedules\n");
    bytes.extend_from_slice(&req(t::SUBMIT_JOB_BG, &[b"fm", b"", b"x"]));
    bytes.extend_from_slice(b"show schedules\r\n");
    bytes.extend_from_slice(b"show journal\n");
    bytes.extend_from_slice(&req(t::ECHO_REQ, &[b"two"]));
    c.send(&bytes);
    assert_eq!(c.expect(t::ECHO_RES), b"one");
    assert_eq!(c.read_text(false), "OK 2\n");
    assert!(!c.expect(t::JOB_CREATED).is_empty());
    let listing = c.read_text(true);
    assert!(
        listing.contains("\ntock\t") || listing.starts_with("tock\t"),
        "the reload came first: {listing:?}"
    );
    assert_eq!(
        c.read_text(false),
        "ERR NO_JOURNAL The+server+runs+without+--data-dir\r\n"
    );
    assert_eq!(c.expect(t::ECHO_RES), b"two");
}
