//! Workers: jobs given back, retries, CAN_DO_TIMEOUT, sleepers and wake-ups, queue caps.

use super::*;

#[test]
fn worker_disconnect_gives_the_job_back_to_the_head() {
    let mut w = World::new();
    let (c, w1, w2) = (w.conn(), w.conn(), w.conn());
    let h = w.submit(c, "f", "", "first", Priority::Normal, false);
    w.submit(c, "f", "", "second", Priority::Normal, false);
    w.can_do(w1, "f");
    assert_eq!(w.grab(w1).unwrap().0, h);
    w.e.disconnect(w1, w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "clients are not told");
    w.can_do(w2, "f");
    assert_eq!(w.grab(w2).unwrap(), (h.clone(), b("first")));
    assert_eq!(
        w.admin(c, "show jobs"),
        "H:t:1\t1\t0\t0\nH:t:2\t0\t0\t0\n.\n"
    );
}

#[test]
fn job_retries_limit_fails_the_job_for_its_clients() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        job_retries: 2,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    for round in 0..2 {
        let wk = w.conn();
        w.can_do(wk, "f");
        assert_eq!(w.grab(wk).unwrap().0, h);
        w.e.disconnect(wk, w.now, &mut w.out);
        let r = std::mem::take(&mut w.out.replies);
        if round == 0 {
            assert!(r.is_empty());
        } else {
            assert_eq!(
                r,
                vec![(
                    c,
                    Response::WorkFail {
                        handle: h.clone().into()
                    }
                )]
            );
        }
    }
    assert_eq!(w.e.job_count(), 0);
}

#[test]
fn cant_do_and_reset_give_back_only_what_they_name() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.submit(c, "f", "", "df", Priority::Normal, true);
    w.submit(c, "g", "", "dg", Priority::Normal, true);
    w.can_do(wk, "f");
    w.can_do(wk, "g");
    w.grab(wk).unwrap();
    w.grab(wk).unwrap();
    assert_eq!(w.e.running_jobs(), 2);
    w.req(wk, Request::CantDo { func: b("f") });
    assert_eq!(w.e.running_jobs(), 1);
    assert_eq!(w.admin(c, "status"), "f\t1\t0\t0\ng\t1\t1\t1\n.\n");
    w.req(wk, Request::ResetAbilities);
    assert_eq!(w.e.running_jobs(), 0);
    assert_eq!(
        w.admin(c, "prioritystatus"),
        "f\t0\t1\t0\t0\ng\t0\t1\t0\t0\n.\n"
    );
}

#[test]
fn client_disconnect_drops_queued_foreground_but_not_background_jobs() {
    let mut w = World::new();
    let (c1, c2, wk) = (w.conn(), w.conn(), w.conn());
    w.submit(c1, "f", "fg", "d", Priority::Normal, false);
    let bg = w.submit(c2, "f", "bg", "d", Priority::Normal, true);
    // A foreground client joins the background job, then leaves.
    w.submit(c1, "f", "bg", "d", Priority::Normal, false);
    w.e.disconnect(c1, w.now, &mut w.out);
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().0, bg);
    assert_eq!(w.grab(wk), None);
}

#[test]
fn background_submit_joining_a_foreground_job_keeps_it_alive() {
    let mut w = World::new();
    let (c1, c2, wk) = (w.conn(), w.conn(), w.conn());
    let h = w.submit(c1, "f", "u", "d", Priority::Normal, false);
    assert_eq!(w.submit(c2, "f", "u", "d", Priority::Normal, true), h);
    w.e.disconnect(c1, w.now, &mut w.out);
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().0, h);
}

#[test]
fn can_do_timeout_fails_the_job_and_refuses_the_late_result() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    w.req(
        wk,
        Request::CanDoTimeout {
            func: b("f"),
            timeout_ms: 250,
        },
    );
    w.grab(wk).unwrap();
    assert_eq!(w.e.next_deadline(), Some(w.now + 250));
    w.e.on_time(w.now + 249, &mut w.out);
    assert!(w.out.replies.is_empty());
    w.now += 250;
    w.e.on_time(w.now, &mut w.out);
    assert_eq!(
        std::mem::take(&mut w.out.replies),
        vec![(
            c,
            Response::WorkFail {
                handle: h.clone().into()
            }
        )]
    );
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
    assert_eq!(w.e.next_deadline(), None);
}

#[test]
fn completing_in_time_cancels_the_timeout() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    w.req(
        wk,
        Request::CanDoTimeout {
            func: b("f"),
            timeout_ms: 250,
        },
    );
    w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b("ok"),
        },
    );
    assert_eq!(w.e.next_deadline(), None);
}

#[test]
fn one_sleeper_is_woken_per_job_and_the_baton_passes() {
    let mut w = World::new();
    let c = w.conn();
    let sleepers: Vec<ConnId> = (0..3).map(|_| w.conn()).collect();
    for &s in &sleepers {
        w.can_do(s, "f");
        assert!(w.req(s, Request::PreSleep).is_empty());
    }
    let r = w.req(
        c,
        Request::SubmitJob {
            func: b("f"),
            body: JobBody::new(&b(""), &b("1")),
            priority: Priority::Normal,
            background: true,
        },
    );
    let noops: Vec<ConnId> = r
        .iter()
        .filter(|(_, r)| *r == Response::Noop)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(noops.len(), 1, "{r:?}");
    // A second job wakes another sleeper, not the one already woken.
    let r = w.req(
        c,
        Request::SubmitJob {
            func: b("f"),
            body: JobBody::new(&b(""), &b("2")),
            priority: Priority::Normal,
            background: true,
        },
    );
    let noops2: Vec<ConnId> = r
        .iter()
        .filter(|(_, r)| *r == Response::Noop)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(noops2.len(), 1);
    assert_ne!(noops, noops2);
}

#[test]
fn worker_wakeup_zero_wakes_everyone() {
    let mut w = World::with(EngineConfig {
        worker_wakeup: 0,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let sleepers: Vec<ConnId> = (0..3).map(|_| w.conn()).collect();
    for &s in &sleepers {
        w.can_do(s, "f");
        w.req(s, Request::PreSleep);
    }
    let r = w.req(
        c,
        Request::SubmitJob {
            func: b("f"),
            body: JobBody::new(&b(""), &b("1")),
            priority: Priority::Normal,
            background: true,
        },
    );
    assert_eq!(r.iter().filter(|(_, r)| *r == Response::Noop).count(), 3);
}

#[test]
fn pre_sleep_with_work_waiting_gets_a_noop_at_once() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.submit(c, "f", "", "d", Priority::Normal, true);
    w.can_do(wk, "f");
    assert_eq!(w.req(wk, Request::PreSleep), vec![(wk, Response::Noop)]);
}

#[test]
fn max_queue_caps_a_function() {
    let mut w = World::with(EngineConfig {
        max_queue: 2,
        ..EngineConfig::default()
    });
    let c = w.conn();
    w.submit(c, "f", "", "1", Priority::Normal, true);
    w.submit(c, "f", "", "2", Priority::Normal, true);
    let r = w.req(
        c,
        Request::SubmitJob {
            func: b("f"),
            body: JobBody::new(&b(""), &b("3")),
            priority: Priority::Normal,
            background: true,
        },
    );
    assert_eq!(
        r,
        vec![(c, Response::error("QUEUE_ERROR", "Job queue is full"))]
    );
    assert_eq!(w.admin(c, "maxqueue f"), "OK 2 2 2\n");
    assert_eq!(w.admin(c, "maxqueue f 0 5 1"), "OK\r\n");
    assert_eq!(w.admin(c, "maxqueue f"), "OK 0 5 1\n");
    w.submit(c, "f", "", "3", Priority::High, true);
    assert_eq!(w.admin(c, "maxqueue nosuch"), "ERR function not found\r\n");
}

/// The sleepers that got a NOOP in `r`.
fn noops_in(r: &[(ConnId, Response)]) -> Vec<ConnId> {
    r.iter()
        .filter(|(_, r)| *r == Response::Noop)
        .map(|(c, _)| *c)
        .collect()
}

/// A worker busy on another server, or hung, is woken and never asks for the job: after
/// `--worker-wakeup-next` the next sleeper is woken, and gets the job.
#[test]
fn a_woken_worker_that_does_not_come_passes_the_job_on_after_the_delay() {
    let mut w = World::new();
    let delay = w.e.config().wakeup_next_ms;
    assert!(delay > 0, "on by default");
    let (_, woken, other) = one_job_two_sleepers(&mut w);
    // Until the delay is over the woken worker has its chance: nobody else is woken.
    w.now += delay - 1;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    w.now += 1;
    w.e.on_time(w.now, &mut w.out);
    assert_eq!(noops_in(&std::mem::take(&mut w.out.replies)), [other]);
    assert_eq!(w.e.totals().wakeups_overdue, 1);
    assert_eq!(w.grab(other).unwrap().1, "d");
    // Nothing is left to pass on: the job is taken.
    w.now += 10 * delay;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    // The late worker comes at last and finds nothing.
    assert!(w.grab(woken).is_none());
    w.e.check_workers();
}

/// `n` sleepers of `f` and a client; the client submits one job: (client, woken, the others).
fn one_job_sleepers(w: &mut World, n: usize) -> (ConnId, ConnId, Vec<ConnId>) {
    let c = w.conn();
    let sleepers: Vec<ConnId> = (0..n).map(|_| w.conn()).collect();
    for &s in &sleepers {
        w.can_do(s, "f");
        assert!(w.req(s, Request::PreSleep).is_empty());
    }
    let r = w.req(c, submit_normal("d", true));
    let woken = noops_in(&r);
    assert_eq!(woken.len(), 1, "{r:?}");
    let others = sleepers.into_iter().filter(|&s| s != woken[0]).collect();
    (c, woken[0], others)
}

/// Two sleepers of `f` and a client; the client submits one job: (client, woken, other).
fn one_job_two_sleepers(w: &mut World) -> (ConnId, ConnId, ConnId) {
    let (c, woken, others) = one_job_sleepers(w, 2);
    (c, woken, others[0])
}

#[test]
fn a_woken_worker_that_comes_in_time_is_not_overtaken() {
    let mut w = World::new();
    let delay = w.e.config().wakeup_next_ms;
    let (_, woken, _) = one_job_two_sleepers(&mut w);
    w.now += delay - 1;
    assert_eq!(w.grab(woken).unwrap().1, "d");
    assert_eq!(w.e.next_deadline(), None, "the deadline goes with the GRAB");
    assert_eq!(w.e.totals().wakeups_overdue, 0);
    w.now += 10 * delay;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
}

#[test]
fn each_worker_that_does_not_come_passes_the_job_on_in_turn() {
    let mut w = World::new();
    let delay = w.e.config().wakeup_next_ms;
    let (_, _, others) = one_job_sleepers(&mut w, 3);
    w.now += delay;
    w.e.on_time(w.now, &mut w.out);
    let next = noops_in(&std::mem::take(&mut w.out.replies));
    assert_eq!(next.len(), 1);
    assert!(others.contains(&next[0]));
    // That one does not come either: the last sleeper is woken after another delay.
    let last = others.into_iter().find(|&s| s != next[0]).unwrap();
    w.now += delay - 1;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    w.now += 1;
    w.e.on_time(w.now, &mut w.out);
    assert_eq!(noops_in(&std::mem::take(&mut w.out.replies)), [last]);
    assert_eq!(w.grab(last).unwrap().1, "d");
    assert_eq!(w.e.next_deadline(), None);
    w.e.check_workers();
}

#[test]
fn a_worker_woken_by_its_own_pre_sleep_that_does_not_come_passes_the_job_on() {
    let mut w = World::new();
    let delay = w.e.config().wakeup_next_ms;
    let (c, sleeper) = (w.conn(), w.conn());
    w.can_do(sleeper, "f");
    assert!(w.req(sleeper, Request::PreSleep).is_empty());
    w.submit(c, "f", "", "d", Priority::Normal, true);
    // A worker that goes to sleep while the job waits is told at once, and does not come.
    let late = w.conn();
    w.can_do(late, "f");
    assert_eq!(noops_in(&w.req(late, Request::PreSleep)), [late]);
    w.now += delay;
    w.e.on_time(w.now, &mut w.out);
    assert!(
        w.out.replies.is_empty(),
        "the first sleeper was woken at submit"
    );
    assert_eq!(w.grab(sleeper).unwrap().1, "d");
}

#[test]
fn worker_wakeup_next_zero_and_wake_all_arm_no_deadline() {
    for config in [
        EngineConfig {
            wakeup_next_ms: 0,
            ..EngineConfig::default()
        },
        EngineConfig {
            worker_wakeup: 0,
            ..EngineConfig::default()
        },
    ] {
        let mut w = World::with(config);
        let c = w.conn();
        for _ in 0..2 {
            let s = w.conn();
            w.can_do(s, "f");
            w.req(s, Request::PreSleep);
        }
        w.req(c, submit_normal("d", true));
        assert_eq!(w.e.next_deadline(), None);
    }
}
