//! Interop with the Rust `gearman-worker` crate 0.3 (a dev-dependency, so it is always here):
//! its worker runs in a thread of the test against a real gearwheel; the client is the test's
//! own raw-socket connection.
//!
//! What the crate sends: SET_CLIENT_ID on connect, CAN_DO per function, then GRAB_JOB (plain
//! JOB_ASSIGN) and PRE_SLEEP, expecting NOOP as the very next packet. A callback's `Ok(data)`
//! is `WORK_COMPLETE handle\0data`; `Err(Some(msg))` is `WORK_FAIL handle\0msg` (bytes after
//! the handle, which gearmand and gearwheel ignore); `Err(None)` is `WORK_EXCEPTION handle`
//! with no NUL and no data, which gearmand reads into the next packet and gearwheel answers
//! with ERROR INVALID_PACKET: either way the crate's worker ends, so this test does not use it.
//! Any packet other than the ones it expects also ends the worker (its `run` returns the error).

use crate::support;

use std::net::SocketAddr;

use gearman_worker::WorkerBuilder;
use support::*;

/// A gearman-worker worker for `reverse` (completes) and `refuse` (fails with a message),
/// running until its connection ends. The thread's result is the crate's error.
fn start_worker(addr: SocketAddr) -> std::thread::JoinHandle<std::io::Error> {
    std::thread::spawn(move || {
        let mut worker = WorkerBuilder::new("rust-gearman-worker", addr).build();
        if let Err(e) = worker.connect() {
            return e;
        }
        let reg = worker
            .register_function("reverse", |data| {
                let mut v = data.to_vec();
                v.reverse();
                Ok(v)
            })
            .and_then(|()| {
                worker.register_function("refuse", |data| {
                    Err(Some(
                        format!("refused {}", String::from_utf8_lossy(data)).into_bytes(),
                    ))
                })
            });
        if let Err(e) = reg {
            return e;
        }
        match worker.run() {
            Ok(()) => std::io::Error::other("run() returned"),
            Err(e) => e,
        }
    })
}

/// Submit a foreground job and return its handle and the result packet's type and body.
fn call(c: &mut Conn, func: &str, data: &[u8]) -> (String, u32, Vec<u8>) {
    let handle = c.submit(t::SUBMIT_JOB, func, "", data);
    let p = c.read_packet();
    (handle, p.ptype, p.body)
}

fn with_handle(handle: &str, data: &[u8]) -> Vec<u8> {
    let mut v = handle.as_bytes().to_vec();
    v.push(0);
    v.extend_from_slice(data);
    v
}

#[test]
fn gearman_worker_completes_and_fails_jobs_and_keeps_working() {
    let s = Server::start_args(&["serve", "-p", "0", "--verbose", "DEBUG"]);
    let worker = start_worker(s.addr);
    let mut admin = s.connect();
    support::wait_admin(&mut admin, "workers", true, 10, |w| {
        w.contains("rust-gearman-worker : ") && w.contains("refuse") && w.contains("reverse")
    });
    let mut c = s.connect();
    let (h, ptype, body) = call(&mut c, "reverse", b"hello");
    assert_eq!((ptype, body), (t::WORK_COMPLETE, with_handle(&h, b"olleh")));
    // `WORK_FAIL handle\0message`: the client gets the plain WORK_FAIL, the message goes to
    // the log, and the worker goes on (an ERROR here would have ended it).
    let (h, ptype, body) = call(&mut c, "refuse", b"this");
    assert_eq!((ptype, body), (t::WORK_FAIL, h.as_bytes().to_vec()));
    s.wait_log(
        &format!("WORK_FAIL {h}: after the handle, 12 bytes \"refused this\""),
        5,
    );
    for i in 0..3 {
        let data = format!("job {i}");
        let (h, ptype, body) = call(&mut c, "reverse", data.as_bytes());
        let want: Vec<u8> = data.bytes().rev().collect();
        assert_eq!((ptype, body), (t::WORK_COMPLETE, with_handle(&h, &want)));
    }
    assert_eq!(
        admin
            .admin("status", true)
            .lines()
            .filter(|l| l.ends_with("\t0\t0\t1"))
            .count(),
        2
    );
    assert!(!worker.is_finished(), "{:?}", worker.join());
}
