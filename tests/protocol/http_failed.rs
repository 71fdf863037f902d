//! `GET /failed`, `POST /failed/HANDLE/retry` and `DELETE /failed/HANDLE` over real sockets,
//! and the failed list's metrics; a GET or a foreign page changes nothing.

use crate::support;

use support::*;

/// Submit a background job for `func` and have a real worker fail it with `exception`.
fn fail_one(s: &HttpServer, w: &mut support::Conn, func: &str, unique: &str, exception: &str) {
    let mut c = s.gearman();
    let h = c.submit(t::SUBMIT_JOB_BG, func, unique, b"the workload");
    let (got, _) = grab(w);
    assert_eq!(got, h);
    w.send_req(t::WORK_EXCEPTION, &[h.as_bytes(), exception.as_bytes()]);
    // Its NO_JOB says the exception was read.
    assert!(w.grab_uniq().is_none());
}

#[test]
fn the_failed_list_is_read_retried_and_deleted_over_http() {
    let s = HttpServer::start(&["--job-handle-prefix", "H:h"]);
    let mut w = worker(&s.server, &["f"]);
    fail_one(&s, &mut w, "f", "one", "boom \"quoted\"");
    fail_one(&s, &mut w, "f", "two", "second");

    let r = s.get("/failed");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.text();
    assert!(
        body.starts_with(
            "{\"failed\":[{\"handle\":\"H:h:1\",\"function\":\"f\",\"unique\":\"one\",\
             \"workload\":\"the workload\",\"error\":\"boom \\\"quoted\\\"\",\"attempts\":1,"
        ),
        "{body}"
    );
    assert!(
        body.contains("\"entry\":null}") && body.ends_with("\"total\":2,\"bytes\":61}\n"),
        "{body}"
    );

    // A GET, a wrong method and a foreign page change nothing.
    for (m, path) in [
        ("GET", "/failed/H:h:1/retry"),
        ("POST", "/failed/H:h:1"),
        ("PUT", "/failed/H:h:1"),
    ] {
        assert_eq!(s.call(m, path, &[], b"").status, 405, "{m} {path}");
    }
    let r = s.call(
        "DELETE",
        "/failed/H:h:1",
        &[("Origin", "https://evil.example")],
        b"",
    );
    assert_eq!(r.status, 403);
    assert!(s.get("/failed").text().contains("\"total\":2"));

    let r = s.call("POST", "/failed/H:h:1/retry", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"op\":\"retry\",\"handle\":\"H:h:1\",\"job\":\"H:h:3\"}\n"
    );
    let (h, data) = grab(&mut w);
    assert_eq!((h.as_str(), &data[..]), ("H:h:3", &b"the workload"[..]));
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);

    let r = s.call("DELETE", "/failed/H:h:2", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "{\"op\":\"drop\",\"handle\":\"H:h:2\"}\n");
    let r = s.call("DELETE", "/failed/H:h:2", &[], b"");
    assert_eq!(r.status, 404);
    assert_eq!(
        r.text(),
        "{\"op\":\"drop\",\"handle\":\"H:h:2\",\"error\":\"no failed job has this handle\"}\n"
    );
    assert_eq!(
        s.get("/failed").text(),
        "{\"failed\":[],\"total\":0,\"bytes\":0}\n"
    );
    // DELETE of anything else is still refused.
    assert_eq!(s.call("DELETE", "/status", &[], b"").status, 405);
}

#[test]
fn metrics_show_the_list_and_its_drops_by_function() {
    let s = HttpServer::start(&["--keep-failed", "1"]);
    let mut w = worker(&s.server, &["resize"]);
    fail_one(&s, &mut w, "resize", "a", "x");
    fail_one(&s, &mut w, "resize", "b", "y");
    let m = s.get("/metrics").text();
    for line in [
        "gearwheel_failed_list_jobs 1",
        "gearwheel_failed_jobs{function=\"resize\"} 1",
        "gearwheel_failed_jobs_other 0",
        "gearwheel_failed_dropped_total{function=\"resize\"} 1",
        "gearwheel_failed_dropped_other_total 0",
    ] {
        assert!(m.lines().any(|l| l == line), "{line} not in\n{m}");
    }
}
