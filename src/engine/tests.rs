//! Engine tests: requests in, outbox out, no sockets; time is a plain number.

use super::*;
use crate::proto::admin::AdminCommand;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

struct World {
    e: Engine,
    out: Outbox,
    now: u64,
    next: u32,
}

impl World {
    fn new() -> World {
        World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            ..EngineConfig::default()
        })
    }

    fn with(config: EngineConfig) -> World {
        World {
            e: Engine::new(config),
            out: Outbox::default(),
            now: 1_000_000,
            next: 0,
        }
    }

    fn conn(&mut self) -> ConnId {
        let id = ConnId {
            index: self.next,
            generation: 7,
        };
        self.next += 1;
        self.e.connect(
            id,
            ConnInfo {
                fd: 10 + id.index as i32,
                ip: "127.0.0.1".into(),
                loopback: true,
            },
        );
        id
    }

    fn req(&mut self, id: ConnId, r: Request) -> Vec<(ConnId, Response)> {
        self.req_with_lazy(id, r).0
    }

    /// The replies, and which of them may wait for company (`Outbox::lazy`).
    fn req_with_lazy(&mut self, id: ConnId, r: Request) -> (Vec<(ConnId, Response)>, Vec<usize>) {
        self.e.handle(id, r, self.now, &mut self.out);
        (
            std::mem::take(&mut self.out.replies),
            std::mem::take(&mut self.out.lazy),
        )
    }

    fn admin(&mut self, id: ConnId, line: &str) -> String {
        self.e
            .admin(id, AdminCommand::parse(&b(line)), self.now, &mut self.out);
        let replies = std::mem::take(&mut self.out.replies);
        match &replies[..] {
            [(_, Response::Text(t))] => String::from_utf8_lossy(t).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    fn submit(
        &mut self,
        id: ConnId,
        func: &str,
        unique: &str,
        data: &str,
        p: Priority,
        bg: bool,
    ) -> Bytes {
        let r = self.req(
            id,
            Request::SubmitJob {
                func: b(func),
                body: JobBody::new(unique.as_bytes(), data.as_bytes()),
                priority: p,
                background: bg,
            },
        );
        r.into_iter()
            .find_map(|(to, r)| match r {
                Response::JobCreated { handle } if to == id => Some(handle.to_bytes()),
                _ => None,
            })
            .expect("JOB_CREATED")
    }

    fn grab(&mut self, id: ConnId) -> Option<(Bytes, Bytes)> {
        let r = self.req(id, Request::GrabJob(GrabKind::Uniq));
        match &r[..] {
            [(_, Response::JobAssignUniq { handle, data, .. })] => {
                Some((handle.to_bytes(), data.clone()))
            }
            [(_, Response::NoJob)] => None,
            // A grab may also wake the next sleeper; the assign comes first.
            [(_, Response::JobAssignUniq { handle, data, .. }), rest @ ..]
                if rest.iter().all(|(_, r)| *r == Response::Noop) =>
            {
                Some((handle.to_bytes(), data.clone()))
            }
            other => panic!("{other:?}"),
        }
    }

    fn can_do(&mut self, id: ConnId, f: &str) {
        let r = self.req(id, Request::CanDo { func: b(f) });
        assert!(r.iter().all(|(_, r)| *r == Response::Noop), "{r:?}");
    }
}

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

#[test]
fn admin_listings() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.req(wk, Request::SetClientId { id: b("worker A") });
    w.can_do(wk, "fnB");
    w.can_do(wk, "fnA");
    w.submit(c, "fnA", "uq", "d", Priority::High, true);
    w.submit(c, "fnA", "", "d", Priority::Low, false);
    assert_eq!(w.admin(c, "status"), "fnB\t0\t0\t1\nfnA\t2\t0\t1\n.\n");
    assert_eq!(
        w.admin(c, "prioritystatus"),
        "fnB\t0\t0\t0\t1\nfnA\t1\t0\t1\t1\n.\n"
    );
    assert_eq!(
        w.admin(c, "workers"),
        "11 127.0.0.1 worker A : fnA fnB\n.\n"
    );
    assert_eq!(
        w.admin(c, "show jobs"),
        "H:t:1\t0\t0\t1\nH:t:2\t0\t0\t0\n.\n"
    );
    assert_eq!(w.admin(c, "show unique jobs"), "uq\n\n.\n");
    assert_eq!(w.admin(c, "create function newfn"), "OK\r\n");
    assert_eq!(
        w.admin(c, "drop function FNA"),
        "ERR there are still connected workers or executing clients\r\n"
    );
    assert_eq!(
        w.admin(c, "drop function nosuch"),
        "ERR function not found\r\n"
    );
    assert_eq!(w.admin(c, "drop function NEWFN"), "OK\r\n");
    assert_eq!(
        w.admin(c, "version"),
        format!("OK {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(w.admin(c, "verbose"), "OK ERROR\n");
    assert_eq!(
        w.admin(c, "bogus"),
        "ERR UNKNOWN_COMMAND Unknown+server+commandbogus\r\n"
    );
}

#[test]
fn cancel_job() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h1 = w.submit(c, "f", "", "1", Priority::Normal, false);
    let h2 = w.submit(c, "f", "", "2", Priority::Normal, false);
    assert_eq!(w.admin(wk, "cancel job H:t:99"), "ERR UNKNOWN_JOB\r\n");
    w.e.admin(wk, AdminCommand::CancelJob(h2.clone()), w.now, &mut w.out);
    let r = std::mem::take(&mut w.out.replies);
    assert_eq!(
        r,
        vec![
            (c, Response::WorkFail { handle: h2.into() }),
            (wk, Response::text("OK\r\n"))
        ]
    );
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().0, h1);
    assert_eq!(
        w.admin(c, &format!("cancel job {}", String::from_utf8_lossy(&h1))),
        "ERR JOB_RUNNING The+job+is+running+on+a+worker\r\n"
    );
    assert_eq!(
        w.grab(wk),
        None,
        "the cancelled job left no live queue entry"
    );
}

#[test]
fn cancels_from_the_middle_and_give_backs_to_the_head_keep_queue_order() {
    let mut w = World::new();
    let (c, wk, wk2) = (w.conn(), w.conn(), w.conn());
    let h: Vec<Bytes> = (1..=5)
        .map(|i| w.submit(c, "f", "", &i.to_string(), Priority::Normal, true))
        .collect();
    for i in [1, 3] {
        let line = format!("cancel job {}", String::from_utf8_lossy(&h[i]));
        assert_eq!(w.admin(wk, &line), "OK\r\n");
        w.e.check_queues();
    }
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().1, b("1"));
    assert_eq!(w.grab(wk).unwrap().1, b("3"));
    w.e.check_queues();
    // Both go back to the head, in the order they were taken.
    w.e.disconnect(wk, w.now, &mut w.out);
    w.e.check_queues();
    w.can_do(wk2, "f");
    let got: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk2).map(|(_, d)| d)).collect();
    assert_eq!(got, vec![b("1"), b("3"), b("5")]);
    w.e.check_queues();
}

#[test]
fn shutdown_only_from_loopback() {
    let mut w = World::new();
    let local = w.conn();
    let remote = ConnId {
        index: 50,
        generation: 1,
    };
    w.e.connect(
        remote,
        ConnInfo {
            fd: 60,
            ip: "10.0.0.5".into(),
            loopback: false,
        },
    );
    assert!(
        w.admin(remote, "shutdown")
            .starts_with("ERR SHUTDOWN_REFUSED")
    );
    assert_eq!(w.out.shutdown, None);
    assert_eq!(w.admin(local, "shutdown graceful"), "OK\r\n");
    assert_eq!(w.out.shutdown, Some(Shutdown::Graceful));
}

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
fn replies_to_a_gone_connection_are_not_made() {
    let mut w = World::new();
    let c = w.conn();
    w.e.disconnect(c, w.now, &mut w.out);
    assert!(w.req(c, Request::EchoReq { data: b("x") }).is_empty());
    // A reused slot with a new generation is a different connection.
    let again = ConnId {
        index: c.index,
        generation: c.generation + 1,
    };
    w.e.connect(
        again,
        ConnInfo {
            fd: 1,
            ip: "127.0.0.1".into(),
            loopback: true,
        },
    );
    assert!(w.req(c, Request::EchoReq { data: b("x") }).is_empty());
    assert_eq!(w.req(again, Request::EchoReq { data: b("x") }).len(), 1);
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
    let fields = |m: &str, h: &str, wd: &str| [b(m), b(h), b(""), b(""), b(wd)];
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
            [b(""), b(""), b("31"), b("2"), b("")],
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
    // Nothing uses `f` any more: it is forgotten.
    assert_eq!(w.admin(c, "status"), ".\n");
}

#[test]
fn draining_hands_out_nothing_and_ends_when_jobs_finish_or_time_is_up() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "1", Priority::Normal, false);
    w.submit(c, "f", "", "2", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.e.begin_drain(w.now, 1000);
    assert!(!w.e.drain_done());
    assert_eq!(w.grab(wk), None, "no new jobs while draining");
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert!(w.e.drain_done());

    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.submit(c, "f", "", "1", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.e.begin_drain(w.now, 1000);
    assert_eq!(w.e.next_deadline(), Some(w.now + 1000));
    w.e.on_time(w.now + 999, &mut w.out);
    assert!(!w.e.drain_done());
    w.e.on_time(w.now + 1000, &mut w.out);
    assert!(w.e.drain_done());
}

#[test]
fn a_work_fail_right_after_the_same_jobs_exception_is_dropped_quietly() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkException {
            handle: h.clone(),
            data: b("died"),
        },
    );
    assert_eq!(
        w.req(
            wk,
            Request::WorkFail {
                handle: h.clone(),
                after_handle: b("")
            }
        ),
        vec![]
    );
    // Only once, and only for that handle.
    assert_eq!(
        w.req(
            wk,
            Request::WorkFail {
                handle: h,
                after_handle: b("")
            }
        )
        .len(),
        1
    );
}

mod schedule_runtime {
    use super::*;
    use crate::schedule::file::parse;

    /// 2026-11-22T06:37:30Z
    const T0: u64 = 1_795_329_450_000;

    fn world_with(text: &str) -> World {
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            zone: Zone::Utc,
            ..EngineConfig::default()
        });
        w.now = T0;
        let file = parse(text, &Zone::Utc).unwrap();
        w.e.load_schedules(file, w.now, true, &mut w.out);
        w.out.replies.clear();
        w
    }

    fn tick(w: &mut World, to: u64) {
        w.now = to;
        w.e.on_time(to, &mut w.out);
        w.out.replies.clear();
    }

    fn row(w: &mut World, id: &str) -> Vec<String> {
        let c = w.conn();
        let listing = w.admin(c, "show schedules");
        listing
            .lines()
            .find(|l| l.starts_with(&format!("{id}\t")))
            .unwrap_or_else(|| panic!("{id} not in {listing}"))
            .split('\t')
            .map(String::from)
            .collect()
    }

    #[test]
    fn runs_on_time_with_rendered_workload_and_outcome_history() {
        let mut w = world_with("@every 10s beat id=hb -- at {time} id {id}\n");
        assert_eq!(w.e.next_deadline(), Some(T0 + 10_000));
        let r = row(&mut w, "hb");
        assert_eq!(
            r[..5],
            ["hb", "@every 10s", "beat", "2026-11-22T06:37:40Z", "-"]
        );
        tick(&mut w, T0 + 10_000);
        let wk = w.conn();
        w.can_do(wk, "beat");
        let (h, d) = w.grab(wk).unwrap();
        assert_eq!(d, b("at 2026-11-22T06:37:40Z id hb"));
        w.now += 250;
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b("ok"),
            },
        );
        let r = row(&mut w, "hb");
        assert_eq!(
            r[3..10],
            [
                "2026-11-22T06:37:50Z",
                "2026-11-22T06:37:40Z",
                "complete",
                "250",
                "1",
                "0",
                "0"
            ]
        );
        // The columns added since end each row: active, no skip asked, the last run was
        // one of its timing.
        assert_eq!(
            r[10..],
            [
                "active",
                "-",
                "scheduled",
                "-",
                "2026-11-22T06:37:40Z 250ms complete",
                "0"
            ]
        );
        // A failing run is counted.
        tick(&mut w, T0 + 20_000);
        let (h, _) = w.grab(wk).unwrap();
        w.req(
            wk,
            Request::WorkException {
                handle: h,
                data: b("disk\tfull"),
            },
        );
        let r = row(&mut w, "hb");
        assert_eq!(r[5..10], ["exception: disk full", "0", "2", "1", "0"]);
        assert_eq!(r[13], "disk full", "the last error, one line");
    }

    #[test]
    fn overlap_skip_skips_while_the_previous_job_is_queued_and_allow_does_not() {
        let mut w = world_with("@every 1m slow\n@every 1m fast overlap=allow\n");
        let first = T0 + 30_000;
        tick(&mut w, first);
        tick(&mut w, first + 60_000);
        let slow = row(&mut w, "slow");
        assert_eq!((slow[7].as_str(), slow[9].as_str()), ("1", "1"), "{slow:?}");
        let fast = row(&mut w, "fast");
        assert_eq!((fast[7].as_str(), fast[9].as_str()), ("2", "0"));
        let c = w.conn();
        assert_eq!(w.admin(c, "status"), "slow\t1\t0\t0\nfast\t2\t0\t0\n.\n");
    }

    #[test]
    fn fanout_makes_n_jobs_each_with_its_own_unique() {
        let mut w = world_with("@every 1m shard fanout=3 -- {i}/{n}\n");
        tick(&mut w, T0 + 30_000);
        let c = w.conn();
        assert_eq!(
            w.admin(c, "show unique jobs"),
            "shard#0\nshard#1\nshard#2\n.\n"
        );
        let wk = w.conn();
        w.can_do(wk, "shard");
        let datas: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
        assert_eq!(datas, ["0/3", "1/3", "2/3"].map(b));
        assert_eq!(row(&mut w, "shard")[7], "1");
    }

    #[test]
    fn jitter_stays_within_its_bound() {
        let mut w = world_with("@every 1m j jitter=20s\n");
        for n in 1..50u64 {
            let nominal = T0 + 30_000 + (n - 1) * 60_000;
            let d = w.e.next_deadline().unwrap();
            assert!(d >= nominal && d <= nominal + 20_000, "{d} vs {nominal}");
            tick(&mut w, d);
            // Keep the queue empty so that overlap does not interfere.
            let wk = w.conn();
            w.can_do(wk, "j");
            let (h, _) = w.grab(wk).unwrap();
            w.req(
                wk,
                Request::WorkComplete {
                    handle: h,
                    data: b(""),
                },
            );
        }
    }

    #[test]
    fn a_forward_clock_jump_skips_missed_runs_unless_catchup_last() {
        let mut w = world_with(
            "*/5 * * * * none\n*/5 * * * * last catchup=last\n*/5 * * * * old catchup=last deadline=10m\n",
        );
        // First run at 06:40 goes normally.
        tick(&mut w, T0 + 150_000);
        let c = w.conn();
        let wk = w.conn();
        for f in ["none", "last", "old"] {
            w.can_do(wk, f);
        }
        while let Some((h, _)) = w.grab(wk) {
            w.req(
                wk,
                Request::WorkComplete {
                    handle: h,
                    data: b(""),
                },
            );
        }
        // The clock jumps 3 hours; the 06:45 timer fires at 09:42.
        tick(&mut w, T0 + 3 * 3_600_000 + 270_000);
        let none = row(&mut w, "none");
        // Every run from 06:45 to 09:40 is skipped, and each is counted.
        assert_eq!((none[7].as_str(), none[9].as_str()), ("1", "36"));
        let last = row(&mut w, "last");
        // The last missed run (09:40) is made once.
        assert_eq!(
            (last[4].as_str(), last[7].as_str()),
            ("2026-11-22T09:40:00Z", "2")
        );
        let old = row(&mut w, "old");
        assert_eq!(
            old[4], "2026-11-22T09:40:00Z",
            "09:40 is within 10 minutes of 09:42"
        );
        // All three look ahead from now, not from before the jump.
        assert_eq!(none[3], "2026-11-22T09:45:00Z");
        let _ = c;
    }

    #[test]
    fn a_backward_clock_step_never_repeats_a_run() {
        let mut w = world_with("*/5 * * * * e\n");
        tick(&mut w, T0 + 150_000); // 06:40 runs
        assert_eq!(row(&mut w, "e")[4], "2026-11-22T06:40:00Z");
        // The clock steps back 20 minutes; a reload re-arms from "now".
        w.now = T0 - 20 * 60_000;
        let file = parse("*/5 * * * * e overlap=allow\n", &Zone::Utc).unwrap();
        w.e.load_schedules(file, w.now, false, &mut w.out);
        assert_eq!(row(&mut w, "e")[3], "2026-11-22T06:45:00Z");
    }

    #[test]
    fn catchup_at_start_uses_the_recorded_last_run_and_the_deadline() {
        let text = "0 * * * * hourly catchup=last\n0 * * * * strict catchup=last deadline=30m\n0 * * * * plain\n";
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            zone: Zone::Utc,
            ..EngineConfig::default()
        });
        w.now = T0; // 06:37:30; missed 03:00..06:00
        let file = parse(text, &Zone::Utc).unwrap();
        // The journal said each last ran at 02:00.
        for id in ["hourly", "strict", "plain"] {
            w.e.restore_schedule_run(id, T0 - 4 * 3_600_000 - 37 * 60_000 - 30_000);
        }
        w.e.load_schedules(file, w.now, true, &mut w.out);
        let c = w.conn();
        let status = w.admin(c, "status");
        assert!(status.contains("hourly\t1\t"), "{status}");
        assert!(
            !status.contains("strict\t1"),
            "06:00 is 37 minutes old, past the 30m deadline: {status}"
        );
        assert!(!status.contains("plain\t1"), "{status}");
        assert_eq!(row(&mut w, "hourly")[4], "2026-11-22T06:00:00Z");
        assert_eq!(row(&mut w, "strict")[9], "1");
    }

    /// What the journal would bring back: the newest history record of each entry.
    type Saved = (String, u64, u64, [u64; 3]);
    fn journalled(w: &mut World) -> Vec<Saved> {
        let mut newest: Vec<Saved> = Vec::new();
        for d in w.e.take_durable() {
            if let crate::engine::Durable::ScheduleRan {
                entry,
                fire_ms,
                seen_ms,
                runs,
                failures,
                skips,
                ..
            } = d
            {
                newest.retain(|(e, ..)| **e != *entry);
                newest.push((entry.to_string(), fire_ms, seen_ms, [runs, failures, skips]));
            }
        }
        newest
    }

    #[test]
    fn a_restart_keeps_the_counters_and_counts_runs_missed_while_down() {
        let text = "* * * * * minute\n@every 10s tick\n0 * * * * gone\n";
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            zone: Zone::Utc,
            durable: true,
            ..EngineConfig::default()
        });
        w.now = T0;
        w.e.load_schedules(parse(text, &Zone::Utc).unwrap(), T0, true, &mut w.out);
        // `tick` runs at 06:37:40 and is skipped at :50 and 06:38:00 (its job is still
        // queued); `minute` runs at 06:38. Then a worker fails the queued `tick`.
        for s in 1..=3 {
            tick(&mut w, T0 + s * 10_000);
        }
        let wk = w.conn();
        w.can_do(wk, "tick");
        let (h, _) = w.grab(wk).unwrap();
        w.req(
            wk,
            Request::WorkFail {
                handle: h,
                after_handle: b(""),
            },
        );
        let before: Vec<Vec<String>> = ["minute", "tick"]
            .iter()
            .map(|id| row(&mut w, id))
            .collect();
        assert_eq!(before[0][7..10], ["1", "0", "0"]);
        assert_eq!(before[1][7..10], ["1", "1", "2"]);
        let saved = journalled(&mut w);

        // Down from 06:38:00 to 06:40:30: `minute` misses 06:39 and 06:40, `tick` the 15
        // runs after 06:38:00 (those before were counted already); `gone` is no longer in
        // the file.
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            zone: Zone::Utc,
            durable: true,
            ..EngineConfig::default()
        });
        let later = T0 + 3 * 60_000;
        w.now = later;
        for (id, fire_ms, seen_ms, counters) in &saved {
            w.e.restore_schedule_run(id, *fire_ms);
            w.e.restore_schedule_counters(id, Some(*seen_ms), *counters);
        }
        w.e.restore_schedule_run("gone", T0 - 60_000);
        let text = "* * * * * minute\n@every 10s tick\n";
        let report =
            w.e.load_schedules(parse(text, &Zone::Utc).unwrap(), later, true, &mut w.out);
        assert_eq!(report.restored, 2, "a removed entry is not recovered");
        let minute = row(&mut w, "minute");
        assert_eq!(minute[4], before[0][4], "the last run survives");
        assert_eq!(minute[7..10], ["1", "0", "2"]);
        let tick_row = row(&mut w, "tick");
        assert_eq!(tick_row[7..10], ["1", "1", "17"]);
        // The new counts are journalled, so a second restart keeps them.
        let again = journalled(&mut w);
        assert!(
            again
                .iter()
                .any(|(e, _, _, c)| e == "minute" && *c == [1, 0, 2]),
            "{again:?}"
        );
    }

    #[test]
    fn reload_keeps_history_and_next_run_of_unchanged_entries() {
        let mut w = world_with("@every 1m keep\n@every 1m change\n@every 1m gone\n");
        tick(&mut w, T0 + 30_000);
        let before = row(&mut w, "keep");
        let file = parse(
            "@every 1m keep\n@every 2m change\n@every 1m new\n",
            &Zone::Utc,
        )
        .unwrap();
        w.now += 1_000;
        w.e.load_schedules(file, w.now, false, &mut w.out);
        let after = row(&mut w, "keep");
        assert_eq!(before, after);
        let change = row(&mut w, "change");
        assert_eq!(
            (change[1].as_str(), change[3].as_str(), change[7].as_str()),
            ("@every 2m", "2026-11-22T06:40:00Z", "1")
        );
        let c = w.conn();
        let listing = w.admin(c, "show schedules");
        assert!(!listing.contains("gone"));
        assert!(listing.contains("new\t"));
        // The jobs already queued stay queued.
        assert!(w.admin(c, "status").contains("gone\t1\t"));
    }

    #[test]
    fn reboot_runs_once_at_start_and_not_on_reload() {
        let mut w = world_with("@reboot warm\n");
        let c = w.conn();
        assert_eq!(w.admin(c, "status"), "warm\t1\t0\t0\n.\n");
        let file = parse("@reboot warm\n@reboot warm2\n", &Zone::Utc).unwrap();
        w.e.load_schedules(file, w.now, false, &mut w.out);
        assert_eq!(w.admin(c, "status"), "warm\t1\t0\t0\n.\n");
    }

    #[test]
    fn a_clock_before_2020_fires_nothing() {
        let mut w = World::with(EngineConfig {
            zone: Zone::Utc,
            ..EngineConfig::default()
        });
        w.now = 86_400_000; // 1970-01-02
        let file = parse("* * * * * f\n", &Zone::Utc).unwrap();
        w.e.load_schedules(file, w.now, true, &mut w.out);
        let d = w.e.next_deadline().unwrap();
        tick(&mut w, d);
        tick(&mut w, d + 60_000);
        let c = w.conn();
        assert_eq!(w.admin(c, "status"), ".\n");
        // The clock is set: runs resume.
        let later = T0;
        for _ in 0..3 {
            let d = w.e.next_deadline().unwrap();
            tick(&mut w, d.max(later));
        }
        assert!(w.admin(c, "status").starts_with("f\t1\t"));
    }
}

#[test]
fn a_drained_queue_gives_its_tables_back() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    for i in 0..20_000 {
        w.submit(c, "f", &format!("u{i}"), "d", Priority::Normal, true);
    }
    let cap = w.e.jobs.capacity();
    assert!(cap >= 20_000);
    w.can_do(wk, "f");
    while let Some((h, _)) = w.grab(wk) {
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b(""),
            },
        );
    }
    assert_eq!(w.e.job_count(), 0);
    assert!(
        w.e.jobs.capacity() < cap / 4,
        "{} of {cap}",
        w.e.jobs.capacity()
    );
    assert!(w.e.by_handle.capacity() < 20_000 / 4);
}

/// Random traffic from many connections (random packet types and bodies, real handles mixed
/// with made-up ones, connects and disconnects, admin lines, time jumps) must never panic, and
/// the counters must stay consistent with the jobs held.
#[test]
fn random_traffic_never_panics_and_keeps_counts_consistent() {
    use crate::proto::frame::{Incoming, Limits, decode};
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut w = World::new();
    let mut conns: Vec<ConnId> = (0..8).map(|_| w.conn()).collect();
    let mut handles: Vec<Bytes> = vec![b("H:t:1"), b("nonsense")];
    let funcs = ["a", "b", "c"];
    let words = [
        "status",
        "workers",
        "show jobs",
        "show unique jobs",
        "show scheduled",
        "maxqueue a 2",
        "cancel job H:t:3",
        "drop function c",
        "create function d",
        "prioritystatus",
        "show schedules",
        "bogus x y z",
    ];
    for step in 0..60_000u64 {
        let c = conns[rnd(conns.len() as u64) as usize];
        match rnd(100) {
            0 => {
                w.e.disconnect(c, w.now, &mut w.out);
                let pos = conns.iter().position(|x| *x == c).unwrap();
                conns[pos] = w.conn();
            }
            1 => w.now += rnd(5_000),
            2 => w.e.on_time(w.now, &mut w.out),
            3 => {
                let line = words[rnd(words.len() as u64) as usize];
                w.e.admin(c, AdminCommand::parse(&b(line)), w.now, &mut w.out);
            }
            _ => {
                // A packet: a random type with arguments drawn from things that matter.
                let t = 1 + rnd(42) as u32;
                let mut body = Vec::new();
                for i in 0..rnd(8) {
                    if i > 0 {
                        body.push(0);
                    }
                    match rnd(6) {
                        0 => body.extend_from_slice(&handles[rnd(handles.len() as u64) as usize]),
                        1 => body.extend_from_slice(funcs[rnd(3) as usize].as_bytes()),
                        2 => {
                            body.extend_from_slice((w.now / 1000 + rnd(10)).to_string().as_bytes())
                        }
                        3 => body.extend_from_slice(if rnd(2) == 0 { b"-" } else { b"" }),
                        4 => body.extend_from_slice(rnd(100).to_string().as_bytes()),
                        _ => {
                            for _ in 0..rnd(20) {
                                body.push(rnd(256) as u8);
                            }
                        }
                    }
                }
                let mut wire = bytes::BytesMut::new();
                wire.extend_from_slice(if rnd(50) == 0 { b"\0RES" } else { b"\0REQ" });
                wire.extend_from_slice(&t.to_be_bytes());
                wire.extend_from_slice(&(body.len() as u32).to_be_bytes());
                wire.extend_from_slice(&body);
                if let Ok(Some(Incoming::Packet(frame))) = decode(&mut wire, &Limits::default()) {
                    match Request::parse(&frame) {
                        Ok(req) => w.e.handle(c, req, w.now, &mut w.out),
                        Err(e) => w.e.reject(c, e, &mut w.out),
                    }
                }
            }
        }
        for (_, r) in w.out.replies.drain(..) {
            if let Response::JobCreated { handle } = r {
                if handles.len() < 64 {
                    handles.push(handle.to_bytes());
                } else {
                    let i = rnd(64) as usize;
                    handles[i] = handle.to_bytes();
                }
            }
        }
        if step % 1000 == 0 {
            let queued: u32 = w.e.functions.iter().map(|(_, f)| f.queued_total()).sum();
            let running: u32 = w.e.functions.iter().map(|(_, f)| f.running).sum();
            let future: u32 = w.e.functions.iter().map(|(_, f)| f.future).sum();
            assert_eq!(
                (queued + running + future) as usize,
                w.e.job_count(),
                "step {step}"
            );
            assert_eq!(running as usize, w.e.running_jobs(), "step {step}");
            w.e.check_queues();
        }
    }
}

// ---- held GRABs (--grab-wait) ----------------------------------------------------------------

fn waiting_world() -> World {
    World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        grab_wait_ms: 5,
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

fn submit_normal(data: &str, background: bool) -> Request {
    Request::SubmitJob {
        func: b("f"),
        body: JobBody::new(b"", data.as_bytes()),
        priority: Priority::Normal,
        background,
    }
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

// ---- GET_STATUS_UNIQUE across many functions --------------------------------------------------

/// GET_STATUS_UNIQUE finds a unique among thousands of functions with one lookup, not one per
/// function; when several functions have a job with the unique it answers the newest (as
/// gearmand), and the unique index stays whole through submits, completions, cancels and a
/// client leaving.
#[test]
fn get_status_unique_is_one_lookup_whatever_the_number_of_functions() {
    let mut w = World::new();
    let (c, fg, wk) = (w.conn(), w.conn(), w.conn());
    let n = 2_000;
    let mut x = Vec::new();
    for i in 0..n {
        w.submit(
            c,
            &format!("f{i}"),
            &format!("u{i}"),
            "d",
            Priority::Normal,
            true,
        );
        if i + 1 < n {
            x.push(w.submit(c, &format!("f{i}"), "x", "d", Priority::Normal, true));
        }
    }
    // The newest job with unique x: a foreground one, so its client count tells it apart.
    x.push(w.submit(
        fg,
        &format!("f{}", n - 1),
        "x",
        "d",
        Priority::Normal,
        false,
    ));
    w.e.check_queues();
    let status = |w: &mut World, unique: &str| {
        w.e.by_unique.lookups.set(0);
        let r = w.req(c, Request::GetStatusUnique { unique: b(unique) });
        assert_eq!(w.e.by_unique.lookups.get(), 1, "lookups for {unique}");
        match &r[..] {
            [
                (
                    _,
                    Response::StatusResUnique {
                        known,
                        running,
                        numerator,
                        clients,
                        ..
                    },
                ),
            ] => (*known, *running, *numerator, *clients),
            other => panic!("{other:?}"),
        }
    };
    for u in ["u0", "u1234", &format!("u{}", n - 1)] {
        assert_eq!(status(&mut w, u), (true, false, 0, 0), "{u}");
    }
    for u in ["u99999", "", "-", "d"] {
        assert_eq!(status(&mut w, u), (false, false, 0, 0), "{u:?}");
    }
    assert_eq!(status(&mut w, "x"), (true, false, 0, 1));
    // The foreground client leaves: its job goes, the next newest answers.
    w.e.disconnect(fg, w.now, &mut w.out);
    w.out.replies.clear();
    w.e.check_queues();
    assert_eq!(status(&mut w, "x"), (true, false, 0, 0));
    // A worker runs the newest x job left (the only job of f{n-2} after u{n-2}).
    let f = format!("f{}", n - 2);
    w.can_do(wk, &f);
    assert_eq!(w.grab(wk).map(|j| j.1), Some(b("d")));
    let (h, _) = w.grab(wk).expect("the x job");
    assert_eq!(h, x[n - 2]);
    w.req(
        wk,
        Request::WorkStatus {
            handle: h.clone(),
            numerator: b("3"),
            denominator: b("4"),
        },
    );
    assert_eq!(status(&mut w, "x"), (true, true, 3, 0));
    w.e.check_queues();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert_eq!(status(&mut w, "x"), (true, false, 0, 0));
    // Cancel all but the oldest, newest first, then the oldest.
    for h in x[..n - 2].iter().rev() {
        let line = format!("cancel job {}", String::from_utf8_lossy(h));
        assert_eq!(w.admin(c, &line), "OK\r\n");
        if h == &x[0] || h == &x[1] || h == &x[n / 2] {
            w.e.check_queues();
            assert_eq!(status(&mut w, "x").0, h != &x[0]);
        }
    }
    assert_eq!(status(&mut w, "u7"), (true, false, 0, 0));
    w.e.check_queues();
}

mod alerts;
mod failed;
mod leases;
mod retries;
mod schedule_ops;
