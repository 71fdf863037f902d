//! The console's lists over real sockets: one function's queued, running and future jobs a
//! page at a time (`/ui/api/jobs`, bounded whatever the query asks, under the ACL's `status`
//! for that function), the failed jobs of a function or schedule entry (`/ui/api/failed?...`)
//! and Retry all / Drop all of such a filter (`/ui/api/retry-all`, `/ui/api/drop-all`).

use crate::support;

use support::*;

const PAGE: [(&str, &str); 2] = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];

#[test]
fn a_functions_jobs_page_by_page() {
    let s = HttpServer::start(&["--job-handle-prefix", "H:l"]);
    let mut c = s.gearman();
    for i in 0..5 {
        c.submit(
            t::SUBMIT_JOB_BG,
            "video.transcode",
            &format!("v{i}"),
            b"movie.mp4",
        );
    }
    c.submit(t::SUBMIT_JOB_HIGH_BG, "video.transcode", "urgent", b"now");
    c.submit(t::SUBMIT_JOB_BG, "other", "o", b"");
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"video.transcode", b"later", b"4102444800", b"x"],
    );
    c.expect(t::JOB_CREATED);
    let mut w = worker(&s.server, &["video.transcode"]);
    // The high-priority job goes first.
    let (running, _) = grab(&mut w);
    assert_eq!(running, "H:l:6");

    let r = s.get("/ui/api/jobs?function=video.transcode&state=queued&limit=2&offset=1");
    assert_eq!(r.status, 200);
    assert!(r.header("content-security-policy").is_some());
    let body = r.text();
    assert!(
        body.starts_with(
            "{\"function\":\"video.transcode\",\"state\":\"queued\",\"total\":5,\"offset\":1,\
             \"limit\":2,\"jobs\":[{\"handle\":\"H:l:2\",\"unique\":\"v1\",\"priority\":\"normal\",\
             \"workload\":\"movie.mp4\",\"workload_bytes\":9,\"submitted\":"
        ),
        "{body}"
    );
    assert_eq!(body.matches("\"handle\"").count(), 2, "{body}");
    assert!(body.contains("\"handle\":\"H:l:3\""), "{body}");

    let run = s
        .get("/ui/api/jobs?function=video.transcode&state=running")
        .text();
    assert!(
        run.contains("\"total\":1,") && run.contains("\"handle\":\"H:l:6\",\"unique\":\"urgent\""),
        "{run}"
    );
    assert!(run.contains("\"worker\":\"addr:127.0.0.1\""), "{run}");
    let fut = s
        .get("/ui/api/jobs?function=video.transcode&state=future")
        .text();
    assert!(
        fut.contains("\"total\":1,") && fut.contains("\"due\":\"2100-01-01T00:00:00Z\""),
        "{fut}"
    );

    // Bounded whatever the query asks; an unknown function is a 404, a bad query a 400.
    let big = s.get("/ui/api/jobs?function=video.transcode&limit=1000000&offset=99999999");
    assert!(
        big.text()
            .contains("\"offset\":100000,\"limit\":200,\"jobs\":[]"),
        "{}",
        big.text()
    );
    assert_eq!(s.get("/ui/api/jobs?function=nope").status, 404);
    for bad in [
        "/ui/api/jobs",
        "/ui/api/jobs?function=f&state=done",
        "/ui/api/jobs?function=f&limit=x",
    ] {
        assert_eq!(s.get(bad).status, 400, "{bad}");
    }

    // Cancel from the list: the queued job leaves it.
    let r = s.call("POST", "/ui/api/cancel", &PAGE, b"H:l:2");
    assert_eq!(r.status, 200, "{}", r.text());
    let after = s.get("/ui/api/jobs?function=video.transcode").text();
    assert!(
        after.contains("\"total\":4,") && !after.contains("H:l:2\""),
        "{after}"
    );
}

#[test]
fn a_functions_jobs_need_status_on_that_function() {
    let dir = TempDir::new("console-lists-acl");
    let acl = dir.path("acl");
    std::fs::write(
        &acl,
        "addr:127.0.0.0/8 submit,work *\naddr:127.0.0.0/8 status open.*\n",
    )
    .unwrap();
    let s = HttpServer::start(&["--acl", acl.to_str().unwrap()]);
    let mut c = s.gearman();
    c.submit(t::SUBMIT_JOB_BG, "open.a", "a", b"");
    c.submit(t::SUBMIT_JOB_BG, "secret.b", "b", b"");
    assert_eq!(s.get("/ui/api/jobs?function=open.a").status, 200);
    let r = s.get("/ui/api/jobs?function=secret.b");
    assert_eq!(r.status, 403, "{}", r.text());
}

/// Fail one job of `func` with `unique` through worker `w`.
fn fail(c: &mut Conn, w: &mut Conn, func: &str, unique: &str) -> String {
    let h = c.submit(t::SUBMIT_JOB_BG, func, unique, unique.as_bytes());
    let (got, _) = grab(w);
    assert_eq!(got, h);
    w.send_req(t::WORK_FAIL, &[h.as_bytes()]);
    h
}

#[test]
fn failed_jobs_filtered_retried_and_dropped_by_the_filter() {
    let s = HttpServer::start(&["--job-handle-prefix", "H:f"]);
    let mut c = s.gearman();
    let mut w = worker(&s.server, &["a", "b"]);
    for (f, u) in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2")] {
        fail(&mut c, &mut w, f, u);
    }
    wait_until(5, "four failed jobs", || {
        s.get("/ui/api/failed").text().contains("\"total\":4")
    });
    let only_a = s.get("/ui/api/failed?function=a").text();
    assert!(
        only_a.starts_with("{\"total\":2,\"kept\":4,\"jobs\":[{\"handle\":\"H:f:3\""),
        "{only_a}"
    );
    let one = s.get("/ui/api/failed?handle=H:f:2").text();
    assert!(one.starts_with("{\"total\":1,"), "{one}");
    assert_eq!(
        s.get("/ui/api/failed?entry=nightly").text(),
        "{\"total\":0,\"kept\":4,\"jobs\":[]}\n"
    );

    // Without the page's proof nothing happens; GET is not an action.
    let r = s.call("POST", "/ui/api/retry-all", &[], b"function=a");
    assert_eq!(r.status, 403);
    assert_eq!(s.get("/ui/api/drop-all").status, 405);

    // Retry all of `a`: both queued again as new jobs, `b` stays listed.
    let r = s.call("POST", "/ui/api/retry-all", &PAGE, b"function=a");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"op\":\"retry\",\"matched\":2,\"jobs\":[\"H:f:5\",\"H:f:6\"],\"full\":0}\n"
    );
    for want in [("H:f:5", "a1"), ("H:f:6", "a2")] {
        let (h, data) = grab(&mut w);
        assert_eq!((h.as_str(), &data[..]), (want.0, want.1.as_bytes()));
    }
    // Drop all of the rest (an empty filter names every failed job).
    let r = s.call("POST", "/ui/api/drop-all", &PAGE, b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "{\"op\":\"drop\",\"dropped\":2}\n");
    assert!(s.get("/ui/api/failed").text().starts_with("{\"total\":0,"));
    let r = s.call("POST", "/ui/api/drop-all", &PAGE, b"entry=%zz");
    assert_eq!(r.status, 400);
}

#[test]
fn a_queued_jobs_age_is_the_time_since_it_was_submitted() {
    let dir = TempDir::new("job-age");
    let data = dir.path("data");
    let args = ["--http-port", "0", "--data-dir", data.to_str().unwrap()];
    let s = InProcess::start(&args);
    let hs = HttpServer {
        http: s.http_addr(),
        server: s,
    };
    let mut c = hs.server.connect();
    let first = c.submit(t::SUBMIT_JOB_BG, "report", "a", b"");
    let t0 = hs.server.now_ms();
    hs.server.advance(2_500);
    let second = c.submit(t::SUBMIT_JOB_BG, "report", "b", b"");
    hs.server.advance(1_500);
    let ages = |hs: &HttpServer<InProcess>| -> Vec<(String, u64)> {
        let body = hs.get("/ui/api/jobs?function=report").text();
        body.split("{\"handle\":\"")
            .skip(1)
            .map(|j| {
                let handle = j.split('"').next().unwrap().to_string();
                let age = j
                    .split("\"age_ms\":")
                    .nth(1)
                    .and_then(|a| a.split(',').next())
                    .unwrap_or_else(|| panic!("no age in {body}"));
                (handle, age.parse().unwrap())
            })
            .collect()
    };
    assert_eq!(ages(&hs), [(first.clone(), 4_000), (second.clone(), 1_500)]);
    let job = hs.get(&format!("/jobs/{first}")).text();
    let submitted = format!("\"submitted\":\"{}\"", rfc3339(t0));
    assert!(job.contains(&submitted), "{submitted} in {job}");
    // The journal's job record holds no submission time: a job read back from it is as old
    // as the restart.
    let clock = hs.server.kill9();
    let s = InProcess::start_on(clock, &args);
    let hs = HttpServer {
        http: s.http_addr(),
        server: s,
    };
    hs.server.advance(1_000);
    assert_eq!(ages(&hs), [(first, 1_000), (second, 1_000)]);
}

/// `ms` since the epoch as the JSON writes times (RFC 3339 UTC, whole seconds).
fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
