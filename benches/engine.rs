//! Engine micro-benchmarks through the public API only (`Engine::new`, `connect`, `handle`,
//! `on_time`) with a plain `u64` clock: submit, grab and complete per job, alone and as whole
//! job cycles, with one function or many functions and workers; and the memory one queued
//! job costs inside the engine.
//!
//! Requests are built before the clock starts (their unique strings are the only per-job
//! allocation of the caller), so allocations counted per operation are the engine's own.
//!
//! `cargo bench --bench engine [-- FILTER]`

mod common;

use bytes::{Bytes, BytesMut};
use common::{Counting, Harness, alloc_snap, rss_bytes};
use gearwheel::engine::{ConnId, ConnInfo, Engine, EngineConfig, LimitChange, Outbox};
use gearwheel::proto::request::{GrabKind, JobBody, Priority, Request};
use gearwheel::proto::response::Response;

#[global_allocator]
static ALLOC: Counting = Counting;

const NOW: u64 = 1_795_000_000_000;
static PAYLOAD: [u8; 64] = [b'x'; 64];

fn id(index: u32) -> ConnId {
    ConnId {
        index,
        generation: 1,
    }
}

/// An engine with `clients` client connections, then `workers` worker connections; worker
/// `w` can do `per_worker` functions starting at `w` (mod `funcs`), so each function has
/// `per_worker` workers when there are as many workers as functions.
struct World {
    eng: Engine,
    out: Outbox,
    clients: Vec<ConnId>,
    workers: Vec<ConnId>,
    funcs: Vec<Bytes>,
    /// Stands in for a worker connection's read buffer (see `assigned`).
    wire: BytesMut,
}

impl World {
    fn new(funcs: usize, workers: usize, per_worker: usize, clients: usize) -> World {
        let mut eng = Engine::new(EngineConfig {
            handle_prefix: "H:bench-host".into(),
            // The 50,000-function worker below is over the server's default cap.
            max_functions_per_worker: 0,
            ..EngineConfig::default()
        });
        let mut out = Outbox::default();
        let info = || ConnInfo {
            fd: -1,
            ip: [127, 0, 0, 1].into(),
        };
        let funcs: Vec<Bytes> = (0..funcs)
            .map(|f| Bytes::from(format!("func{f}")))
            .collect();
        let clients: Vec<ConnId> = (0..clients as u32).map(id).collect();
        for &c in &clients {
            eng.connect(c, info());
        }
        let base = clients.len() as u32;
        let workers: Vec<ConnId> = (0..workers as u32).map(|w| id(base + w)).collect();
        for (w, &c) in workers.iter().enumerate() {
            eng.connect(c, info());
            for j in 0..per_worker {
                let func = funcs[(w + j) % funcs.len()].clone();
                eng.handle(c, Request::CanDo { func }, NOW, &mut out);
            }
        }
        out.replies.clear();
        World {
            eng,
            out,
            clients,
            workers,
            funcs,
            wire: BytesMut::with_capacity(64 * 1024),
        }
    }

    fn submit_req(&self, j: usize, bodies: &[JobBody], background: bool) -> Request {
        Request::SubmitJob {
            func: self.funcs[j % self.funcs.len()].clone(),
            body: bodies[j].clone(),
            priority: Priority::Normal,
            background,
        }
    }

    /// The worker `wk` grabs the next job and completes it with `PAYLOAD` (the replies in
    /// between cleared).
    fn grab_and_complete(&mut self, wk: ConnId) {
        self.eng
            .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut self.out);
        let handle = self.assigned().expect("assigned");
        self.out.replies.clear();
        let done = Request::WorkComplete {
            handle,
            data: Bytes::from_static(&PAYLOAD),
        };
        self.eng.handle(wk, done, NOW, &mut self.out);
    }

    /// The handle of the job just assigned to a worker, if the last reply is an assignment.
    /// As a worker's WORK_* request read off the wire, the handle is a slice of a reused
    /// read buffer (`wire`), so taking it costs no allocation of its own.
    fn assigned(&mut self) -> Option<Bytes> {
        let handle = match self.out.replies.last() {
            Some((_, Response::JobAssignUniq { handle, .. })) => handle,
            Some((_, Response::JobAssign { handle, .. })) => handle,
            _ => return None,
        };
        self.wire.reserve(handle.len());
        handle.put(&mut self.wire);
        Some(self.wire.split().freeze())
    }
}

/// A job body as a submit packet carries it: the unique, a NUL, the data, split off a shared
/// buffer as the reactor splits packets off a read buffer (so that the engine's slices of it
/// are reference counts, as in the server).
fn wire_body(buf: &mut BytesMut, unique: &[u8], data: &[u8]) -> JobBody {
    if buf.capacity() - buf.len() < unique.len() + 1 + data.len() {
        *buf = BytesMut::with_capacity(64 * 1024);
    }
    buf.extend_from_slice(unique);
    buf.extend_from_slice(b"\0");
    buf.extend_from_slice(data);
    JobBody::from_span(buf.split().freeze(), unique.len(), unique.len() + 1)
}

/// Bodies of `n` jobs: a 36-byte unique and the 64-byte payload each.
fn uniques(n: usize) -> Vec<JobBody> {
    let mut buf = BytesMut::new();
    (0..n)
        .map(|j| {
            let unique = format!("6c9d1a5e-2f8b-4c1e-9a43-{j:012}");
            wire_body(&mut buf, unique.as_bytes(), &PAYLOAD)
        })
        .collect()
}

fn submit_all(w: &mut World, reqs: Vec<Request>) -> usize {
    let c = w.clients[0];
    let n = reqs.len();
    for (j, r) in reqs.into_iter().enumerate() {
        let c = if w.clients.len() > 1 {
            w.clients[j % w.clients.len()]
        } else {
            c
        };
        w.eng.handle(c, r, NOW, &mut w.out);
        w.out.replies.clear();
    }
    n
}

fn main() {
    let mut h = Harness::from_args("engine");
    let n = h.size(100_000, 5_000);
    let uq = uniques(n.max(1_000));

    println!("submit (SUBMIT_JOB_BG into an empty queue, no workers):");
    for (funcs, label) in [(1, "1 function"), (100, "100 functions")] {
        h.bench_with(
            &format!("submit_bg, {label}"),
            n,
            || {
                let w = World::new(funcs, 0, 0, 4);
                let reqs: Vec<Request> = (0..n).map(|j| w.submit_req(j, &uq, true)).collect();
                (w, Some(reqs))
            },
            |(w, reqs)| submit_all(w, reqs.take().unwrap_or_default()),
        );
    }

    // Flat as the queue grows: submits into a queue that already holds `big` jobs.
    let big = h.size(1_000_000, 20_000);
    if h.enabled("submit_bg into") {
        let mut w = World::new(1, 0, 0, 4);
        let prefill = uniques(big);
        let reqs: Vec<Request> = (0..big).map(|j| w.submit_req(j, &prefill, true)).collect();
        let live0 = alloc_snap().live;
        let rss0 = rss_bytes();
        submit_all(&mut w, reqs);
        let live1 = alloc_snap().live;
        let rss1 = rss_bytes();
        drop(prefill);
        // The request vector's own buffer was freed during the loop; add it back.
        let req_vec = (big * std::mem::size_of::<Request>()) as i64;
        let per_job = (live1 - live0 + req_vec) as f64 / big as f64;
        h.note(format!(
            "memory per queued job inside the engine: {per_job:.0} B heap (64 B payload and \
             36 B unique are the caller's and not counted; RSS delta {:.0} B/job)",
            (rss1 as f64 - rss0 as f64 + req_vec as f64) / big as f64
        ));
        let batch = h.size(50_000, 2_000);
        let mut k = 0usize;
        let more = uniques(batch * 32);
        h.bench_on(
            &format!("submit_bg into a queue of {big} jobs"),
            batch,
            &mut w,
            |w| {
                let reqs: Vec<Request> = (0..batch)
                    .map(|j| w.submit_req((k + j) % more.len(), &more, true))
                    .collect();
                k += batch;
                // Building the requests is inside this sample; it is a handful of refcount
                // increments per job, small next to the submit itself.
                submit_all(w, reqs)
            },
        );
    }

    println!("grab (GRAB_JOB_UNIQ from a full queue):");
    for (funcs, per_worker, label) in [
        (1, 1, "1 function"),
        (100, 10, "worker of 10 of 100 functions"),
    ] {
        h.bench_with(
            &format!("grab_uniq, {label}"),
            n,
            || {
                let mut w = World::new(funcs, 1, per_worker, 1);
                // Only jobs the worker can do: functions 0..per_worker.
                let reqs: Vec<Request> = (0..n)
                    .map(|j| Request::SubmitJob {
                        func: w.funcs[j % per_worker].clone(),
                        body: uq[j].clone(),
                        priority: Priority::Normal,
                        background: true,
                    })
                    .collect();
                submit_all(&mut w, reqs);
                w
            },
            |w| {
                let wk = w.workers[0];
                for _ in 0..n {
                    w.eng
                        .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                    w.out.replies.clear();
                }
            },
        );
    }

    println!("complete (WORK_COMPLETE; 1,000 workers each holding one job):");
    let holders = 1_000;
    h.bench_with(
        "work_complete, background job",
        holders,
        || {
            let mut w = World::new(1, holders, 1, 1);
            let reqs: Vec<Request> = (0..holders).map(|j| w.submit_req(j, &uq, true)).collect();
            submit_all(&mut w, reqs);
            let mut done = Vec::with_capacity(holders);
            for &wk in &w.workers.clone() {
                w.eng
                    .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                let handle = w.assigned().expect("a job for every worker");
                w.out.replies.clear();
                done.push((
                    wk,
                    Request::WorkComplete {
                        handle,
                        data: Bytes::from_static(&PAYLOAD),
                    },
                ));
            }
            (w, done)
        },
        |(w, done)| {
            for (wk, r) in done.drain(..) {
                w.eng.handle(wk, r, NOW, &mut w.out);
                w.out.replies.clear();
            }
        },
    );

    println!("whole job cycles (per job):");
    // Busy: the queue never runs dry, the worker never sleeps: submit, grab, complete.
    for (funcs, workers, per_worker, bg, label) in [
        (1, 1, 1, true, "bg, 1 function, busy worker (3 requests)"),
        (
            1,
            1,
            1,
            false,
            "foreground, 1 function (3 requests + WORK_COMPLETE out)",
        ),
        (
            100,
            100,
            10,
            true,
            "bg, 100 functions, 100 workers x 10 functions",
        ),
    ] {
        h.bench_with(
            &format!("cycle {label}"),
            n,
            || {
                let w = World::new(funcs, workers, per_worker, 4);
                let reqs: Vec<Request> = (0..n).map(|j| w.submit_req(j, &uq, bg)).collect();
                (w, Some(reqs))
            },
            |(w, reqs)| {
                for (j, r) in reqs.take().unwrap_or_default().into_iter().enumerate() {
                    let c = w.clients[j % w.clients.len()];
                    w.eng.handle(c, r, NOW, &mut w.out);
                    // Worker `f` can do function `f`.
                    let wk = w.workers[(j % funcs) % w.workers.len()];
                    w.out.replies.clear();
                    w.grab_and_complete(wk);
                    w.out.replies.clear();
                }
            },
        );
    }
    // Idle workers: every job wakes a sleeper; the worker grabs, completes, finds nothing
    // more and sleeps again (5 requests and 4 replies per job, like a lightly loaded server).
    h.bench_with(
        "cycle bg, 4 sleeping workers (submit, NOOP, grab, complete, grab, pre_sleep)",
        n,
        || {
            let mut w = World::new(1, 4, 1, 4);
            for &wk in &w.workers.clone() {
                w.eng
                    .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
            }
            w.out.replies.clear();
            let reqs: Vec<Request> = (0..n).map(|j| w.submit_req(j, &uq, true)).collect();
            (w, Some(reqs))
        },
        |(w, reqs)| {
            for (j, r) in reqs.take().unwrap_or_default().into_iter().enumerate() {
                let c = w.clients[j % w.clients.len()];
                w.eng.handle(c, r, NOW, &mut w.out);
                let woken = w
                    .out
                    .replies
                    .iter()
                    .find(|(_, r)| matches!(r, Response::Noop))
                    .map(|(to, _)| *to)
                    .expect("a sleeper is woken");
                w.out.replies.clear();
                w.grab_and_complete(woken);
                w.eng
                    .handle(woken, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                w.eng.handle(woken, Request::PreSleep, NOW, &mut w.out);
                w.out.replies.clear();
            }
        },
    );

    println!("future jobs (SUBMIT_JOB_EPOCH) through the engine:");
    let fut = h.size(1_000_000, 20_000);
    h.bench_with(
        &format!("submit_epoch, {fut} jobs spread over a day"),
        fut,
        || {
            let w = World::new(1, 0, 0, 1);
            let mut buf = BytesMut::new();
            let reqs: Vec<Request> = (0..fut)
                .map(|j| Request::SubmitJobEpoch {
                    func: w.funcs[0].clone(),
                    body: wire_body(&mut buf, format!("f-{j}").as_bytes(), &PAYLOAD),
                    epoch: Bytes::from(format!("{}", NOW / 1000 + 3600 + (j as u64 % 86_400))),
                })
                .collect();
            (w, Some(reqs))
        },
        |(w, reqs)| submit_all(w, reqs.take().unwrap_or_default()),
    );
    let due = h.size(100_000, 5_000);
    h.bench_with(
        &format!("on_time: {due} EPOCH jobs come due in one turn (1 sleeping worker)"),
        due,
        || {
            let mut w = World::new(1, 1, 1, 1);
            let wk = w.workers[0];
            w.eng
                .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
            w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
            let mut buf = BytesMut::new();
            let reqs: Vec<Request> = (0..due)
                .map(|j| Request::SubmitJobEpoch {
                    func: w.funcs[0].clone(),
                    body: wire_body(&mut buf, format!("f-{j}").as_bytes(), &PAYLOAD),
                    epoch: Bytes::from(format!("{}", NOW / 1000 + 1)),
                })
                .collect();
            submit_all(&mut w, reqs);
            w
        },
        |w| {
            w.eng.on_time(NOW + 1_000, &mut w.out);
            let n = w.out.replies.len();
            w.out.replies.clear();
            n
        },
    );

    // A worker of many functions: its function count must not make any step of a job slower.
    // One sleeping worker registered for `nf` functions; each job goes to another of them
    // and takes the whole idle cycle: submit (NOOP), GRAB, WORK_COMPLETE, GRAB (NO_JOB),
    // PRE_SLEEP. Flat from 1 to 50,000 functions means no step scans the worker's list.
    println!("one job through a sleeping worker of many functions (per job, 5 requests):");
    let cycles = h.size(20_000, 5);
    for (nf, stride) in [
        (1usize, 0),
        (1_000, 0),
        (50_000, 0),
        (1_000, 7_919),
        (50_000, 7_919),
    ] {
        let name = format!(
            "idle cycle, worker of {nf} functions, {}",
            if stride == 0 {
                "jobs for one"
            } else {
                "jobs spread"
            }
        );
        if !h.enabled(&name) {
            continue;
        }
        let mut w = World::new(nf, 1, nf, 1);
        let wk = w.workers[0];
        w.eng
            .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
        w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
        w.out.replies.clear();
        let mut k = 0usize;
        h.bench_on(&name, cycles, &mut w, |w| {
            for _ in 0..cycles {
                k += 1;
                let req = Request::SubmitJob {
                    func: w.funcs[(k * stride) % nf].clone(),
                    body: uq[k % uq.len()].clone(),
                    priority: Priority::Normal,
                    background: true,
                };
                w.eng.handle(w.clients[0], req, NOW, &mut w.out);
                w.out.replies.clear();
                w.grab_and_complete(wk);
                w.eng
                    .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
                w.out.replies.clear();
            }
        });
    }

    // Limits (`limit`, at handout): a function held at its limit leaves the lists a handout
    // searches, so 10,000 of them cost a free function's cycle nothing; and a capped
    // function's own cycle pays its gate closing at the grab and opening at the end.
    println!("limits (per job, the idle cycle of 5 requests):");
    let capped = h.size(10_000, 200);
    for (others, cap_others, limit_own, label) in [
        (0usize, false, false, "no limits".to_string()),
        (
            0,
            false,
            true,
            "the function has limit 1 (closes and reopens per job)".to_string(),
        ),
        (
            capped,
            false,
            false,
            format!(
                "beside {capped} functions with a job running and one queued, not the \
                 worker's (the baseline of the next)"
            ),
        ),
        (
            capped,
            true,
            false,
            format!("worker also of {capped} functions held at limit 1, each with a job queued"),
        ),
    ] {
        let name = format!("limits cycle, {label}");
        if !h.enabled(&name) {
            continue;
        }
        // Function 0 is the free one; 1..=others each have one job running (on a worker of
        // its own) and one queued. With `cap_others` they have limit 1 and the measured worker
        // does them too; without, it does function 0 alone (the same jobs in the tables).
        let mut w = World::new(others + 1, others + 1, 0, 1);
        let wk = w.workers[0];
        for f in 0..=others {
            if f == 0 || cap_others {
                let func = w.funcs[f].clone();
                w.eng.handle(wk, Request::CanDo { func }, NOW, &mut w.out);
            }
        }
        let bodies = uniques(2 * others);
        for f in 1..=others {
            let (func, holder) = (w.funcs[f].clone(), w.workers[f]);
            if cap_others {
                w.eng
                    .change_limit(&func, LimitChange::Limit(Some(1)), NOW, &mut w.out)
                    .expect("a limit");
            }
            w.eng.handle(
                holder,
                Request::CanDo { func: func.clone() },
                NOW,
                &mut w.out,
            );
            for b in &bodies[2 * (f - 1)..2 * f] {
                let req = Request::SubmitJob {
                    func: func.clone(),
                    body: b.clone(),
                    priority: Priority::Normal,
                    background: true,
                };
                w.eng.handle(w.clients[0], req, NOW, &mut w.out);
            }
            w.eng
                .handle(holder, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
            assert!(w.assigned().is_some(), "the holder runs one job of each");
            w.out.replies.clear();
        }
        if limit_own {
            let func = w.funcs[0].clone();
            w.eng
                .change_limit(&func, LimitChange::Limit(Some(1)), NOW, &mut w.out)
                .expect("a limit");
        }
        w.eng
            .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
        assert!(w.assigned().is_none(), "every capped function is held");
        w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
        w.out.replies.clear();
        let mut k = 0usize;
        h.bench_on(&name, cycles, &mut w, |w| {
            for _ in 0..cycles {
                k += 1;
                let req = Request::SubmitJob {
                    func: w.funcs[0].clone(),
                    body: uq[k % uq.len()].clone(),
                    priority: Priority::Normal,
                    background: true,
                };
                w.eng.handle(w.clients[0], req, NOW, &mut w.out);
                w.out.replies.clear();
                w.grab_and_complete(wk);
                w.eng
                    .handle(wk, Request::GrabJob(GrabKind::Uniq), NOW, &mut w.out);
                w.eng.handle(wk, Request::PreSleep, NOW, &mut w.out);
                w.out.replies.clear();
            }
        });
    }

    // GET_STATUS_UNIQUE finds a unique across all functions: flat in their number, and with
    // thousands of functions holding a job of the same unique.
    println!("GET_STATUS_UNIQUE (per request, every function holding a job):");
    for (nf, shared) in [(1, false), (1_000, false), (100_000, false), (10_000, true)] {
        let name = if shared {
            format!("get_status_unique, {nf} functions each with a job of the asked unique")
        } else {
            format!("get_status_unique, {nf} functions")
        };
        if !h.enabled(&name) {
            continue;
        }
        let mut w = World::new(nf, 0, 0, 1);
        let bodies = uniques(nf);
        let same = uniques(1);
        let reqs: Vec<Request> = (0..nf)
            .map(|f| Request::SubmitJob {
                func: w.funcs[f].clone(),
                body: if shared { &same[0] } else { &bodies[f] }.clone(),
                priority: Priority::Normal,
                background: true,
            })
            .collect();
        submit_all(&mut w, reqs);
        let asks = h.size(100_000, 5_000);
        // Half found (spread over the functions), half unknown.
        let probes: Vec<Bytes> = (0..asks)
            .map(|j| match j % 2 {
                0 if shared => same[0].unique(),
                0 => bodies[(j * 7919) % nf].unique(),
                _ => Bytes::from(format!("absent-{j}")),
            })
            .collect();
        h.bench_on(&name, asks, &mut w, |w| {
            let c = w.clients[0];
            for u in &probes {
                let r = Request::GetStatusUnique { unique: u.clone() };
                w.eng.handle(c, r, NOW, &mut w.out);
                w.out.replies.clear();
            }
        });
    }

    h.bench_with(
        "ECHO_REQ (64 B)",
        n,
        || World::new(1, 0, 0, 1),
        |w| {
            let c = w.clients[0];
            for _ in 0..n {
                w.eng.handle(
                    c,
                    Request::EchoReq {
                        data: Bytes::from_static(&PAYLOAD),
                    },
                    NOW,
                    &mut w.out,
                );
                w.out.replies.clear();
            }
        },
    );
    h.finish();
}
