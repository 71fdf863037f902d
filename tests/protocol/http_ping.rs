//! Heartbeat entries over real sockets: an `expect=ping` entry that is not pinged alerts within
//! its grace and a second; `/ping/ID[/start|/fail|/CODE]` ends a run with its outcome and its
//! output's tail; an unknown id is 404 and makes no entry; the ACL's `ping` operation.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use support::*;

fn schedules_file(name: &str, text: &str) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new(&format!("ping-{name}"));
    let p = dir.path("s.cron");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

/// The value of a JSON string field in a flat object (the alert's).
fn field<'a>(json: &'a str, name: &str) -> &'a str {
    let key = format!("\"{name}\":\"");
    let rest = json
        .split(&key)
        .nth(1)
        .unwrap_or_else(|| panic!("{name} in {json}"));
    rest.split('"').next().unwrap_or("")
}

#[test]
fn an_entry_not_pinged_alerts_within_its_grace_and_a_second() {
    let (_dir, file) = schedules_file(
        "missed",
        "@every 2s host.alive expect=ping grace=1s on_failure=alert\n",
    );
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);
    let (_, alert) = notifier.grab_within(Duration::from_secs(10));
    let received = Utc::now();
    let alert = String::from_utf8(alert).unwrap();
    assert_eq!(field(&alert, "outcome"), "missed", "{alert}");
    assert!(
        field(&alert, "error").starts_with("no ping for the run at "),
        "{alert}"
    );
    let scheduled: DateTime<Utc> = field(&alert, "scheduled").parse().unwrap();
    let late = received - scheduled;
    assert!(
        late >= chrono::Duration::seconds(1) && late <= chrono::Duration::seconds(2),
        "alerted {late:?} after the scheduled time; grace 1s"
    );
    // A heartbeat submits no job of its own.
    let mut admin = s.gearman();
    assert!(
        !admin.admin("status", true).contains("host.alive\t"),
        "no host.alive job"
    );
    let row = admin.schedule_row("host.alive");
    assert!(row[14].contains(" - missed"), "{row:?}");
}

#[test]
fn pings_end_runs_with_their_outcome_and_output_tail() {
    let (_dir, file) = schedules_file(
        "runs",
        "@every 1m beat expect=ping grace=30s on_failure=alert\n@hourly job\n",
    );
    let s = HttpServer::in_process(&["--schedules", file.to_str().unwrap()]);
    // To the next minute: the run of the minute waits for its ping from now.
    let now = s.server.now_ms();
    s.server.advance((now / 60_000 + 1) * 60_000 - now);
    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);

    let r = s.call("POST", "/ping/beat/start", &[], b"");
    assert_eq!((r.status, r.text().as_str()), (200, "OK\n"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    s.server.advance(2_000);
    let r = s.call("POST", "/ping/beat/3", &[], b"copying\nrsync: error 23\n");
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains("\"outcome\":\"failed\"")
            && alert.contains("\"duration_ms\":2000")
            && alert.contains("\"error\":\"exit code 3: copying rsync: error 23\""),
        "{alert}"
    );
    let body = s.get("/schedules").text();
    assert!(
        body.contains("\"last_error\":\"exit code 3: copying rsync: error 23\"")
            && body.contains("; no job: a ping expected within 30s (expect=ping)\""),
        "{body}"
    );

    // The next minute's run: a plain GET answers it (the simplest clients), no alert.
    s.server.advance(60_000);
    let r = s.call("GET", "/ping/beat", &[], b"");
    assert_eq!(r.status, 200);
    s.server.advance(40_000);
    let mut admin = s.gearman();
    let row = admin.schedule_row("beat");
    assert!(
        row[14].ends_with(" - complete"),
        "answered, not missed: {row:?}"
    );
    // The one after gets none: missed once its grace is over.
    s.server.advance(50_000);
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    assert!(
        String::from_utf8_lossy(&alert).contains("\"outcome\":\"missed\""),
        "{}",
        String::from_utf8_lossy(&alert)
    );

    // Refusals: an unknown id makes no entry; an entry of gearwheel's own jobs takes none.
    let r = s.call("POST", "/ping/nope", &[], b"");
    assert_eq!(
        (r.status, r.text().as_str()),
        (404, "no schedule entry has this id\n")
    );
    assert_eq!(s.call("POST", "/ping/job/start", &[], b"").status, 409);
    assert_eq!(s.call("HEAD", "/ping/beat", &[], b"").status, 405);
    assert_eq!(s.call("PUT", "/ping/beat", &[], b"").status, 405);
    assert_eq!(s.call("POST", "/ping/beat/256", &[], b"").status, 400);
    assert_eq!(
        admin.admin("show schedules", true).lines().count(),
        3,
        "two entries and ."
    );
}

#[test]
fn under_an_acl_a_ping_needs_ping_on_the_entry() {
    let dir = TempDir::new("ping-acl");
    let sched = dir.path("s.cron");
    std::fs::write(
        &sched,
        "@hourly web1.backup expect=ping\n@hourly db.dump expect=ping\n",
    )
    .unwrap();
    let acl = dir.path("acl");
    std::fs::write(&acl, "addr:127.0.0.1  ping  web1.*\n").unwrap();
    let s = HttpServer::start(&[
        "--schedules",
        sched.to_str().unwrap(),
        "--acl",
        acl.to_str().unwrap(),
    ]);
    assert_eq!(s.call("POST", "/ping/web1.backup", &[], b"").status, 200);
    let r = s.call("POST", "/ping/db.dump", &[], b"");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.text().contains("ping on function db.dump"),
        "{}",
        r.text()
    );
    // ping grants nothing else: not a submission, not a read.
    assert_eq!(s.call("POST", "/web1.backup", &[], b"x").status, 403);
    assert_eq!(s.get("/schedules").status, 403);
}

/// The simplest clients, as docs/watching-cron.md shows them: curl with a body, and a bare GET.
#[test]
fn curl_pings_as_the_docs_show() {
    if !support::require(support::have("curl"), "curl") {
        return;
    }
    let (_dir, file) = schedules_file(
        "curl",
        "0 3 * * * backup.remote expect=ping on_failure=alert\n",
    );
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    let url = |p: &str| format!("http://{}{p}", s.http);
    let curl = |args: &[&str]| {
        std::process::Command::new("curl")
            .args(["-fsS", "-m", "10"])
            .args(args)
            .output()
            .expect("curl")
    };
    let o = curl(&["-d", "rsync: error 23", &url("/ping/backup.remote/1")]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(o.stdout, b"OK\n");
    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    assert!(
        String::from_utf8_lossy(&alert).contains("\"error\":\"exit code 1: rsync: error 23\""),
        "{}",
        String::from_utf8_lossy(&alert)
    );
    assert!(curl(&[&url("/ping/backup.remote")]).status.success());
    let o = curl(&[&url("/ping/nope")]);
    assert_eq!(o.status.code(), Some(22), "curl -f: HTTP 404 {o:?}");
    let mut admin = s.gearman();
    let row = admin.schedule_row("backup.remote");
    assert_eq!((row[7].as_str(), row[8].as_str()), ("2", "1"), "{row:?}");
}
