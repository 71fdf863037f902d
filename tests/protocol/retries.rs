//! Retries with backoff over real sockets: a schedule run a real worker fails comes back after
//! its backoff with the same unique and workload, a waiting retry survives kill -9 and runs
//! once, and the last failure lands in the failed list.

use crate::support;
use std::time::{Duration, Instant};

use support::*;

/// Grab a job, waiting (PRE_SLEEP/NOOP) up to `secs`.
fn grab_within(w: &mut Conn, secs: u64) -> (String, String, Vec<u8>) {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some((h, _, u, d)) = w.grab_uniq() {
            return (h, u, d);
        }
        assert!(Instant::now() < end, "no job within {secs} s");
        w.send_req(t::PRE_SLEEP, &[]);
        w.stream
            .set_read_timeout(Some(
                end.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ))
            .unwrap();
        assert_eq!(w.read_packet().ptype, t::NOOP);
    }
}

#[test]
fn a_failed_run_retries_after_its_backoff_through_kill_9_then_is_kept() {
    let base = TempDir::new("retries");
    let file = base.join("s.cron");
    std::fs::write(
        &file,
        "0 3 * * * flaky retry=2 backoff=1s..1s -- run {time}\n",
    )
    .unwrap();
    let data = base.join("data");
    let args = [
        "--job-handle-prefix",
        "H:r",
        "--schedules",
        file.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    let mut s = Server::start(&args);
    let mut c = s.connect();
    assert!(c.admin("run schedule flaky", false).starts_with("OK H:r:"));
    let mut w = s.connect();
    w.can_do(&["flaky"]);
    let (h1, u1, d1) = grab_within(&mut w, 2);
    assert_eq!(u1, "flaky");
    let failed_at = Instant::now();
    w.send_req(t::WORK_FAIL, &[h1.as_bytes()]);
    assert!(w.grab_uniq().is_none(), "the retry waits for its backoff");
    let sched = c.admin("show scheduled", true);
    assert!(sched.contains("\tflaky\tflaky\t"), "{sched}");
    // A background JOB_CREATED is sent once everything before it is durable.
    c.submit(t::SUBMIT_JOB_BG, "sync", "", b"");
    drop((c, w));
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");

    let s = Server::start(&args);
    let mut w = s.connect();
    w.can_do(&["flaky"]);
    let (h2, u2, d2) = grab_within(&mut w, 5);
    assert!(
        failed_at.elapsed() >= Duration::from_millis(900),
        "ran before its backoff"
    );
    assert_ne!(h2, h1);
    assert_eq!(
        (u2.as_str(), &d2),
        ("flaky", &d1),
        "same unique and workload"
    );
    w.send_req(t::WORK_EXCEPTION, &[h2.as_bytes(), b"still broken"]);
    let (h3, _, d3) = grab_within(&mut w, 5);
    assert_eq!(d3, d1);
    w.send_req(t::WORK_EXCEPTION, &[h3.as_bytes(), b"gave up"]);
    assert!(w.grab_uniq().is_none());
    let mut c = s.connect();
    let listed = c.admin("show failed", true);
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .filter(|l| *l != ".")
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), 1, "only the last failure: {listed}");
    assert_eq!(
        (rows[0][0], rows[0][6], rows[0][7]),
        (h3.as_str(), "flaky", "gave up")
    );
    // Its attempts and first failure came through the restart with the retry.
    assert_eq!(rows[0][3], "3", "{listed}");
    assert_ne!(
        rows[0][4], rows[0][5],
        "first and last failure differ: {listed}"
    );
    assert_eq!(c.admin("show scheduled", true), ".\n", "no retry left");
    drop(s);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_function_retry_policy_survives_kill_9_with_the_journal() {
    let dir = TempDir::new("fretry");
    let args = ["--data-dir", dir.to_str().unwrap(), "--retry", "1"];
    let mut s = Server::start(&args);
    let mut c = s.connect();
    assert_eq!(c.admin("retry resize 2 5s..1m", false), "OK\r\n");
    assert_eq!(c.admin("retry resize 3 10s", false), "OK\r\n");
    assert!(
        c.admin("retry resize 3 0s", false)
            .starts_with("ERR INVALID_ARGUMENTS")
    );
    let want = "*\t1\t30s..1h\t-\nresize\t3\t10s..1h\t0\n.\n";
    assert_eq!(c.admin("show retries", true), want);
    c.submit(t::SUBMIT_JOB_BG, "sync", "", b"");
    drop(c);
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
    let s = Server::start(&args);
    let mut c = s.connect();
    assert_eq!(
        c.admin("show retries", true),
        want,
        "the newest policy came back"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
