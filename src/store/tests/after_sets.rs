//! `@after` set records: they round-trip, a damaged one is an error and not a panic, the
//! newest per entry wins on replay (an empty set leaves none), and compaction keeps exactly
//! the newest.

use super::*;

fn set(entry: &'static [u8], parents: &[(&'static [u8], u64)]) -> Record {
    Record::AfterSet(AfterSet {
        entry: Bytes::from_static(entry),
        parents: parents
            .iter()
            .map(|&(id, at)| AfterParent {
                id: Bytes::from_static(id),
                handle: Bytes::from(format!("H:x:{at}")),
                scheduled_ms: at,
                ended_ms: at + 1,
                ok: at % 2 == 0,
            })
            .collect(),
    })
}

#[test]
fn after_set_records_round_trip() {
    for r in [
        set(b"verify", &[(b"backup.db", 10), (b"backup.files", 11)]),
        set(b"verify", &[]),
        set(b"", &[(b"", u64::MAX - 1)]),
    ] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        let payload = &buf[HEADER_LEN..];
        assert_eq!(record::decode(&h, payload).unwrap(), r);
        // Cut anywhere inside a parent: an error, not a panic.
        for cut in 0..payload.len() {
            let _ = record::decode(&h, &payload[..cut]);
        }
    }
}

#[test]
fn the_newest_set_per_entry_survives_replay_and_compaction() {
    let d = TempDir::new("after-sets");
    let (mut j, _) = open(d.path(), small_opts());
    j.append(&set(b"gone", &[(b"a", 2)])).unwrap();
    j.append(&set(b"gone", &[])).unwrap();
    for i in 1..=400u64 {
        j.append(&set(b"verify", &[(b"a", i)])).unwrap();
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
    let Record::AfterSet(newest) = set(b"verify", &[(b"a", 400)]) else {
        unreachable!()
    };
    assert_eq!(
        r.after_sets,
        vec![newest],
        "newest per entry; an empty set leaves none"
    );
}
