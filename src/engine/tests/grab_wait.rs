//! Held GRABs (--grab-wait).

use super::*;

// ---- held GRABs (--grab-wait) ----------------------------------------------------------------

fn waiting_world() -> World {
    World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        grab_wait_ms: 5,
        // No kept results: their expiry would be a deadline too, and these tests count them.
        keep_output_total: 0,
        ..EngineConfig::default()
    })
}

/// A worker of `f` that took one background job and ended it with `end(handle)`.
fn worker_that_ended_a_job(w: &mut World, client: ConnId, end: fn(Bytes) -> Request) -> ConnId {
    let worker = w.conn();
    w.can_do(worker, "f");
    w.submit(client, "f", "", "first", Priority::Normal, true);
    let (h, _) = w.grab(worker).expect("the first job");
    let r = w.req(worker, end(h));
    assert!(r.is_empty(), "{r:?}");
    worker
}

fn complete(handle: Bytes) -> Request {
    Request::WorkComplete {
        handle,
        data: b(""),
    }
}

/// A worker that ran one job to the end and then sent GRAB_JOB_UNIQ (left held).
fn worker_after_one_job(w: &mut World, client: ConnId) -> ConnId {
    let worker = worker_that_ended_a_job(w, client, complete);
    let r = w.req(worker, Request::GrabJob(GrabKind::Uniq));
    assert!(r.is_empty(), "a GRAB right after a job end waits: {r:?}");
    assert!(w.e.input_paused(worker));
    worker
}

#[test]
fn a_held_grab_takes_the_next_job_at_once() {
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    let r = w.req(client, submit_normal("second", false));
    // JOB_CREATED to the client first, then the job goes straight to the waiting worker.
    assert!(
        matches!(&r[0], (to, Response::JobCreated { .. }) if *to == client),
        "{r:?}"
    );
    assert!(
        matches!(&r[1], (to, Response::JobAssignUniq { data, .. }) if *to == worker && data == "second"),
        "{r:?}"
    );
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(std::mem::take(&mut w.out.resumed), vec![worker]);
    assert!(!w.e.input_paused(worker));
    let t = w.e.totals();
    assert_eq!((t.grab_waits_assigned, t.grab_waits_expired), (1, 0));
    // Its deadline was cancelled: nothing fires later.
    w.e.on_time(w.now + 1_000, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    assert_eq!(w.e.next_deadline(), None);
}

#[test]
fn job_created_may_wait_for_the_result_only_when_a_held_grab_takes_the_job() {
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    // Foreground, to the held GRAB: JOB_CREATED may wait for the result; JOB_ASSIGN may not.
    let (r, lazy) = w.req_with_lazy(client, submit_normal("second", false));
    assert!(
        matches!(&r[..], [(c, Response::JobCreated { .. }), (wk, Response::JobAssignUniq { .. })]
            if *c == client && *wk == worker),
        "{r:?}"
    );
    assert_eq!(lazy, vec![0]);
    // No held GRAB left: the job waits in the queue, so its JOB_CREATED must not.
    let (r, lazy) = w.req_with_lazy(client, submit_normal("third", false));
    assert!(
        matches!(&r[..], [(_, Response::JobCreated { .. })]),
        "{r:?}"
    );
    assert!(lazy.is_empty());
    // Background: JOB_CREATED is the only answer there will be, and leaves at once.
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    let (r, lazy) = w.req_with_lazy(client, submit_normal("bg", true));
    assert!(
        r.iter()
            .any(|(to, r)| *to == worker && matches!(r, Response::JobAssignUniq { .. })),
        "{r:?}"
    );
    assert!(lazy.is_empty());
    // Without --grab-wait no GRAB is ever held, and no reply waits.
    let mut w = World::new();
    let client = w.conn();
    let worker = w.conn();
    w.can_do(worker, "f");
    let (_, lazy) = w.req_with_lazy(client, submit_normal("plain", false));
    assert!(lazy.is_empty());
}

#[test]
fn a_held_grab_gets_no_job_at_its_deadline() {
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    // The deadline is at least the whole wait away.
    w.e.on_time(w.now + 5, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    w.e.on_time(w.now + 6, &mut w.out);
    assert_eq!(
        std::mem::take(&mut w.out.replies),
        vec![(worker, Response::NoJob)]
    );
    assert_eq!(std::mem::take(&mut w.out.resumed), vec![worker]);
    assert!(!w.e.input_paused(worker));
    let t = w.e.totals();
    assert_eq!((t.grab_waits_assigned, t.grab_waits_expired), (0, 1));
    // Then the usual sleep: PRE_SLEEP, and a new job wakes it with NOOP.
    assert!(w.req(worker, Request::PreSleep).is_empty());
    let r = w.req(client, submit_normal("x", true));
    assert!(r.contains(&(worker, Response::Noop)), "{r:?}");
}

#[test]
fn only_a_grab_after_a_job_end_waits() {
    let mut w = waiting_world();
    let worker = w.conn();
    w.can_do(worker, "f");
    // A fresh worker, or one woken by NOOP, hears NO_JOB at once.
    assert_eq!(w.grab(worker), None);
    assert!(!w.e.input_paused(worker));
    // And so does everyone with --grab-wait 0.
    let mut w = World::new();
    let client = w.conn();
    let worker = worker_that_ended_a_job(&mut w, client, |handle| Request::WorkFail {
        handle,
        after_handle: b(""),
    });
    assert_eq!(w.grab(worker), None);
    // Nor a GRAB after PRE_SLEEP, even if no GRAB came between the job end and the sleep.
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_that_ended_a_job(&mut w, client, complete);
    assert!(w.req(worker, Request::PreSleep).is_empty());
    assert_eq!(w.grab(worker), None);
}

#[test]
fn a_held_grab_is_served_before_sleepers_are_woken() {
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    let sleeper = w.conn();
    w.can_do(sleeper, "f");
    assert_eq!(w.grab(sleeper), None);
    assert!(w.req(sleeper, Request::PreSleep).is_empty());
    let r = w.req(client, submit_normal("next", true));
    assert!(
        r.iter()
            .any(|(to, r)| *to == worker && matches!(r, Response::JobAssignUniq { .. })),
        "{r:?}"
    );
    assert!(
        !r.iter().any(|(to, _)| *to == sleeper),
        "no NOOP for the sleeper: {r:?}"
    );
    // A second job has no held GRAB left to go to: the sleeper is woken.
    let r = w.req(client, submit_normal("more", true));
    assert!(r.contains(&(sleeper, Response::Noop)), "{r:?}");
}

#[test]
fn a_held_grab_of_a_worker_that_leaves_is_forgotten() {
    let mut w = waiting_world();
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    w.e.disconnect(worker, w.now, &mut w.out);
    assert_eq!(w.e.next_deadline(), None, "its deadline went with it");
    w.submit(client, "f", "", "later", Priority::Normal, true);
    w.e.on_time(w.now + 1_000, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    assert!(w.out.resumed.is_empty());
}

#[test]
fn a_held_grab_wakes_for_a_future_job_coming_due() {
    let mut w = waiting_world();
    // 3 ms before a whole second; the hold lasts 6 ms.
    w.now = 1_000_997;
    let client = w.conn();
    let worker = worker_after_one_job(&mut w, client);
    let r = w.req(
        client,
        Request::SubmitJobEpoch {
            func: b("f"),
            epoch: b("1001"),
            body: JobBody::new(&b(""), &b("due")),
        },
    );
    assert!(
        matches!(&r[..], [(_, Response::JobCreated { .. })]),
        "{r:?}"
    );
    w.e.on_time(1_000_999, &mut w.out);
    assert!(w.out.replies.is_empty(), "{:?}", w.out.replies);
    // Due at 1,001,000: straight to the held GRAB.
    w.e.on_time(1_001_000, &mut w.out);
    let r = std::mem::take(&mut w.out.replies);
    assert!(
        matches!(&r[..], [(to, Response::JobAssignUniq { data, .. })] if *to == worker && data == "due"),
        "{r:?}"
    );
    assert_eq!(std::mem::take(&mut w.out.resumed), vec![worker]);
}
