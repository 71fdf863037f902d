//! Heartbeat entries (`expect=ping`) and duration alerts (`max_duration=`, `min_duration=`),
//! each rule with the manual clock.

use super::schedule_ops::{MIN, T0, queued, row, run_to, world};
use super::*;
use crate::engine::{PingError, PingKind};

/// The column of `show schedules` with the last error, and the one with the last runs.
const LAST_ERROR: usize = 13;
const RECENT: usize = 14;
/// The columns counting `too_long` and `too_short` alerts.
const TOO_LONG: usize = 17;
const TOO_SHORT: usize = 18;
/// 2026-11-22T06:40:00Z, a multiple of 5 minutes after T0 (06:37:30).
const T40: u64 = T0 + 150_000;

/// The next alert job of `func`, taken and done as a worker would.
fn alert(w: &mut World, func: &str) -> String {
    let wk = w.conn();
    w.can_do(wk, func);
    let (handle, data) = w.grab(wk).unwrap_or_else(|| panic!("no {func} job"));
    w.req(
        wk,
        Request::WorkComplete {
            handle,
            data: b(""),
        },
    );
    String::from_utf8(data.to_vec()).unwrap()
}

fn ping(w: &mut World, id: &str, kind: PingKind, body: &str) -> Result<(), PingError> {
    w.e.ping(id.as_bytes(), kind, body.as_bytes(), w.now, &mut w.out)
}

const HEARTBEAT: &str = "@every 5m host.alive expect=ping grace=2m on_failure=alert\n";

#[test]
fn a_heartbeat_not_pinged_is_missed_when_its_grace_is_over() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + 2 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0, "not before the grace is over");
    assert_eq!(
        queued(&mut w, "host.alive"),
        0,
        "a heartbeat submits no job"
    );
    run_to(&mut w, T40 + 2 * MIN);
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"outcome\":\"missed\"")
            && a.contains("\"scheduled\":\"2026-11-22T06:40:00Z\"")
            && a.contains("no ping for the run at 2026-11-22T06:40:00Z within its grace of 2m"),
        "{a}"
    );
    let r = row(&mut w, "host.alive");
    assert_eq!(r[RECENT], "2026-11-22T06:40:00Z - missed");
    assert_eq!(
        (r[7].as_str(), r[9].as_str()),
        ("0", "1"),
        "runs 0, skips 1"
    );
}

#[test]
fn a_ping_within_the_grace_is_a_run_and_the_next_time_waits_again() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + MIN);
    ping(&mut w, "host.alive", PingKind::Success, "").unwrap();
    run_to(&mut w, T40 + 5 * MIN + 2 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0);
    let r = row(&mut w, "host.alive");
    assert_eq!(r[7], "1", "one run");
    assert_eq!(r[RECENT], "2026-11-22T06:40:00Z - complete");
    // The 06:45 run gets no ping: missed at 06:47.
    run_to(&mut w, T40 + 7 * MIN);
    assert!(alert(&mut w, "alert").contains("06:45:00Z within its grace"));
}

#[test]
fn a_ping_a_little_early_answers_the_next_run() {
    let mut w = world(HEARTBEAT, false, T0);
    // 06:39, a minute before the 06:40 run (within its grace): a daemon on its own beat.
    run_to(&mut w, T40 - MIN);
    ping(&mut w, "host.alive", PingKind::Success, "").unwrap();
    run_to(&mut w, T40 + 3 * MIN);
    assert_eq!(queued(&mut w, "alert"), 0, "06:40 was answered");
    assert_eq!(
        row(&mut w, "host.alive")[RECENT],
        "2026-11-22T06:40:00Z - complete"
    );
}

#[test]
fn a_failed_run_alerts_with_its_exit_code_duration_and_output_tail() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + 10_000);
    ping(&mut w, "host.alive", PingKind::Start, "").unwrap();
    w.now += 4_000;
    ping(
        &mut w,
        "host.alive",
        PingKind::Exit(3),
        "copying\nrsync: error 23\n",
    )
    .unwrap();
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"outcome\":\"failed\"")
            && a.contains("\"started\":\"2026-11-22T06:40:10Z\",\"duration_ms\":4000")
            && a.contains("\"error\":\"exit code 3: copying rsync: error 23\""),
        "{a}"
    );
    let r = row(&mut w, "host.alive");
    assert_eq!(
        (r[7].as_str(), r[8].as_str()),
        ("1", "1"),
        "runs 1, failures 1"
    );
    assert_eq!(r[LAST_ERROR], "exit code 3: copying rsync: error 23");
    // The run was answered: no missed alert after its grace.
    run_to(&mut w, T40 + 3 * MIN);
    assert_eq!(queued(&mut w, "alert"), 0);
    // Exit code 0 is a success.
    run_to(&mut w, T40 + 5 * MIN);
    ping(&mut w, "host.alive", PingKind::Exit(0), "").unwrap();
    assert_eq!(queued(&mut w, "alert"), 0);
}

#[test]
fn missed_runs_in_a_row_alert_once() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + 20 * MIN);
    assert_eq!(
        queued(&mut w, "alert"),
        1,
        "the first miss of the streak alerts"
    );
    let r = row(&mut w, "host.alive");
    assert_eq!(r[9], "4", "06:40, 45, 50 and 55 missed");
    alert(&mut w, "alert");
    // A ping ends the streak; the next miss alerts again.
    ping(&mut w, "host.alive", PingKind::Success, "").unwrap();
    run_to(&mut w, T40 + 32 * MIN);
    assert_eq!(queued(&mut w, "alert"), 1);
}

#[test]
fn pings_for_an_unknown_or_unwatched_entry_are_refused() {
    let mut w = world(&format!("{HEARTBEAT}@hourly backup\n"), false, T0);
    assert_eq!(
        ping(&mut w, "nope", PingKind::Success, ""),
        Err(PingError::UnknownEntry)
    );
    assert_eq!(
        ping(&mut w, "backup", PingKind::Success, ""),
        Err(PingError::NotWatched)
    );
    assert_eq!(w.e.schedule_count(), 2, "a ping makes no entry");
}

#[test]
fn a_pinged_run_too_long_and_too_short() {
    let text = "@every 5m remote expect=ping max_duration=2m min_duration=30s on_failure=alert\n";
    let mut w = world(text, false, T0);
    run_to(&mut w, T40);
    ping(&mut w, "remote", PingKind::Start, "").unwrap();
    run_to(&mut w, T40 + 2 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0);
    run_to(&mut w, T40 + 2 * MIN);
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"outcome\":\"too_long\"")
            && a.contains("still running after 120000 ms, longer than its max_duration=2m"),
        "{a}"
    );
    w.now += MIN;
    ping(&mut w, "remote", PingKind::Success, "").unwrap();
    assert_eq!(
        queued(&mut w, "alert"),
        0,
        "too_long once; the run then completes"
    );
    run_to(&mut w, T40 + 5 * MIN);
    ping(&mut w, "remote", PingKind::Start, "").unwrap();
    w.now += 2_000;
    ping(&mut w, "remote", PingKind::Success, "").unwrap();
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"outcome\":\"too_short\"")
            && a.contains("succeeded after 2000 ms, sooner than its min_duration=30s"),
        "{a}"
    );
    assert_eq!(
        row(&mut w, "remote")[RECENT],
        "2026-11-22T06:40:00Z 120000ms too_long;2026-11-22T06:40:00Z 180000ms complete;\
         2026-11-22T06:45:00Z 2000ms too_short"
    );
    let r = row(&mut w, "remote");
    assert_eq!(
        (r[TOO_LONG].as_str(), r[TOO_SHORT].as_str(), r[8].as_str()),
        ("1", "1", "0"),
        "each counted as its own outcome, neither a failure"
    );
}

#[test]
fn a_pings_body_is_the_runs_kept_output() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + 10_000);
    ping(&mut w, "host.alive", PingKind::Start, "").unwrap();
    w.now += 4_000;
    let long = format!("{}\nrsync: error 23\n", "copying file\n".repeat(40));
    ping(&mut w, "host.alive", PingKind::Exit(3), &long).unwrap();
    // A ping without a /start is kept under its scheduled time.
    run_to(&mut w, T40 + 5 * MIN + 30_000);
    ping(&mut w, "host.alive", PingKind::Success, "all good\n").unwrap();
    let c = w.conn();
    let runs = w.admin(c, "show runs host.alive");
    let lines: Vec<Vec<&str>> = runs.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 3, "{runs}");
    let (failed, ok) = (&lines[0], &lines[1]);
    assert_eq!(
        (failed[4], failed[5]),
        ("failed", long.len().to_string().as_str()),
        "{runs}"
    );
    assert_eq!((ok[4], ok[5]), ("complete", "9"), "{runs}");
    let out = w.admin(c, &format!("show output {}", failed[1]));
    assert_eq!(out, format!("OK {} {}\n{long}", long.len(), long.len()));
    let out = w.admin(c, &format!("show output {}", ok[1]));
    assert_eq!(out, "OK 9 9\nall good\n");
}

#[test]
fn a_job_run_too_long_alerts_once_and_goes_on() {
    let text = "38 6 * * * backup max_duration=10m on_failure=alert\n";
    let mut w = world(text, false, T0);
    run_to(&mut w, T0 + MIN);
    let wk = w.conn();
    w.can_do(wk, "backup");
    let (h, _) = w.grab(wk).unwrap();
    run_to(&mut w, T0 + MIN + 10 * MIN);
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"outcome\":\"too_long\"")
            && a.contains(&format!("\"handle\":\"{}\"", String::from_utf8_lossy(&h))),
        "{a}"
    );
    run_to(&mut w, T0 + MIN + 30 * MIN);
    assert_eq!(queued(&mut w, "alert"), 0, "once per run");
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert_eq!(queued(&mut w, "alert"), 0, "it was not failed");
    let r = row(&mut w, "backup");
    assert_eq!(
        (r[8].as_str(), r[TOO_LONG].as_str()),
        ("0", "1"),
        "no failure, one too_long"
    );
}

#[test]
fn a_job_run_that_ends_in_time_arms_nothing_that_stays() {
    let text = "* * * * * backup max_duration=10m on_failure=alert\n";
    let mut w = world(text, false, T0);
    run_to(&mut w, T0 + MIN);
    let before = w.e.timers.len();
    let wk = w.conn();
    w.can_do(wk, "backup");
    let (h, _) = w.grab(wk).unwrap();
    assert_eq!(w.e.timers.len(), before + 1, "max_duration armed");
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert_eq!(w.e.timers.len(), before, "and cancelled at the end");
}

#[test]
fn a_job_run_too_short() {
    let text = "* * * * * backup min_duration=1m on_failure=alert on_success=done\n";
    let mut w = world(text, false, T0);
    run_to(&mut w, T0 + MIN);
    let wk = w.conn();
    w.can_do(wk, "backup");
    let (h, _) = w.grab(wk).unwrap();
    w.now += 2_000;
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("\"event\":\"failure\"")
            && a.contains("\"outcome\":\"too_short\"")
            && a.contains("succeeded after 2000 ms, sooner than its min_duration=1m"),
        "{a}"
    );
    assert_eq!(
        queued(&mut w, "done"),
        0,
        "a suspicious success is not sent as one"
    );
    let r = row(&mut w, "backup");
    assert_eq!(
        (r[7].as_str(), r[8].as_str()),
        ("1", "0"),
        "a run, not a failure"
    );
    assert_eq!(r[TOO_SHORT], "1");
}

#[test]
fn a_reload_keeps_the_run_awaited() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + MIN);
    let file = crate::schedule::file::parse(
        "@every 5m host.alive expect=ping grace=3m on_failure=alert\n",
        &Zone::Utc,
    )
    .unwrap();
    w.e.load_schedules(file, w.now, false, &mut w.out);
    run_to(&mut w, T40 + 3 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0, "the new grace applies");
    run_to(&mut w, T40 + 3 * MIN);
    assert!(alert(&mut w, "alert").contains("06:40:00Z within its grace of 3m"));
}

#[test]
fn a_skipped_heartbeat_run_is_not_waited_for() {
    let mut w = world(HEARTBEAT, false, T0);
    let c = w.conn();
    assert_eq!(w.admin(c, "skip schedule host.alive"), "OK\r\n");
    run_to(&mut w, T40 + 3 * MIN);
    assert_eq!(queued(&mut w, "alert"), 0, "06:40 was skipped");
    let r = row(&mut w, "host.alive");
    assert_eq!(
        (r[9].as_str(), r[11].as_str()),
        ("1", "-"),
        "one skip, the mark used"
    );
    run_to(&mut w, T40 + 7 * MIN);
    assert!(alert(&mut w, "alert").contains("06:45:00Z within its grace"));
}

#[test]
fn a_run_awaited_when_the_entry_is_paused_is_not_missed() {
    let mut w = world(HEARTBEAT, false, T0);
    run_to(&mut w, T40 + MIN);
    let c = w.conn();
    assert_eq!(w.admin(c, "pause schedule host.alive"), "OK\r\n");
    run_to(&mut w, T40 + 30 * MIN);
    assert_eq!(queued(&mut w, "alert"), 0);
    assert_eq!(row(&mut w, "host.alive")[RECENT], "-");
}

#[test]
fn a_heartbeat_has_nothing_to_run_by_hand() {
    let mut w = world(HEARTBEAT, false, T0);
    let c = w.conn();
    assert_eq!(
        w.admin(c, "run schedule host.alive"),
        "ERR NOT_RUNNABLE this+entry+expects+pings+(expect=ping):+its+runs+happen+elsewhere,+nothing+here+runs+them\r\n"
    );
    assert_eq!(queued(&mut w, "host.alive"), 0, "no job submitted");
}

#[test]
fn a_grace_longer_than_the_interval_decides_the_times_within_it() {
    let mut w = world(
        "@every 5m beat expect=ping grace=58m on_failure=alert\n",
        false,
        T0,
    );
    // 06:40 waits until 07:38; 06:45 ... 07:35 come meanwhile and wait with it.
    run_to(&mut w, T40 + 58 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0);
    run_to(&mut w, T40 + 58 * MIN);
    let a = alert(&mut w, "alert");
    assert!(
        a.contains("no ping for the run at 2026-11-22T06:40:00Z within its grace of 58m (expect=ping); 12 runs without a ping since"),
        "{a}"
    );
    assert_eq!(row(&mut w, "beat")[9], "12");
    // The next time (07:40) waits on its own; a ping answers it.
    run_to(&mut w, T40 + 70 * MIN);
    ping(&mut w, "beat", PingKind::Success, "").unwrap();
    let r = row(&mut w, "beat");
    assert!(
        r[RECENT].ends_with("2026-11-22T07:40:00Z - complete"),
        "{r:?}"
    );
    // 07:45 came while 07:40 waited: answered with it. 07:55 waits until 08:53 and is
    // missed: a new streak alerts.
    run_to(&mut w, T40 + 133 * MIN - 1);
    assert_eq!(queued(&mut w, "alert"), 0);
    run_to(&mut w, T40 + 133 * MIN);
    assert!(alert(&mut w, "alert").contains("the run at 2026-11-22T07:55:00Z"));
}
