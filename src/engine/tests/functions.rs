//! Many functions on one worker, and functions nobody uses being forgotten.

use super::*;

// ---- many functions on one worker --------------------------------------------------------

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

// ---- idle functions are kept, the least recently used past --max-idle-functions go ---------

impl World {
    /// The end of a turn: the reactor calls `on_time` every turn, which trims idle functions.
    fn turn_end(&mut self) {
        self.e.on_time(self.now, &mut self.out);
    }
}

#[test]
fn a_function_stays_listed_after_its_last_job_and_worker_are_gone() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "", "x", Priority::Normal, true);
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    w.e.disconnect(wk, w.now, &mut w.out);
    w.turn_end();
    // As gearmand: `f 0 0 0`, and its counters go on.
    assert_eq!(w.admin(c, "status"), "f\t0\t0\t0\n.\n");
    assert_eq!(w.e.function_statuses()[0].counters.completed, 1);
    assert_eq!(w.e.totals().functions_idle, 1);
    w.e.check_queues();
}

#[test]
fn past_max_idle_functions_the_least_recently_used_idle_ones_go() {
    let mut w = World::with(EngineConfig {
        max_idle_functions: 2,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let keep = w.conn();
    w.can_do(keep, "busy");
    w.admin(c, "maxqueue set 5");
    // A queued job keeps its function too.
    w.submit(c, "queued", "", "q", Priority::Normal, true);
    for name in ["a", "b", "c"] {
        let wk = w.conn();
        w.can_do(wk, name);
        w.e.disconnect(wk, w.now, &mut w.out);
        w.turn_end();
    }
    // `a` was the oldest idle one; the worker's, the job's and the operator's stay.
    assert_eq!(
        w.admin(c, "status"),
        "busy\t0\t0\t1\nset\t0\t0\t0\nqueued\t1\t0\t0\nb\t0\t0\t0\nc\t0\t0\t0\n.\n"
    );
    // `b` is used again: `c` is now the oldest idle one, and goes when `d` comes.
    let h = w.submit(c, "b", "", "bb", Priority::Normal, true);
    let cancel = format!("cancel job {}", String::from_utf8_lossy(&h));
    assert_eq!(w.admin(c, &cancel), "OK\r\n");
    let wk = w.conn();
    w.can_do(wk, "d");
    w.e.disconnect(wk, w.now, &mut w.out);
    w.turn_end();
    let status = w.admin(c, "status");
    assert!(status.contains("\nb\t0\t0\t0\n"), "{status}");
    assert!(status.contains("\nd\t0\t0\t0\n"), "{status}");
    assert!(!status.contains("\nc\t"), "{status}");
    let t = w.e.totals();
    assert_eq!((t.functions_idle, t.functions_forgotten), (2, 2));
    // A submit refused by a full queue leaves an unused name: it joins the idle list too.
    w.admin(c, "maxqueue full 0");
    w.e.check_queues();
}

#[test]
fn a_hundred_thousand_names_from_workers_that_left_keep_a_bounded_number() {
    let mut w = World::with(EngineConfig {
        max_functions_per_worker: 0,
        max_idle_functions: 1000,
        ..EngineConfig::default()
    });
    for round in 0..10 {
        let wk = w.conn();
        for i in 0..10_000 {
            w.can_do(wk, &format!("name-{round}-{i}"));
        }
        w.e.disconnect(wk, w.now, &mut w.out);
        w.turn_end();
    }
    assert_eq!(w.e.functions.len(), 1000);
    assert_eq!(w.e.totals().functions_forgotten, 99_000);
    assert!(
        w.e.func_by_name.capacity() < 4096,
        "the table was given back"
    );
}

#[test]
fn max_idle_functions_zero_forgets_every_unused_name_at_the_turn_end() {
    let mut w = World::with(EngineConfig {
        max_idle_functions: 0,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let h = w.submit(c, "g", "", "y", Priority::Normal, true);
    w.admin(c, "create function made");
    let cancel = format!("cancel job {}", String::from_utf8_lossy(&h));
    assert_eq!(w.admin(c, &cancel), "OK\r\n");
    w.turn_end();
    assert_eq!(w.admin(c, "status"), "made\t0\t0\t0\n.\n");
    // drop function takes an operator's function away, listed or not.
    assert_eq!(w.admin(c, "drop function made"), "OK\r\n");
    assert_eq!(w.admin(c, "status"), ".\n");
}
