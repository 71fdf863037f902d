//! The engine and the journal speak one vocabulary: every record the engine emits goes into a
//! real `store::Journal` as it is, and what the journal replays goes back through the one
//! entry point, `Engine::restore`, to the same state (each admin view reads the same).

use super::*;
use crate::schedule::file::parse;
use crate::store::{FsyncMode, Journal, Options};

const TEXT: &str = "0 3 * * * backup id=nightly -- at {time}\n";

fn config() -> EngineConfig {
    EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        durable: true,
        keep_output_total: 64 << 10,
        ..EngineConfig::default()
    }
}

fn world(now: u64) -> World {
    let mut w = World::with(config());
    w.now = now;
    w.e.load_schedules(parse(TEXT, &Zone::Utc).unwrap(), now, true, &mut w.out);
    w.out.replies.clear();
    w
}

/// What an operator sees of the state a journal keeps.
fn views(w: &mut World) -> Vec<String> {
    let c = w.conn();
    [
        "status",
        "show jobs",
        "show scheduled",
        "show failed",
        "show timeouts",
        "show retries",
        "show schedules",
        "show limits",
        "show audit",
    ]
    .iter()
    .map(|line| format!("{line}:\n{}", w.admin(c, line)))
    .collect()
}

#[test]
fn every_record_the_engine_emits_replays_to_the_same_state() {
    let mut w = world(1_795_329_450_000);
    let (c, wk) = (w.conn(), w.conn());
    // SchedulePending: a backfill of three nights, one queued and two waiting for it.
    let (from, to) = (
        crate::engine::rfc3339(w.now - 3 * 86_400_000),
        crate::engine::rfc3339(w.now),
    );
    let reply = w.admin(c, &format!("backfill schedule nightly {from} {to}"));
    assert_eq!(reply, "OK 3\n");
    // FunctionLease and FunctionRetry.
    assert!(w.admin(c, "timeout f 5s").starts_with("OK"));
    assert!(w.admin(c, "retry f 2 30s").starts_with("OK"));
    // JobAdded, then JobFinished + JobAdded + JobAttempts: a failed attempt retried later.
    w.submit(c, "f", "u1", "d1", Priority::Normal, true);
    w.can_do(wk, "f");
    let (h, _) = w.grab(wk).expect("a job");
    w.req(
        wk,
        Request::WorkException {
            handle: h,
            data: b("nope"),
        },
    );
    // FailedKept twice (a function without retries fails for good), then FailedGone.
    w.can_do(wk, "g");
    let mut failed = Vec::new();
    for u in ["u2", "u2b"] {
        w.submit(c, "g", u, "d2", Priority::Low, true);
        let (h, _) = w.grab(wk).expect("a job");
        failed.push(h.clone());
        w.req(
            wk,
            Request::WorkFail {
                handle: h,
                after_handle: Bytes::new(),
            },
        );
    }
    let drop = format!("drop failed {}", String::from_utf8_lossy(&failed[0]));
    assert_eq!(w.admin(c, &drop), "OK 1\n");
    // OutputGone: a job that prints almost --keep-output-total (64 KiB here) makes the
    // outputs kept so far leave; its own OutputKept stays.
    let wg = w.conn();
    w.can_do(wg, "g");
    w.submit(c, "g", "u5", "d5", Priority::Normal, true);
    let (kept, _) = w.grab(wg).expect("a job");
    w.req(
        wg,
        Request::WorkWarning {
            handle: kept.clone(),
            data: b(&"x".repeat(64_000)),
        },
    );
    w.req(
        wg,
        Request::WorkComplete {
            handle: kept.clone(),
            data: b("done"),
        },
    );
    // FunctionLimits, the newest per function (after g's jobs made g: `status` lists the
    // functions in the order they were made, and a restore makes them jobs first).
    for line in [
        "limit h 3",
        "rate h 5/1s",
        "pause function h",
        "expire h 1h",
    ] {
        assert_eq!(w.admin(c, line), "OK\r\n", "{line}");
    }
    // JobRetried: a worker that leaves gives its job back.
    w.submit(c, "g", "u3", "d3", Priority::High, true);
    let (_, _) = w.grab(wk).expect("a job");
    let now = w.now;
    w.e.disconnect(wk, now, &mut w.out);
    w.e.disconnect(wg, now, &mut w.out);
    // ScheduleRan with its counters and marks.
    assert!(w.admin(c, "pause schedule nightly").starts_with("OK"));
    // A future job (a JobAdded with its due time).
    w.req(
        c,
        Request::SubmitJobEpoch {
            func: b("f"),
            body: JobBody::new(b"u4", b"d4"),
            epoch: Bytes::from((w.now / 1000 + 3600).to_string()),
        },
    );
    w.e.disconnect(c, now, &mut w.out);
    // Audit: an operator's action, as the reactor hands it over.
    for command in ["pause schedule nightly", "drop failed H:t:2"] {
        w.e.record_action(crate::engine::Action {
            seq: 0,
            at_ms: now,
            identity: "cn:ops".into(),
            peer: "192.0.2.7:40000".into(),
            command: command.into(),
            outcome: "OK".into(),
        });
    }

    let records: Vec<_> = w.e.take_durable().collect();
    let dir = std::env::temp_dir().join(format!("gearwheel-engine-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Options {
        fsync: FsyncMode::Never,
        ..Options::default()
    };
    let (mut j, _) = Journal::open(&dir, opts).unwrap();
    for r in &records {
        j.append(r).unwrap();
    }
    j.close(w.now).unwrap();
    let (_j, replayed) = Journal::open(&dir, opts).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let mut next = World::with(config());
    next.now = w.now;
    let now = next.now;
    next.e.restore(replayed, now, &mut next.out);
    next.e
        .load_schedules(parse(TEXT, &Zone::Utc).unwrap(), now, true, &mut next.out);
    next.out.replies.clear();
    assert!(!next.e.has_durable(), "restoring writes nothing again");
    assert_eq!(next.e.next_handle(), w.e.next_handle());
    let (before, after) = (views(&mut w), views(&mut next));
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(a, b);
    }
    for h in failed.iter().chain([&kept]) {
        assert_eq!(next.e.kept_job(h), w.e.kept_job(h));
    }
    assert!(next.e.kept_job(&kept).is_some());
    assert!(next.e.kept_job(&failed[0]).is_none(), "gone past the total");
    // Each kind of record the engine emits was exercised.
    let kinds: std::collections::BTreeSet<_> = records
        .iter()
        .map(|r| {
            format!("{r:?}")
                .split([' ', '('])
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.len(), 14, "{kinds:?}");
    let waiting = |w: &World| w.e.pending_runs("nightly");
    assert_eq!(
        (waiting(&w), waiting(&next)),
        (2, 2),
        "the backfill goes on"
    );
}
