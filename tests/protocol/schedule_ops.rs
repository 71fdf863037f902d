//! `run`, `skip`, `pause` and `resume schedule` over real sockets: a manual run reaches a real
//! worker, a pause holds through a reload and a kill -9 with the journal, and `resume` starts
//! the entry again without making up what it missed.

use crate::support;
use std::sync::Arc;

use gearwheel::clock::ManualClock;
use support::*;

fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("ops-{name}"))
}

/// The server in-process on `clock`: time passes only when the test moves it.
fn start(clock: Arc<ManualClock>, data: &std::path::Path, file: &std::path::Path) -> InProcess {
    InProcess::start_on(
        clock,
        &[
            "--job-handle-prefix",
            "H:o",
            "--data-dir",
            data.to_str().unwrap(),
            "--schedules",
            file.to_str().unwrap(),
        ],
    )
}

#[test]
fn operator_lines_run_skip_pause_and_resume_through_reload_and_kill_9() {
    let data = dir("data");
    let file_dir = dir("file");
    let file = file_dir.join("s.cron");
    std::fs::write(
        &file,
        "@every 1s tick overlap=allow\n0 3 * * * nightly -- night of {time}\n",
    )
    .unwrap();
    let s = start(manual_clock(), &data, &file);
    let mut c = s.connect();
    assert_eq!(c.admin("pause schedule tick", false), "OK\r\n");
    assert_eq!(c.admin("skip schedule nightly", false), "OK\r\n");
    assert_eq!(
        c.admin("resume schedule nope", false),
        "ERR UNKNOWN_SCHEDULE No+schedule+entry+has+this+id\r\n"
    );
    assert!(
        c.admin("run schedule", false)
            .starts_with("ERR INVALID_ARGUMENTS "),
    );

    // A manual run of the 03:00 entry, now, to a real worker; a second one is refused while
    // the first is queued (overlap=skip, the default).
    let reply = c.admin("run schedule nightly", false);
    let handle = reply
        .strip_prefix("OK ")
        .and_then(|h| h.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{reply:?}"))
        .to_string();
    assert!(handle.starts_with("H:o:"), "{handle}");
    let again = c.admin("run schedule nightly", false);
    assert!(
        again.starts_with(&format!("ERR RUN_IN_PROGRESS The+previous+run+{handle}+")),
        "{again}"
    );
    let mut w = s.connect();
    w.can_do(&["nightly"]);
    let (h, _, _, data_sent) = w.grab_uniq().expect("the manual run is queued");
    assert_eq!(h, handle);
    assert!(data_sent.starts_with(b"night of 20"), "{data_sent:?}");
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);

    // The pause holds through a reload: over 2 s, `tick` (every second) fires nothing.
    assert_eq!(c.admin("reload schedules", false), "OK 2\n");
    s.advance(2200);
    assert_eq!(c.queued("tick"), 0);
    let row = c.schedule_row("tick");
    assert_eq!((row[3].as_str(), row[10].as_str()), ("-", "paused"));
    let row = c.schedule_row("nightly");
    assert_eq!(
        (row[7].as_str(), row[11].as_str(), row[12].as_str()),
        ("1", "skip-next", "manual")
    );

    // And through a kill -9: the journal brings the marks back.
    let clock = s.kill9();
    let s = start(clock, &data, &file);
    let mut c = s.connect();
    s.advance(1500);
    assert_eq!(c.queued("tick"), 0, "{}", s.log());
    let row = c.schedule_row("tick");
    assert_eq!((row[3].as_str(), row[10].as_str()), ("-", "paused"));
    let row = c.schedule_row("nightly");
    assert_eq!(
        (row[7].as_str(), row[11].as_str(), row[12].as_str()),
        ("1", "skip-next", "manual")
    );

    // Resumed, `tick` runs again, once per second and not a burst for the seconds missed.
    assert_eq!(c.admin("resume schedule tick", false), "OK\r\n");
    s.advance(1000);
    assert_eq!(c.queued("tick"), 1, "one run, no catch-up burst");
    assert_eq!(c.schedule_row("tick")[10], "active");
}
