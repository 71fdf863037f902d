//! Retries with backoff, with the manual clock: the delays double up to the cap, the same
//! unique and workload come back, only the last failure is kept, and the policy comes from the
//! entry, the function or the server.

use super::*;
use crate::schedule::backoff::{Backoff, RetryPolicy};

fn fail(w: &mut World, wk: ConnId) -> (Bytes, Bytes) {
    let (h, data) = w.grab(wk).expect("a job");
    w.req(
        wk,
        Request::WorkException {
            handle: h.clone(),
            data: b("nope"),
        },
    );
    (h, data)
}

/// The one future job: its due time and unique.
fn pending(w: &mut World, c: ConnId) -> (String, String) {
    let text = w.admin(c, "show scheduled");
    let rows: Vec<&str> = text.lines().filter(|l| *l != ".").collect();
    assert_eq!(rows.len(), 1, "{text}");
    let cols: Vec<&str> = rows[0].split('\t').collect();
    (cols[3].to_string(), cols[2].to_string())
}

#[test]
fn a_schedule_run_retries_with_doubling_capped_backoff_then_fails_for_good() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    let text =
        "0 3 * * * backup id=nightly retry=3 backoff=30s..45s on_failure=alert -- at {time}\n";
    w.e.load_schedules(
        crate::schedule::file::parse(text, &Zone::Utc).unwrap(),
        w.now,
        true,
        &mut w.out,
    );
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "backup");
    assert!(w.admin(c, "run schedule nightly").starts_with("OK"));
    let t0 = w.now;
    let (_, first_data) = fail(&mut w, wk);
    // Retry 1 after 30 s, retry 2 after 45 s (60 capped), retry 3 after 45 s.
    for (k, wait) in [(1, 30_000u64), (2, 45_000), (3, 45_000)] {
        let (due, unique) = pending(&mut w, c);
        assert_eq!(due, rfc3339(w.now + wait), "retry {k}");
        assert_eq!(unique, "nightly", "overlap=skip still sees one run");
        // A second manual run is refused: the retry holds the unique.
        assert!(
            w.admin(c, "run schedule nightly")
                .starts_with("ERR RUN_IN_PROGRESS")
        );
        assert!(w.grab(wk).is_none(), "not before its time");
        w.now += wait - 1;
        w.e.on_time(w.now, &mut w.out);
        assert!(w.grab(wk).is_none(), "not before its time");
        w.now += 1;
        w.e.on_time(w.now, &mut w.out);
        w.out.replies.clear();
        let (_, data) = fail(&mut w, wk);
        assert_eq!(data, first_data, "the same workload, not rendered again");
        if k < 3 {
            assert!(
                w.e.failed_list().is_empty(),
                "only the last failure is kept"
            );
            assert!(
                !w.admin(c, "status").contains("alert\t"),
                "no alert before the end"
            );
        }
    }
    let kept: Vec<_> = w.e.failed_list().iter().cloned().collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].attempts, 4);
    assert_eq!((kept[0].first_ms, kept[0].last_ms), (t0, w.now));
    assert_eq!(kept[0].entry.as_deref(), Some("nightly"));
    assert_eq!(kept[0].error, "nope");
    // One alert, for the run that failed for good.
    assert!(w.admin(c, "status").contains("alert\t1\t0\t0"), "one alert");
    assert_eq!(w.admin(c, "show scheduled"), ".\n");
}

#[test]
fn function_policies_and_the_server_default() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        retry: RetryPolicy {
            retries: 1,
            backoff: Backoff::parse("10s").unwrap(),
        },
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    assert_eq!(w.admin(c, "retry g 0 1s"), "OK\r\n");
    assert!(
        w.admin(c, "retry g x 1s")
            .starts_with("ERR INVALID_ARGUMENTS")
    );
    assert!(
        w.admin(c, "retry g 1 5m..1m")
            .starts_with("ERR INVALID_ARGUMENTS")
    );
    w.can_do(wk, "f");
    w.can_do(wk, "g");
    // g: its own policy, no retries: failed at once.
    w.submit(c, "g", "ug", "dg", Priority::Normal, true);
    fail(&mut w, wk);
    assert_eq!(w.e.failed_list().len(), 1);
    // f: the server's, one retry after 10 s.
    w.submit(c, "f", "uf", "df", Priority::Normal, true);
    fail(&mut w, wk);
    assert_eq!(pending(&mut w, c), (rfc3339(w.now + 10_000), "uf".into()));
    assert_eq!(
        w.admin(c, "show retries"),
        "*\t1\t10s..1h\t-\ng\t0\t1s..1h\t0\nf\t1\t10s..1h\t1\n.\n"
    );
    // A foreground job is never retried; a WORK_COMPLETE ends a retry for good.
    w.now += 10_000;
    w.e.on_time(w.now, &mut w.out);
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b("ok"),
        },
    );
    assert_eq!(w.e.failed_list().len(), 1);
    w.submit(c, "f", "fg", "d", Priority::Normal, false);
    fail(&mut w, wk);
    assert_eq!(w.admin(c, "show scheduled"), ".\n");
}

#[test]
fn the_table_of_function_policies_is_bounded_by_the_flag() {
    let mut w = World::with(EngineConfig {
        max_function_settings: 8,
        ..EngineConfig::default()
    });
    let c = w.conn();
    for i in 0..8 {
        assert_eq!(w.admin(c, &format!("retry p{i} 1 1s")), "OK\r\n");
    }
    assert_eq!(
        w.admin(c, "retry one-more 1 1s"),
        "ERR TOO_MANY_RETRY_POLICIES 8+functions+have+one+already+(--max-function-settings)\r\n"
    );
    // An existing one can still be changed.
    assert_eq!(w.admin(c, "retry p7 2 5s"), "OK\r\n");
    assert!(w.admin(c, "show retries").contains("p7\t2\t5s..1h\t0\n"));
}

/// A restart with a lower bound than the journal's policies reads every one back; admin lines
/// add none while the table is at or past the bound.
#[test]
fn policies_read_back_past_a_lower_bound_are_all_kept() {
    let mut w = World::with(EngineConfig {
        max_function_settings: 1,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let policy = RetryPolicy {
        retries: 2,
        backoff: Backoff::default(),
    };
    for f in ["p0", "p1", "p2"] {
        w.e.restore_retry(f.as_bytes(), policy);
    }
    let listing = w.admin(c, "show retries");
    for f in ["p0", "p1", "p2"] {
        assert!(listing.contains(&format!("{f}\t2\t")), "{listing}");
    }
    assert!(
        w.admin(c, "retry one-more 1 1s")
            .starts_with("ERR TOO_MANY_RETRY_POLICIES")
    );
    assert_eq!(w.admin(c, "retry p1 3 1s"), "OK\r\n");
}

// ---- one definition per counter ----------------------------------------------------------

#[test]
fn a_job_retried_until_it_fails_for_good_counts_one_failure_and_its_retries() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        retry: RetryPolicy {
            retries: 2,
            backoff: Backoff::parse("10s").unwrap(),
        },
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "u", "d", Priority::Normal, true);
    // Backoffs of 10 s, then 20 s.
    for _ in 0..3 {
        fail(&mut w, wk);
        w.now += 20_000;
        w.e.on_time(w.now, &mut w.out);
    }
    assert_eq!(w.e.failed_list().len(), 1, "kept once");
    let counters = w.e.function_statuses()[0].counters;
    // Three attempts, each a job of its own handle (submitted), two of them run again
    // (retried), the last one ended for good: one WORK_EXCEPTION, not three.
    assert_eq!(
        (
            counters.submitted,
            counters.failed,
            counters.exceptions,
            counters.retried
        ),
        (3, 0, 1, 2),
        "{counters:?}"
    );
    assert_eq!(w.e.counters(), counters);
    w.e.check_queues();
}

fn entry_counts(w: &World) -> (u64, u64) {
    let s = &w.e.schedule_statuses()[0];
    (s.runs, s.failures)
}

#[test]
fn a_failed_run_retried_by_hand_is_a_run_so_failures_never_pass_runs() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    let text = "0 3 * * * backup id=nightly\n0 4 * * * shard id=wide fanout=3\n";
    w.e.load_schedules(
        crate::schedule::file::parse(text, &Zone::Utc).unwrap(),
        w.now,
        true,
        &mut w.out,
    );
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "backup");
    assert!(w.admin(c, "run schedule nightly").starts_with("OK"));
    fail(&mut w, wk);
    assert_eq!(entry_counts(&w), (1, 1));
    // Retried by hand, failing again: a second run, a second failure.
    assert_eq!(w.admin(c, "retry failed all"), "OK 1\n");
    assert_eq!(entry_counts(&w), (2, 1));
    fail(&mut w, wk);
    assert_eq!(entry_counts(&w), (2, 2));
    // Retried by hand and completed: a run, no failure.
    assert_eq!(w.admin(c, "retry failed all"), "OK 1\n");
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert_eq!(entry_counts(&w), (3, 2));
    // A fan-out run of 3 jobs that all fail: 3 runs, 3 failures (each job is one, as in the
    // run history and the alerts).
    w.can_do(wk, "shard");
    assert!(w.admin(c, "run schedule wide").starts_with("OK"));
    for _ in 0..3 {
        fail(&mut w, wk);
    }
    let wide = &w.e.schedule_statuses()[1];
    assert_eq!((wide.runs, wide.failures), (3, 3));
}
