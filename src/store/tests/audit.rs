//! Audit records: they round-trip, replay keeps those at or above the newest floor, and
//! compaction keeps exactly those.

use super::*;

fn action(seq: u64, floor: u64) -> Record {
    Record::Audit(Audit {
        seq,
        floor,
        at_ms: 1_000 + seq,
        identity: Bytes::from_static(b"token:ops"),
        peer: Bytes::from_static(b"127.0.0.1:5000"),
        command: Bytes::from(format!("maxqueue f {seq}")),
        outcome: Bytes::from_static(b"OK"),
    })
}

#[test]
fn audit_records_round_trip() {
    let odd = Record::Audit(Audit {
        seq: u64::MAX,
        floor: 0,
        at_ms: 0,
        identity: Bytes::new(),
        peer: Bytes::from_static(b"-"),
        command: Bytes::from_static(b"a\\x0a b"),
        outcome: Bytes::from_static(b"ERR NO_SUCH_JOB"),
    });
    for r in [action(1, 1), odd] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
        // A payload cut short is an error, not a panic.
        for cut in 0..buf.len() - HEADER_LEN {
            let short = &buf[HEADER_LEN..HEADER_LEN + cut];
            if cut < 36 {
                assert!(record::decode(&h, short).is_err(), "cut at {cut}");
            }
        }
    }
}

#[test]
fn replay_and_compaction_keep_the_actions_above_the_floor() {
    let d = TempDir::new("audit");
    let (mut j, _) = open(d.path(), small_opts());
    // A trail kept to the newest 5.
    for i in 1..=400u64 {
        j.append(&action(i, i.saturating_sub(4).max(1))).unwrap();
        j.append(&Record::JobAdded(job(i, 40))).unwrap();
        j.append(&Record::JobFinished {
            id: i,
            reason: FinishReason::Complete,
        })
        .unwrap();
        j.commit(i).unwrap();
    }
    assert!(j.needs_compaction());
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    let seqs: Vec<u64> = r.audit.iter().map(|a| a.seq).collect();
    assert_eq!(seqs, [396, 397, 398, 399, 400]);
    assert_eq!(r.audit[4], {
        let Record::Audit(a) = action(400, 396) else {
            unreachable!()
        };
        a
    });
}
