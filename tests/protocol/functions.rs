//! Functions stay listed after their jobs are done and their workers leave, as gearmand keeps
//! them (`status` shows `f 0 0 0`, `/metrics` keeps the series and its counters go on), up to
//! `--max-idle-functions`: past it the least recently used idle ones are forgotten and counted.

use crate::support;

use support::*;

/// One job of `func` through a worker that then leaves; the server has seen it leave.
fn one_job_then_leave(s: &HttpServer, client: &mut Conn, func: &str) {
    let mut w = worker(&s.server, &[func]);
    let h = client.submit(t::SUBMIT_JOB, func, "", b"x");
    let (h2, _) = grab(&mut w);
    assert_eq!(h, h2);
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"done"]);
    assert_eq!(client.expect(t::WORK_COMPLETE), hb(&h, &[b"done"]));
    drop(w);
}

fn metrics(s: &HttpServer) -> std::collections::HashMap<String, f64> {
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    prometheus_samples(&r.text())
}

#[test]
fn a_function_whose_worker_left_stays_in_status_and_metrics_and_counts_on() {
    let s = HttpServer::start(&[]);
    let mut client = s.gearman();
    let mut a = s.gearman();
    one_job_then_leave(&s, &mut client, "f");
    // gearmand's row for a function with no worker: what monitoring reads.
    wait_admin(&mut a, "status", true, 5, |st| st == "f\t0\t0\t0\n.\n");
    assert_eq!(a.admin("prioritystatus", true), "f\t0\t0\t0\t0\n.\n");
    let m = metrics(&s);
    assert_eq!(m.get("gearman_workers{function=\"f\"}"), Some(&0.0));
    assert_eq!(m.get("gearman_jobs{function=\"f\"}"), Some(&0.0));
    assert_eq!(
        m.get("gearman_jobs_completed_total{function=\"f\"}"),
        Some(&1.0)
    );
    assert_eq!(m.get("gearman_server_jobs_completed_total"), Some(&1.0));
    assert_eq!(m.get("gearwheel_functions_idle"), Some(&1.0));
    let status = s.get("/status").text();
    assert!(status.contains("\"name\":\"f\",\"total\":0"), "{status}");
    // It comes back: its counter goes on from 1, it does not start again.
    one_job_then_leave(&s, &mut client, "f");
    wait_admin(&mut a, "status", true, 5, |st| st == "f\t0\t0\t0\n.\n");
    let m = metrics(&s);
    assert_eq!(
        m.get("gearman_jobs_completed_total{function=\"f\"}"),
        Some(&2.0)
    );
    assert_eq!(m.get("gearman_server_jobs_completed_total"), Some(&2.0));
    assert_eq!(m.get("gearwheel_functions_forgotten_total"), Some(&0.0));
}

#[test]
fn past_max_idle_functions_the_oldest_idle_ones_go_and_are_counted() {
    let s = HttpServer::start(&["--max-idle-functions", "2"]);
    let mut client = s.gearman();
    let mut a = s.gearman();
    // A worker that stays: its function is never idle, so never forgotten.
    let _keep = worker(&s.server, &["keep"]);
    for func in ["a", "b", "c", "d"] {
        one_job_then_leave(&s, &mut client, func);
        wait_admin(&mut a, "status", true, 5, |st| {
            st.contains(&format!("{func}\t0\t0\t0\n"))
        });
    }
    // `a` and `b`, the least recently used, went; `keep` has a worker; two idle ones stay.
    wait_admin(&mut a, "status", true, 5, |st| {
        let mut rows: Vec<&str> = st.lines().collect();
        rows.sort_unstable();
        rows == [".", "c\t0\t0\t0", "d\t0\t0\t0", "keep\t0\t0\t1"]
    });
    let m = metrics(&s);
    assert_eq!(m.get("gearwheel_functions_forgotten_total"), Some(&2.0));
    assert_eq!(m.get("gearwheel_functions_idle"), Some(&2.0));
    assert_eq!(m.get("gearman_workers{function=\"keep\"}"), Some(&1.0));
    assert_eq!(m.get("gearman_jobs_completed_total{function=\"a\"}"), None);
    // The server-wide total keeps what forgotten functions did.
    assert_eq!(m.get("gearman_server_jobs_completed_total"), Some(&4.0));
}

#[test]
fn forgotten_functions_are_logged_at_most_once_a_minute() {
    let s = InProcess::start(&["--max-idle-functions", "0"]);
    let lines = || s.log().matches("forgotten since").count();
    let mut w = s.connect();
    // Registered, then given up: nothing uses the name, forgotten at the turn's end.
    let gone = |w: &mut Conn, f: &str| {
        w.can_do(&[f]);
        w.send_req(t::RESET_ABILITIES, &[]);
        sync(w);
    };
    gone(&mut w, "a");
    s.settle();
    assert!(s.log().contains("1 idle function forgotten since start"));
    assert_eq!(lines(), 1);
    gone(&mut w, "b");
    gone(&mut w, "c");
    s.settle();
    s.advance(59_000);
    assert_eq!(lines(), 1, "{}", s.log());
    // A minute after the first line, the summary of the next two, without any new event.
    s.advance(1_000);
    assert_eq!(lines(), 2, "{}", s.log());
    assert!(
        s.log().contains("2 idle functions forgotten since 20"),
        "{}",
        s.log()
    );
    let mut a = s.connect();
    assert_eq!(a.admin("status", true), ".\n");
}
