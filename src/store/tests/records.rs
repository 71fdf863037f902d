//! Records: every type round-trips, and any flipped bit is caught.

use super::*;

#[test]
fn round_trip_every_record_type() {
    let recs = vec![
        Record::JobAdded(job(1, 0)),
        Record::JobAdded(job(2, 100)),
        Record::JobAdded(job(3, 5)),
        Record::JobAdded(JobAdded {
            id: u64::MAX,
            handle: Bytes::new(),
            func: Bytes::new(),
            unique: Bytes::new(),
            reducer: Some(Bytes::new()),
            priority: 2,
            due_ms: Some(0),
            data: Bytes::from_static(b"\0\x01binary\xff"),
        }),
        Record::JobFinished {
            id: 7,
            reason: FinishReason::Complete,
        },
        Record::JobFinished {
            id: 8,
            reason: FinishReason::RetriesSpent,
        },
        Record::JobFinished {
            id: 9,
            reason: FinishReason::Other(200),
        },
        Record::JobRetried { id: 7, retries: 3 },
        Record::ScheduleRan {
            entry: Bytes::from_static(b"nightly-report"),
            fire_ms: 1_700_000_000_000,
            outcome: 1,
            counters: None,
        },
        Record::ScheduleRan {
            entry: Bytes::new(),
            fire_ms: 0,
            outcome: 0,
            counters: None,
        },
        Record::ScheduleRan {
            entry: Bytes::from_static(b"heartbeat"),
            fire_ms: 1_700_000_000_000,
            outcome: 0,
            counters: Some(ScheduleCounters {
                seen_ms: 1_700_000_060_000,
                runs: 7,
                failures: 2,
                skips: u64::MAX,
            }),
        },
    ];
    let mut buf = Vec::new();
    let mut ends = Vec::new();
    for r in &recs {
        let len = record::encode(&mut buf, r).unwrap();
        ends.push((buf.len(), len));
    }
    let mut off = 0;
    for (r, (end, len)) in recs.iter().zip(ends) {
        assert_eq!(end - off, len as usize);
        assert_eq!(record::intact_at(&buf, off), Some(end));
        let h = record::parse_header(&buf[off..]).unwrap();
        let back = record::decode(h.ty, &buf[off + HEADER_LEN..end]).unwrap();
        assert_eq!(&back, r);
        off = end;
    }
    for code in 0..=255u8 {
        assert_eq!(FinishReason::from_code(code).code(), code);
    }
}

#[test]
fn any_flipped_bit_in_a_record_is_detected() {
    let mut buf = Vec::new();
    record::encode(&mut buf, &Record::JobAdded(job(4, 20))).unwrap();
    for i in 0..buf.len() {
        for bit in 0..8 {
            let mut b = buf.clone();
            b[i] ^= 1 << bit;
            assert_eq!(record::intact_at(&b, 0), None, "byte {i} bit {bit}");
        }
    }
}
