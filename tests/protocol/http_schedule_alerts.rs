//! Alerts and run history over real sockets: a scheduled run that throws sends its account, as
//! JSON, to the entry's `on_failure=` function, where a worker grabs it; the failure shows at
//! the end of `show schedules` and in `/schedules` (`last_error`, `recent_runs`).

use crate::support;

use std::time::Duration;

use support::*;

/// A schedules file of its own per test (`name`): tests run in parallel.
fn schedules_file(name: &str, text: &str) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new(&format!("alerts-{name}"));
    let p = dir.path("s.cron");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn a_run_that_throws_alerts_on_failure_and_shows_in_the_history() {
    let (_dir, file) = schedules_file("throws", "ON_FAILURE=alert\n@every 1s backup -- full\n");
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    let mut worker = s.gearman();
    worker.can_do(&["backup"]);
    let (handle, data) = worker.grab_within(Duration::from_secs(5));
    assert_eq!(data, b"full");
    worker.send_req(
        t::WORK_EXCEPTION,
        &[handle.as_bytes(), b"disk full\nno space"],
    );

    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.starts_with(
            "{\"event\":\"failure\",\"entry\":\"backup\",\"function\":\"backup\",\"outcome\":\"failed\",\"scheduled\":\"20"
        ),
        "{alert}"
    );
    for part in [
        "\"manual\":false,\"attempts\":1,\"error\":\"disk full no space\"".to_string(),
        format!("\"handle\":\"{handle}\",\"server\":\"H:"),
    ] {
        assert!(alert.contains(&part), "{part} in {alert}");
    }
    assert!(alert.ends_with("\"}"), "{alert}");

    // The run's record: in show schedules (the last two columns) and in /schedules.
    let mut admin = s.gearman();
    let row = admin.schedule_row("backup");
    assert_eq!(row.len(), 19, "{row:?}");
    assert_eq!(
        (&*row[17], &*row[18]),
        ("0", "0"),
        "no too_long, no too_short"
    );
    assert_eq!(row[16], "-", "no cluster: no leader");
    assert_eq!(row[15], "0", "no retries: none pending");
    assert_eq!(row[13], "disk full no space");
    let first = row[14].split(';').next().unwrap().to_string();
    assert!(
        first.starts_with("20") && first.ends_with("ms failed"),
        "{row:?}"
    );
    let body = s.call("GET", "/schedules", &[], b"").text();
    assert!(
        body.contains("\"last_error\":\"disk full no space\",\"retries_pending\":0,\"runs_waiting\":0,\"recent_runs\":[{\"scheduled\":\"20")
            && body.contains(",\"outcome\":\"failed\",\"manual\":false,\"backfill\":false,\"handle\":\"H:"),
        "{body}"
    );
}

#[test]
fn a_run_past_its_timeout_alerts_and_its_late_result_is_refused() {
    let (_dir, file) = schedules_file("timeout", "@every 1s hang timeout=1s on_failure=alert\n");
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    let mut worker = s.gearman();
    worker.can_do(&["hang"]);
    let (handle, _) = worker.grab_within(Duration::from_secs(5));
    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains(&format!(
            "\"error\":\"timed out: not ended 1000 ms after it started (the entry's timeout=)\",\"handle\":\"{handle}\""
        )),
        "{alert}"
    );
    worker.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"too late"]);
    let reply = worker.read_packet();
    assert_eq!(reply.ptype, t::ERROR);
    assert_eq!(reply.args()[0], b"JOB_NOT_FOUND");
    s.server.wait_log("not a job it runs", 5);
}
