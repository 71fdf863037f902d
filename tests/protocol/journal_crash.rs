//! kill -9 while submits are in flight: after a restart the journal holds every job that got
//! JOB_CREATED, and no job that was never sent. Two clients pipeline background submits as
//! fast as the server takes them (so several land in each group commit), each counting its
//! JOB_CREATED replies; the server is killed once a few thousand were answered, and
//! `status` after the restart must show at least the replies counted and at most the submits
//! sent.

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use support::*;

const CLIENTS: usize = 2;
/// Submits each client would send if nothing stopped it.
const PER_CLIENT: u64 = 200_000;
/// Packets per write.
const BATCH: u64 = 64;
/// Kill once this many JOB_CREATED came back in all.
const KILL_AFTER: u64 = 5_000;

fn data_dir(name: &str) -> TempDir {
    TempDir::new(&format!("crash-{name}"))
}

/// TOTAL of `func` in `status` (0 when not listed).
fn status_total(c: &mut Conn, func: &str) -> u64 {
    c.admin("status", true)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(f, _)| *f == func)
        .and_then(|(_, rest)| rest.split('\t').next()?.parse().ok())
        .unwrap_or(0)
}

struct Counts {
    /// Submit packets handed to a write() (whole or in part): an upper bound of what the
    /// server can have read.
    sent: AtomicU64,
    /// JOB_CREATED replies read.
    created: AtomicU64,
    stop: AtomicBool,
}

/// Pipeline submits on one connection from a writer thread; read replies on this thread.
fn client(s: &Server, no: usize, counts: Arc<Counts>) -> thread::JoinHandle<()> {
    let mut conn = s.connect();
    conn.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out: TcpStream = conn.stream.try_clone().unwrap();
    let c2 = Arc::clone(&counts);
    let writer = thread::spawn(move || {
        let mut i = 0;
        while i < PER_CLIENT && !c2.stop.load(SeqCst) {
            let mut buf = Vec::new();
            let n = BATCH.min(PER_CLIENT - i);
            for k in i..i + n {
                let unique = format!("c{no}-{k}");
                buf.extend(req(
                    t::SUBMIT_JOB_BG,
                    &[b"crash", unique.as_bytes(), b"payload"],
                ));
            }
            c2.sent.fetch_add(n, SeqCst);
            if out.write_all(&buf).is_err() {
                return;
            }
            i += n;
        }
    });
    thread::spawn(move || {
        while let Ok(p) = conn.try_read_packet() {
            assert_eq!(p.ptype, t::JOB_CREATED, "{p:?}");
            counts.created.fetch_add(1, SeqCst);
        }
        // EOF or reset: the server is gone; the writer's next write fails.
        counts.stop.store(true, SeqCst);
        let _ = writer.join();
    })
}

fn crash_and_count(fsync: &str) {
    let dir = data_dir(fsync);
    let args = |dir: &Path| {
        vec![
            "--data-dir".to_string(),
            dir.to_str().unwrap().to_string(),
            "--fsync".to_string(),
            fsync.to_string(),
        ]
    };
    let a = args(&dir);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut s = Server::start(&a);
    let counts = Arc::new(Counts {
        sent: AtomicU64::new(0),
        created: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let readers: Vec<_> = (0..CLIENTS)
        .map(|no| client(&s, no, Arc::clone(&counts)))
        .collect();
    let end = Instant::now() + Duration::from_secs(20);
    while counts.created.load(SeqCst) < KILL_AFTER {
        assert!(Instant::now() < end, "too slow: {:?}", counts.created);
        thread::sleep(Duration::from_micros(200));
    }
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
    for r in readers {
        r.join().unwrap();
    }
    let created = counts.created.load(SeqCst);
    let sent = counts.sent.load(SeqCst);
    drop(s);
    assert!(
        created < sent,
        "the kill came after every submit was answered ({created} of {sent}): nothing in flight"
    );

    let s = Server::start(&a);
    let mut c = s.connect();
    let total = status_total(&mut c, "crash");
    eprintln!(
        "--fsync {fsync}: {sent} submits sent, {created} JOB_CREATED before the kill, {total} jobs after the restart"
    );
    assert!(
        total >= created,
        "lost acknowledged jobs: {created} JOB_CREATED, {total} after restart"
    );
    assert!(
        total <= sent,
        "more jobs than submits: {sent} sent, {total} after restart"
    );
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kill_9_mid_submit_keeps_every_acknowledged_job_fsync_always() {
    crash_and_count("always");
}

/// kill -9 is not a power loss: what write() took survives without an fsync too, and the
/// reply follows the write in every mode.
#[test]
fn kill_9_mid_submit_keeps_every_acknowledged_job_fsync_never() {
    crash_and_count("never");
}
