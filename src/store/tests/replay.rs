//! Replay and repair: clean and unclean stops, torn tails cut, damage named by file and offset,
//! `repair`, and the directory lock.

use super::*;

#[test]
fn replay_after_clean_close() {
    let d = TempDir::new("clean");
    let mut m = Model::default();
    {
        let (mut j, r) = open(d.path(), opts(FsyncMode::Always));
        assert!(r.jobs.is_empty() && r.schedules.is_empty() && r.max_id == 0);
        for _ in 0..6 {
            m.add(&mut j, 40);
        }
        m.finish(&mut j, 2);
        m.retry(&mut j, 3);
        m.retry(&mut j, 3);
        m.retry(&mut j, 5);
        m.sched(&mut j, "hourly", 1000, 0);
        m.sched(&mut j, "daily", 2000, 1);
        j.commit(1).unwrap();
        m.sched(&mut j, "hourly", 3000, 2);
        m.finish(&mut j, 5);
        // Finishing an unknown id is harmless.
        j.append(&Record::JobFinished {
            id: 99,
            reason: FinishReason::Cancel,
        })
        .unwrap();
        j.close(2).unwrap();
    }
    let (j, r) = open(d.path(), opts(FsyncMode::Always));
    m.check(&r);
    assert_eq!(r.max_id, 6);
    assert_eq!(r.stats.torn_tail, None);
    assert_eq!(r.jobs.iter().find(|x| x.job.id == 3).unwrap().retries, 2);
    assert!(j.is_live(1) && !j.is_live(2) && !j.is_live(5));
    assert_eq!(j.stats().live_jobs, 4);
}

#[test]
fn drop_without_close_keeps_everything_committed() {
    // kill -9 after write() returned: the page cache keeps the bytes, even in Never mode.
    let d = TempDir::new("drop");
    let mut m = Model::default();
    {
        let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
        for _ in 0..10 {
            m.add(&mut j, 10);
        }
        j.commit(1).unwrap();
        // Appended but never committed: lost, and no reply was sent for it.
        j.append(&Record::JobAdded(job(11, 10))).unwrap();
    }
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    m.check(&r);
}

/// Three commits; returns (path of the segment, start and end of the last record).
fn three_commits(dir: &Path, m: &mut Model) -> (PathBuf, u64, u64) {
    let (mut j, _) = open(dir, opts(FsyncMode::Always));
    m.add(&mut j, 30);
    j.commit(1).unwrap();
    m.add(&mut j, 30);
    m.sched(&mut j, "e", 5, 0);
    j.commit(2).unwrap();
    let path = files(dir, "wal-").pop().unwrap();
    let start = fs::metadata(&path).unwrap().len();
    m.add(&mut j, 30);
    j.commit(3).unwrap();
    let end = fs::metadata(&path).unwrap().len();
    drop(j);
    (path, start, end)
}

#[test]
fn torn_tail_is_cut_at_every_byte_offset_of_the_last_record() {
    let d = TempDir::new("torn");
    let mut full = Model::default();
    let (path, start, end) = three_commits(d.path(), &mut full);
    let bytes = fs::read(&path).unwrap();
    let mut before = full.clone();
    before.jobs.remove(&3);
    before.next_id = 2;
    for cut in start..end {
        fs::write(&path, &bytes[..cut as usize]).unwrap();
        let (mut j, r) = open(d.path(), opts(FsyncMode::Always));
        before.check(&r);
        assert_eq!(fs::metadata(&path).unwrap().len(), start, "cut at {cut}");
        if cut > start {
            let t = r.stats.torn_tail.as_ref().unwrap();
            assert_eq!((t.offset, t.bytes_cut), (start, cut - start));
        } else {
            assert_eq!(r.stats.torn_tail, None);
        }
        // The journal goes on after the cut.
        j.append(&Record::JobFinished {
            id: 1,
            reason: FinishReason::Fail,
        })
        .unwrap();
        j.commit(4).unwrap();
        drop(j);
        let (_, r) = open(d.path(), opts(FsyncMode::Always));
        assert_eq!(r.jobs.iter().map(|x| x.job.id).collect::<Vec<_>>(), vec![2]);
    }
    fs::write(&path, &bytes).unwrap();
    let (_, r) = open(d.path(), opts(FsyncMode::Always));
    full.check(&r);
}

#[test]
fn torn_header_of_a_new_segment_is_cut() {
    let d = TempDir::new("tornhdr");
    let small = Options {
        segment_bytes: 1,
        ..opts(FsyncMode::Always)
    };
    let mut m = Model::default();
    {
        let (mut j, _) = open(d.path(), small);
        m.add(&mut j, 10);
        j.commit(1).unwrap();
        m.add(&mut j, 10);
        j.commit(2).unwrap();
    }
    let segs = files(d.path(), "wal-");
    assert_eq!(segs.len(), 2);
    let bytes = fs::read(&segs[1]).unwrap();
    let mut first = m.clone();
    first.jobs.remove(&2);
    first.next_id = 1;
    for cut in 0..FILE_HEADER_LEN as usize {
        fs::write(&segs[1], &bytes[..cut]).unwrap();
        let (mut j, r) = open(d.path(), small);
        first.check(&r);
        assert_eq!(fs::metadata(&segs[1]).unwrap().len(), 0);
        j.append(&Record::JobAdded(job(50, 1))).unwrap();
        j.commit(3).unwrap();
        drop(j);
        let (_, r) = open(d.path(), small);
        assert_eq!(
            r.jobs.iter().map(|x| x.job.id).collect::<Vec<_>>(),
            vec![1, 50]
        );
    }
}

#[test]
fn zero_filled_tail_is_cut() {
    // Power loss can leave a file extended with zeros where the data never landed.
    let d = TempDir::new("zeros");
    let mut m = Model::default();
    let (path, _, end) = three_commits(d.path(), &mut m);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0; 4096]);
    fs::write(&path, &bytes).unwrap();
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    m.check(&r);
    assert_eq!(fs::metadata(&path).unwrap().len(), end);
}

#[test]
fn flipped_byte_in_the_middle_is_an_error_naming_file_and_offset() {
    let d = TempDir::new("flip");
    let mut m = Model::default();
    let (path, start, _) = three_commits(d.path(), &mut m);
    let bytes = fs::read(&path).unwrap();
    // Record 2 (job 2) starts after the header and record 1.
    let rec2 = record::intact_at(&bytes, FILE_HEADER_LEN as usize).unwrap();
    for (what, at) in [
        ("payload", rec2 + HEADER_LEN + 3),
        ("length", rec2),
        ("type", rec2 + 4),
        ("checksum", rec2 + 9),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x40;
        fs::write(&path, &b).unwrap();
        let e = open_err(d.path());
        match &e {
            StoreError::Corrupt {
                path: p, offset, ..
            } => {
                assert_eq!((p, *offset), (&path, rec2 as u64), "{what}");
            }
            other => panic!("{what}: {other}"),
        }
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains(&format!("byte offset {rec2}")), "{msg}");
        assert!(msg.contains("--repair"), "{msg}");
        assert!(e.is_repairable());
        // Nothing was cut.
        assert_eq!(fs::read(&path).unwrap(), b);
    }
    // The same flip in the last record is a torn tail (bad checksum at the very end).
    let mut b = bytes.clone();
    b[start as usize + HEADER_LEN + 2] ^= 1;
    fs::write(&path, &b).unwrap();
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    assert_eq!(
        r.jobs.iter().map(|x| x.job.id).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[test]
fn damage_in_an_earlier_segment_or_a_snapshot_is_an_error() {
    let d = TempDir::new("earlier");
    let small = Options {
        segment_bytes: 1,
        ..opts(FsyncMode::Never)
    };
    {
        let (mut j, _) = open(d.path(), small);
        let mut m = Model::default();
        for i in 0..3 {
            m.add(&mut j, 10);
            j.commit(i).unwrap();
        }
    }
    let segs = files(d.path(), "wal-");
    assert_eq!(segs.len(), 3);
    // Cut the first segment's only record short: in a non-last segment that is damage.
    let len = fs::metadata(&segs[0]).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&segs[0]).unwrap();
    f.set_len(len - 1).unwrap();
    let e = open_err(d.path());
    assert!(
        matches!(&e, StoreError::Corrupt { path, offset: 32, .. } if path == &segs[0]),
        "{e}"
    );
    assert!(e.to_string().contains("not the last segment"), "{e}");

    // A snapshot with a flipped byte, even in its last record, stops start-up.
    let d = TempDir::new("snapflip");
    let o = Options {
        compact_min_bytes: 0,
        ..opts(FsyncMode::Never)
    };
    {
        let (mut j, _) = open(d.path(), o);
        let mut m = Model::default();
        m.add(&mut j, 10);
        for _ in 0..5 {
            let id = m.add(&mut j, 10);
            m.finish(&mut j, id);
        }
        j.commit(1).unwrap();
        while j.compact_step(1 << 20).unwrap() {}
        assert_eq!(j.stats().compactions, 1);
    }
    let snap = files(d.path(), "snap-").pop().unwrap();
    let mut b = fs::read(&snap).unwrap();
    let n = b.len();
    b[n - 1] ^= 1;
    fs::write(&snap, &b).unwrap();
    let e = open_err(d.path());
    assert!(
        matches!(&e, StoreError::Corrupt { path, .. } if path == &snap),
        "{e}"
    );
}

#[test]
fn repair_drops_the_damaged_record_and_keeps_the_rest() {
    let d = TempDir::new("repair");
    let mut m = Model::default();
    let (path, _, end) = three_commits(d.path(), &mut m);
    let mut bytes = fs::read(&path).unwrap();
    let rec2 = record::intact_at(&bytes, FILE_HEADER_LEN as usize).unwrap();
    let rec2_end = record::intact_at(&bytes, rec2).unwrap();
    bytes[rec2 + HEADER_LEN + 1] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    assert!(open_err(d.path()).is_repairable());

    let rep = repair(d.path()).unwrap();
    assert!(!rep.is_clean());
    assert_eq!(rep.files.len(), 1);
    let f = &rep.files[0];
    assert_eq!(f.path, path);
    assert_eq!(
        f.dropped,
        vec![DroppedRange {
            offset: rec2 as u64,
            len: (rec2_end - rec2) as u64
        }]
    );
    assert!(!f.header_rebuilt);
    assert_eq!(f.records_kept, 3);
    assert_eq!(fs::read(&f.backup).unwrap(), bytes, "original kept");
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        end - (rec2_end - rec2) as u64
    );
    let text = rep.to_string();
    assert!(text.contains(&format!("at byte offset {rec2}")), "{text}");

    let mut want = m.clone();
    want.jobs.remove(&2);
    let (j, r) = open(d.path(), opts(FsyncMode::Never));
    want.check(&r);
    drop(j);
    // Running it again finds nothing to do.
    assert!(repair(d.path()).unwrap().is_clean());
}

#[test]
fn repair_names_the_jobs_whose_finish_may_have_been_dropped() {
    let d = TempDir::new("repair-twice");
    let mut m = Model::default();
    let path;
    let finish_at;
    {
        let (mut j, _) = open(d.path(), opts(FsyncMode::Always));
        let a = m.add(&mut j, 10);
        let b = m.add(&mut j, 10);
        j.commit(1).unwrap();
        path = files(d.path(), "wal-").pop().unwrap();
        finish_at = fs::metadata(&path).unwrap().len() as usize;
        m.finish(&mut j, a);
        j.commit(2).unwrap();
        m.add(&mut j, 10);
        j.commit(3).unwrap();
        assert_eq!(b, 2);
    }
    // The damaged record is job 1's JobFinished: repair brings job 1 back.
    let mut bytes = fs::read(&path).unwrap();
    bytes[finish_at + HEADER_LEN + 1] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let rep = repair(d.path()).unwrap();
    // Jobs 1 and 2 were added before the dropped bytes and are live after the repair; job 3
    // came after them, so no finish of it can have been lost.
    assert_eq!(
        rep.may_run_twice,
        vec![
            Bytes::from_static(b"H:test:1"),
            Bytes::from_static(b"H:test:2")
        ]
    );
    let text = rep.to_string();
    assert!(
        text.contains("2 jobs may run again") && text.contains("H:test:1, H:test:2"),
        "{text}"
    );
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    let live: Vec<u64> = r.jobs.iter().map(|j| j.job.id).collect();
    assert_eq!(live, vec![1, 2, 3], "job 1 is back: it will run again");
    // Repaired: nothing more is in doubt.
    assert!(repair(d.path()).unwrap().may_run_twice.is_empty());
}

#[test]
fn repair_rebuilds_a_header_and_a_missing_segment() {
    let d = TempDir::new("repair2");
    let small = Options {
        segment_bytes: 1,
        ..opts(FsyncMode::Never)
    };
    let mut m = Model::default();
    {
        let (mut j, _) = open(d.path(), small);
        for i in 0..4 {
            m.add(&mut j, 10);
            j.commit(i).unwrap();
        }
    }
    let segs = files(d.path(), "wal-");
    fs::remove_file(&segs[1]).unwrap();
    let e = open_err(d.path());
    assert!(matches!(e, StoreError::MissingSegment { .. }), "{e}");
    assert!(
        e.to_string().contains("wal-00000000000000000002.log"),
        "{e}"
    );
    let mut b = fs::read(&segs[2]).unwrap();
    b[3] ^= 1;
    fs::write(&segs[2], &b).unwrap();

    let rep = repair(d.path()).unwrap();
    assert_eq!(rep.segments_recreated, vec![segs[1].clone()]);
    assert_eq!(rep.files.len(), 1);
    assert!(rep.files[0].header_rebuilt);
    m.jobs.remove(&2);
    let (_, r) = open(d.path(), small);
    m.check(&r);
}

#[test]
fn a_second_open_of_the_same_dir_is_refused() {
    let d = TempDir::new("lock");
    let (j, _) = open(d.path(), opts(FsyncMode::Never));
    let e = open_err(d.path());
    match &e {
        StoreError::Locked { dir, holder } => {
            assert_eq!(dir, d.path());
            assert_eq!(*holder, Some(std::process::id()));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("in use"), "{e}");
    assert!(matches!(repair(d.path()), Err(StoreError::Locked { .. })));
    drop(j);
    open(d.path(), opts(FsyncMode::Never));
}
