//! `--grab-wait`: a worker's GRAB right after it ended a job waits a moment for the next job
//! instead of NO_JOB, and what it sent after the GRAB is answered after it, in order.

use crate::support;

use std::net::Shutdown;
use std::time::{Duration, Instant};

use support::*;

/// A worker that ran one job and then sent WORK_COMPLETE, GRAB_JOB_UNIQ and ECHO_REQ in
/// one write (libgearman sends the first two together).
fn complete_grab_echo(s: &support::Server, client: &mut Conn) -> Conn {
    let mut w = worker(s, &["gw"]);
    client.submit(t::SUBMIT_JOB_BG, "gw", "", b"first");
    let (handle, _, _, _) = w.grab_uniq().expect("the first job");
    let mut bytes = req(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    bytes.extend(req(t::GRAB_JOB_UNIQ, &[]));
    bytes.extend(req(t::ECHO_REQ, &[b"after"]));
    w.send(&bytes);
    w
}

/// A server with `--grab-wait MS`, a client, and a worker left as `complete_grab_echo` leaves it.
fn held_worker(grab_wait_ms: &str) -> (support::Server, Conn, Conn) {
    let s = server(&["--grab-wait", grab_wait_ms]);
    let mut client = s.connect();
    let w = complete_grab_echo(&s, &mut client);
    (s, client, w)
}

#[test]
fn a_job_submitted_during_the_wait_goes_straight_to_the_waiting_worker() {
    // A long wait, so that only the submit can end it.
    let (_s, mut client, mut w) = held_worker("1000");
    w.expect_silence(100);
    let start = Instant::now();
    client.submit(t::SUBMIT_JOB, "gw", "u2", b"second");
    let p = w.read_packet();
    assert_eq!(p.ptype, t::JOB_ASSIGN_UNIQ, "{p:?}");
    assert_eq!(p.args()[3], b"second");
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "not held to its deadline"
    );
    // The ECHO sent after the GRAB is answered after the GRAB's answer.
    assert_eq!(w.expect(t::ECHO_RES), b"after");
}

#[test]
fn a_wait_without_work_ends_in_no_job_then_the_rest_in_order() {
    let (_s, mut client, mut w) = held_worker("200");
    let start = Instant::now();
    w.expect(t::NO_JOB);
    assert!(
        start.elapsed() >= Duration::from_millis(150),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(w.expect(t::ECHO_RES), b"after");
    // PRE_SLEEP, then a new job wakes it with NOOP as usual.
    w.send_req(t::PRE_SLEEP, &[]);
    sync(&mut client);
    client.submit(t::SUBMIT_JOB_BG, "gw", "", b"later");
    w.expect(t::NOOP);
}

#[test]
fn a_worker_that_shuts_its_side_during_the_wait_still_gets_every_answer() {
    let (_s, _client, mut w) = held_worker("200");
    w.stream.shutdown(Shutdown::Write).unwrap();
    w.expect(t::NO_JOB);
    assert_eq!(w.expect(t::ECHO_RES), b"after");
    w.expect_eof();
}

#[test]
fn grab_wait_zero_answers_at_once_as_gearmand() {
    let (_s, _client, mut w) = held_worker("0");
    w.expect(t::NO_JOB);
    assert_eq!(w.expect(t::ECHO_RES), b"after");
}

#[test]
fn a_waiting_worker_that_dies_loses_nothing() {
    let (s, mut client, w) = held_worker("1000");
    drop(w);
    // The next job goes to a live worker, not to the dead one's held GRAB.
    let mut w2 = worker(&s, &["gw"]);
    w2.send_req(t::PRE_SLEEP, &[]);
    sync(&mut w2);
    client.submit(t::SUBMIT_JOB_BG, "gw", "", b"next");
    w2.expect(t::NOOP);
    let (_, _, _, data) = w2.grab_uniq().expect("the job");
    assert_eq!(data, b"next");
}

#[test]
fn job_created_of_a_job_handed_to_a_waiting_worker_comes_before_its_result() {
    // A JOB_CREATED may wait a millisecond or two to share a write with the result; with a worker
    // that takes its time it must still come while the job runs.
    let (_s, mut client, mut w) = held_worker("1000");
    w.expect_silence(100);
    client.send_req(t::SUBMIT_JOB, &[b"gw", b"u2", b"second"]);
    let p = w.read_packet();
    assert_eq!(p.ptype, t::JOB_ASSIGN_UNIQ, "{p:?}");
    assert_eq!(p.args()[3], b"second");
    let handle = p.args()[0].to_vec();
    assert_eq!(w.expect(t::ECHO_RES), b"after");
    let created = read_within(&mut client, 1000).expect("JOB_CREATED while the job runs");
    assert_eq!((created.ptype, &created.body), (t::JOB_CREATED, &handle));
    client.expect_silence(50);
    w.send_req(t::WORK_COMPLETE, &[&handle, b"r2"]);
    let mut want = handle.clone();
    want.extend_from_slice(b"\0r2");
    assert_eq!(client.expect(t::WORK_COMPLETE), want);
}

#[test]
fn job_created_and_results_keep_their_order_when_workers_answer_at_once() {
    // Workers that answer within microseconds: JOB_CREATED and WORK_COMPLETE often share a
    // write, and never swap.
    let (_s, mut client, mut w) = held_worker("1000");
    let answer = std::thread::spawn(move || {
        for n in 0..200 {
            let p = w.read_packet();
            assert_eq!(p.ptype, t::JOB_ASSIGN_UNIQ, "{p:?}");
            if n == 0 {
                // What the worker sent after its first held GRAB.
                assert_eq!(w.expect(t::ECHO_RES), b"after");
            }
            let a = p.args();
            let mut bytes = req(t::WORK_COMPLETE, &[a[0], a[3]]);
            bytes.extend(req(t::GRAB_JOB_UNIQ, &[]));
            w.send(&bytes);
        }
    });
    for i in 0..200 {
        let data = format!("job-{i}");
        client.send_req(t::SUBMIT_JOB, &[b"gw", b"", data.as_bytes()]);
        let handle = client.expect(t::JOB_CREATED);
        let mut want = handle.clone();
        want.push(0);
        want.extend_from_slice(data.as_bytes());
        assert_eq!(client.expect(t::WORK_COMPLETE), want, "job {i}");
    }
    answer.join().unwrap();
}
