//! The console over real sockets: `/` serves the embedded page with its Content-Security-Policy,
//! the assets and the console's JSON are there (server facts with the journal's last fsync and
//! the failed counts, future and failed jobs, workers with the age of their job), its actions
//! (cancel, schedule operations, retry and drop a failed job) need the page's proof, nothing
//! under `/ui/` submits a job, and `--no-console` turns it all into 404.

use crate::support;

use support::*;

const CSP_SCRIPT: &str = "script-src 'self'";

#[test]
fn the_page_and_its_files_with_the_policy() {
    let s = HttpServer::start(&[]);
    for path in ["/", "/ui", "/ui/", "/ui/index.html"] {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        let csp = r.header("content-security-policy").expect("CSP header");
        assert!(
            csp.contains(CSP_SCRIPT) && csp.contains("default-src 'none'"),
            "{csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        let html = r.text();
        assert!(html.contains("<script src=\"/ui/console.js\" defer></script>"));
    }
    let js = s.get("/ui/console.js");
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(js.text().contains("textContent"));
    let css = s.get("/ui/console.css");
    assert_eq!(css.header("content-type"), Some("text/css; charset=utf-8"));
    assert!(css.text().contains("prefers-color-scheme: dark"));
    assert_eq!(s.get("/ui/favicon.svg").status, 200);
    // HEAD announces the length and sends no body.
    let head = s.call("HEAD", "/", &[], b"");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header("content-length").map(str::to_string),
        Some(s.get("/").body.len().to_string())
    );
    assert_eq!(s.get("/ui/nothing-here").status, 404);
}

#[test]
fn nothing_under_ui_submits_a_job() {
    let s = HttpServer::start(&[]);
    assert_eq!(s.get("/ui/reverse").status, 404);
    let post = s.call("POST", "/ui/reverse", &[], b"x");
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    assert_eq!(s.call("POST", "/", &[], b"x").status, 405);
    let status = s.get("/status").text();
    assert_eq!(
        status.matches("\"name\"").count(),
        0,
        "a function was made: {status}"
    );
    // Other names still submit, as before.
    let bg = s.call("POST", "/uix", &[("X-Gearman-Background", "true")], b"");
    assert_eq!(bg.status, 200);
    assert!(s.get("/status").text().contains("\"name\":\"uix\""));
}

#[test]
fn server_facts_and_future_jobs_as_json() {
    let s = HttpServer::start(&[]);
    let mut c = s.gearman();
    for i in 0..3 {
        c.submit(t::SUBMIT_JOB_BG, "later", &format!("u{i}"), b"");
    }
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"<b>x</b>", b"soon", b"4102444800", b"d"],
    );
    let handle = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    let r = s.get("/ui/api/server");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.header("content-security-policy").is_some());
    let body = r.text();
    assert!(
        body.contains(&format!("\"version\":\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{body}"
    );
    assert!(body.contains("\"jobs\":4,"), "{body}");
    assert!(body.contains("\"journal\":null"), "{body}");
    assert!(body.contains("\"uptime_seconds\":"), "{body}");
    // The rate ring has seen the four submissions (in the open slot or the one before).
    let submitted = body
        .split("\"submitted\":[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .expect("submitted rates");
    let sum: u64 = submitted
        .split(',')
        .filter_map(|n| n.parse::<u64>().ok())
        .sum();
    assert_eq!(sum, 4, "{body}");

    let f = s.get("/ui/api/future").text();
    assert_eq!(
        f,
        format!(
            "{{\"total\":1,\"jobs\":[{{\"handle\":\"{handle}\",\"function\":\"<b>x</b>\",\
             \"unique\":\"soon\",\"due\":\"2100-01-01T00:00:00Z\"}}]}}\n"
        )
    );
}

#[test]
fn workers_show_the_job_they_run() {
    let s = HttpServer::start(&[]);
    let mut c = s.gearman();
    let handle = c.submit(t::SUBMIT_JOB_BG, "slow", "", b"");
    let mut w = s.gearman();
    w.can_do(&["slow"]);
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);
    let body = s.get("/workers").text();
    assert!(body.contains("\"identity\":\"addr:127.0.0.1\","), "{body}");
    assert!(
        body.contains(&format!(
            "\"running\":[\"{handle}\"],\"jobs\":[{{\"handle\":\"{handle}\",\"function\":\"slow\",\"since\":\""
        )),
        "{body}"
    );
    // For how long: the server counts it, and it grows while the worker holds the job.
    let age = |body: &str| -> u64 {
        body.split("\"running_ms\":")
            .nth(1)
            .and_then(|r| r.split('}').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no running_ms in {body}"))
    };
    let first = age(&body);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let later = age(&s.get("/workers").text());
        if later >= first + 1000 {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "running_ms stuck at {later}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn the_journal_facts_say_the_last_fsync() {
    let dir = TempDir::new("console-journal");
    let s = HttpServer::start(&["--data-dir", dir.to_str().unwrap(), "--fsync", "always"]);
    let before = s.get("/ui/api/server").text();
    let mut c = s.gearman();
    c.submit(t::SUBMIT_JOB_BG, "kept", "u", b"0123456789");
    let after = s.get("/ui/api/server").text();
    let num = |body: &str, key: &str| -> Option<u64> {
        body.split(&format!("\"{key}\":"))
            .nth(1)
            .and_then(|r| r.split([',', '}']).next())
            .and_then(|n| n.parse().ok())
    };
    let fsyncs = num(&after, "fsyncs").expect("fsyncs");
    assert!(
        fsyncs > num(&before, "fsyncs").unwrap_or(0),
        "{before}\n{after}"
    );
    let last = num(&after, "last_fsync_us").expect("a last fsync latency");
    assert!(last < 60_000_000, "{after}");
    assert!(num(&after, "bytes").expect("journal bytes") > 10, "{after}");
    // Not clustered: the leader slot is empty, and the header says so.
    assert!(
        after.contains("\"leader\":null,\"role\":\"standalone\""),
        "{after}"
    );
}

#[test]
fn failed_jobs_are_listed_retried_and_dropped_from_the_console() {
    let s = HttpServer::start(&["--job-handle-prefix", "H:c"]);
    let mut w = worker(&s.server, &["flaky"]);
    let mut c = s.gearman();
    let long = "\u{20ac}".repeat(1000);
    let mut handles = Vec::new();
    for (u, data, error) in [
        ("one", "short", "disk full\non /var"),
        ("two", long.as_str(), "<img src=x onerror=alert(1)>"),
    ] {
        let h = c.submit(t::SUBMIT_JOB_BG, "flaky", u, data.as_bytes());
        let (got, _) = grab(&mut w);
        assert_eq!(got, h);
        w.send_req(t::WORK_EXCEPTION, &[h.as_bytes(), error.as_bytes()]);
        assert!(w.grab_uniq().is_none());
        handles.push(h);
    }
    let list = s.get("/ui/api/failed");
    assert_eq!(list.status, 200);
    assert!(list.header("content-security-policy").is_some());
    let body = list.text();
    assert!(
        body.starts_with(
            "{\"total\":2,\"kept\":2,\"jobs\":[{\"handle\":\"H:c:2\",\"function\":\"flaky\""
        ),
        "newest first: {body}"
    );
    // The 3000-byte workload is cut to a preview, at a character boundary; the error is text.
    assert!(
        body.contains(&format!(
            "\"workload\":\"{}\",\"workload_bytes\":3000",
            "\u{20ac}".repeat(66)
        )),
        "{body}"
    );
    assert!(
        body.contains("\"error\":\"<img src=x onerror=alert(1)>\""),
        "{body}"
    );
    assert!(body.contains("\"error\":\"disk full\\non /var\""), "{body}");
    let facts = s.get("/ui/api/server").text();
    assert!(
        facts.contains("\"failed\":{\"total\":2,\"functions\":[{\"function\":\"flaky\",\"count\":2}],\"other\":0}"),
        "{facts}"
    );

    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    // Without the page's proof nothing happens.
    for headers in [&[][..], &[("Origin", "http://127.0.0.1")][..]] {
        let r = s.call("POST", "/ui/api/retry", headers, handles[0].as_bytes());
        assert_eq!(r.status, 403, "{headers:?}");
    }
    assert_eq!(s.get("/ui/api/retry").status, 405);
    assert!(s.get("/ui/api/failed").text().contains("\"total\":2"));

    // Retry: it leaves the list as a new job that a worker runs.
    let r = s.call("POST", "/ui/api/retry", &page, handles[0].as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"op\":\"retry\",\"handle\":\"H:c:1\",\"job\":\"H:c:3\"}\n"
    );
    let (h, data) = grab(&mut w);
    assert_eq!((h.as_str(), &data[..]), ("H:c:3", &b"short"[..]));
    assert!(s.get("/workers").text().contains("\"running\":[\"H:c:3\"]"));
    // Drop: gone; a second time 404 with the reason.
    let r = s.call("POST", "/ui/api/drop", &page, handles[1].as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "{\"op\":\"drop\",\"handle\":\"H:c:2\"}\n");
    let r = s.call("POST", "/ui/api/drop", &page, handles[1].as_bytes());
    assert_eq!(r.status, 404);
    assert!(r.text().contains("no failed job has this handle"));
    assert_eq!(
        s.get("/ui/api/failed").text(),
        "{\"total\":0,\"kept\":0,\"jobs\":[]}\n"
    );
    let metrics = s.get("/metrics").text();
    assert!(
        metrics.contains("gearman_http_refused_total{reason=\"console_action\"} 2"),
        "{metrics}"
    );
}

#[test]
fn no_console_turns_it_off() {
    let s = HttpServer::start(&["--no-console"]);
    for path in ["/", "/ui/", "/ui/console.js", "/ui/api/server"] {
        let r = s.get(path);
        assert_eq!(r.status, 404, "{path}");
        assert!(r.text().contains("--no-console"));
    }
    // The rest of the listener is as before.
    assert_eq!(s.get("/healthz").status, 200);
    assert_eq!(s.get("/status").status, 200);
}

/// A POST to the cancel action with `headers`.
fn cancel(s: &HttpServer, handle: &str, headers: &[(&str, &str)]) -> Resp {
    s.call("POST", "/ui/api/cancel", headers, handle.as_bytes())
}

#[test]
fn cancelling_a_future_job_needs_the_console_header_and_an_origin() {
    let s = HttpServer::start(&[]);
    let mut c = s.gearman();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"later", b"u", b"4102444800", b""]);
    let handle = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    let origin = "http://127.0.0.1";
    // A form or an <img> elsewhere cannot add the header; a script has no Origin.
    for (headers, why) in [
        (&[("Origin", origin)][..], "X-Gearwheel-Console"),
        (&[("X-Gearwheel-Console", "1")][..], "Origin"),
    ] {
        let r = cancel(&s, &handle, headers);
        assert_eq!(r.status, 403, "{headers:?}");
        assert!(r.text().contains(why), "{}", r.text());
    }
    // Another origin is stopped by the listener's guard before the action is looked at.
    let other = cancel(
        &s,
        &handle,
        &[
            ("X-Gearwheel-Console", "1"),
            ("Origin", "http://evil.example"),
        ],
    );
    assert_eq!(other.status, 403);
    assert!(s.get("/ui/api/future").text().contains("\"total\":1"));
    let metrics = s.get("/metrics").text();
    assert!(
        metrics.contains("gearman_http_refused_total{reason=\"console_action\"} 2"),
        "{metrics}"
    );
    assert_eq!(s.get("/ui/api/cancel").status, 405);

    // The console's own request.
    let page = [("X-Gearwheel-Console", "1"), ("Origin", origin)];
    let r = cancel(&s, &handle, &page);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), format!("{{\"cancelled\":\"{handle}\"}}\n"));
    assert!(s.get("/ui/api/future").text().contains("\"total\":0"));
    assert!(!c.admin("show scheduled", true).contains(&handle));
    // Gone, or running: refused with the reason.
    assert_eq!(cancel(&s, &handle, &page).status, 404);
    let running = c.submit(t::SUBMIT_JOB_BG, "busy", "", b"");
    let mut w = s.gearman();
    w.can_do(&["busy"]);
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);
    let r = cancel(
        &s,
        &running,
        &[
            ("X-Gearwheel-Console", "1"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
    );
    assert_eq!(r.status, 409, "{}", r.text());
    // This viewer is on loopback: the page offers the action.
    assert!(s.get("/ui/api/server").text().contains("\"actions\":true"));
}

#[test]
fn no_console_no_action() {
    let s = HttpServer::start(&["--no-console"]);
    let r = cancel(
        &s,
        "H:x:1",
        &[("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")],
    );
    assert_eq!(r.status, 404);
}

#[test]
fn operating_a_schedule_entry_from_the_console() {
    let dir = TempDir::new("console-sched");
    let file = dir.join("schedules");
    std::fs::write(&file, "0 3 * * *    nightly.backup\n").unwrap();
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    let op = |body: &str, headers: &[(&str, &str)]| {
        s.call("POST", "/ui/api/schedule", headers, body.as_bytes())
    };
    let listed = s.get("/schedules").text();
    let id = listed
        .split("\"id\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("an entry id")
        .to_string();
    assert_eq!(op(&format!("pause {id}"), &[]).status, 403);
    assert!(s.get("/schedules").text().contains("\"paused\":false"));
    let r = op(&format!("pause {id}"), &page);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(s.get("/schedules").text().contains("\"paused\":true"));
    assert_eq!(op(&format!("resume {id}"), &page).status, 200);
    assert!(s.get("/schedules").text().contains("\"paused\":false"));
    let r = op(&format!("run {id}"), &page);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"jobs\":[\"H:"), "{}", r.text());
    assert!(
        s.get("/status")
            .text()
            .contains("\"name\":\"nightly.backup\",\"total\":1")
    );
    assert_eq!(op("pause no-such-entry", &page).status, 404);
    assert_eq!(op("explode it", &page).status, 400);
}
