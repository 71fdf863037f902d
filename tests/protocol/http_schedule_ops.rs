//! `POST /schedules/ID/run|skip|pause|resume` over real sockets: each changes the entry as its
//! admin line does and answers with the entry; other methods and foreign pages are refused.

use crate::support;

use support::*;

fn schedules_file(text: &str) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new("http-ops");
    let p = dir.path("s.cron");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

fn post<S: Serves>(s: &HttpServer<S>, path: &str) -> Resp {
    s.call("POST", path, &[], b"")
}

#[test]
fn post_runs_skips_pauses_and_resumes_an_entry() {
    let (_dir, file) =
        schedules_file("@every 1s tick overlap=allow\n0 3 * * * nightly -- for {id}\n");
    // In-process on a manual clock: the pause is tested over time the test lets pass.
    let s = HttpServer::in_process(&["--schedules", file.to_str().unwrap()]);
    let mut admin = s.gearman();

    let r = post(&s, "/schedules/tick/pause");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.text();
    assert!(body.starts_with("{\"op\":\"pause\",\"handles\":[],\"schedule\":{\"id\":\"tick\""));
    assert!(
        body.contains("\"next_run\":null") && body.contains("\"paused\":true"),
        "{body}"
    );
    // Nothing fires while paused: the jobs queued stay as many as at the pause.
    let tick_total = |a: &mut support::Conn| {
        a.admin("status", true)
            .lines()
            .find_map(|l| l.strip_prefix("tick\t"))
            .and_then(|r| r.split('\t').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let at_pause = tick_total(&mut admin);
    s.server.advance(2100);
    assert_eq!(tick_total(&mut admin), at_pause);
    assert!(s.get("/schedules").text().contains("\"paused\":true"));

    // A run now, to a real worker, with the entry's workload; its handle in the answer.
    let r = post(&s, "/schedules/nightly/run");
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.text();
    assert!(body.contains("\"last_run_manual\":true"), "{body}");
    let handle = body
        .split("\"handles\":[\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{body}"))
        .to_string();
    // overlap=skip: a second run while the first is queued is a conflict.
    let r = post(&s, "/schedules/nightly/run");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains(&format!("\"running\":\"{handle}\"")));
    let mut w = worker(&s.server, &["nightly"]);
    let (h, data) = grab(&mut w);
    assert_eq!(
        (h.as_str(), &data[..]),
        (handle.as_str(), &b"for nightly"[..])
    );

    let r = post(&s, "/schedules/nightly/skip");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\"skip_next\":true"));
    let row = admin.schedule_row("nightly");
    assert_eq!(
        (row[11].as_str(), row[12].as_str()),
        ("skip-next", "manual")
    );

    let r = post(&s, "/schedules/tick/resume");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\"paused\":false"));
    let mut tw = worker(&s.server, &["tick"]);
    s.server.advance(1000);
    grab(&mut tw); // tick runs again

    // Unknown entries, unknown operations, other methods.
    let r = post(&s, "/schedules/nope/run");
    assert_eq!(r.status, 404);
    assert_eq!(
        r.text(),
        "{\"op\":\"run\",\"error\":\"no schedule entry has this id\"}\n"
    );
    assert_eq!(post(&s, "/schedules/tick/rerun").status, 404);
    for m in ["GET", "PUT"] {
        let r = s.call(m, "/schedules/tick/pause", &[], b"");
        assert_eq!((r.status, r.header("allow")), (405, Some("POST")), "{m}");
    }
    assert_eq!(
        admin.schedule_row("tick")[10],
        "active",
        "a GET paused nothing"
    );
    // A page on another site cannot pause an entry through the visitor's browser.
    let r = s.call(
        "POST",
        "/schedules/tick/pause",
        &[("Origin", "https://evil.example")],
        b"",
    );
    assert_eq!(r.status, 403);
    assert_eq!(admin.schedule_row("tick")[10], "active");
}
