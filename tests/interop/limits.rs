//! Limits with unmodified workers: python `gear` and PHP's pecl/gearman workers
//! (tests/interop/gear_worker.py, worker.php) under `limit`, `rate`, `pause function` and
//! `expire`. The workers know nothing of them: the server decides every handout.

use std::time::{Duration, Instant};

use crate::support;

use support::*;

/// The workloads of the `hold` jobs the workers have started so far (each prints `job hold
/// WORKLOAD` as it starts one).
fn started(workers: &[Proc]) -> Vec<String> {
    workers
        .iter()
        .flat_map(|w| {
            w.stdout()
                .lines()
                .filter_map(|l| l.strip_prefix("job hold ").map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `func`'s `show limits` row, split at its tabs.
fn limits_row(admin: &mut Conn, func: &str) -> Vec<String> {
    let rows = admin.admin("show limits", true);
    rows.lines()
        .find(|l| l.starts_with(&format!("{func}\t")))
        .unwrap_or_else(|| panic!("{func} not in {rows:?}"))
        .split('\t')
        .map(String::from)
        .collect()
}

/// Ten workers, five of each library, and `limit hold 2`: two jobs run, the other eight wait;
/// each job that ends lets exactly one more start, until all ten ran.
#[test]
fn ten_workers_never_run_more_than_the_limit() {
    if !GEAR_SCRIPTS.present() || !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("limit hold 2", false), "OK\r\n");
    let workers: Vec<Proc> = (0..10)
        .map(|i| {
            let lib = if i % 2 == 0 {
                &GEAR_SCRIPTS
            } else {
                &PHP_SCRIPTS
            };
            lib.worker(&s)
        })
        .collect();
    wait_workers(&s, "hold", 10);
    let dir = TempDir::new("interop-limit");
    let mut c = s.connect();
    let flags: Vec<String> = (0..10)
        .map(|i| {
            dir.path(&format!("release-{i}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for f in &flags {
        c.submit(t::SUBMIT_JOB_BG, "hold", "", f.as_bytes());
    }
    let mut released = 0;
    let mut done: Vec<String> = Vec::new();
    loop {
        let want = (released + 2).min(10);
        wait_until(10, &format!("{want} hold jobs started"), || {
            started(&workers).len() >= want
        });
        let now = started(&workers);
        assert_eq!(
            now.len(),
            want,
            "more jobs started than the limit lets: {now:?}"
        );
        let row = limits_row(&mut admin, "hold");
        let running = want - released;
        assert_eq!(row[2], running.to_string(), "{row:?}");
        assert_eq!(row[7], (10 - want).to_string(), "{row:?}");
        if released == 10 {
            break;
        }
        // End one running job: one more may start, not two.
        let next = now
            .iter()
            .find(|f| !done.contains(*f))
            .expect("a running job")
            .clone();
        std::fs::write(&next, b"").unwrap();
        done.push(next);
        released += 1;
        wait_admin(&mut admin, "status", true, 10, |st| {
            status_row(st, "hold").is_some_and(|(t, _, _)| t == 10 - released as u64)
        });
    }
    drop(workers);
}

/// `rate log 10/1s` over 50 jobs and five python workers: the last starts no sooner than
/// 4 s after the first.
#[test]
fn a_rate_spreads_fifty_jobs_over_four_seconds() {
    if !GEAR_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("rate log 10/1s", false), "OK\r\n");
    let workers: Vec<Proc> = (0..5).map(|_| GEAR_SCRIPTS.worker(&s)).collect();
    wait_workers(&s, "hold", 5);
    let mut c = s.connect();
    let start = Instant::now();
    for i in 0..50 {
        c.submit(t::SUBMIT_JOB_BG, "log", "", format!("{i}").as_bytes());
    }
    let ran = |ws: &[Proc]| {
        ws.iter()
            .map(|w| w.stdout().matches("job log ").count())
            .sum::<usize>()
    };
    wait_until(10, "50 log jobs run", || ran(&workers) == 50);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(3900),
        "50 jobs at 10/1s took {took:?}"
    );
    assert!(took < Duration::from_secs(7), "took {took:?}");
}

/// A paused function keeps its queue while PHP workers wait, and runs all of it, in order,
/// on resume; jobs that waited past `expire` are failed, never run.
#[test]
fn pause_resume_and_expire_with_php_workers() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let mut admin = s.connect();
    let mut w = PHP_SCRIPTS.worker(&s);
    assert_eq!(admin.admin("pause function log", false), "OK\r\n");
    assert_eq!(admin.admin("expire log 1s", false), "OK\r\n");
    let mut c = s.connect();
    let stale: Vec<String> = (0..3)
        .map(|i| c.submit(t::SUBMIT_JOB_BG, "log", "", format!("stale{i}").as_bytes()))
        .collect();
    assert_eq!(limits_row(&mut admin, "log")[7], "3");
    // The worker sleeps through it: the server hands it nothing while paused.
    std::thread::sleep(Duration::from_millis(1100));
    for i in 0..3 {
        c.submit(t::SUBMIT_JOB_BG, "log", "", format!("fresh{i}").as_bytes());
    }
    assert_eq!(limits_row(&mut admin, "log")[7], "6");
    assert_eq!(admin.admin("resume function log", false), "OK\r\n");
    assert_eq!(log_order(&mut w, "fresh2"), ["fresh0", "fresh1", "fresh2"]);
    let failed = admin.admin("show failed log", true);
    for h in &stale {
        let row = failed.lines().find(|l| l.starts_with(h.as_str()));
        assert!(row.is_some_and(|r| r.contains("expired")), "{h}: {failed}");
    }
}
