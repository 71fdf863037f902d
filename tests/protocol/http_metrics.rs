//! `/metrics` after known work: the values match what was done, and the text parses with the
//! Prometheus project's own parser (python `prometheus_client`, when installed; CI installs it).

use crate::support;

use std::collections::HashMap;

use support::*;

/// Parse with prometheus_client and print `name{sorted labels} value` per sample.
fn python_parse(text: &str) -> HashMap<String, f64> {
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, labels, s.value))
"#;
    prometheus_python(script, text)
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn metrics_match_the_work_done() {
    let s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["m"]);
    let mut client = s.gearman();
    client.send_req(t::OPTION_REQ, &[b"exceptions"]);
    client.expect(t::OPTION_RES);
    // 2 completed, 1 failed, 1 exception.
    for end in ["complete", "complete", "fail", "exception"] {
        let h = client.submit(t::SUBMIT_JOB, "m", "", b"x");
        let (h2, _) = grab(&mut w);
        assert_eq!(h, h2);
        match end {
            "complete" => w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"r"]),
            "fail" => w.send_req(t::WORK_FAIL, &[h.as_bytes()]),
            _ => w.send_req(t::WORK_EXCEPTION, &[h.as_bytes(), b"e"]),
        }
        client.read_packet();
    }
    // 1 retried: a worker dies holding a job; then 2 queued (1 high) and 1 future.
    let mut dying = worker(&s.server, &["m"]);
    client.submit(t::SUBMIT_JOB_BG, "m", "", b"r");
    grab(&mut dying);
    drop(dying);
    s.server.wait_log("goes back to the head of its queue", 5);
    client.submit(t::SUBMIT_JOB_HIGH_BG, "m", "", b"h");
    client.submit(t::SUBMIT_JOB_EPOCH, "m", "", b"4102444800\0f");
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = r.text();
    assert!(text.ends_with('\n'));
    let m = prometheus_samples(&text);
    let v = |k: &str| {
        *m.get(k)
            .unwrap_or_else(|| panic!("no sample {k} in\n{text}"))
    };
    assert_eq!(v("gearman_up"), 1.0);
    assert_eq!(v("gearman_jobs_submitted_total{function=\"m\"}"), 7.0);
    assert_eq!(v("gearman_jobs_completed_total{function=\"m\"}"), 2.0);
    assert_eq!(v("gearman_jobs_failed_total{function=\"m\"}"), 1.0);
    assert_eq!(v("gearman_jobs_exceptions_total{function=\"m\"}"), 1.0);
    assert_eq!(v("gearman_jobs_retried_total{function=\"m\"}"), 1.0);
    // Queued: the requeued job (normal) and the high one; plus the future job.
    assert_eq!(v("gearman_jobs{function=\"m\"}"), 3.0);
    assert_eq!(v("gearman_status_total{function=\"m\"}"), 3.0);
    assert_eq!(v("gearman_jobs_running{function=\"m\"}"), 0.0);
    assert_eq!(v("gearman_jobs_waiting{function=\"m\"}"), 3.0);
    assert_eq!(
        v("gearman_jobs_queued{function=\"m\",priority=\"high\"}"),
        1.0
    );
    assert_eq!(
        v("gearman_jobs_queued{function=\"m\",priority=\"normal\"}"),
        1.0
    );
    assert_eq!(v("gearman_jobs_future{function=\"m\"}"), 1.0);
    assert_eq!(v("gearman_workers{function=\"m\"}"), 1.0);
    // The worker and the client over Gearman; this scrape over HTTP.
    assert_eq!(v("gearman_connections{protocol=\"gearman\"}"), 2.0);
    assert_eq!(v("gearman_connections{protocol=\"http\"}"), 1.0);
    assert_eq!(
        v("gearman_connections_accepted_total{protocol=\"gearman\"}"),
        3.0
    );
    assert!(v("gearman_received_bytes_total") > 100.0);
    assert!(v("gearman_sent_bytes_total") > 100.0);
    assert!(v("process_resident_memory_bytes") > 100_000.0);
    assert!(v("process_open_fds") >= 5.0);
    assert!(v("process_start_time_seconds") > 1_600_000_000.0);

    // The HTTP responses counted so far, then after another scrape.
    let again = prometheus_samples(&s.get("/metrics").text());
    assert!(again["gearman_http_responses_total{code=\"200\"}"] >= 1.0);

    if need("python prometheus_client") {
        let p = python_parse(&text);
        // The python parser names counter samples with _total, labels sorted.
        assert_eq!(p["gearman_jobs_submitted_total{function=\"m\"}"], 7.0);
        assert_eq!(
            p["gearman_jobs_queued{function=\"m\",priority=\"high\"}"],
            1.0
        );
        assert_eq!(p["gearman_up{}"], 1.0);
        assert_eq!(p.len(), m.len(), "both parsers see every sample");
    }
}

#[test]
fn schedule_metrics_and_odd_function_names() {
    let dir = TempDir::new("http-metrics");
    let sched = dir.join("s.cron");
    std::fs::write(&sched, "0 3 * * * backup id=nightly -- go\n").unwrap();
    let s = HttpServer::start(&["--schedules", sched.to_str().unwrap()]);
    let mut c = s.gearman();
    c.submit(t::SUBMIT_JOB_BG, "we\"ird\\name", "", b"x");
    let text = s.get("/metrics").text();
    let m = prometheus_samples(&text);
    assert_eq!(m["gearman_schedule_runs_total{entry=\"nightly\"}"], 0.0);
    assert!(m["gearman_schedule_next_run_timestamp_seconds{entry=\"nightly\"}"] > 1.6e9);
    assert_eq!(m["gearman_jobs{function=\"we\\\"ird\\\\name\"}"], 1.0);
    if need("python prometheus_client") {
        let p = python_parse(&text);
        assert_eq!(p["gearman_jobs{function=\"we\"ird\\name\"}"], 1.0);
        assert_eq!(p["gearman_schedule_runs_total{entry=\"nightly\"}"], 0.0);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn held_grabs_are_counted_by_outcome() {
    let s = HttpServer::start(&["--grab-wait", "300"]);
    let mut w = worker(&s.server, &["hg"]);
    let mut client = s.gearman();
    let h = client.submit(t::SUBMIT_JOB_BG, "hg", "", b"1");
    let (h2, _) = grab(&mut w);
    assert_eq!(h, h2);
    // Job end and GRAB together: the GRAB waits, and the next submit ends the wait.
    let mut bytes = support::req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    bytes.extend(support::req(t::GRAB_JOB_UNIQ, &[]));
    w.send(&bytes);
    w.expect_silence(50);
    client.submit(t::SUBMIT_JOB_BG, "hg", "", b"2");
    let p = w.read_packet();
    assert_eq!(p.ptype, t::JOB_ASSIGN_UNIQ, "{p:?}");
    let h = String::from_utf8(p.args()[0].to_vec()).unwrap();
    // This time nothing comes: NO_JOB at the deadline.
    let mut bytes = support::req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    bytes.extend(support::req(t::GRAB_JOB_UNIQ, &[]));
    w.send(&bytes);
    w.expect(t::NO_JOB);
    let m = prometheus_samples(&s.get("/metrics").text());
    assert_eq!(m["gearwheel_grab_waits_total{outcome=\"assigned\"}"], 1.0);
    assert_eq!(m["gearwheel_grab_waits_total{outcome=\"no_job\"}"], 1.0);
}
