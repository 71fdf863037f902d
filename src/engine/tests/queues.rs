//! Queues: handles, priority order, round robin, coalescing, exceptions, status queries.

use super::*;

#[test]
fn handles_count_from_one_with_the_prefix() {
    let mut w = World::new();
    let c = w.conn();
    assert_eq!(
        w.submit(c, "f", "", "a", Priority::Normal, true),
        b("H:t:1")
    );
    assert_eq!(
        w.submit(c, "f", "", "a", Priority::Normal, true),
        b("H:t:2")
    );
}

#[test]
fn priority_is_fifo_within_one_function() {
    let mut w = World::new();
    let c = w.conn();
    let wk = w.conn();
    for (d, p) in [
        ("L1", Priority::Low),
        ("N1", Priority::Normal),
        ("H1", Priority::High),
    ] {
        w.submit(c, "f", "", d, p, true);
    }
    for (d, p) in [
        ("L2", Priority::Low),
        ("N2", Priority::Normal),
        ("H2", Priority::High),
    ] {
        w.submit(c, "f", "", d, p, true);
    }
    w.can_do(wk, "f");
    let order: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    assert_eq!(order, ["H1", "H2", "N1", "N2", "L1", "L2"].map(b));
}

#[test]
fn priority_is_global_across_functions() {
    let mut w = World::new();
    let c = w.conn();
    let wk = w.conn();
    w.submit(c, "xB", "", "lowB", Priority::Low, true);
    w.submit(c, "xA", "", "highA", Priority::High, true);
    w.submit(c, "xB", "", "normB", Priority::Normal, true);
    w.submit(c, "xA", "", "normA", Priority::Normal, true);
    w.can_do(wk, "xA");
    w.can_do(wk, "xB");
    let order: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    // Equal priority across functions: oldest first.
    assert_eq!(order, ["highA", "normB", "normA", "lowB"].map(b));
}

#[test]
fn round_robin_rotates_functions_within_a_priority() {
    let mut w = World::with(EngineConfig {
        round_robin: true,
        ..EngineConfig::default()
    });
    let c = w.conn();
    let wk = w.conn();
    for d in ["a1", "a2", "a3"] {
        w.submit(c, "fa", "", d, Priority::Normal, true);
    }
    for d in ["b1", "b2"] {
        w.submit(c, "fb", "", d, Priority::Normal, true);
    }
    w.can_do(wk, "fa");
    w.can_do(wk, "fb");
    let order: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    assert_eq!(order, ["b1", "a1", "b2", "a2", "a3"].map(b));
}

#[test]
fn coalescing_on_function_and_unique() {
    let mut w = World::new();
    let (c1, c2, c3, wk) = (w.conn(), w.conn(), w.conn(), w.conn());
    let h1 = w.submit(c1, "f", "U", "one", Priority::Normal, false);
    let h2 = w.submit(c2, "f", "U", "two", Priority::High, false);
    let h3 = w.submit(c3, "f", "U", "three", Priority::Low, true);
    assert_eq!((&h1, &h2), (&h3, &h1));
    // Another function, another job.
    assert_ne!(w.submit(c1, "g", "U", "x", Priority::Normal, true), h1);
    // Empty unique never coalesces; "-" coalesces on the data.
    let e1 = w.submit(c1, "f", "", "d", Priority::Normal, true);
    assert_ne!(e1, w.submit(c1, "f", "", "d", Priority::Normal, true));
    let d1 = w.submit(c1, "f", "-", "same", Priority::Normal, true);
    assert_eq!(d1, w.submit(c2, "f", "-", "same", Priority::Normal, true));
    assert_ne!(d1, w.submit(c2, "f", "-", "other", Priority::Normal, true));

    w.can_do(wk, "f");
    let (h, d) = w.grab(wk).unwrap();
    assert_eq!((h.clone(), d), (h1.clone(), b("one")));
    let r = w.req(
        wk,
        Request::WorkData {
            handle: h.clone(),
            data: b("chunk"),
        },
    );
    let to: Vec<ConnId> = r.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        to,
        vec![c1, c2],
        "foreground clients in attach order; background gets nothing"
    );
    let r = w.req(
        wk,
        Request::WorkComplete {
            handle: h.clone(),
            data: b("done"),
        },
    );
    assert_eq!(r.len(), 2);
    // After completion the unique makes a new job.
    assert_ne!(w.submit(c1, "f", "U", "again", Priority::Normal, true), h1);
}

#[test]
fn exceptions_go_only_to_clients_that_asked() {
    let mut w = World::new();
    let (c1, c2, wk) = (w.conn(), w.conn(), w.conn());
    let r = w.req(
        c1,
        Request::OptionReq {
            name: b("Exceptions"),
        },
    );
    assert_eq!(
        r,
        vec![(
            c1,
            Response::OptionRes {
                name: b("Exceptions")
            }
        )]
    );
    let r = w.req(c2, Request::OptionReq { name: b("foo") });
    assert_eq!(
        r,
        vec![(
            c2,
            Response::error("UNKNOWN_OPTION", "Server does not recognize given option")
        )]
    );
    let h = w.submit(c1, "f", "u", "d", Priority::Normal, false);
    w.submit(c2, "f", "u", "d", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    let r = w.req(
        wk,
        Request::WorkException {
            handle: h.clone(),
            data: b("boom"),
        },
    );
    assert_eq!(
        r,
        vec![
            (
                c1,
                Response::WorkWithData {
                    ptype: PacketType::WorkException,
                    handle: h.clone().into(),
                    data: b("boom")
                }
            ),
            (
                c2,
                Response::WorkFail {
                    handle: h.clone().into()
                }
            ),
        ]
    );
    assert_eq!(w.e.job_count(), 0);
}

#[test]
fn results_for_unknown_or_foreign_handles_get_gearmands_errors() {
    let mut w = World::new();
    let (c, wk, other) = (w.conn(), w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    let cases = [
        (
            Request::WorkComplete {
                handle: b("H:t:99"),
                data: b(""),
            },
            "Job given in work result not found",
        ),
        (
            Request::WorkFail {
                handle: b("H:t:99"),
                after_handle: b(""),
            },
            "Job given in work result not found",
        ),
        (
            Request::WorkStatus {
                handle: b("H:t:99"),
                numerator: b("1"),
                denominator: b("2"),
            },
            "Job given in work result not found",
        ),
        (
            Request::WorkData {
                handle: b("H:t:99"),
                data: b(""),
            },
            "Job does not exist on server",
        ),
        (
            Request::WorkWarning {
                handle: b("H:t:99"),
                data: b(""),
            },
            "Job does not exist on server",
        ),
        (
            Request::WorkException {
                handle: b("H:t:99"),
                data: b(""),
            },
            "An exception was received for a job that does not exist",
        ),
        // A queued job that this connection does not run is not its to finish.
        (
            Request::WorkComplete {
                handle: h.clone(),
                data: b(""),
            },
            "Job given in work result not found",
        ),
    ];
    for (r, text) in cases {
        assert_eq!(
            w.req(other, r),
            vec![(other, Response::error("JOB_NOT_FOUND", text))]
        );
    }
    let _ = wk;
}

#[test]
fn status_queries() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let r = w.req(
        c,
        Request::GetStatus {
            handle: b("H:nohost:999"),
            after_handle: b(""),
        },
    );
    assert_eq!(
        r,
        vec![(
            c,
            Response::StatusRes {
                handle: b("H:nohost:999").into(),
                known: false,
                running: false,
                numerator: 0,
                denominator: 0
            }
        )]
    );
    let h = w.submit(c, "f", "U1", "d", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkStatus {
            handle: h.clone(),
            numerator: b("1"),
            denominator: b("4"),
        },
    );
    let r = w.req(
        c,
        Request::GetStatus {
            handle: h.clone(),
            after_handle: b(""),
        },
    );
    assert_eq!(
        r,
        vec![(
            c,
            Response::StatusRes {
                handle: h.clone().into(),
                known: true,
                running: true,
                numerator: 1,
                denominator: 4
            }
        )]
    );
    let r = w.req(c, Request::GetStatusUnique { unique: b("U1") });
    assert_eq!(
        r,
        vec![(
            c,
            Response::StatusResUnique {
                unique: b("U1"),
                known: true,
                running: true,
                numerator: 1,
                denominator: 4,
                clients: 1
            }
        )]
    );
}
