//! Failed-job records: they round-trip, end their job in one record, leave on FailedGone, come
//! back in the order they were kept, and survive compaction.

use super::*;

fn kept(id: u64, entry: Option<&'static [u8]>) -> FailedKept {
    FailedKept {
        id,
        handle: Bytes::from(format!("H:test:{id}")),
        func: Bytes::from_static(b"resize"),
        unique: Bytes::from(format!("u-{id}")),
        data: Bytes::from(vec![b'\n'; id as usize % 7]),
        error: Bytes::from_static(b"failed (WORK_FAIL)"),
        attempts: 3,
        first_ms: 1_700_000_000_000,
        last_ms: 1_700_000_060_000 + id,
        entry: entry.map(Bytes::from_static),
    }
}

#[test]
fn failed_records_round_trip_and_name_their_handle() {
    let recs = [
        Record::FailedKept(kept(5, Some(b"nightly"))),
        Record::FailedKept(kept(6, None)),
        Record::FailedKept(FailedKept {
            handle: Bytes::new(),
            entry: Some(Bytes::new()),
            ..kept(0, None)
        }),
        Record::FailedGone {
            handle: Bytes::from_static(b"H:test:5"),
        },
    ];
    for r in &recs {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        let payload = &buf[HEADER_LEN..];
        assert_eq!(&record::decode(&h, payload).unwrap(), r);
        let want: &[u8] = match r {
            Record::FailedKept(f) => &f.handle,
            Record::FailedGone { handle } => handle,
            _ => unreachable!(),
        };
        assert_eq!(record::failed_handle(&h, payload), Some(want));
        // A flipped bit anywhere is caught.
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert_eq!(record::intact_at(&bad, 0), None, "bit at {i}");
        }
    }
}

#[test]
fn a_kept_failure_ends_its_job_and_replays_in_order_until_gone() {
    let d = TempDir::new("failed-replay");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
    for id in 1..=4 {
        j.append(&Record::JobAdded(job(id, 10))).unwrap();
    }
    for id in [3, 1, 2] {
        j.append(&Record::FailedKept(kept(id, None))).unwrap();
    }
    j.append(&Record::FailedGone {
        handle: Bytes::from_static(b"H:test:1"),
    })
    .unwrap();
    j.commit(1).unwrap();
    drop(j);
    let (j, r) = open(d.path(), opts(FsyncMode::Never));
    let ids: Vec<u64> = r.jobs.iter().map(|x| x.job.id).collect();
    assert_eq!(ids, [4], "a failed job is not queued again");
    let failed: Vec<u64> = r.failed.iter().map(|f| f.id).collect();
    assert_eq!(failed, [3, 2]);
    assert_eq!(r.failed[0], kept(3, None));
    let live = j.stats().live_bytes;
    let one = |rec: &Record| {
        let mut b = Vec::new();
        record::encode(&mut b, rec).unwrap() as u64
    };
    let want = one(&Record::JobAdded(job(4, 10)))
        + one(&Record::FailedKept(kept(3, None)))
        + one(&Record::FailedKept(kept(2, None)));
    assert_eq!(live, want);
}

#[test]
fn compaction_keeps_kept_failures_and_drops_gone_ones() {
    let d = TempDir::new("failed-compact");
    let (mut j, _) = open(d.path(), small_opts());
    for id in 1..=300u64 {
        j.append(&Record::JobAdded(job(id, 60))).unwrap();
        j.append(&Record::FailedKept(kept(id, Some(b"e")))).unwrap();
        if id % 10 != 0 {
            j.append(&Record::FailedGone {
                handle: Bytes::from(format!("H:test:{id}")),
            })
            .unwrap();
        }
        j.commit(id).unwrap();
    }
    assert!(j.needs_compaction());
    let before = j.stats().live_bytes;
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    assert_eq!(j.stats().live_bytes, before);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    assert!(r.jobs.is_empty());
    let ids: Vec<u64> = r.failed.iter().map(|f| f.id).collect();
    assert_eq!(ids, (1..=30).map(|i| i * 10).collect::<Vec<_>>());
}

#[test]
fn job_attempts_follow_their_job_through_replay_and_compaction() {
    let attempts = |id: u64, entry: Option<&'static [u8]>| {
        Record::JobAttempts(JobAttempts {
            id,
            failures: id as u32,
            first_ms: 1_700_000_000_000 + id,
            entry: entry.map(Bytes::from_static),
            // A backfill's run keeps both marks; they round-trip with the rest.
            manual: id % 2 == 1,
            backfill: id == 3,
        })
    };
    for r in [
        attempts(1, Some(b"nightly")),
        attempts(2, None),
        attempts(3, Some(b"")),
    ] {
        let mut buf = Vec::new();
        record::encode(&mut buf, &r).unwrap();
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
    }
    let policy = Record::FunctionRetry(FunctionRetry {
        func: Bytes::from_static(b"resize"),
        retries: 3,
        base_ms: 30_000,
        max_ms: 600_000,
    });
    let mut buf = Vec::new();
    record::encode(&mut buf, &policy).unwrap();
    let h = record::parse_header(&buf).unwrap();
    assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), policy);
    assert_eq!(
        record::retry_function(&buf[HEADER_LEN..]),
        Some(&b"resize"[..])
    );
    let d = TempDir::new("attempts");
    let (mut j, _) = open(d.path(), small_opts());
    for id in 1..=300u64 {
        j.append(&Record::JobAdded(job(id, 60))).unwrap();
        j.append(&attempts(id, Some(b"e"))).unwrap();
        j.append(&Record::FunctionRetry(FunctionRetry {
            func: Bytes::from(format!("f{}", id % 2)),
            retries: id as u32,
            base_ms: 1000,
            max_ms: 2000,
        }))
        .unwrap();
        match id % 3 {
            0 => {}
            1 => j
                .append(&Record::JobFinished {
                    id,
                    reason: FinishReason::Complete,
                })
                .unwrap(),
            _ => {
                j.append(&Record::FailedKept(kept(id, None))).unwrap();
                if id % 30 != 2 {
                    j.append(&Record::FailedGone {
                        handle: Bytes::from(format!("H:test:{id}")),
                    })
                    .unwrap();
                }
            }
        }
        j.commit(id).unwrap();
    }
    let before = j.stats().live_bytes;
    assert!(j.needs_compaction());
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().live_bytes, before);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    let live: Vec<(u64, Option<JobAttempts>)> = r
        .jobs
        .iter()
        .map(|x| (x.job.id, x.attempts.clone()))
        .collect();
    let want: Vec<_> = (1..=100u64)
        .map(|i| i * 3)
        .map(|id| {
            (
                id,
                Some(JobAttempts {
                    id,
                    failures: id as u32,
                    first_ms: 1_700_000_000_000 + id,
                    entry: Some(Bytes::from_static(b"e")),
                    manual: id % 2 == 1,
                    backfill: id == 3,
                }),
            )
        })
        .collect();
    assert_eq!(live, want);
    assert_eq!(r.failed.len(), 10);
    // The newest policy per function, after compaction.
    assert_eq!(
        r.func_retries,
        vec![
            FunctionRetry {
                func: Bytes::from("f0"),
                retries: 300,
                base_ms: 1000,
                max_ms: 2000
            },
            FunctionRetry {
                func: Bytes::from("f1"),
                retries: 299,
                base_ms: 1000,
                max_ms: 2000
            }
        ]
    );
}
