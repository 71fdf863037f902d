//! Function-limits records: they round-trip, the newest per function wins on replay (one that
//! lifts them all included), and compaction keeps exactly the newest.

use super::*;

fn limits(func: &'static [u8], limit: u32, paused: bool) -> Record {
    Record::FunctionLimits(FunctionLimits {
        func: Bytes::from_static(func),
        limit,
        rate_count: 100,
        rate_window_ms: 60_000,
        paused,
        expire_ms: 3_600_000,
    })
}

#[test]
fn limits_records_round_trip() {
    let none = Record::FunctionLimits(FunctionLimits {
        func: Bytes::from_static(b"f"),
        limit: 0,
        rate_count: 0,
        rate_window_ms: 0,
        paused: false,
        expire_ms: 0,
    });
    for r in [
        limits(b"resize", 4, true),
        limits(b"a b\n", u32::MAX, false),
        none,
    ] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
        // A payload too short for its numbers is an error, not a panic.
        assert!(record::decode(&h, &buf[HEADER_LEN..HEADER_LEN + 20]).is_err());
    }
}

#[test]
fn the_newest_limits_per_function_survive_replay_and_compaction() {
    let d = TempDir::new("limits");
    let (mut j, _) = open(d.path(), small_opts());
    j.append(&limits(b"gone", 2, false)).unwrap();
    j.append(&Record::FunctionLimits(FunctionLimits {
        func: Bytes::from_static(b"gone"),
        limit: 0,
        rate_count: 0,
        rate_window_ms: 0,
        paused: false,
        expire_ms: 0,
    }))
    .unwrap();
    for i in 1..=400u64 {
        j.append(&limits(b"resize", i as u32, i % 2 == 0)).unwrap();
        j.append(&Record::JobAdded(job(i, 40))).unwrap();
        j.append(&Record::JobFinished {
            id: i,
            reason: FinishReason::Complete,
        })
        .unwrap();
        j.commit(i).unwrap();
    }
    j.commit(401).unwrap();
    assert!(j.needs_compaction());
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    assert_eq!(
        r.limits,
        vec![FunctionLimits {
            func: Bytes::from_static(b"resize"),
            limit: 400,
            rate_count: 100,
            rate_window_ms: 60_000,
            paused: true,
            expire_ms: 3_600_000,
        }],
        "newest per function; lifted leaves none"
    );
}
