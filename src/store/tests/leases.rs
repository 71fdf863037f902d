//! Function-lease records: they round-trip, the newest per function wins on replay (an `off`
//! included), and compaction keeps exactly the newest.

use super::*;

fn lease(func: &'static [u8], ms: u64) -> Record {
    Record::FunctionLease(FunctionLease {
        func: Bytes::from_static(func),
        ms,
    })
}

#[test]
fn lease_records_round_trip() {
    for r in [
        lease(b"resize", 30_000),
        lease(b"", 0),
        lease(b"a b\n", u64::MAX),
    ] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
    }
    // A payload too short for its number is an error, not a panic.
    let h = record::parse_header(&{
        let mut b = Vec::new();
        record::encode(&mut b, &lease(b"f", 1)).unwrap();
        b
    })
    .unwrap();
    assert!(record::decode(&h, &[0; 4]).is_err());
}

#[test]
fn the_newest_lease_per_function_survives_replay_and_compaction() {
    let d = TempDir::new("leases");
    let (mut j, _) = open(d.path(), small_opts());
    j.append(&lease(b"gone", 5_000)).unwrap();
    j.append(&lease(b"gone", 0)).unwrap();
    for i in 1..=400u64 {
        j.append(&lease(b"resize", i * 1000)).unwrap();
        j.append(&Record::JobAdded(job(i, 40))).unwrap();
        j.append(&Record::JobFinished {
            id: i,
            reason: FinishReason::Complete,
        })
        .unwrap();
        j.commit(i).unwrap();
    }
    j.append(&lease(b"keep", 60_000)).unwrap();
    j.commit(401).unwrap();
    assert!(j.needs_compaction());
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    assert_eq!(
        r.leases,
        vec![
            FunctionLease {
                func: Bytes::from_static(b"keep"),
                ms: 60_000
            },
            FunctionLease {
                func: Bytes::from_static(b"resize"),
                ms: 400_000
            }
        ],
        "newest per function; an `off` leaves none"
    );
}
