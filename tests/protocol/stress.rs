//! Load and limits over real sockets: pipelining, many connections, large packets, many
//! workers and clients at once, --max-connections and --max-output-buffer.

use crate::support;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use support::*;

#[test]
fn ten_thousand_pipelined_submits_get_their_job_created_in_order() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut bytes = Vec::new();
    for i in 0..10_000 {
        bytes.extend_from_slice(&submit_bg_bytes("fp", &format!("u{i}"), b"x"));
    }
    // Write from another thread so that neither side can block the other.
    let mut ws = c.stream.try_clone().unwrap();
    let writer = std::thread::spawn(move || ws.write_all(&bytes).unwrap());
    for i in 1..=10_000 {
        assert_eq!(c.expect(t::JOB_CREATED), h(i).as_bytes(), "reply {i}");
    }
    writer.join().unwrap();
    assert_eq!(c.admin("status", true), "fp\t10000\t0\t0\n.\n");
}

#[test]
fn pipelined_mixed_requests_are_answered_in_order() {
    let s = server(&[]);
    let mut w = worker(&s, &["fm"]);
    let mut bytes = Vec::new();
    for i in 0..500 {
        bytes.extend_from_slice(&req(t::ECHO_REQ, &[format!("e{i}").as_bytes()]));
        bytes.extend_from_slice(&submit_bg_bytes("fm", "", b"d"));
        bytes.extend_from_slice(&req(t::GRAB_JOB_UNIQ, &[]));
    }
    w.send(&bytes);
    for i in 0..500u32 {
        assert_eq!(w.expect(t::ECHO_RES), format!("e{i}").as_bytes());
        assert_eq!(w.expect(t::JOB_CREATED), h(i + 1).as_bytes());
        let b = w.expect(t::JOB_ASSIGN_UNIQ);
        assert!(b.starts_with(format!("{}\0", h(i + 1)).as_bytes()));
    }
}

#[test]
fn a_half_closed_connection_gets_every_pipelined_reply() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut bytes = Vec::new();
    for i in 0..1000 {
        bytes.extend_from_slice(&req(t::ECHO_REQ, &[format!("e{i}").as_bytes()]));
    }
    bytes.extend_from_slice(b"version\n");
    c.send(&bytes);
    c.stream.shutdown(std::net::Shutdown::Write).unwrap();
    for i in 0..1000 {
        match c.try_read_packet() {
            Ok(p) => assert_eq!(
                (p.ptype, p.body),
                (t::ECHO_RES, format!("e{i}").into_bytes())
            ),
            Err(e) => panic!("reply {i} of 1000 missing after a half-close: {e}"),
        }
    }
    assert_eq!(
        c.read_text(false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    c.expect_eof();
}

#[test]
fn a_thousand_clients_at_once_each_do_a_round_trip() {
    let s = server(&[]);
    let mut conns: Vec<Conn> = (0..1000).map(|_| s.connect()).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        if i % 2 == 0 {
            c.send_req(t::ECHO_REQ, &[format!("c{i}").as_bytes()]);
        } else {
            c.send_req(t::SUBMIT_JOB_BG, &[b"fk", b"", format!("c{i}").as_bytes()]);
        }
    }
    let mut handles = HashSet::new();
    for (i, c) in conns.iter_mut().enumerate() {
        if i % 2 == 0 {
            assert_eq!(c.expect(t::ECHO_RES), format!("c{i}").as_bytes());
        } else {
            assert!(handles.insert(c.expect(t::JOB_CREATED)));
        }
    }
    assert_eq!(handles.len(), 500);
    assert_eq!(conns[0].admin("status", true), "fk\t500\t0\t0\n.\n");
}

#[test]
fn a_one_mib_echo_round_trips() {
    let s = server(&[]);
    let mut c = s.connect();
    let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    let mut ws = c.stream.try_clone().unwrap();
    let packet = req(t::ECHO_REQ, &[&data]);
    let writer = std::thread::spawn(move || ws.write_all(&packet).unwrap());
    assert!(c.expect(t::ECHO_RES) == data, "the echo differs");
    writer.join().unwrap();
    sync(&mut c);
}

#[test]
fn a_one_mib_job_goes_through_a_worker() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["big"]);
    let data = vec![0xabu8; 1 << 20];
    let mut ws = c.stream.try_clone().unwrap();
    let packet = req(t::SUBMIT_JOB, &[b"big", b"", &data]);
    let writer = std::thread::spawn(move || ws.write_all(&packet).unwrap());
    let handle = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    writer.join().unwrap();
    let (hh, _, _, d) = w.grab_uniq().unwrap();
    assert_eq!(hh, handle);
    assert!(d == data);
    let mut ws = w.stream.try_clone().unwrap();
    let packet = req(t::WORK_COMPLETE, &[handle.as_bytes(), &data]);
    let writer = std::thread::spawn(move || ws.write_all(&packet).unwrap());
    assert!(c.expect(t::WORK_COMPLETE) == hb(&handle, &[&data]));
    writer.join().unwrap();
}

/// A worker loop: GRAB_JOB_UNIQ, answer with the data reversed, sleep when idle, until `stop`.
fn run_worker(mut w: Conn, stop: Arc<AtomicBool>, done: Arc<AtomicUsize>) {
    w.stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    loop {
        w.send_req(t::GRAB_JOB_UNIQ, &[]);
        let p = loop {
            match w.try_read_packet() {
                Ok(p) if p.ptype == t::NOOP => continue,
                Ok(p) => break p,
                Err(e) if e == "EOF" => return,
                Err(_) => continue,
            }
        };
        match p.ptype {
            t::JOB_ASSIGN_UNIQ => {
                let args: Vec<&[u8]> = p.body.splitn(4, |&b| b == 0).collect();
                let mut r = args[3].to_vec();
                r.reverse();
                w.send_req(t::WORK_DATA, &[args[0], b"partial"]);
                w.send_req(t::WORK_COMPLETE, &[args[0], &r]);
                done.fetch_add(1, Ordering::SeqCst);
            }
            t::NO_JOB => {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                w.send_req(t::PRE_SLEEP, &[]);
                // Wait for a NOOP, or re-check after the timeout.
                match w.try_read_packet() {
                    Ok(p) => assert_eq!(p.ptype, t::NOOP, "{p:?}"),
                    Err(e) if e == "EOF" => return,
                    Err(_) => {}
                }
            }
            other => panic!("worker got {other}: {p:?}"),
        }
    }
}

/// `run_worker` threads doing `funcs`, and the counters they share.
struct WorkerPool {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl WorkerPool {
    fn start(s: &support::Server, n: usize, funcs: &[&str]) -> WorkerPool {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let threads = (0..n)
            .map(|i| {
                let mut w = s.connect();
                w.send_req(t::SET_CLIENT_ID, &[format!("w{i}").as_bytes()]);
                w.can_do(funcs);
                let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
                std::thread::spawn(move || run_worker(w, stop, done))
            })
            .collect();
        WorkerPool {
            stop,
            done,
            threads,
        }
    }

    /// Wait for the clients, stop the workers; then every job ran once and none of `rev` is
    /// left on the server.
    fn finish(self, s: &support::Server, clients: Vec<std::thread::JoinHandle<()>>, jobs: usize) {
        for c in clients {
            c.join().expect("client thread");
        }
        self.stop.store(true, Ordering::SeqCst);
        for w in self.threads {
            w.join().expect("worker thread");
        }
        assert_eq!(self.done.load(Ordering::SeqCst), jobs);
        let mut a = s.connect();
        let st = a.admin("status", true);
        // Forgotten once the last worker has gone, else idle.
        assert!(st == ".\n" || st.starts_with("rev\t0\t0\t"), "{st:?}");
        assert_eq!(a.admin("show jobs", true), ".\n");
    }
}

#[test]
fn many_workers_and_clients_complete_every_job() {
    const WORKERS: usize = 6;
    const CLIENTS: usize = 10;
    const JOBS: usize = 60;
    let s = server(&[]);
    let workers = WorkerPool::start(&s, WORKERS, &["rev", "other"]);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|ci| {
            let mut c = s.connect();
            std::thread::spawn(move || {
                // Pipeline every submit, then collect: JOB_CREATED in order, results in any.
                let mut bytes = Vec::new();
                let prio = [t::SUBMIT_JOB, t::SUBMIT_JOB_HIGH, t::SUBMIT_JOB_LOW];
                for j in 0..JOBS {
                    let data = format!("c{ci}-j{j}");
                    bytes.extend_from_slice(&req(
                        prio[j % 3],
                        &[b"rev", data.as_bytes(), data.as_bytes()],
                    ));
                }
                c.send(&bytes);
                let mut created = Vec::new();
                let mut results = std::collections::HashMap::new();
                let mut data_seen = 0;
                while results.len() < JOBS {
                    let p = c.read_packet();
                    match p.ptype {
                        t::JOB_CREATED => created.push(String::from_utf8(p.body).unwrap()),
                        t::WORK_DATA => data_seen += 1,
                        t::WORK_COMPLETE => {
                            let args: Vec<&[u8]> = p.body.splitn(2, |&b| b == 0).collect();
                            let h = String::from_utf8(args[0].to_vec()).unwrap();
                            assert!(
                                results.insert(h, args[1].to_vec()).is_none(),
                                "two results for one job"
                            );
                        }
                        other => panic!("client got {other}: {p:?}"),
                    }
                }
                assert_eq!(created.len(), JOBS);
                assert_eq!(data_seen, JOBS);
                for (j, h) in created.iter().enumerate() {
                    let mut want = format!("c{ci}-j{j}").into_bytes();
                    want.reverse();
                    assert_eq!(results.get(h), Some(&want), "job {j} of client {ci}");
                }
            })
        })
        .collect();
    workers.finish(&s, clients, CLIENTS * JOBS);
}

#[test]
fn max_connections_closes_the_extra_connection_at_once() {
    let s = server(&["--max-connections", "5"]);
    let mut conns: Vec<Conn> = (0..5).map(|_| s.connect()).collect();
    for c in conns.iter_mut() {
        sync(c);
    }
    let mut extra = TcpStream::connect(s.addr).unwrap();
    assert!(
        closed_within(&mut extra, 3000),
        "the 6th connection is closed"
    );
    s.wait_log("--max-connections 5", 3);
    for c in conns.iter_mut() {
        sync(c);
    }
    // A freed slot can be used again.
    drop(conns.pop());
    wait_until(4, "a free slot", || {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        c.write_all(&req(t::ECHO_REQ, &[b"again"])).unwrap();
        let mut buf = [0u8; 17];
        c.read_exact(&mut buf).is_ok() && &buf[12..] == b"again"
    });
}

#[test]
fn a_client_that_never_reads_is_closed_at_max_output_buffer() {
    let s = server(&["--max-output-buffer", "65536"]);
    let mut other = s.connect();
    let mut hog = TcpStream::connect(s.addr).unwrap();
    hog.set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let packet = req(t::ECHO_REQ, &[&vec![b'z'; 256 * 1024]]);
    let writer = std::thread::spawn(move || {
        // Up to 64 MiB; the server closes long before, which ends the writes with an error.
        for _ in 0..256 {
            if hog.write_all(&packet).is_err() {
                return true;
            }
        }
        false
    });
    s.wait_log("--max-output-buffer", 8);
    sync(&mut other);
    assert!(
        writer.join().unwrap(),
        "the hog's writes should fail once closed"
    );
    sync(&mut other);
}

/// Synchronous clients (one job in flight each) against workers whose GRAB after each job
/// waits (`--grab-wait`): every job runs once, every result reaches its client.
#[test]
fn sync_clients_and_waiting_workers_complete_every_job_once() {
    const WORKERS: usize = 6;
    const CLIENTS: usize = 8;
    const JOBS: usize = 40;
    let s = server(&["--grab-wait", "50"]);
    let workers = WorkerPool::start(&s, WORKERS, &["rev"]);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|ci| {
            let mut c = s.connect();
            std::thread::spawn(move || {
                for j in 0..JOBS {
                    let data = format!("s{ci}-j{j}");
                    let h = c.submit(t::SUBMIT_JOB, "rev", "", data.as_bytes());
                    assert_eq!(c.expect(t::WORK_DATA), hb(&h, &[b"partial"]));
                    let mut want = data.into_bytes();
                    want.reverse();
                    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&h, &[&want]));
                }
            })
        })
        .collect();
    workers.finish(&s, clients, CLIENTS * JOBS);
}
