//! Future jobs: SUBMIT_JOB_EPOCH and SUBMIT_JOB_SCHED in the timer wheel.

use super::*;

#[test]
fn epoch_jobs_wait_in_the_timer_and_block_nothing() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let due_s = w.now / 1000 + 60;
    let r = w.req(
        c,
        Request::SubmitJobEpoch {
            func: b("f"),
            body: JobBody::new(&b("e1"), &b("later")),
            epoch: b(&due_s.to_string()),
        },
    );
    let h = match &r[..] {
        [(_, Response::JobCreated { handle })] => handle.clone(),
        other => panic!("{other:?}"),
    };
    w.submit(c, "f", "", "now", Priority::Low, true);
    w.can_do(wk, "f");
    assert_eq!(
        w.grab(wk).unwrap().1,
        b("now"),
        "a LOW job is not blocked by an unripe NORMAL one"
    );
    assert_eq!(w.grab(wk), None);
    assert_eq!(w.admin(c, "status"), "f\t2\t1\t1\n.\n");
    assert_eq!(w.admin(c, "prioritystatus"), "f\t0\t0\t0\t1\n.\n");
    // A second EPOCH submit with the same unique joins the first.
    let r = w.req(
        c,
        Request::SubmitJobEpoch {
            func: b("f"),
            body: JobBody::new(&b("e1"), &b("x")),
            epoch: b("1"),
        },
    );
    assert_eq!(r, vec![(c, Response::JobCreated { handle: h.clone() })]);
    assert_eq!(w.req(wk, Request::PreSleep), vec![]);
    assert_eq!(w.e.next_deadline(), Some(due_s * 1000));
    w.e.on_time(due_s * 1000, &mut w.out);
    assert_eq!(
        std::mem::take(&mut w.out.replies),
        vec![(wk, Response::Noop)]
    );
    assert_eq!(w.grab(wk).unwrap(), (h.to_bytes(), b("later")));
}

#[test]
fn epoch_in_the_past_runs_now_and_garbage_is_refused() {
    let mut w = World::new();
    let c = w.conn();
    let r = w.req(
        c,
        Request::SubmitJobEpoch {
            func: b("f"),
            body: JobBody::new(&b(""), &b("x")),
            epoch: b("5"),
        },
    );
    assert!(matches!(&r[..], [(_, Response::JobCreated { .. })]));
    assert_eq!(w.admin(c, "prioritystatus"), "f\t0\t1\t0\t0\n.\n");
    for bad in ["abc", "", "-5", "99999999999999999999999", "253402300800"] {
        let r = w.req(
            c,
            Request::SubmitJobEpoch {
                func: b("f"),
                body: JobBody::new(&b(""), &b("x")),
                epoch: b(bad),
            },
        );
        assert!(
            matches!(
                &r[..],
                [(
                    _,
                    Response::Error {
                        code: "INVALID_ARGUMENT",
                        ..
                    }
                )]
            ),
            "{bad}: {r:?}"
        );
    }
}

#[test]
fn sched_jobs_run_at_the_next_matching_minute() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    // 2026-11-22T06:37:30Z, a Sunday.
    w.now = 1_795_329_450_000;
    let (c, wk) = (w.conn(), w.conn());
    let fields = |m: &str, h: &str, wd: &str| Box::new([b(m), b(h), b(""), b(""), b(wd)]);
    let r = w.req(
        c,
        Request::SubmitJobSched {
            func: b("f"),
            body: JobBody::new(&b("s1"), &b("x")),
            fields: fields("40", "", ""),
        },
    );
    let h = match &r[..] {
        [(_, Response::JobCreated { handle })] => handle.clone(),
        other => panic!("{other:?}"),
    };
    // Day of week 0 is Monday in the protocol: tomorrow.
    w.req(
        c,
        Request::SubmitJobSched {
            func: b("f"),
            body: JobBody::new(&b("s2"), &b("y")),
            fields: fields("0", "9", "0"),
        },
    );
    assert_eq!(
        w.admin(c, "show scheduled"),
        "H:t:1\tf\ts1\t2026-11-22T06:40:00Z\tnormal\nH:t:2\tf\ts2\t2026-11-23T09:00:00Z\tnormal\n.\n"
    );
    w.can_do(wk, "f");
    assert_eq!(w.req(wk, Request::PreSleep), vec![]);
    let due = 1_795_329_600_000; // 06:40:00
    assert_eq!(w.e.next_deadline(), Some(due));
    w.e.on_time(due - 1, &mut w.out);
    assert!(w.out.replies.is_empty());
    w.e.on_time(due, &mut w.out);
    assert_eq!(
        std::mem::take(&mut w.out.replies),
        vec![(wk, Response::Noop)]
    );
    assert_eq!(w.grab(wk).unwrap(), (h.to_bytes(), b("x")));
    for (bad, why) in [
        (fields("60", "", ""), "minute 60 is out of range 0-59"),
        (
            Box::new([b(""), b(""), b("31"), b("2"), b("")]),
            "day 31 never occurs in month 2",
        ),
    ] {
        let r = w.req(
            c,
            Request::SubmitJobSched {
                func: b("f"),
                body: JobBody::new(&b(""), &b("")),
                fields: bad,
            },
        );
        assert_eq!(r, vec![(c, Response::error("INVALID_ARGUMENT", why))]);
    }
}

#[test]
fn cancelling_a_future_job_removes_it_from_the_wheel() {
    let mut w = World::new();
    let c = w.conn();
    let due = (w.now / 1000 + 3600).to_string();
    w.req(
        c,
        Request::SubmitJobEpoch {
            func: b("f"),
            body: JobBody::new(&b(""), &b("")),
            epoch: b(&due),
        },
    );
    assert!(w.e.next_deadline().is_some());
    assert_eq!(w.admin(c, "cancel job H:t:1"), "OK\r\n");
    assert_eq!(w.e.next_deadline(), None);
    // Nothing uses `f` any more: it stays listed, as gearmand lists it.
    assert_eq!(w.admin(c, "status"), "f\t0\t0\t0\n.\n");
}
