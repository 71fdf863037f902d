//! Limits at handout: `limit`, `rate`, `pause function`, `expire`, `show limits`.

use super::*;

fn work_complete(w: &mut World, wk: ConnId, handle: &Bytes) -> Vec<(ConnId, Response)> {
    w.req(
        wk,
        Request::WorkComplete {
            handle: handle.clone(),
            data: b(""),
        },
    )
}

#[test]
fn a_limit_caps_the_running_jobs_and_an_end_wakes_a_sleeper() {
    let mut w = World::new();
    let c = w.conn();
    assert_eq!(w.admin(c, "limit f 2"), "OK\r\n");
    let workers: Vec<ConnId> = (0..4).map(|_| w.conn()).collect();
    for &wk in &workers {
        w.can_do(wk, "f");
        w.can_do(wk, "g");
    }
    for i in 0..5 {
        w.submit(c, "f", "", &i.to_string(), Priority::Normal, true);
    }
    let a = w.grab(workers[0]).unwrap();
    let _b = w.grab(workers[1]).unwrap();
    // The third gets nothing of f, but g's job.
    assert!(w.grab(workers[2]).is_none());
    w.submit(c, "g", "", "g1", Priority::Normal, true);
    assert_eq!(w.grab(workers[2]).unwrap().1, b("g1"));
    assert_eq!(w.admin(c, "show limits"), "f\t2\t2\t-\t-\t-\t-\t3\n.\n");
    // The fourth sleeps; an end wakes it.
    w.req(workers[3], Request::PreSleep);
    let r = work_complete(&mut w, workers[0], &a.0);
    assert!(r.contains(&(workers[3], Response::Noop)), "{r:?}");
    assert_eq!(w.grab(workers[3]).unwrap().1, b("2"));
    assert!(w.grab(workers[0]).is_none());
    w.e.check_queues();
    // Lifted: the rest go.
    assert_eq!(w.admin(c, "limit f off"), "OK\r\n");
    assert!(w.grab(workers[0]).is_some());
    assert!(w.grab(workers[0]).is_some());
    assert_eq!(w.admin(c, "show limits"), ".\n");
    w.e.check_queues();
}

#[test]
fn a_worker_that_leaves_makes_room() {
    let mut w = World::new();
    let c = w.conn();
    w.admin(c, "limit f 1");
    let (w1, w2) = (w.conn(), w.conn());
    w.can_do(w1, "f");
    w.can_do(w2, "f");
    w.submit(c, "f", "", "1", Priority::Normal, true);
    w.submit(c, "f", "", "2", Priority::Normal, true);
    w.grab(w1).unwrap();
    assert!(w.grab(w2).is_none());
    w.req(w2, Request::PreSleep);
    w.e.disconnect(w1, w.now, &mut w.out);
    let r = std::mem::take(&mut w.out.replies);
    assert!(r.contains(&(w2, Response::Noop)), "{r:?}");
    // The given-back job first.
    assert_eq!(w.grab(w2).unwrap().1, b("1"));
    assert!(w.grab(w2).is_none());
    w.e.check_queues();
}

#[test]
fn pause_keeps_the_queue_and_resume_runs_it() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    assert_eq!(w.admin(c, "pause function f"), "OK\r\n");
    for i in 0..3 {
        w.submit(c, "f", "", &i.to_string(), Priority::Normal, true);
    }
    assert!(w.grab(wk).is_none());
    w.req(wk, Request::PreSleep);
    assert_eq!(
        w.admin(c, "show limits"),
        "f\t-\t0\t-\t-\tpaused\t-\t3\n.\n"
    );
    w.e.check_queues();
    w.e.admin(
        c,
        AdminCommand::parse(&b("resume function f")),
        w.now,
        &mut w.out,
    );
    let r = std::mem::take(&mut w.out.replies);
    assert!(r.contains(&(wk, Response::Noop)), "{r:?}");
    let got: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    assert_eq!(got, ["0", "1", "2"].map(b));
}

#[test]
fn a_rate_reopens_by_the_wheel() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    assert_eq!(w.admin(c, "rate f 2/1s"), "OK\r\n");
    for i in 0..5 {
        w.submit(c, "f", "", &i.to_string(), Priority::Normal, true);
    }
    let t0 = w.now;
    assert!(w.grab(wk).is_some());
    w.now += 300;
    assert!(w.grab(wk).is_some());
    assert!(w.grab(wk).is_none());
    w.req(wk, Request::PreSleep);
    assert_eq!(w.e.next_deadline(), Some(t0 + 1000));
    w.now = t0 + 999;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.out.replies.is_empty());
    w.now = t0 + 1000;
    w.e.on_time(w.now, &mut w.out);
    let r = std::mem::take(&mut w.out.replies);
    assert_eq!(r, vec![(wk, Response::Noop)]);
    assert!(w.grab(wk).is_some());
    assert!(w.grab(wk).is_none());
    assert_eq!(w.e.next_deadline(), Some(t0 + 1300));
    w.e.check_queues();
}

#[test]
fn expired_jobs_fail_and_never_run() {
    let mut w = World::new();
    let (c, fg, wk) = (w.conn(), w.conn(), w.conn());
    w.can_do(wk, "f");
    assert_eq!(w.admin(c, "expire f 1m"), "OK\r\n");
    let old = w.submit(c, "f", "", "old", Priority::Normal, true);
    let fg_handle = w.submit(fg, "f", "", "old-fg", Priority::Normal, false);
    w.now += 50_000;
    w.submit(c, "f", "", "young", Priority::Normal, true);
    w.now += 20_000;
    let r = w.req(wk, Request::GrabJob(GrabKind::Uniq));
    assert!(
        r.contains(&(
            fg,
            Response::WorkFail {
                handle: fg_handle.clone().into()
            }
        )),
        "{r:?}"
    );
    assert!(
        matches!(r.last(), Some((to, Response::JobAssignUniq { data, .. })) if *to == wk && *data == b("young")),
        "{r:?}"
    );
    let failed = w.admin(c, "show failed");
    assert!(
        failed.contains(std::str::from_utf8(&old).unwrap()),
        "{failed}"
    );
    assert!(failed.contains("expired"), "{failed}");
    w.e.check_queues();
}

#[test]
fn settings_are_bounded_and_checked() {
    let mut w = World::with(EngineConfig {
        max_function_settings: 4,
        max_rate_count: 5,
        ..EngineConfig::default()
    });
    let c = w.conn();
    for bad in [
        "limit f 0",
        "limit f x",
        "rate f 10",
        "rate f 0/1s",
        "expire f 0s",
        "expire f soon",
    ] {
        assert!(
            w.admin(c, bad).starts_with("ERR INVALID_ARGUMENTS"),
            "{bad}"
        );
    }
    assert_eq!(w.admin(c, "show limits"), ".\n");
    // N up to --max-rate-count: the gate keeps a time per handout in the window.
    assert_eq!(
        w.admin(c, "rate f 6/1s"),
        "ERR INVALID_ARGUMENTS N+is+1+to+5+(--max-rate-count)\r\n"
    );
    assert_eq!(
        w.e.change_limit(
            b"f",
            LimitChange::Rate(Some(LimitRate {
                count: 6,
                window_ms: 1000
            })),
            w.now,
            &mut w.out
        ),
        Err(LimitError::RateTooLarge(5))
    );
    assert_eq!(
        w.admin(c, "show limits"),
        ".\n",
        "a refused rate sets nothing"
    );
    for i in 0..4 {
        w.e.change_limit(
            format!("f{i}").as_bytes(),
            LimitChange::Limit(Some(1)),
            w.now,
            &mut w.out,
        )
        .unwrap();
    }
    assert_eq!(
        w.admin(c, "limit one-more 1"),
        "ERR TOO_MANY_LIMITS 4+functions+have+a+setting+already+(--max-function-settings)\r\n"
    );
    // A function with a setting may change it; `off` frees the place.
    assert_eq!(w.admin(c, "rate f1 5/1s"), "OK\r\n");
    assert_eq!(w.admin(c, "limit f2 off"), "OK\r\n");
    assert_eq!(w.admin(c, "limit one-more 1"), "OK\r\n");
}

/// A restart with lower bounds than the journal's settings reads every one back, a rate past
/// `--max-rate-count` included (as set, still enforced); admin lines add no function while
/// the table is at or past the bound.
#[test]
fn settings_read_back_past_lower_bounds_are_all_kept() {
    let mut w = World::with(EngineConfig {
        max_function_settings: 1,
        max_rate_count: 2,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let rate = LimitRate {
        count: 3,
        window_ms: 1000,
    };
    for f in ["f0", "f1", "f2"] {
        let record = crate::store::FunctionLimits {
            func: b(f),
            limit: 0,
            rate_count: rate.count,
            rate_window_ms: rate.window_ms,
            paused: false,
            expire_ms: 0,
        };
        w.e.restore_limits(
            f.as_bytes(),
            crate::engine::limits::settings_of(&record),
            w.now,
        );
    }
    let listing = w.admin(c, "show limits");
    assert_eq!(listing.lines().count(), 4, "{listing}");
    assert_eq!(w.e.limits_of(b"f2").and_then(|s| s.rate), Some(rate));
    assert!(
        w.admin(c, "limit one-more 1")
            .starts_with("ERR TOO_MANY_LIMITS")
    );
    assert_eq!(w.admin(c, "limit f1 2"), "OK\r\n");
    // The rate read back still holds the fourth handout in its window.
    let wk = w.conn();
    w.can_do(wk, "f0");
    for i in 0..4 {
        w.submit(c, "f0", &format!("u{i}"), "d", Priority::Normal, true);
    }
    for _ in 0..3 {
        assert!(w.grab(wk).is_some());
    }
    assert!(w.grab(wk).is_none());
}
