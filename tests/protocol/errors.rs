//! Errors over real sockets: gearmand's exact ERROR bytes where the connection stays open,
//! and our framing errors, which answer an ERROR and then close.

use crate::support;

use std::net::TcpStream;

use support::*;

#[test]
fn work_results_for_unknown_handles_are_job_not_found() {
    let s = server(&[]);
    let mut w = worker(&s, &["f"]);
    work(&mut w, t::WORK_COMPLETE, "H:nohost:1", &[b"r"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    w.send_req(t::WORK_FAIL, &[b"H:nohost:1"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    work(&mut w, t::WORK_STATUS, "H:nohost:1", &[b"1", b"2"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    work(&mut w, t::WORK_DATA, "H:nohost:1", &[b"d"]);
    expect_error(&mut w, "JOB_NOT_FOUND", "Job does not exist on server");
    work(&mut w, t::WORK_WARNING, "H:nohost:1", &[b"d"]);
    expect_error(&mut w, "JOB_NOT_FOUND", "Job does not exist on server");
    work(&mut w, t::WORK_EXCEPTION, "H:nohost:1", &[b"d"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "An exception was received for a job that does not exist",
    );
    sync(&mut w);
}

#[test]
fn work_results_for_a_job_held_by_another_worker_or_still_queued_are_refused() {
    let s = server(&[]);
    let mut c = s.connect();
    let queued = c.submit(t::SUBMIT_JOB, "f", "q", b"x");
    let mut w1 = worker(&s, &["f"]);
    let mut w2 = worker(&s, &["f"]);
    // A queued job belongs to no worker yet.
    work(&mut w2, t::WORK_COMPLETE, &queued, &[b"r"]);
    expect_error(
        &mut w2,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    let (handle, _, _, _) = w1.grab_uniq().unwrap();
    work(&mut w2, t::WORK_COMPLETE, &handle, &[b"r"]);
    expect_error(
        &mut w2,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    work(&mut w2, t::WORK_DATA, &handle, &[b"r"]);
    expect_error(&mut w2, "JOB_NOT_FOUND", "Job does not exist on server");
    // The owner still can.
    work(&mut w1, t::WORK_COMPLETE, &handle, &[b"ok"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"ok"]));
}

#[test]
fn maxqueue_hit_is_queue_error_for_foreground_and_background() {
    let s = server(&[]);
    let mut c = s.connect();
    assert_eq!(c.admin("maxqueue fq 1", false), "OK\r\n");
    c.submit(t::SUBMIT_JOB, "fq", "a", b"x");
    for p in [
        t::SUBMIT_JOB,
        t::SUBMIT_JOB_BG,
        t::SUBMIT_JOB_HIGH_BG,
        t::SUBMIT_JOB_LOW,
    ] {
        c.send_req(p, &[b"fq", b"b", b"x"]);
        expect_error(&mut c, "QUEUE_ERROR", "Job queue is full");
    }
    // Joining an existing job is not a new job.
    let mut c2 = s.connect();
    assert_eq!(c2.submit(t::SUBMIT_JOB, "fq", "a", b"x"), h(1));
    // Another function is not limited.
    c.submit(t::SUBMIT_JOB_BG, "other", "", b"x");
    sync(&mut c);
}

#[test]
fn maxqueue_per_priority() {
    let s = server(&[]);
    let mut c = s.connect();
    assert_eq!(c.admin("maxqueue fp 3 2 1", false), "OK\r\n");
    c.submit(t::SUBMIT_JOB_BG, "fp", "", b"1");
    // LOW is capped at 1 job in total.
    c.send_req(t::SUBMIT_JOB_LOW_BG, &[b"fp", b"", b"x"]);
    expect_error(&mut c, "QUEUE_ERROR", "Job queue is full");
    c.submit(t::SUBMIT_JOB_BG, "fp", "", b"2");
    c.send_req(t::SUBMIT_JOB_BG, &[b"fp", b"", b"x"]);
    expect_error(&mut c, "QUEUE_ERROR", "Job queue is full");
    c.submit(t::SUBMIT_JOB_HIGH_BG, "fp", "", b"3");
    c.send_req(t::SUBMIT_JOB_HIGH_BG, &[b"fp", b"", b"x"]);
    expect_error(&mut c, "QUEUE_ERROR", "Job queue is full");
}

#[test]
fn response_magic_on_a_request_is_invalid_magic_and_the_connection_stays() {
    let s = server(&[]);
    let mut c = s.connect();
    c.send(&raw_packet(b"\0RES", t::ECHO_REQ, b"hello"));
    let p = c.read_packet();
    assert_eq!(p.magic, *b"\0RES");
    assert_eq!(p.ptype, t::ERROR);
    assert_eq!(p.body, b"INVALID_MAGIC\0Request magic expected");
    sync(&mut c);
    // Any type with the response magic.
    c.send(&raw_packet(b"\0RES", t::SUBMIT_JOB, b"f\0u\0d"));
    expect_error(&mut c, "INVALID_MAGIC", "Request magic expected");
    sync(&mut c);
    assert_eq!(c.admin("status", true), ".\n");
}

#[test]
fn too_few_separators_is_invalid_packet_and_the_stream_stays_in_sync() {
    let s = server(&[]);
    let mut c = s.connect();
    let cases: [(u32, &[u8]); 7] = [
        (t::SUBMIT_JOB, b"fnA\0payload"),
        (t::SUBMIT_JOB_BG, b"fnA"),
        (t::SUBMIT_JOB_EPOCH, b"f\0u\0"),
        (t::SUBMIT_REDUCE_JOB, b"f\0u\0r\0"),
        (t::WORK_COMPLETE, b"H:x:1"),
        (t::WORK_STATUS, b"H:x:1\x001"),
        (t::CAN_DO_TIMEOUT, b"f"),
    ];
    for (ptype, b) in cases {
        // The bad packet and an ECHO in one write: the ECHO must not be eaten.
        let mut bytes = raw_packet(b"\0REQ", ptype, b);
        bytes.extend_from_slice(&req(t::ECHO_REQ, &[b"after"]));
        c.send(&bytes);
        let p = c.read_packet();
        assert_eq!(p.ptype, t::ERROR, "type {ptype}: {p:?}");
        assert_eq!(
            split_error(&p.body).0,
            "INVALID_PACKET",
            "type {ptype}: {p:?}"
        );
        assert_eq!(c.expect(t::ECHO_RES), b"after", "type {ptype}");
    }
    assert_eq!(c.admin("status", true), ".\n");
}

/// A framing error: an ERROR with `code`, then the server closes.
fn expect_error_then_close(c: &mut support::Conn, code: &str) -> String {
    let text = expect_error_code(c, code);
    c.expect_eof();
    text
}

#[test]
fn bad_magic_is_invalid_magic_then_close() {
    let s = server(&[]);
    let mut other = s.connect();
    let mut c = s.connect();
    c.send(&raw_packet(b"\0XYZ", t::ECHO_REQ, b""));
    expect_error_then_close(&mut c, "INVALID_MAGIC");
    sync(&mut other);
    // A short prefix that can never be a magic is refused without waiting for more.
    let mut c = s.connect();
    c.send(b"\0Q");
    expect_error_then_close(&mut c, "INVALID_MAGIC");
    sync(&mut other);
}

#[test]
fn unknown_command_number_is_invalid_command_then_close() {
    let s = server(&[]);
    let mut other = s.connect();
    for n in [0u32, 43, 99, 0xffff_ffff] {
        let mut c = s.connect();
        c.send(&raw_packet(b"\0REQ", n, b""));
        let text = expect_error_then_close(&mut c, "INVALID_COMMAND");
        assert_eq!(text, format!("Unknown command number {n}"));
        sync(&mut other);
    }
}

#[test]
fn declared_length_over_max_packet_size_is_refused_from_the_header() {
    let s = server(&["--max-packet-size", "2048"]);
    let mut other = s.connect();
    // Exactly the limit is fine.
    let big = vec![b'e'; 2048];
    other.send_req(t::ECHO_REQ, &[&big]);
    assert_eq!(other.expect(t::ECHO_RES), big);
    for n in [2049u32, 0xffff_ffff] {
        let mut c = s.connect();
        let mut header = b"\0REQ".to_vec();
        header.extend_from_slice(&t::ECHO_REQ.to_be_bytes());
        header.extend_from_slice(&n.to_be_bytes());
        c.send(&header);
        expect_error_then_close(&mut c, "ARGUMENT_TOO_LARGE");
        sync(&mut other);
    }
}

#[test]
fn admin_line_over_8192_bytes_is_line_too_long_then_close() {
    let s = server(&[]);
    let mut other = s.connect();
    let mut c = s.connect();
    c.send(&[b'a'; 8200]);
    let line = c.read_text(false);
    assert!(line.starts_with("ERR LINE_TOO_LONG"), "{line:?}");
    assert!(line.ends_with("\r\n"), "{line:?}");
    c.expect_eof();
    assert_eq!(
        other.admin("version", false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    // A long line with its newline inside the limit is served.
    let mut c = s.connect();
    let mut line = "version".to_string() + &" ".repeat(4000);
    line.push('x');
    assert_eq!(
        c.admin(&line, false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

#[test]
fn a_framing_error_does_not_disturb_other_connections() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["f"]);
    let handle = c.submit(t::SUBMIT_JOB, "f", "", b"x");
    w.grab_uniq().unwrap();
    let mut bad = TcpStream::connect(s.addr).unwrap();
    send_raw(&mut bad, &raw_packet(b"\0REQ", 99, b""));
    assert!(closed_within(&mut bad, 3000));
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"fine"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"fine"]));
}

#[test]
fn can_do_timeout_with_a_bad_number_is_an_error_and_the_connection_stays() {
    let s = server(&[]);
    let mut w = s.connect();
    w.send_req(t::CAN_DO_TIMEOUT, &[b"f", b"abc"]);
    expect_error_code(&mut w, "INVALID_ARGUMENT");
    sync(&mut w);
}
