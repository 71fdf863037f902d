//! Job submission over HTTP, gearmand's plugin's way (POST/PUT/GET /FUNCTION, X-Gearman-*
//! headers) but with honest status codes: a raw Gearman worker on the other side sends
//! WORK_DATA, WORK_STATUS, WORK_COMPLETE, WORK_FAIL and WORK_EXCEPTION.

use crate::support;

use std::time::Duration;

use support::*;

#[test]
fn foreground_job_gathers_data_and_status_then_completes() {
    let s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["rev"]);
    let mut h = s.connect();
    h.send(&request("POST", "/rev", &[], b"hello"));
    let (handle, data) = grab(&mut w);
    assert_eq!(data, b"hello");
    w.send_req(t::WORK_DATA, &[handle.as_bytes(), b"part1,"]);
    w.send_req(t::WORK_STATUS, &[handle.as_bytes(), b"1", b"2"]);
    w.send_req(t::WORK_WARNING, &[handle.as_bytes(), b"a warning"]);
    w.send_req(t::WORK_DATA, &[handle.as_bytes(), b"part2,"]);
    // Nothing is answered before the job ends: once the worker's echo proves the server
    // handled its packets, the HTTP client still has nothing.
    sync(&mut w);
    h.expect_silence(200);
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"olleh"]);
    let r = h.read();
    assert_eq!(r.version, "HTTP/1.1");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "part1,part2,olleh");
    assert_eq!(r.header("X-Gearman-Job-Handle"), Some(handle.as_str()));
    assert_eq!(r.header("X-Gearman-Command"), Some("WORK_COMPLETE"));
    assert_eq!(r.header("X-Gearman-Status"), Some("1/2"));
    assert!(!r.closes());
    // The connection goes on.
    h.send(&request("GET", "/healthz", &[], b""));
    assert_eq!(h.read().status, 200);
}

#[test]
fn worker_failure_and_exception_are_502() {
    let s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["f"]);
    let mut h = s.connect();
    h.send(&request("POST", "/f", &[], b"1"));
    let (handle, _) = grab(&mut w);
    w.send_req(t::WORK_FAIL, &[handle.as_bytes()]);
    let r = h.read();
    assert_eq!(r.status, 502);
    assert_eq!(r.header("X-Gearman-Command"), Some("WORK_FAIL"));
    assert_eq!(r.header("X-Gearman-Job-Handle"), Some(handle.as_str()));
    assert!(r.body.is_empty());

    // The HTTP connection asked for exceptions: the text comes through.
    h.send(&request("PUT", "/f", &[], b"2"));
    let (handle, _) = grab(&mut w);
    w.send_req(t::WORK_EXCEPTION, &[handle.as_bytes(), b"disk full"]);
    let r = h.read();
    assert_eq!(r.status, 502);
    assert_eq!(r.header("X-Gearman-Command"), Some("WORK_EXCEPTION"));
    assert_eq!(r.text(), "disk full");
}

#[test]
fn background_submit_answers_at_once_with_the_handle() {
    let s = HttpServer::start(&[]);
    let r = s.call(
        "POST",
        "/later",
        &[("X-Gearman-Background", "true")],
        b"payload",
    );
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("Content-Length"), Some("0"));
    assert_eq!(r.header("X-Gearman-Command"), Some("JOB_CREATED"));
    let handle = r.header("X-Gearman-Job-Handle").unwrap().to_string();
    assert!(handle.starts_with("H:"), "{handle}");
    // Visible in the admin status and over HTTP.
    let mut admin = s.gearman();
    assert_eq!(admin.admin("status", true), "later\t1\t0\t0\n.\n");
    let j = s.get(&format!("/jobs/{handle}"));
    assert_eq!(j.status, 200);
    assert!(
        j.text().contains("\"known\":true,\"running\":false")
            && j.text().contains("\"state\":\"queued\"")
            && j.text().contains("\"background\":true"),
        "{}",
        j.text()
    );
    // A worker gets the workload.
    let mut w = worker(&s.server, &["later"]);
    let (h2, data) = grab(&mut w);
    assert_eq!((h2, data), (handle, b"payload".to_vec()));
}

#[test]
fn epoch_submit_is_a_future_job() {
    let s = HttpServer::start(&[]);
    let far = "4102444800"; // 2100-01-01
    let r = s.call("POST", "/report", &[("X-Gearman-Epoch", far)], b"weekly");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("X-Gearman-Command"), Some("JOB_CREATED"));
    let handle = r.header("X-Gearman-Job-Handle").unwrap().to_string();
    let st = s.get("/status").text();
    assert!(
        st.contains("\"name\":\"report\",\"total\":1,\"queued\":0,\"running\":0,\"future\":1"),
        "{st}"
    );
    let j = s.get(&format!("/jobs/{handle}")).text();
    assert!(
        j.contains("\"state\":\"future\"") && j.contains("\"due\":\"2100-01-01T00:00:00Z\""),
        "{j}"
    );
    let mut admin = s.gearman();
    assert!(admin.admin("show scheduled", true).contains(&handle));
    // Out of range: the engine's INVALID_ARGUMENT becomes 400.
    let r = s.call(
        "POST",
        "/report",
        &[("X-Gearman-Epoch", "999999999999999")],
        b"x",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.header("X-Gearman-Command"), Some("ERROR"));
    assert!(r.text().starts_with("INVALID_ARGUMENT"), "{}", r.text());
}

#[test]
fn priorities_unique_and_get_submissions() {
    let s = HttpServer::start(&[]);
    let bg = ("X-Gearman-Background", "true");
    for p in ["high", "low", "LOW"] {
        let r = s.call(
            "POST",
            "/p",
            &[bg, ("X-Gearman-Priority", p), ("X-Gearman-Unique", "")],
            b"x",
        );
        assert_eq!(r.status, 200);
    }
    let st = s.get("/status").text();
    assert!(
        st.contains("\"priority\":{\"high\":1,\"normal\":0,\"low\":2}"),
        "{st}"
    );
    let mut admin = s.gearman();
    assert_eq!(admin.admin("prioritystatus", true), "p\t1\t0\t2\t0\n.\n");

    // gearmand's default unique is `-`: the same body joins the same job.
    let a = s.call("POST", "/u", &[bg], b"same");
    let b = s.call("POST", "/u", &[bg], b"same");
    let c = s.call("POST", "/u", &[bg, ("X-Gearman-Unique", "k1")], b"other");
    let d = s.call("POST", "/u", &[bg, ("X-Gearman-Unique", "k1")], b"diff");
    assert_eq!(
        a.header("X-Gearman-Job-Handle"),
        b.header("X-Gearman-Job-Handle")
    );
    assert_eq!(
        c.header("X-Gearman-Job-Handle"),
        d.header("X-Gearman-Job-Handle")
    );
    assert_ne!(
        a.header("X-Gearman-Job-Handle"),
        c.header("X-Gearman-Job-Handle")
    );

    // GET /FUNCTION submits an empty workload (gearmand); the function name is URL-decoded.
    let mut w = worker(&s.server, &["get me"]);
    let mut h = s.connect();
    h.send(&request("GET", "/get%20me", &[], b""));
    let (handle, data) = grab(&mut w);
    assert!(data.is_empty());
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    assert_eq!(h.read().text(), "done");
}

#[test]
fn timeout_is_504_and_the_job_goes_on() {
    let s = HttpServer::start(&[]);
    let mut h = s.connect();
    h.send(&request(
        "POST",
        "/slow",
        &[("X-Gearman-Timeout", "300")],
        b"data",
    ));
    let t0 = std::time::Instant::now();
    let r = h.read();
    let waited = t0.elapsed();
    assert_eq!(r.status, 504);
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(r.header("X-Gearman-Command"), Some("JOB_CREATED"));
    let handle = r.header("X-Gearman-Job-Handle").unwrap().to_string();
    assert!(!r.closes());
    // The job is still there, now as a background job, and runs when a worker comes.
    let j = s.get(&format!("/jobs/{handle}")).text();
    assert!(
        j.contains("\"known\":true") && j.contains("\"background\":true"),
        "{j}"
    );
    // The same connection serves the next request; the late result does not leak into it.
    let mut w = worker(&s.server, &["slow"]);
    let (h2, _) = grab(&mut w);
    assert_eq!(h2, handle);
    h.send(&request("GET", "/healthz", &[], b""));
    assert_eq!(h.read().text(), "ok\n");
    w.send_req(t::WORK_COMPLETE, &[h2.as_bytes(), b"late"]);
    // The worker's echo proves the late result was handled; then it must not have leaked.
    sync(&mut w);
    h.expect_silence(200);
    // The job finished: GET_STATUS knows it no more, its kept result says how it ended.
    let j = s.get(&format!("/jobs/{handle}")).text();
    assert!(
        j.contains("\"known\":false,")
            && j.contains("\"kept\":true,")
            && j.contains("\"result\":\"late\""),
        "{j}"
    );
    // A result in time is not a timeout.
    h.send(&request(
        "POST",
        "/slow",
        &[("X-Gearman-Timeout", "5000")],
        b"quick",
    ));
    let (h3, _) = grab(&mut w);
    w.send_req(t::WORK_COMPLETE, &[h3.as_bytes(), b"fast"]);
    let r = h.read();
    assert_eq!((r.status, r.text()), (200, "fast".to_string()));
}

#[test]
fn a_full_queue_is_503() {
    let s = HttpServer::start(&["--max-queue", "1"]);
    let bg = ("X-Gearman-Background", "true");
    assert_eq!(s.call("POST", "/q", &[bg], b"1").status, 200);
    let r = s.call("POST", "/q", &[bg], b"2");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("X-Gearman-Command"), Some("ERROR"));
    assert_eq!(r.text(), "QUEUE_ERROR: Job queue is full\n");
}

#[test]
fn a_client_that_leaves_drops_its_queued_foreground_job() {
    let s = HttpServer::start(&[]);
    {
        let mut h = s.connect();
        h.send(&request("POST", "/gone", &[], b"x"));
        wait_status_json(&s, "job queued", |b| {
            b.contains("\"name\":\"gone\",\"total\":1")
        });
    }
    // With its only job dropped and no worker, the function stays listed, as gearmand's does.
    wait_status_json(&s, "job dropped", |b| {
        b.contains("\"name\":\"gone\",\"total\":0")
    });
}

#[test]
fn background_http_jobs_are_journaled_like_any_other() {
    let dir = TempDir::new("http-journal");
    let d = dir.to_str().unwrap();
    let s = HttpServer::start(&["--data-dir", d]);
    let r = s.call(
        "POST",
        "/kept",
        &[("X-Gearman-Background", "true")],
        b"survives",
    );
    assert_eq!(r.status, 200);
    let handle = r.header("X-Gearman-Job-Handle").unwrap().to_string();
    let HttpServer { mut server, .. } = s;
    server.signal(libc::SIGKILL);
    server.wait_exit(5).expect("killed");
    drop(server);
    let s = HttpServer::start(&["--data-dir", d]);
    let j = s.get(&format!("/jobs/{handle}"));
    assert_eq!(j.status, 200, "{}", j.text());
    let mut w = worker(&s.server, &["kept"]);
    let (h, data) = grab(&mut w);
    assert_eq!((h, data), (handle, b"survives".to_vec()));
    drop(s);
    std::fs::remove_dir_all(&dir).ok();
}
