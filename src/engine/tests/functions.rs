//! Many functions on one worker, and functions nobody uses being forgotten.

use super::*;

// ---- many functions on one worker (issue 14 item 1) -----------------------------------------

#[test]
fn can_do_past_the_cap_is_refused_and_registers_nothing() {
    let mut w = World::with(EngineConfig {
        max_functions_per_worker: 3,
        ..EngineConfig::default()
    });
    let (wk, c) = (w.conn(), w.conn());
    // A duplicate counts: it is a registration gearmand keeps too.
    for f in ["a", "b", "b"] {
        w.can_do(wk, f);
    }
    let r = w.req(wk, Request::CanDo { func: b("c") });
    assert!(
        matches!(&r[..], [(to, Response::Error { code, .. })]
            if *to == wk && *code == "TOO_MANY_FUNCTIONS"),
        "{r:?}"
    );
    let r = w.req(
        wk,
        Request::CanDoTimeout {
            func: b("d"),
            timeout_ms: 5,
        },
    );
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(w.e.functions_refused, 2);
    // Nothing registered, no function made; the worker still works.
    assert_eq!(w.admin(c, "status"), "a\t0\t0\t1\nb\t0\t0\t2\n.\n");
    w.submit(c, "b", "", "x", Priority::Normal, true);
    assert_eq!(w.grab(wk).unwrap().1, b("x"));
    // Giving a function up makes room again.
    w.req(wk, Request::CantDo { func: b("b") });
    w.can_do(wk, "c");
    w.e.check_queues();
}

#[test]
fn a_worker_of_many_functions_gets_the_oldest_job_across_them() {
    let mut w = World::new();
    let (wk, c) = (w.conn(), w.conn());
    for i in 0..5_000 {
        w.can_do(wk, &format!("f{i}"));
    }
    // Fewer functions with jobs than the worker's: the search goes through those.
    w.submit(c, "f4000", "", "1", Priority::Normal, true);
    w.submit(c, "f10", "", "2", Priority::Normal, true);
    w.submit(c, "f4000", "", "3", Priority::High, true);
    let order: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    assert_eq!(order, ["3", "1", "2"].map(b));
    // More functions with jobs than a narrow worker's: the search goes through its own.
    let narrow = w.conn();
    w.can_do(narrow, "f10");
    for i in (0..200).rev() {
        w.submit(
            c,
            &format!("f{i}"),
            "",
            &format!("n{i}"),
            Priority::Normal,
            true,
        );
    }
    assert_eq!(w.grab(narrow).unwrap().1, b("n10"));
    assert!(w.grab(narrow).is_none());
    w.e.check_queues();
}

// ---- functions nobody uses are forgotten (issue 14 item 5) ----------------------------------

#[test]
fn a_function_is_forgotten_when_its_last_job_and_worker_are_gone() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "", "x", Priority::Normal, true);
    w.submit(c, "g", "", "y", Priority::Normal, true);
    w.admin(c, "maxqueue kept 5");
    w.admin(c, "create function made");
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    // `f` still has its worker, `g` its job; the admin's two stay.
    assert_eq!(
        w.admin(c, "status"),
        "f\t0\t0\t1\ng\t1\t0\t0\nkept\t0\t0\t0\nmade\t0\t0\t0\n.\n"
    );
    w.e.disconnect(wk, w.now, &mut w.out);
    w.can_do(wk, "g");
    w.e.disconnect(wk, w.now, &mut w.out);
    let g = w.conn();
    w.can_do(g, "g");
    w.grab(g).unwrap();
    assert_eq!(
        w.admin(c, "status"),
        "g\t1\t1\t1\nkept\t0\t0\t0\nmade\t0\t0\t0\n.\n"
    );
    // The worker dies: its job goes back, so `g` stays; the job is cancelled: `g` goes.
    w.e.disconnect(g, w.now, &mut w.out);
    assert_eq!(w.admin(c, "cancel job H:t:2"), "OK\r\n");
    assert_eq!(w.admin(c, "status"), "kept\t0\t0\t0\nmade\t0\t0\t0\n.\n");
    w.e.check_queues();
}

#[test]
fn a_hundred_thousand_names_from_workers_that_left_are_all_forgotten() {
    let mut w = World::with(EngineConfig {
        max_functions_per_worker: 0,
        ..EngineConfig::default()
    });
    let c = w.conn();
    for round in 0..10 {
        let wk = w.conn();
        for i in 0..10_000 {
            w.can_do(wk, &format!("name-{round}-{i}"));
        }
        w.e.disconnect(wk, w.now, &mut w.out);
    }
    assert_eq!(w.admin(c, "status"), ".\n");
    assert_eq!(w.e.functions.len(), 0);
    assert!(
        w.e.func_by_name.capacity() < 1024,
        "the table was given back"
    );
}
