//! `max_duration=` and `min_duration=` over real sockets, on a manual clock: a run a real worker
//! holds past its maximum raises `too_long` once and goes on to complete; a run that succeeds
//! sooner than its minimum raises `too_short`; both show in the run history.

use crate::support;

use support::*;

#[test]
fn too_long_and_too_short_alert_for_runs_gearwheel_fires() {
    let dir = TempDir::new("durations");
    let file = dir.path("s.cron");
    std::fs::write(
        &file,
        "@every 1m backup max_duration=10s min_duration=5s on_failure=alert\n",
    )
    .unwrap();
    let s = HttpServer::in_process(&["--schedules", file.to_str().unwrap()]);
    let now = s.server.now_ms();
    s.server.advance((now / 60_000 + 1) * 60_000 - now);
    let mut w = worker(&s.server, &["backup"]);
    let (handle, _) = grab(&mut w);
    let mut notifier = worker(&s.server, &["alert"]);

    // Still running at 10 s: one too_long alert, naming the job; nothing before.
    s.server.advance(9_900);
    assert!(
        notifier.grab_uniq().is_none(),
        "no alert before max_duration"
    );
    s.server.advance(100);
    let (alert_handle, alert) = grab(&mut notifier);
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains("\"outcome\":\"too_long\"")
            && alert.contains("still running after 10000 ms, longer than its max_duration=10s")
            && alert.contains(&format!("\"handle\":\"{handle}\"")),
        "{alert}"
    );
    work(&mut notifier, t::WORK_COMPLETE, &alert_handle, &[b""]);
    s.server.advance(20_000);
    assert!(notifier.grab_uniq().is_none(), "too_long once per run");
    // It was not failed: its result is taken.
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"done"]);
    sync(&mut w);

    // The next run succeeds after 2 s: too_short.
    let now = s.server.now_ms();
    s.server.advance((now / 60_000 + 1) * 60_000 - now);
    let (handle, _) = grab(&mut w);
    s.server.advance(2_000);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"done"]);
    sync(&mut w);
    let (_, alert) = grab(&mut notifier);
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains("\"outcome\":\"too_short\"")
            && alert.contains("succeeded after 2000 ms, sooner than its min_duration=5s"),
        "{alert}"
    );
    let mut admin = s.gearman();
    let row = admin.schedule_row("backup");
    assert_eq!(
        (row[7].as_str(), row[8].as_str()),
        ("2", "0"),
        "two runs, no failure: {row:?}"
    );
    let runs: Vec<&str> = row[14]
        .split(';')
        .map(|r| r.split(' ').nth(2).unwrap_or(""))
        .collect();
    assert_eq!(runs, ["too_long", "complete", "too_short"], "{row:?}");
}

#[test]
fn the_duration_alerts_counts_survive_a_kill_9() {
    let data = TempDir::new("durations-data");
    let dir = TempDir::new("durations-kept");
    let file = dir.path("s.cron");
    std::fs::write(&file, "@every 1m backup max_duration=10s min_duration=5s\n").unwrap();
    let args = [
        "--data-dir",
        data.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let s = InProcess::start_on(manual_clock(), &args);
    let now = s.now_ms();
    s.advance((now / 60_000 + 1) * 60_000 - now);
    let mut w = worker(&s, &["backup"]);
    // One run too long (it goes on, then completes), the next too short.
    let (handle, _) = grab(&mut w);
    s.advance(11_000);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b""]);
    sync(&mut w);
    let now = s.now_ms();
    s.advance((now / 60_000 + 1) * 60_000 - now);
    let (handle, _) = grab(&mut w);
    s.advance(1_000);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b""]);
    sync(&mut w);
    let counts = |c: &mut Conn| {
        let row = c.schedule_row("backup");
        let n = row.len();
        (row[n - 2].clone(), row[n - 1].clone())
    };
    assert_eq!(counts(&mut w), ("1".into(), "1".into()));

    // Journalled with the entry's counters: a kill -9 keeps them.
    let clock = s.kill9();
    drop(w);
    let s = InProcess::start_on(clock, &args);
    let mut c = s.connect();
    assert_eq!(counts(&mut c), ("1".into(), "1".into()), "{}", s.log());
}
