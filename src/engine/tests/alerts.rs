//! Alerts and run history: `on_failure=`, `on_success=`, missed and skipped runs, the ring of
//! the last runs, each rule with the manual clock.

use super::schedule_ops::{MIN, T0, line, queued, row, run_to, world};
use super::*;
use crate::engine::schedules::run_history::RUNS_KEPT;
use crate::schedule::file::parse;

/// The column of `show schedules` with the last error, and the one with the last runs.
const LAST_ERROR: usize = 13;
const RECENT: usize = 14;

/// Take the next job of `func` as a worker would, returning its handle and workload.
fn take(w: &mut World, func: &str) -> (Bytes, String) {
    let wk = w.conn();
    w.can_do(wk, func);
    let (h, data) = w.grab(wk).unwrap_or_else(|| panic!("no {func} job"));
    (h, String::from_utf8(data.to_vec()).unwrap())
}

/// The worker `wk` answers WORK_FAIL for `h`.
fn work_fail(w: &mut World, wk: ConnId, h: Bytes) {
    w.req(
        wk,
        Request::WorkFail {
            handle: h,
            after_handle: b(""),
        },
    );
}

/// Run the entry's job due at 06:38 and end it with `end`.
fn run_and_end(w: &mut World, func: &str, end: impl FnOnce(Bytes) -> Request) -> Bytes {
    run_to(w, T0 + MIN);
    let wk = w.conn();
    w.can_do(wk, func);
    let (h, _) = w.grab(wk).unwrap();
    w.now += 1500;
    w.req(wk, end(h.clone()));
    h
}

#[test]
fn a_failed_run_sends_its_account_to_on_failure() {
    let mut w = world(
        "* * * * * backup on_failure=alert on_success=done\n",
        false,
        T0,
    );
    let h = run_and_end(&mut w, "backup", |handle| Request::WorkException {
        handle,
        data: b("disk \"full\"\nat /srv"),
    });
    assert_eq!(queued(&mut w, "done"), 0, "a failure is not a success");
    let (_, alert) = take(&mut w, "alert");
    assert_eq!(
        alert,
        format!(
            "{{\"event\":\"failure\",\"entry\":\"backup\",\"function\":\"backup\",\
             \"outcome\":\"failed\",\"scheduled\":\"2026-11-22T06:38:00Z\",\
             \"started\":\"2026-11-22T06:38:30Z\",\"duration_ms\":1500,\"manual\":false,\
             \"attempts\":1,\"error\":\"disk \\\"full\\\" at /srv\",\"handle\":\"{}\",\
             \"server\":\"H:t\"}}",
            String::from_utf8_lossy(&h)
        )
    );
    let r = row(&mut w, "backup");
    assert_eq!(r[LAST_ERROR], "disk \"full\" at /srv");
    assert_eq!(r[RECENT], "2026-11-22T06:38:00Z 1500ms failed");
}

#[test]
fn a_completed_run_goes_to_on_success_only() {
    let mut w = world(
        "ON_FAILURE=alert\n* * * * * report on_success=done\n",
        false,
        T0,
    );
    run_and_end(&mut w, "report", |handle| Request::WorkComplete {
        handle,
        data: b("ok"),
    });
    assert_eq!(queued(&mut w, "alert"), 0);
    let (_, done) = take(&mut w, "done");
    assert!(
        done.starts_with("{\"event\":\"success\",\"entry\":\"report\"")
            && done.contains("\"error\":null"),
        "{done}"
    );
    assert_eq!(row(&mut w, "report")[LAST_ERROR], "-");
}

#[test]
fn a_work_fail_says_so_in_words_and_an_entry_without_on_failure_alerts_nobody() {
    let mut w = world(
        "* * * * * quiet\n* * * * * loud on_failure=alert\n",
        false,
        T0,
    );
    run_to(&mut w, T0 + MIN);
    for func in ["quiet", "loud"] {
        let wk = w.conn();
        w.can_do(wk, func);
        let (h, _) = w.grab(wk).unwrap();
        work_fail(&mut w, wk, h);
    }
    assert_eq!(queued(&mut w, "alert"), 1, "one alert: loud's");
    let wk = w.conn();
    w.can_do(wk, "alert");
    let (h, alert) = w.grab(wk).unwrap();
    let alert = String::from_utf8_lossy(&alert).into_owned();
    assert!(alert.contains("\"entry\":\"loud\""), "{alert}");
    assert!(
        alert.contains("\"error\":\"failed (WORK_FAIL)\""),
        "{alert}"
    );
    assert_eq!(row(&mut w, "quiet")[LAST_ERROR], "failed (WORK_FAIL)");
    // An alert is not a schedule run: its own failure alerts nobody (no loop).
    work_fail(&mut w, wk, h);
    assert_eq!(queued(&mut w, "alert"), 0);
}

#[test]
fn a_cancelled_run_is_kept_in_history_but_alerts_nobody() {
    let mut w = world("* * * * * job on_failure=alert\n", false, T0);
    run_to(&mut w, T0 + MIN);
    let handle = line(&mut w, "show jobs");
    let h = handle.lines().next().unwrap().split('\t').next().unwrap();
    assert_eq!(line(&mut w, &format!("cancel job {h}")), "OK\r\n");
    assert_eq!(queued(&mut w, "alert"), 0);
    assert_eq!(
        row(&mut w, "job")[RECENT],
        "2026-11-22T06:38:00Z - cancelled"
    );
}

#[test]
fn a_run_missed_by_a_stall_alerts_with_the_reason() {
    let mut w = world("*/10 * * * * nightly on_failure=alert\n", false, T0);
    // 06:40 is due; the loop wakes only at 07:05 (stalled, or the clock jumped).
    w.now = T0 + 28 * MIN;
    w.e.on_time(w.now, &mut w.out);
    w.out.replies.clear();
    assert_eq!(
        queued(&mut w, "nightly"),
        0,
        "catchup=none runs nothing late"
    );
    assert_eq!(queued(&mut w, "alert"), 1, "one alert for the whole gap");
    let (_, alert) = take(&mut w, "alert");
    assert!(
        alert.contains("\"outcome\":\"missed\",\"scheduled\":\"2026-11-22T06:40:00Z\",\"started\":null,\"duration_ms\":null")
            && alert.contains("\"attempts\":0")
            && alert.contains(
                "\"error\":\"3 runs missed from 2026-11-22T06:40:00Z (now 2026-11-22T07:05:30Z; server stalled or clock jumped); catchup=none\""
            )
            && alert.contains("\"handle\":null"),
        "{alert}"
    );
    let r = row(&mut w, "nightly");
    assert_eq!(r[RECENT], "2026-11-22T06:40:00Z - missed");
    assert!(r[LAST_ERROR].starts_with("3 runs missed from"), "{r:?}");
}

#[test]
fn runs_missed_while_down_alert_at_start_and_a_late_catch_up_past_its_deadline_too() {
    let mut w = world(
        "0 * * * * hourly on_failure=alert\n0 * * * * late catchup=last deadline=10m on_failure=alert\n",
        true,
        T0,
    );
    // 07:00 runs both; then the server is down until 09:30.
    run_to(&mut w, T0 + 23 * MIN);
    assert_eq!(queued(&mut w, "hourly"), 1);
    let text = "0 * * * * hourly on_failure=alert\n0 * * * * late catchup=last deadline=10m on_failure=alert\n";
    let mut next = super::schedule_ops::restart(&mut w, text, T0 + 173 * MIN);
    let n = queued(&mut next, "alert");
    let mut alerts: Vec<String> = (0..n).map(|_| take(&mut next, "alert").1).collect();
    alerts.sort();
    assert_eq!(alerts.len(), 3, "{alerts:?}");
    // catchup=last: the older time it does not make up (08:00) is missed too.
    assert!(
        alerts[1].contains("\"entry\":\"late\"")
            && alerts[1].contains("\"scheduled\":\"2026-11-22T08:00:00Z\"")
            && alerts[1].contains("1 run missed from 2026-11-22T08:00:00Z")
            && alerts[1].contains("catchup=last makes up the newest only"),
        "{}",
        alerts[1]
    );
    assert!(
        alerts[0].contains("\"entry\":\"hourly\"")
            && alerts[0].contains("\"scheduled\":\"2026-11-22T08:00:00Z\"")
            && alerts[0].contains("2 runs missed while the server was down"),
        "{}",
        alerts[0]
    );
    assert!(
        alerts[2].contains("\"entry\":\"late\"")
            && alerts[2].contains("\"scheduled\":\"2026-11-22T09:00:00Z\"")
            && alerts[2].contains("older than its deadline"),
        "{}",
        alerts[2]
    );
}

#[test]
fn overlap_skips_alert_once_when_nothing_ran_for_longer_than_the_interval() {
    let mut w = world("* * * * * slow on_failure=alert\n", false, T0);
    run_to(&mut w, T0 + MIN); // 06:38 runs; nobody takes it
    run_to(&mut w, T0 + 2 * MIN); // 06:39 skipped: one interval, no alert yet
    assert_eq!(queued(&mut w, "alert"), 0);
    run_to(&mut w, T0 + 3 * MIN); // 06:40 skipped: nothing ran for two intervals
    assert_eq!(queued(&mut w, "alert"), 1);
    run_to(&mut w, T0 + 6 * MIN); // the streak goes on: no further alert
    assert_eq!(queued(&mut w, "alert"), 1, "once per streak");
    let (_, alert) = take(&mut w, "alert");
    assert!(
        alert.contains("\"outcome\":\"skipped\",\"scheduled\":\"2026-11-22T06:40:00Z\"")
            && alert.contains(
                "skipped: 2 runs in a row not started since 2026-11-22T06:38:00Z: its previous job H:t:1 is still queued or running (overlap=skip)"
            ),
        "{alert}"
    );
    let r = row(&mut w, "slow");
    assert_eq!(
        r[RECENT].matches("skipped").count(),
        5,
        "06:39 to 06:43: {r:?}"
    );
}

#[test]
fn the_history_keeps_the_last_twenty_runs_and_survives_a_reload() {
    let text = "* * * * * tick overlap=allow\n";
    let mut w = world(text, false, T0);
    let wk = w.conn();
    w.can_do(wk, "tick");
    for i in 1..=25 {
        run_to(&mut w, T0 + i * MIN);
        let (h, _) = w.grab(wk).unwrap();
        w.now += 7;
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b(""),
            },
        );
    }
    assert!(line(&mut w, "run schedule tick").starts_with("OK "));
    let (h, _) = w.grab(wk).unwrap();
    work_fail(&mut w, wk, h);
    let before = row(&mut w, "tick");
    let runs: Vec<&str> = before[RECENT].split(';').collect();
    assert_eq!(runs.len(), RUNS_KEPT);
    assert_eq!(
        runs[0], "2026-11-22T06:44:00Z 7ms complete",
        "the oldest six fell off"
    );
    assert_eq!(
        runs[RUNS_KEPT - 1],
        "2026-11-22T07:02:30Z 0ms failed manual"
    );
    let statuses = w.e.schedule_statuses();
    assert_eq!(statuses[0].recent_runs.len(), RUNS_KEPT);
    assert!(statuses[0].recent_runs[RUNS_KEPT - 1].manual);

    // A reload of the file (even with a changed option) keeps the history.
    let now = w.now;
    w.e.load_schedules(
        parse(
            "* * * * * tick overlap=allow on_failure=alert\n",
            &Zone::Utc,
        )
        .unwrap(),
        now,
        false,
        &mut w.out,
    );
    let after = row(&mut w, "tick");
    assert_eq!(after[LAST_ERROR..], before[LAST_ERROR..]);
}

#[test]
fn a_run_past_its_timeout_fails_alerts_and_its_late_result_is_dropped() {
    let mut w = world("* * * * * slow timeout=20s on_failure=alert\n", false, T0);
    run_to(&mut w, T0 + MIN); // 06:38 fires; taken at 06:38:30
    let wk = w.conn();
    w.can_do(wk, "slow");
    let (h, _) = w.grab(wk).unwrap();
    assert_eq!(
        w.e.next_deadline(),
        Some(T0 + MIN + 20_000),
        "the run's limit"
    );
    run_to(&mut w, T0 + MIN + 19_999);
    assert_eq!(queued(&mut w, "alert"), 0, "not yet");
    run_to(&mut w, T0 + MIN + 20_000);
    let (_, alert) = take(&mut w, "alert");
    assert!(
        alert.contains("\"outcome\":\"failed\"")
            && alert.contains("\"duration_ms\":20000")
            && alert.contains(
                "\"error\":\"timed out: not ended 20000 ms after it started (the entry's timeout=)\""
            ),
        "{alert}"
    );
    // The worker was told nothing; its late result is refused as gearmand refuses any
    // result for a job it does not hold.
    let r = w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b("late"),
        },
    );
    assert_eq!(
        r,
        vec![(
            wk,
            Response::error("JOB_NOT_FOUND", "Job given in work result not found")
        )]
    );
    let row = row(&mut w, "slow");
    assert_eq!(row[5], "timeout (20000 ms, timeout=)");
    assert_eq!(row[RECENT], "2026-11-22T06:38:00Z 20000ms failed");
}

#[test]
fn a_shorter_can_do_timeout_wins_and_says_so() {
    let mut w = world("* * * * * slow timeout=1h\n", false, T0);
    run_to(&mut w, T0 + MIN);
    let wk = w.conn();
    w.req(
        wk,
        Request::CanDoTimeout {
            func: b("slow"),
            timeout_ms: 5_000,
        },
    );
    w.grab(wk).unwrap();
    run_to(&mut w, T0 + MIN + 5_000);
    assert_eq!(
        row(&mut w, "slow")[LAST_ERROR],
        "timed out (CAN_DO_TIMEOUT)"
    );
}

#[test]
fn retries_pending_show_and_the_alert_comes_once_they_are_spent() {
    let mut w = world(
        "0 7 * * * nightly retry=2 backoff=1m on_failure=alert\n",
        false,
        T0,
    );
    let wk = w.conn();
    w.can_do(wk, "nightly");
    let fail = |w: &mut World| {
        let (h, _) = w.grab(wk).expect("a run or retry");
        w.req(
            wk,
            Request::WorkException {
                handle: h,
                data: b("boom"),
            },
        );
    };
    run_to(&mut w, T0 + 23 * MIN); // 07:00 fires
    fail(&mut w);
    const PENDING: usize = 15;
    assert_eq!(
        row(&mut w, "nightly")[PENDING],
        "1",
        "the first retry waits"
    );
    assert_eq!(w.e.schedule_statuses()[0].retries_pending, 1);
    assert_eq!(queued(&mut w, "alert"), 0, "not failed for good yet");
    run_to(&mut w, T0 + 24 * MIN + 1_000); // after the 1 min backoff
    fail(&mut w);
    assert_eq!(
        row(&mut w, "nightly")[PENDING],
        "1",
        "the second retry waits"
    );
    run_to(&mut w, T0 + 27 * MIN); // after the 2 min backoff
    fail(&mut w);
    assert_eq!(row(&mut w, "nightly")[PENDING], "0");
    let (_, alert) = take(&mut w, "alert");
    assert!(
        alert.contains("\"attempts\":3,\"error\":\"boom\""),
        "one alert, with all attempts: {alert}"
    );
}
