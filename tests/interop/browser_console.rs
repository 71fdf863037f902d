//! The console in a real browser: headless Chromium driven by python selenium
//! (tests/interop/console_browser.py, console_failed.py, console_pages.py) against a live
//! server with a schedules file, workers, queued, running, future and failed jobs, and a
//! function whose name is HTML.
//! Skipped with a reason when Chromium, chromedriver or selenium is missing, unless
//! GEARWHEEL_REQUIRE_INTEROP=1. Every test saves screenshots under target/tmp and prints their
//! paths; with GEARWHEEL_BLESS=1 the overview is also written to docs/console.png.
//! A browser's start and page walks take seconds each, so plain `cargo test` leaves these out
//! (ignored as long) and `.ci/run` runs them: `cargo test --test interop browser_console:: --
//! --include-ignored`.

use crate::support;

use std::process::Command;

use support::*;

#[test]
#[ignore = "long: starts Chromium and walks the pages for several seconds; .ci/run runs it"]
fn the_console_in_chromium() {
    if !need(BROWSER) {
        return;
    }
    let dir = TempDir::new("console-browser");
    let sched = dir.path("schedules");
    std::fs::write(
        &sched,
        "* * * * *    console.tick overlap=allow\n0 3 * * *    nightly.backup   -- {\"mode\":\"full\"}\n",
    )
    .unwrap();
    // A journal, so that the overview (and docs/console.png) shows its size and last fsync.
    let data = dir.path("data");
    let s = HttpServer::start(&[
        "--schedules",
        sched.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let mut c = s.gearman();
    for i in 0..3 {
        c.submit(t::SUBMIT_JOB_BG, "console.q", &format!("q{i}"), b"");
    }
    for i in 0..2 {
        c.submit(
            t::SUBMIT_JOB_BG,
            "<img src=x onerror=alert(1)>",
            &format!("x{i}"),
            b"",
        );
    }
    c.submit(t::SUBMIT_JOB_BG, "console.work", "w", b"");
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"console.later", b"l", b"4102444800", b""],
    );
    c.expect(t::JOB_CREATED);
    let mut w = s.gearman();
    w.send_req(t::SET_CLIENT_ID, &[b"console-worker"]);
    w.can_do(&["console.work"]);
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);

    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let base = format!("http://{}", s.http);
    let stdout = run(
        "console_browser.py",
        Command::new("python3")
            // An odd zone, so that the page's local times differ from UTC in the minutes.
            .env("TZ", "Asia/Kathmandu")
            .arg(script("console_browser.py"))
            .arg(&base)
            .arg(&out),
        None,
        120,
    );
    print!("{stdout}");
    assert!(stdout.contains("ok: no CSP violation"), "{stdout}");
    if std::env::var("GEARWHEEL_BLESS").as_deref() == Ok("1") {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/console.png");
        std::fs::copy(out.join("console-overview.png"), docs).unwrap();
    }
}

#[test]
#[ignore = "long: starts Chromium and walks the pages for several seconds; .ci/run runs it"]
fn failed_jobs_retried_and_dropped_in_chromium() {
    if !need(BROWSER) {
        return;
    }
    let s = HttpServer::start(&[]);
    let mut c = s.gearman();
    let mut w = s.gearman();
    w.send_req(t::SET_CLIENT_ID, &[b"console-worker"]);
    w.can_do(&["console.flaky", "console.work"]);
    let long = "\u{20ac}".repeat(1000);
    for (u, data, error) in [
        ("a", "retry me", "disk full on /var"),
        ("b", long.as_str(), "<img src=x onerror=alert(1)>"),
    ] {
        let h = c.submit(t::SUBMIT_JOB_BG, "console.flaky", u, data.as_bytes());
        w.send_req(t::GRAB_JOB, &[]);
        assert_eq!(
            String::from_utf8_lossy(&w.expect(t::JOB_ASSIGN)),
            format!("{h}\0console.flaky\0{data}")
        );
        w.send_req(t::WORK_EXCEPTION, &[h.as_bytes(), error.as_bytes()]);
    }
    // The worker drops console.flaky (the retried job must go to the browser test's worker)
    // and keeps running a console.work job.
    w.send_req(t::CANT_DO, &[b"console.flaky"]);
    c.submit(t::SUBMIT_JOB_BG, "console.work", "w", b"");
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);

    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let stdout = run(
        "console_failed.py",
        Command::new("python3")
            .arg(script("console_failed.py"))
            .arg(format!("http://{}", s.http))
            .arg(s.server.addr.to_string())
            .arg(&out),
        None,
        120,
    );
    print!("{stdout}");
    assert!(stdout.contains("ok: dropped"), "{stdout}");
    assert!(stdout.contains("ok: no CSP violation"), "{stdout}");
}

#[test]
#[ignore = "long: starts Chromium and walks the pages for several seconds; .ci/run runs it"]
fn the_consoles_working_pages_in_chromium() {
    if !need(BROWSER) {
        return;
    }
    let dir = TempDir::new("console-pages");
    let sched = dir.path("schedules");
    std::fs::write(&sched, "0 3 * * *    report.build   id=nightly-report\n").unwrap();
    let s = HttpServer::start(&["--schedules", sched.to_str().unwrap()]);
    let mut c = s.gearman();
    for i in 0..60 {
        let data = format!("{{\"file\":\"movie-{i}.mp4\"}}");
        c.submit(
            t::SUBMIT_JOB_BG,
            "video.transcode",
            &format!("v{i}"),
            data.as_bytes(),
        );
    }
    let mut w = s.gearman();
    w.send_req(t::SET_CLIENT_ID, &[b"encoder-1"]);
    w.can_do(&["video.transcode"]);
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);
    // Two failed jobs of reports.flaky and a failed run of the entry nightly-report; then the
    // failing worker leaves those functions, so that a retried job stays queued.
    let mut f = s.gearman();
    f.can_do(&["reports.flaky", "report.build"]);
    for u in ["r1", "r2"] {
        c.submit(t::SUBMIT_JOB_BG, "reports.flaky", u, b"monthly report");
        let (h, _) = grab(&mut f);
        f.send_req(t::WORK_FAIL, &[h.as_bytes()]);
    }
    assert!(
        c.admin("run schedule nightly-report", false)
            .starts_with("OK")
    );
    let (h, _) = grab(&mut f);
    f.send_req(t::WORK_FAIL, &[h.as_bytes()]);
    f.send_req(t::CANT_DO, &[b"reports.flaky"]);
    f.send_req(t::CANT_DO, &[b"report.build"]);
    c.submit(t::SUBMIT_JOB_BG, "console.live", "live", b"");
    wait_until(5, "three failed jobs", || {
        s.get("/ui/api/server")
            .text()
            .contains("\"failed\":{\"total\":3,")
    });

    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let stdout = run(
        "console_pages.py",
        Command::new("python3")
            .env("TZ", "Asia/Kathmandu")
            .arg(script("console_pages.py"))
            .arg(format!("http://{}", s.http))
            .arg(s.server.addr.to_string())
            .arg(&out),
        None,
        180,
    );
    print!("{stdout}");
    assert!(stdout.contains("ok: no CSP violation"), "{stdout}");
}

#[test]
#[ignore = "long: starts Chromium and walks the pages for several seconds; .ci/run runs it"]
fn the_console_under_an_acl_in_chromium() {
    if !need(BROWSER) {
        return;
    }
    let dir = TempDir::new("console-acl");
    let no_status = dir.path("no-status.acl");
    std::fs::write(
        &no_status,
        "addr:127.0.0.0/8 submit,work *\naddr:::1 submit,work *\n",
    )
    .unwrap();
    let status_only = dir.path("status-only.acl");
    std::fs::write(
        &status_only,
        "addr:127.0.0.0/8 submit,work,status *\naddr:::1 submit,work,status *\n",
    )
    .unwrap();
    let a = HttpServer::start(&["--acl", no_status.to_str().unwrap()]);
    let b = HttpServer::start(&["--acl", status_only.to_str().unwrap()]);
    let mut c = b.gearman();
    let mut w = b.gearman();
    w.can_do(&["console.flaky"]);
    let h = c.submit(t::SUBMIT_JOB_BG, "console.flaky", "a", b"x");
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::JOB_ASSIGN);
    w.send_req(t::WORK_EXCEPTION, &[h.as_bytes(), b"no"]);
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::NO_JOB);

    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let stdout = run(
        "console_denied.py",
        Command::new("python3")
            .arg(script("console_denied.py"))
            .arg(format!("http://{}", a.http))
            .arg(format!("http://{}", b.http))
            .arg(&out),
        None,
        120,
    );
    print!("{stdout}");
    assert!(stdout.contains("ok: no script error"), "{stdout}");
}
