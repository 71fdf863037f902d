//! The failed list: what is kept when a background job fails for good, its bounds, and
//! `show`, `retry` and `drop failed`, with the manual clock.

use super::*;
use crate::store::Record;

fn fail_with(w: &mut World, wk: ConnId, end: impl FnOnce(Bytes) -> Request) -> Bytes {
    let (h, _) = w.grab(wk).expect("a job");
    w.req(wk, end(h.clone()));
    h
}

/// The journal records of this turn but the kept outputs' (src/engine/tests/output.rs).
fn failed_records(w: &mut World) -> Vec<Record> {
    w.e.take_durable()
        .filter(|r| !matches!(r, Record::OutputKept(_)))
        .collect()
}

fn rows(w: &mut World, c: ConnId, line: &str) -> Vec<Vec<String>> {
    let text = w.admin(c, line);
    let (body, end) = text.split_at(text.len() - 2);
    assert_eq!(end, ".\n", "{text:?}");
    body.lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn each_way_of_failing_is_kept_with_its_text_and_foreground_jobs_are_not() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        job_retries: 1,
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "u1", "d1", Priority::Normal, true);
    fail_with(&mut w, wk, |handle| Request::WorkFail {
        handle,
        after_handle: Bytes::new(),
    });
    w.now += 1000;
    w.submit(c, "f", "u2", "d2", Priority::Normal, true);
    fail_with(&mut w, wk, |handle| Request::WorkException {
        handle,
        data: b("disk\tfull\nagain"),
    });
    // A foreground job's client got the error: nothing kept.
    w.submit(c, "f", "u3", "d3", Priority::Normal, false);
    fail_with(&mut w, wk, |handle| Request::WorkFail {
        handle,
        after_handle: Bytes::new(),
    });
    // A CAN_DO_TIMEOUT.
    let wt = w.conn();
    w.req(
        wt,
        Request::CanDoTimeout {
            func: b("g"),
            timeout_ms: 250,
        },
    );
    w.submit(c, "g", "u4", "d4", Priority::Normal, true);
    w.grab(wt).unwrap();
    w.now += 250;
    w.e.on_time(w.now, &mut w.out);
    // --job-retries 1: a worker that leaves holding the job spends it.
    let gone = w.conn();
    w.can_do(gone, "h");
    w.submit(c, "h", "u5", "d5", Priority::Normal, true);
    w.grab(gone).unwrap();
    w.e.disconnect(gone, w.now, &mut w.out);
    w.out.replies.clear();

    let r = rows(&mut w, c, "show failed");
    let t0 = rfc3339(1_000_000);
    let t1 = rfc3339(1_001_000);
    let t2 = rfc3339(1_001_250);
    let want = [
        ["H:t:1", "f", "u1", "1", &t0, &t0, "-", "failed (WORK_FAIL)"],
        [
            "H:t:2",
            "f",
            "u2",
            "1",
            &t1,
            &t1,
            "-",
            "disk\\x09full\\x0aagain",
        ],
        [
            "H:t:4",
            "g",
            "u4",
            "1",
            &t2,
            &t2,
            "-",
            "timed out (CAN_DO_TIMEOUT)",
        ],
        [
            "H:t:5",
            "h",
            "u5",
            "1",
            &t2,
            &t2,
            "-",
            "given back 1 times by workers that left (--job-retries)",
        ],
    ];
    assert_eq!(r, want.map(|row| row.map(str::to_string)).to_vec());
    assert_eq!(rows(&mut w, c, "show failed g").len(), 1);
    assert_eq!(rows(&mut w, c, "show failed nosuch").len(), 0);
    let kept: Vec<_> = w.e.failed_list().iter().map(|j| j.data.clone()).collect();
    assert_eq!(kept, [b("d1"), b("d2"), b("d4"), b("d5")]);
}

#[test]
fn a_cancelled_or_completed_job_is_not_kept() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, true);
    assert_eq!(
        w.admin(c, &format!("cancel job {}", String::from_utf8_lossy(&h))),
        "OK\r\n"
    );
    w.can_do(wk, "f");
    w.submit(c, "f", "", "d", Priority::Normal, true);
    fail_with(&mut w, wk, |handle| Request::WorkComplete {
        handle,
        data: b("ok"),
    });
    assert!(w.e.failed_list().is_empty());
}

#[test]
fn keep_failed_bounds_the_list_oldest_first_and_zero_keeps_none() {
    for (keep, want) in [(2usize, vec!["u2", "u3"]), (0, vec![])] {
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            keep_failed: keep,
            ..EngineConfig::default()
        });
        let (c, wk) = (w.conn(), w.conn());
        w.can_do(wk, "f");
        for u in ["u1", "u2", "u3"] {
            w.submit(c, "f", u, "d", Priority::Normal, true);
            fail_with(&mut w, wk, |handle| Request::WorkFail {
                handle,
                after_handle: Bytes::new(),
            });
        }
        let kept: Vec<_> = w.e.failed_list().iter().map(|j| j.unique.clone()).collect();
        assert_eq!(kept, want.iter().map(|u| b(u)).collect::<Vec<_>>());
        assert_eq!(
            w.e.failed_list().drops().0,
            vec![(b("f"), 3 - want.len() as u64)]
        );
    }
}

#[test]
fn retry_failed_queues_the_same_unique_and_workload_as_a_new_job() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "u1", "payload", Priority::Normal, true);
    w.submit(c, "g", "u2", "other", Priority::Normal, true);
    fail_with(&mut w, wk, |handle| Request::WorkFail {
        handle,
        after_handle: Bytes::new(),
    });
    assert_eq!(w.admin(c, "retry failed nosuch"), "OK 0\n");
    assert_eq!(w.admin(c, "retry failed H:t:1"), "OK 1\n");
    assert!(w.e.failed_list().is_empty());
    let r = w.req(wk, Request::GrabJob(GrabKind::Uniq));
    match &r[..] {
        [
            (
                _,
                Response::JobAssignUniq {
                    handle,
                    func,
                    unique,
                    data,
                },
            ),
        ] => {
            assert_eq!(handle.to_bytes(), b("H:t:3"));
            assert_eq!((func.as_ref(), unique.as_ref()), (&b"f"[..], &b"u1"[..]));
            assert_eq!(data.as_ref(), b"payload");
        }
        other => panic!("{other:?}"),
    }
    // It fails again: listed again, under its new handle.
    w.req(
        wk,
        Request::WorkFail {
            handle: b("H:t:3"),
            after_handle: Bytes::new(),
        },
    );
    assert_eq!(w.e.failed_list().iter().next().unwrap().handle, "H:t:3");
    assert_eq!(w.admin(c, "drop failed f"), "OK 1\n");
    assert_eq!(w.admin(c, "drop failed all"), "OK 0\n");
    assert!(w.e.failed_list().is_empty());
}

#[test]
fn a_failed_schedule_run_names_its_entry() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    let text = "@every 1m backup id=nightly\n";
    w.e.load_schedules(
        crate::schedule::file::parse(text, &Zone::Utc).unwrap(),
        w.now,
        true,
        &mut w.out,
    );
    let (c, wk) = (w.conn(), w.conn());
    assert!(w.admin(c, "run schedule nightly").starts_with("OK"));
    w.can_do(wk, "backup");
    fail_with(&mut w, wk, |handle| Request::WorkException {
        handle,
        data: b("no space"),
    });
    let r = rows(&mut w, c, "show failed");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0][6], "nightly");
    assert_eq!(r[0][7], "no space");
}

#[test]
fn the_journal_gets_one_record_per_change_of_the_list() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        durable: true,
        keep_failed: 1,
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    let fail = |w: &mut World| {
        fail_with(w, wk, |handle| Request::WorkFail {
            handle,
            after_handle: Bytes::new(),
        })
    };
    w.submit(c, "f", "u1", "d1", Priority::Normal, true);
    w.e.take_durable().for_each(drop);
    fail(&mut w);
    // The failure ends the job and keeps it in one record: no JobFinished beside it.
    let d: Vec<Record> = failed_records(&mut w);
    match &d[..] {
        [Record::FailedKept(job)] if job.id == 1 => {
            assert_eq!(
                (job.handle.as_ref(), job.data.as_ref()),
                (&b"H:t:1"[..], &b"d1"[..])
            )
        }
        other => panic!("{other:?}"),
    }
    // Past --keep-failed 1: the oldest leaves with a FailedGone.
    w.submit(c, "f", "u2", "d2", Priority::Normal, true);
    w.e.take_durable().for_each(drop);
    fail(&mut w);
    let d: Vec<Record> = failed_records(&mut w);
    assert!(
        matches!(&d[..], [Record::FailedGone { handle }, Record::FailedKept(k)] if handle == "H:t:1" && k.id == 2),
        "{d:?}"
    );
    // Retried: the new job first, then the FailedGone.
    assert_eq!(w.admin(c, "retry failed all"), "OK 1\n");
    let d: Vec<Record> = failed_records(&mut w);
    assert!(
        matches!(&d[..], [Record::JobAdded(j), Record::FailedGone { handle }] if j.id == 3 && handle == "H:t:2"),
        "{d:?}"
    );
    // It fails again; dropping it writes a FailedGone.
    fail(&mut w);
    w.e.take_durable().for_each(drop);
    assert_eq!(w.admin(c, "drop failed H:t:3"), "OK 1\n");
    let d: Vec<Record> = failed_records(&mut w);
    assert!(matches!(&d[..], [Record::FailedGone { .. }]), "{d:?}");
    // Restored jobs are kept without writing them again.
    w.e.restore_failed(FailedJob {
        handle: b("H:old:9"),
        func: b("f"),
        unique: b("u"),
        data: b("d"),
        error: b("failed (WORK_FAIL)"),
        attempts: 2,
        first_ms: 1,
        last_ms: 2,
        entry: None,
    });
    assert!(!w.e.has_durable());
    assert_eq!(w.e.failed_list().len(), 1);
}
