//! The journal's families in `/metrics` (with `--data-dir`): size, live jobs, commits, write
//! errors and the fsync latency histogram move with the work done; without `--data-dir` they
//! are absent.

use crate::support;

use std::collections::HashMap;

use support::*;

fn data_dir(name: &str) -> TempDir {
    TempDir::new(&format!("journal-metrics-{name}"))
}

fn scrape(s: &HttpServer) -> (String, HashMap<String, f64>) {
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    let text = r.text();
    let m = prometheus_samples(&text);
    (text, m)
}

fn get(m: &HashMap<String, f64>, text: &str, k: &str) -> f64 {
    *m.get(k)
        .unwrap_or_else(|| panic!("no sample {k} in\n{text}"))
}

/// The text through the Prometheus project's parser (python `prometheus_client`, when
/// installed): the histogram's family and its samples as it sees them.
fn python_histogram(text: &str) -> Option<String> {
    if !need("python prometheus_client") {
        return None;
    }
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(sys.stdin.read()):
    if fam.name.startswith("gearwheel_journal"):
        print(fam.name, fam.type, len(fam.samples))
"#;
    Some(prometheus_python(script, text))
}

const BUCKET_INF: &str = "gearwheel_journal_fsync_seconds_bucket{le=\"+Inf\"}";

#[test]
fn journal_metrics_move_with_submits_and_completions() {
    let dir = data_dir("always");
    let s = HttpServer::start(&["--data-dir", dir.to_str().unwrap(), "--fsync", "always"]);
    let (text, m) = scrape(&s);
    let v = |k: &str| get(&m, &text, k);
    assert_eq!(v("gearwheel_journal_live_jobs"), 0.0);
    assert_eq!(v("gearwheel_journal_live_bytes"), 0.0);
    assert_eq!(v("gearwheel_journal_commits_total"), 0.0);
    assert_eq!(v("gearwheel_journal_write_errors_total"), 0.0);
    assert_eq!(v("gearwheel_journal_fsync_seconds_count"), 0.0);
    assert_eq!(v(BUCKET_INF), 0.0);
    assert!(text.contains("# TYPE gearwheel_journal_fsync_seconds histogram\n"));
    let bytes0 = v("gearwheel_journal_bytes");

    let mut c = s.gearman();
    let mut handles = Vec::new();
    for i in 0..20 {
        let unique = format!("u{i}");
        handles.push(c.submit(t::SUBMIT_JOB_BG, "jm", &unique, &[b'x'; 100]));
    }
    let (text, m) = scrape(&s);
    let v = |k: &str| get(&m, &text, k);
    assert_eq!(v("gearwheel_journal_live_jobs"), 20.0);
    assert!(v("gearwheel_journal_live_bytes") >= 20.0 * 100.0, "{text}");
    let bytes1 = v("gearwheel_journal_bytes");
    assert!(bytes1 >= bytes0 + 20.0 * 100.0, "{bytes0} -> {bytes1}");
    assert!(v("gearwheel_journal_files") >= 1.0);
    // One submit at a time: one commit, and under --fsync always one fsync, per submit.
    let commits = v("gearwheel_journal_commits_total");
    assert!(commits >= 20.0, "{text}");
    let fsyncs = v("gearwheel_journal_fsync_seconds_count");
    assert_eq!(fsyncs, commits, "every commit fsyncs under --fsync always");
    assert_eq!(v(BUCKET_INF), fsyncs);
    assert!(v("gearwheel_journal_fsync_seconds_sum") > 0.0);
    // The buckets are cumulative.
    let mut last = 0.0;
    for l in text
        .lines()
        .filter(|l| l.starts_with("gearwheel_journal_fsync_seconds_bucket"))
    {
        let n: f64 = l.rsplit_once(' ').unwrap().1.parse().unwrap();
        assert!(n >= last, "{l} after {last}");
        last = n;
    }
    if let Some(p) = python_histogram(&text) {
        // 11 buckets, _sum and _count.
        assert!(
            p.lines()
                .any(|l| l == "gearwheel_journal_fsync_seconds histogram 13"),
            "{p}"
        );
        assert!(
            p.lines()
                .any(|l| l == "gearwheel_journal_commits counter 1"),
            "{p}"
        );
        assert_eq!(p.lines().count(), 7, "{p}");
    }

    // A worker finishes one job: one live job less, more bytes written, more commits.
    let mut w = s.gearman();
    w.can_do(&["jm"]);
    let (h, _, _, _) = w.grab_uniq().expect("a job");
    assert_eq!(h, handles[0]);
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    w.send_req(t::ECHO_REQ, &[b"sync"]);
    w.expect(t::ECHO_RES);
    let (text, m) = scrape(&s);
    let v = |k: &str| get(&m, &text, k);
    assert_eq!(v("gearwheel_journal_live_jobs"), 19.0);
    assert!(v("gearwheel_journal_bytes") > bytes1);
    assert!(v("gearwheel_journal_commits_total") > commits);
    assert!(v("gearwheel_journal_fsync_seconds_count") > fsyncs);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fsync_never_commits_without_fsyncs() {
    let dir = data_dir("never");
    let s = HttpServer::start(&["--data-dir", dir.to_str().unwrap(), "--fsync", "never"]);
    let mut c = s.gearman();
    for i in 0..5 {
        c.submit(t::SUBMIT_JOB_BG, "jm", &format!("n{i}"), b"data");
    }
    let (text, m) = scrape(&s);
    let v = |k: &str| get(&m, &text, k);
    assert_eq!(v("gearwheel_journal_live_jobs"), 5.0);
    assert!(v("gearwheel_journal_commits_total") >= 5.0);
    assert_eq!(v("gearwheel_journal_fsync_seconds_count"), 0.0);
    assert_eq!(v(BUCKET_INF), 0.0);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_journal_families_without_a_data_dir() {
    let s = HttpServer::start(&[]);
    let (text, _) = scrape(&s);
    assert!(!text.contains("gearwheel_journal"), "{text}");
}

/// A journal that cannot write (RLIMIT_FSIZE: writes fail with EFBIG) counts its failures.
#[test]
fn write_errors_are_counted() {
    let dir = data_dir("full");
    let s = Server::start_with_file_limit(
        &["--http-port", "0", "--data-dir", dir.to_str().unwrap()],
        64 * 1024,
    );
    let mut c = s.connect();
    let data = vec![b'x'; 1000];
    let mut refused = false;
    for i in 0..1000 {
        c.send_req(
            t::SUBMIT_JOB_BG,
            &[b"big", format!("u{i}").as_bytes(), &data],
        );
        if c.read_packet().ptype == t::ERROR {
            refused = true;
            break;
        }
    }
    assert!(refused, "the journal filled up");
    let mut h = Http::connect(http_addr(&s));
    h.send(&request("GET", "/metrics", &[], b""));
    let text = h.read().text();
    let m = prometheus_samples(&text);
    assert!(
        get(&m, &text, "gearwheel_journal_write_errors_total") >= 1.0,
        "{text}"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
