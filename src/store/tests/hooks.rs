//! Webhook records: they round-trip, a HookQueued stays live until its HookDone, the ones left
//! come back oldest first, and compaction keeps them.

use super::*;

fn queued(id: u64, body: usize) -> HookQueued {
    HookQueued {
        id,
        queued_ms: 1_700_000_000_000 + id,
        url: Bytes::from_static(b"https://hooks.example.com/services/T/B/x"),
        body: Bytes::from(vec![b'{'; body]),
    }
}

#[test]
fn hook_records_round_trip() {
    for r in [
        Record::HookQueued(queued(1, 300)),
        Record::HookQueued(HookQueued {
            url: Bytes::new(),
            ..queued(2, 0)
        }),
        Record::HookDone { id: 7 },
    ] {
        let mut buf = Vec::new();
        let len = record::encode(&mut buf, &r).unwrap();
        assert_eq!(len as usize, buf.len());
        let h = record::parse_header(&buf).unwrap();
        assert_eq!(record::decode(&h, &buf[HEADER_LEN..]).unwrap(), r);
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert_eq!(record::intact_at(&bad, 0), None, "bit at {i}");
        }
    }
}

#[test]
fn hooks_replay_until_done_and_survive_compaction() {
    let d = TempDir::new("hook-replay");
    let (mut j, _) = open(d.path(), small_opts());
    for n in 1..=300u64 {
        j.append(&Record::HookQueued(queued(n, 500))).unwrap();
        if n % 10 != 0 {
            j.append(&Record::HookDone { id: n }).unwrap();
        }
        j.commit(n).unwrap();
    }
    let live = j.stats().live_bytes;
    let mut b = Vec::new();
    let one = record::encode(&mut b, &Record::HookQueued(queued(10, 500))).unwrap();
    assert_eq!(live, 30 * u64::from(one), "the 30 not done are live");
    assert!(j.needs_compaction());
    while j.compact_step(2048).unwrap() {}
    assert_eq!(j.stats().live_bytes, live);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    let ids: Vec<u64> = r.hooks.iter().map(|h| h.id).collect();
    assert_eq!(ids, (1..=30).map(|i| i * 10).collect::<Vec<_>>());
    assert_eq!(r.hooks[0], queued(10, 500));
}
