//! Kept-output records: they round-trip and name their handle, the newest per handle counts,
//! they leave on OutputGone, come back in the order they were kept, and survive compaction.

use super::*;

fn out(n: u64, len: usize) -> OutputKept {
    OutputKept {
        handle: Bytes::from(format!("H:test:{n}")),
        func: Bytes::from_static(b"backup"),
        ending: (n % 4) as u8,
        started_ms: 1_700_000_000_000 + n,
        ended_ms: 1_700_000_060_000 + n,
        worker: Bytes::from_static(b"cn:worker-1"),
        attempts: 1 + n as u32 % 3,
        error: (n % 2 == 1).then(|| Bytes::from_static(b"disk full")),
        entry: (n % 3 == 0).then(|| Bytes::from_static(b"nightly")),
        scheduled_ms: (n % 3 == 0).then_some(1_700_000_000_000),
        manual: n % 6 == 3,
        backfill: n % 12 == 3,
        output_bytes: 10 * len as u64,
        result_len: (n % 4 == 0).then_some(3),
        output: Bytes::from(vec![b'o'; len]),
    }
}

#[test]
fn output_records_round_trip_and_name_their_handle() {
    let recs = [
        Record::OutputKept(out(0, 100)),
        Record::OutputKept(out(1, 0)),
        Record::OutputKept(out(3, 65536)),
        Record::OutputKept(OutputKept {
            handle: Bytes::new(),
            entry: Some(Bytes::new()),
            error: Some(Bytes::new()),
            ..out(2, 1)
        }),
        Record::OutputGone {
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
            Record::OutputKept(o) => &o.handle,
            Record::OutputGone { handle } => handle,
            _ => unreachable!(),
        };
        assert_eq!(record::output_handle(&h, payload), Some(want));
        if buf.len() < 4096 {
            for i in 0..buf.len() {
                let mut bad = buf.clone();
                bad[i] ^= 0x10;
                assert_eq!(record::intact_at(&bad, 0), None, "bit at {i}");
            }
        }
    }
}

#[test]
fn kept_outputs_replay_in_order_the_newest_per_handle_until_gone() {
    let d = TempDir::new("output-replay");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
    for n in [3, 1, 2] {
        j.append(&Record::OutputKept(out(n, 10))).unwrap();
    }
    // Kept again (a job run again after its worker died): the newest counts.
    j.append(&Record::OutputKept(out(3, 20))).unwrap();
    j.append(&Record::OutputGone {
        handle: Bytes::from_static(b"H:test:1"),
    })
    .unwrap();
    j.commit(1).unwrap();
    drop(j);
    let (j, r) = open(d.path(), opts(FsyncMode::Never));
    assert_eq!(r.outputs, [out(2, 10), out(3, 20)]);
    let one = |rec: &Record| {
        let mut b = Vec::new();
        record::encode(&mut b, rec).unwrap() as u64
    };
    let want = one(&Record::OutputKept(out(2, 10))) + one(&Record::OutputKept(out(3, 20)));
    assert_eq!(j.stats().live_bytes, want);
}

#[test]
fn compaction_keeps_kept_outputs_and_drops_gone_ones() {
    let d = TempDir::new("output-compact");
    let (mut j, _) = open(d.path(), small_opts());
    for n in 1..=300u64 {
        j.append(&Record::OutputKept(out(n, 500))).unwrap();
        if n % 10 != 0 {
            j.append(&Record::OutputGone {
                handle: Bytes::from(format!("H:test:{n}")),
            })
            .unwrap();
        }
        j.commit(n).unwrap();
    }
    assert!(j.needs_compaction());
    let before = j.stats().live_bytes;
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    assert_eq!(j.stats().live_bytes, before);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    let kept: Vec<Bytes> = r.outputs.iter().map(|o| o.handle.clone()).collect();
    let want: Vec<Bytes> = (1..=30)
        .map(|i| Bytes::from(format!("H:test:{}", i * 10)))
        .collect();
    assert_eq!(kept, want);
    assert_eq!(r.outputs[0], out(10, 500));
}

#[test]
fn the_manual_flag_is_one_bit_set_only_for_a_manual_run() {
    // Where the flags byte is: header, four u64, two u32, the ending byte.
    const FLAGS_AT: usize = HEADER_LEN + 8 * 4 + 4 + 4 + 1;
    let bytes = |o: OutputKept| {
        let mut b = Vec::new();
        record::encode(&mut b, &Record::OutputKept(o)).unwrap();
        b
    };
    let scheduled = bytes(OutputKept {
        manual: false,
        ..out(0, 10)
    });
    let manual = bytes(OutputKept {
        manual: true,
        ..out(0, 10)
    });
    // A scheduled run's record is laid out as before the flag (so the release before reads
    // it), and a record from before the flag reads as not manual.
    assert_eq!(scheduled[FLAGS_AT] & 16, 0);
    assert_eq!(manual[FLAGS_AT], scheduled[FLAGS_AT] | 16);
    assert_eq!(
        manual[HEADER_LEN..FLAGS_AT],
        scheduled[HEADER_LEN..FLAGS_AT]
    );
    assert_eq!(manual[FLAGS_AT + 1..], scheduled[FLAGS_AT + 1..]);
    for (b, want) in [(&scheduled, false), (&manual, true)] {
        let h = record::parse_header(b).unwrap();
        match record::decode(&h, &b[HEADER_LEN..]) {
            Ok(Record::OutputKept(o)) => assert_eq!(o.manual, want),
            other => panic!("{other:?}"),
        }
    }
}
