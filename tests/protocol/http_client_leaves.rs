//! HTTP clients that close while their foreground job waits: the close is noticed whenever it
//! comes (with the request, after it, behind pipelined bytes, as a reset), the connection and its
//! descriptor are released, and the job is given up as a Gearman client's would be (a queued one
//! is dropped). A background submission followed by a half-close is still answered.

use crate::support;

use std::io::Write;
use std::net::TcpStream;

use support::*;

fn open_fds(s: &HttpServer) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", s.server.child.id()))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Wait until `/status` shows no job and `conns` connections (the /status request's included).
fn wait_left(s: &HttpServer, what: &str, conns: usize) {
    poll(10, what, || {
        let body = s.get("/status").text();
        let left =
            body.contains("\"jobs\":0,") && body.contains(&format!("\"connections\":{conns},"));
        if left { Ok(()) } else { Err(body) }
    });
}

fn get_gone() -> Vec<u8> {
    request("GET", "/gone", &[], b"")
}

#[test]
fn closes_that_come_with_the_request_release_the_connection_and_drop_the_job() {
    let s = HttpServer::start(&[]);
    let before = open_fds(&s);
    for i in 0..300 {
        let mut c = TcpStream::connect(s.http).unwrap();
        let mut bytes = get_gone();
        bytes.extend_from_slice(format!("more bytes {i:04}").as_bytes());
        c.write_all(&bytes).unwrap();
    }
    wait_left(&s, "300 closed clients", 1);
    let after = open_fds(&s);
    assert!(
        after < before + 10,
        "descriptors: {before} before, {after} after"
    );
    assert!(s.server.log().contains("closed while waiting for its job"));
}

#[test]
fn closes_that_come_later_or_behind_pipelined_bytes_or_as_a_reset_are_noticed() {
    let s = HttpServer::start(&[]);
    // The close after a pause.
    let mut c = TcpStream::connect(s.http).unwrap();
    c.write_all(&get_gone()).unwrap();
    wait_status_json(&s, "the job queued", |b| b.contains("\"jobs\":1,"));
    c.write_all(b"0123456789 and then a close").unwrap();
    drop(c);
    wait_left(&s, "a later close", 1);
    // Behind more pipelined bytes than the server reads while a job waits.
    let mut c = TcpStream::connect(s.http).unwrap();
    c.write_all(&get_gone()).unwrap();
    wait_status_json(&s, "the job queued", |b| b.contains("\"jobs\":1,"));
    let _ = c.write_all(&vec![b'x'; 100 * 1024]);
    drop(c);
    wait_left(&s, "a close behind 100 KiB", 1);
    // A reset (SO_LINGER 0).
    let c = TcpStream::connect(s.http).unwrap();
    (&c).write_all(&get_gone()).unwrap();
    wait_status_json(&s, "the job queued", |b| b.contains("\"jobs\":1,"));
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    support::set_socket_option(&c, libc::SO_LINGER, &l);
    drop(c);
    wait_left(&s, "a reset", 1);
}

#[test]
fn a_running_job_whose_client_left_finishes_unreported() {
    let s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["gone"]);
    let mut c = TcpStream::connect(s.http).unwrap();
    let mut bytes = get_gone();
    bytes.extend_from_slice(b"0123456789");
    c.write_all(&bytes).unwrap();
    let (handle, _) = grab(&mut w);
    drop(c);
    wait_status_json(&s, "the client gone", |b| b.contains("\"connections\":2,"));
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"nobody reads this"]);
    // The worker hears nothing back, and can go on.
    w.send_req(t::ECHO_REQ, &[b"still fine"]);
    assert_eq!(w.expect(t::ECHO_RES), b"still fine");
    wait_left(&s, "the job done", 2);
}

#[test]
fn a_background_submission_with_a_half_close_is_still_answered() {
    let s = HttpServer::start(&[]);
    let mut h = s.connect();
    h.send(&request(
        "POST",
        "/later",
        &[("X-Gearman-Background", "true")],
        b"x",
    ));
    h.stream.shutdown(std::net::Shutdown::Write).unwrap();
    let r = h.read();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Gearman-Command"), Some("JOB_CREATED"));
    h.expect_eof();
    wait_status_json(&s, "the job kept", |b| b.contains("\"jobs\":1,"));
}
