//! A first end-to-end check over real sockets: submit, grab, complete, status.

use crate::support;
use support::*;

#[test]
fn submit_grab_complete_round_trip() {
    let s = Server::start(&[]);
    let mut worker = s.connect();
    let mut client = s.connect();
    worker.can_do(&["reverse"]);
    let handle = client.submit(t::SUBMIT_JOB, "reverse", "u1", b"hello");
    let (h, f, u, d) = worker.grab_uniq().expect("a job");
    assert_eq!(
        (h.as_str(), f.as_str(), u.as_str(), &d[..]),
        (handle.as_str(), "reverse", "u1", &b"hello"[..])
    );
    worker.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"olleh"]);
    assert_eq!(
        client.expect(t::WORK_COMPLETE),
        format!("{handle}\0olleh").into_bytes()
    );
    assert_eq!(client.admin("status", true), "reverse\t0\t0\t1\n.\n");
}
