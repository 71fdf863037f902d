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
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::from_static(b"nightly-report"),
            fire_ms: 1_700_000_000_000,
            outcome: 1,
            counters: None,
        }),
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::new(),
            fire_ms: 0,
            outcome: 0,
            counters: None,
        }),
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::from_static(b"heartbeat"),
            fire_ms: 1_700_000_000_000,
            outcome: 0,
            counters: Some(ScheduleCounters {
                seen_ms: 1_700_000_060_000,
                runs: 7,
                failures: 2,
                skips: u64::MAX,
                ..ScheduleCounters::default()
            }),
        }),
        // Marks make it version 2, with the entry after the marks byte.
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::from_static(b"nightly"),
            fire_ms: 1_700_000_000_000,
            outcome: 0,
            counters: Some(ScheduleCounters {
                seen_ms: 1_700_000_060_000,
                runs: 3,
                paused: true,
                last_manual: true,
                ..ScheduleCounters::default()
            }),
        }),
        // Duration alerts' counts make it version 3, after the marks byte.
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::from_static(b"backup"),
            fire_ms: 1_700_000_000_000,
            outcome: 0,
            counters: Some(ScheduleCounters {
                seen_ms: 1_700_000_060_000,
                runs: 4,
                too_long: 2,
                too_short: u64::MAX,
                ..ScheduleCounters::default()
            }),
        }),
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
        let back = record::decode(&h, &buf[off + HEADER_LEN..end]).unwrap();
        assert_eq!(&back, r);
        off = end;
    }
    for code in 0..=255u8 {
        assert_eq!(FinishReason::from_code(code).code(), code);
    }
}

#[test]
fn a_schedule_state_without_marks_keeps_the_version_1_layout() {
    let state = |paused| {
        Record::ScheduleRan(ScheduleRan {
            entry: Bytes::from_static(b"e"),
            fire_ms: 5,
            outcome: 0,
            counters: Some(ScheduleCounters {
                runs: 1,
                paused,
                ..ScheduleCounters::default()
            }),
        })
    };
    // Unmarked: version 1, five u64s and the entry, byte for byte what the release before
    // wrote and reads.
    let mut v1 = Vec::new();
    record::encode(&mut v1, &state(false)).unwrap();
    assert_eq!((v1[4], v1[5], v1.len()), (5, 1, HEADER_LEN + 40 + 1));
    assert_eq!(&v1[HEADER_LEN + 40..], b"e");
    // Marked: version 2 with the marks byte before the entry.
    let mut v2 = Vec::new();
    record::encode(&mut v2, &state(true)).unwrap();
    assert_eq!((v2[4], v2[5], v2.len()), (5, 2, HEADER_LEN + 41 + 1));
    assert_eq!(&v2[HEADER_LEN + 40..], b"\x01e");
    // With a duration alert counted: version 3, the marks byte and the two counts.
    let mut v3 = Vec::new();
    let mut with_alert = state(true);
    if let Record::ScheduleRan(ScheduleRan {
        counters: Some(c), ..
    }) = &mut with_alert
    {
        c.too_short = 1;
    }
    record::encode(&mut v3, &with_alert).unwrap();
    assert_eq!((v3[4], v3[5], v3.len()), (5, 3, HEADER_LEN + 57 + 1));
    assert_eq!(&v3[HEADER_LEN + 40..HEADER_LEN + 41], b"\x01");
    assert_eq!(&v3[HEADER_LEN + 57..], b"e");
    // A version 2 of another type, or a marks byte this release does not know, is refused
    // even with checksums that match.
    let reseal = |b: &mut Vec<u8>| {
        let pre = crc32c::crc32c(&b[0..6]);
        b[6..8].copy_from_slice(&(pre as u16).to_le_bytes());
        let crc = crc32c::crc32c_append(pre, &b[HEADER_LEN..]);
        b[8..12].copy_from_slice(&crc.to_le_bytes());
    };
    let mut resealed = v2.clone();
    reseal(&mut resealed);
    assert_eq!(resealed, v2, "reseal computes what encode wrote");
    let mut other = Vec::new();
    record::encode(&mut other, &Record::JobRetried { id: 1, retries: 2 }).unwrap();
    other[5] = 2;
    reseal(&mut other);
    assert!(record::parse_header(&other).is_none());
    let mut unknown = v2.clone();
    unknown[HEADER_LEN + 40] = 8;
    reseal(&mut unknown);
    assert!(record::parse_header(&unknown).is_some());
    assert_eq!(record::intact_at(&unknown, 0), None);
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
