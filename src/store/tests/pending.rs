//! Schedule-pending records: they round-trip, a damaged count is an error, the newest per
//! entry wins on replay (an empty one ends it), and compaction keeps exactly the newest.

use super::*;

fn pending(entry: &'static [u8], queued: Option<u64>, spans: &[(u64, u64, u64, bool)]) -> Record {
    Record::SchedulePending(SchedulePending {
        entry: Bytes::from_static(entry),
        queued_ms: queued,
        spans: spans
            .iter()
            .map(|&(after_ms, to_ms, left, backfill)| PendingSpan {
                after_ms,
                to_ms,
                left,
                backfill,
            })
            .collect(),
    })
}

#[test]
fn pending_records_round_trip() {
    for r in [
        pending(
            b"nightly",
            Some(60_000),
            &[(1, 2, 3, true), (4, 5, 6, false)],
        ),
        pending(b"", None, &[]),
        pending(b"a b\n", None, &[(u64::MAX, 0, 1, false)]),
    ] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
        assert!(record::pending_entry(&buf[HEADER_LEN..]).is_some());
    }
    // A span count past the payload's end is an error, not a panic or an allocation.
    let mut b = Vec::new();
    record::encode(&mut b, &pending(b"e", None, &[])).unwrap();
    let h = record::parse_header(&b).unwrap();
    let mut payload = b[HEADER_LEN..].to_vec();
    payload[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(record::decode(&h, &payload).is_err());
    assert_eq!(record::pending_entry(&payload), None);
}

#[test]
fn the_newest_pending_per_entry_survives_replay_and_compaction() {
    let d = TempDir::new("pending");
    let (mut j, _) = open(d.path(), small_opts());
    j.append(&pending(b"gone", Some(5_000), &[])).unwrap();
    j.append(&pending(b"gone", None, &[])).unwrap();
    for i in 1..=400u64 {
        j.append(&pending(b"bf", None, &[(i, 1000, 1000 - i, true)]))
            .unwrap();
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
        r.pending,
        vec![SchedulePending {
            entry: Bytes::from_static(b"bf"),
            queued_ms: None,
            spans: vec![PendingSpan {
                after_ms: 400,
                to_ms: 1000,
                left: 600,
                backfill: true
            }],
        }],
        "the newest per entry; an empty one leaves none"
    );
}
