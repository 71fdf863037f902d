//! Unit tests of the journal on real files in temp directories.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

use super::file::{self, FILE_HEADER_LEN, Kind};
use super::record::{self, HEADER_LEN};
use super::*;

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "gearwheel-store-{name}-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn opts(fsync: FsyncMode) -> Options {
    Options {
        fsync,
        ..Options::default()
    }
}

fn job(id: u64, data_len: usize) -> JobAdded {
    JobAdded {
        id,
        handle: Bytes::from(format!("H:test:{id}")),
        func: Bytes::from_static(b"resize"),
        unique: Bytes::from(format!("u-{id}")),
        reducer: (id % 3 == 0).then(|| Bytes::from_static(b"sum")),
        priority: (id % 3) as u8,
        due_ms: (id % 2 == 0).then_some(1_700_000_000_000 + id),
        data: Bytes::from(vec![(id % 251) as u8; data_len]),
    }
}

fn open(dir: &Path, o: Options) -> (Journal, Replayed) {
    match Journal::open(dir, o) {
        Ok(x) => x,
        Err(e) => panic!("open failed: {e}"),
    }
}

fn open_err(dir: &Path) -> StoreError {
    match Journal::open(dir, opts(FsyncMode::Never)) {
        Ok(_) => panic!("open succeeded"),
        Err(e) => e,
    }
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

/// Bytes of journal files (segments, snapshots and temp snapshots) in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != file::LOCK_NAME)
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// What the journal should replay: live jobs in add order (= id order), retries, schedules.
#[derive(Clone, Debug, Default)]
struct Model {
    jobs: BTreeMap<u64, (JobAdded, u32)>,
    scheds: BTreeMap<Bytes, (u64, u8, Option<ScheduleCounters>)>,
    next_id: u64,
}

impl Model {
    fn add(&mut self, j: &mut Journal, data_len: usize) -> u64 {
        self.next_id += 1;
        let jb = job(self.next_id, data_len);
        j.append(&Record::JobAdded(jb.clone())).unwrap();
        self.jobs.insert(self.next_id, (jb, 0));
        self.next_id
    }
    fn finish(&mut self, j: &mut Journal, id: u64) {
        j.append(&Record::JobFinished {
            id,
            reason: FinishReason::Complete,
        })
        .unwrap();
        self.jobs.remove(&id);
    }
    fn retry(&mut self, j: &mut Journal, id: u64) {
        let r = self.jobs.get_mut(&id).unwrap();
        r.1 += 1;
        j.append(&Record::JobRetried { id, retries: r.1 }).unwrap();
    }
    /// An entry ran. `outcome` 2 and up writes the newer record with counters (made up from
    /// the arguments), so both kinds mix in one journal as after an upgrade.
    fn sched(&mut self, j: &mut Journal, entry: &'static str, fire_ms: u64, outcome: u8) {
        let entry = Bytes::from_static(entry.as_bytes());
        let counters = (outcome >= 2).then_some(ScheduleCounters {
            seen_ms: fire_ms + 1,
            runs: fire_ms,
            failures: outcome.into(),
            skips: 1,
        });
        let outcome = if counters.is_some() { 0 } else { outcome };
        j.append(&Record::ScheduleRan {
            entry: entry.clone(),
            fire_ms,
            outcome,
            counters,
        })
        .unwrap();
        self.scheds.insert(entry, (fire_ms, outcome, counters));
    }
    fn check(&self, r: &Replayed) {
        let got: Vec<(u64, u32)> = r.jobs.iter().map(|j| (j.job.id, j.retries)).collect();
        let want: Vec<(u64, u32)> = self.jobs.iter().map(|(id, (_, n))| (*id, *n)).collect();
        assert_eq!(got, want, "live jobs (id, retries) in add order");
        for rj in &r.jobs {
            assert_eq!(rj.job, self.jobs[&rj.job.id].0, "job {} content", rj.job.id);
        }
        type Sched = (Bytes, u64, u8, Option<ScheduleCounters>);
        let scheds: Vec<Sched> = r
            .schedules
            .iter()
            .map(|s| (s.entry.clone(), s.fire_ms, s.outcome, s.counters))
            .collect();
        let want: Vec<Sched> = self
            .scheds
            .iter()
            .map(|(e, (f, o, c))| (e.clone(), *f, *o, *c))
            .collect();
        assert_eq!(scheds, want, "schedule state");
        assert!(
            r.max_id >= self.next_id,
            "max_id {} < {}",
            r.max_id,
            self.next_id
        );
    }
}

// ---- records ----

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

// ---- replay ----

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

// ---- group commit and fsync modes ----

#[test]
fn group_commit_is_one_write_and_one_fsync() {
    let d = TempDir::new("group");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Always));
    let s0 = j.stats();
    for id in 1..=1000 {
        j.append(&Record::JobAdded(job(id, 64))).unwrap();
    }
    assert!(j.has_pending());
    assert_eq!(j.stats().writes, s0.writes, "append does no I/O");
    let out = j.commit(10).unwrap();
    let s1 = j.stats();
    assert_eq!(s1.writes, s0.writes + 1);
    assert_eq!(s1.fsyncs, s0.fsyncs + 1);
    assert_eq!(out.records, 1000);
    assert!(out.fsynced);
    assert_eq!(
        out.bytes_written, s1.total_bytes,
        "header and records in one write"
    );
    assert_eq!(s1.total_bytes, dir_bytes(d.path()));
    // An empty commit is a no-op.
    assert_eq!(j.commit(11).unwrap(), CommitOutcome::default());
    assert_eq!(j.stats().writes, s1.writes);
    assert_eq!(j.stats().fsyncs, s1.fsyncs);
    assert_eq!(j.next_fsync_deadline(), None);
}

#[test]
fn fsync_every_gives_the_right_next_deadline() {
    let d = TempDir::new("every");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Every(100)));
    assert_eq!(j.next_fsync_deadline(), None);
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    let o = j.commit(1000).unwrap();
    assert!(
        o.fsynced,
        "the first commit after a quiet spell syncs at once"
    );
    assert_eq!(j.next_fsync_deadline(), None);

    j.append(&Record::JobAdded(job(2, 8))).unwrap();
    let o = j.commit(1050).unwrap();
    assert!(o.bytes_written > 0 && !o.fsynced);
    assert_eq!(j.next_fsync_deadline(), Some(1100));
    j.append(&Record::JobAdded(job(3, 8))).unwrap();
    assert!(!j.commit(1070).unwrap().fsynced);
    assert_eq!(j.next_fsync_deadline(), Some(1100));
    assert_eq!(j.commit(1099).unwrap(), CommitOutcome::default());
    let o = j.commit(1100).unwrap();
    assert_eq!((o.fsynced, o.bytes_written, o.records), (true, 0, 0));
    assert_eq!(j.next_fsync_deadline(), None);
    assert_eq!(j.stats().fsyncs, 2);

    // A clock set back does not postpone the fsync.
    j.append(&Record::JobAdded(job(4, 8))).unwrap();
    assert!(j.commit(500).unwrap().fsynced);
    drop(j);
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    assert_eq!(r.jobs.len(), 4);
}

#[test]
fn fsync_never_syncs_only_on_close() {
    let d = TempDir::new("never");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    let o = j.commit(1).unwrap();
    assert!(o.bytes_written > 0 && !o.fsynced);
    assert_eq!(j.next_fsync_deadline(), None);
    assert_eq!(j.stats().fsyncs, 0);
    assert!(j.sync(2).unwrap().fsynced);
    j.close(3).unwrap();
}

#[test]
fn a_write_error_cuts_the_file_back_and_the_batch_is_retried() {
    let d = TempDir::new("wfail");
    let (mut j, _) = open(d.path(), opts(FsyncMode::Always));
    j.append(&Record::JobAdded(job(1, 8))).unwrap();
    j.commit(1).unwrap();
    let path = files(d.path(), "wal-").pop().unwrap();
    let good = fs::metadata(&path).unwrap().len();
    j.append(&Record::JobAdded(job(2, 5000))).unwrap();
    j.faults.fail_write = true;
    let e = j.commit(2).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    assert!(e.to_string().contains("wal-"), "{e}");
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        good,
        "no half batch left"
    );
    assert_eq!(j.stats().write_errors, 1);
    assert!(j.has_pending());
    // Meanwhile the caller gives up on job 2 and accepts job 3.
    j.append(&Record::JobFinished {
        id: 2,
        reason: FinishReason::Fail,
    })
    .unwrap();
    j.append(&Record::JobAdded(job(3, 8))).unwrap();
    let o = j.commit(3).unwrap();
    assert_eq!(o.records, 3);
    drop(j);
    let (_, r) = open(d.path(), opts(FsyncMode::Always));
    assert_eq!(
        r.jobs.iter().map(|x| x.job.id).collect::<Vec<_>>(),
        vec![1, 3]
    );
}

#[test]
fn an_fsync_error_rewrites_the_unsynced_bytes() {
    for mode in [FsyncMode::Always, FsyncMode::Every(50)] {
        let d = TempDir::new("sfail");
        let mut m = Model::default();
        let (mut j, _) = open(d.path(), opts(mode));
        m.add(&mut j, 8);
        j.commit(1000).unwrap();
        m.add(&mut j, 8);
        j.commit(1010).unwrap();
        m.add(&mut j, 8);
        j.faults.fail_fsync = true;
        assert!(j.sync(1020).is_err());
        m.add(&mut j, 8);
        let o = j.sync(1030).unwrap();
        assert!(o.fsynced);
        drop(j);
        let (_, r) = open(d.path(), opts(mode));
        m.check(&r);
        assert_eq!(r.stats.torn_tail, None);
    }
}

#[test]
fn segments_rotate_and_replay_in_order() {
    let d = TempDir::new("rotate");
    let o = Options {
        segment_bytes: 2048,
        ..opts(FsyncMode::Never)
    };
    let mut m = Model::default();
    {
        let (mut j, _) = open(d.path(), o);
        for i in 0..200 {
            let id = m.add(&mut j, 50);
            if i % 7 == 1 {
                m.retry(&mut j, id);
            }
            if i % 3 == 0 {
                m.finish(&mut j, id);
            }
            j.commit(i).unwrap();
        }
        assert_eq!(j.stats().total_bytes, dir_bytes(d.path()));
        j.close(1000).unwrap();
    }
    assert!(files(d.path(), "wal-").len() > 5);
    let (_, r) = open(d.path(), o);
    m.check(&r);
}

// ---- compaction ----

fn small_opts() -> Options {
    Options {
        fsync: FsyncMode::Never,
        segment_bytes: 4096,
        compact_min_bytes: 8192,
        compact_dead_factor: 2.0,
    }
}

/// A journal where most records are dead: 30 long-lived jobs among 300 finished ones.
fn churned(dir: &Path, m: &mut Model) -> Journal {
    let (mut j, _) = open(dir, small_opts());
    for i in 0..330u64 {
        let id = m.add(&mut j, 60);
        if i % 11 == 0 {
            m.retry(&mut j, id);
        } else if i % 11 != 5 {
            m.finish(&mut j, id);
        }
        if i % 50 == 0 {
            m.sched(&mut j, "hourly", i, (i % 3) as u8);
            m.sched(&mut j, "daily", i * 2, 0);
        }
        j.commit(i).unwrap();
    }
    assert_eq!(m.jobs.len(), 60);
    j
}

#[test]
fn compaction_keeps_exactly_the_live_set_in_slices() {
    let d = TempDir::new("compact");
    let mut m = Model::default();
    let mut j = churned(d.path(), &mut m);
    let before = j.stats();
    assert!(j.needs_compaction(), "{before:?}");
    let mut steps = 0;
    while j.compact_step(2048).unwrap() {
        steps += 1;
        assert!(j.is_compacting());
    }
    assert!(steps >= 5, "bounded slices: {steps} steps");
    assert!(!j.is_compacting() && !j.needs_compaction());
    let after = j.stats();
    assert_eq!(after.compactions, 1);
    assert_eq!(after.live_bytes, before.live_bytes);
    assert!(
        after.total_bytes <= after.live_bytes + 2 * FILE_HEADER_LEN,
        "{after:?}"
    );
    assert_eq!(after.total_bytes, dir_bytes(d.path()) + FILE_HEADER_LEN);
    assert_eq!(files(d.path(), "wal-").len(), 0);
    assert_eq!(files(d.path(), "snap-").len(), 1);
    // The journal goes on, and a second compaction reads the snapshot.
    m.add(&mut j, 10);
    j.commit(1000).unwrap();
    drop(j);
    let (mut j, r) = open(d.path(), small_opts());
    m.check(&r);
    let ids: Vec<u64> = m.jobs.keys().copied().collect();
    for id in &ids[..50] {
        m.finish(&mut j, *id);
    }
    j.commit(2000).unwrap();
    while j.compact_step(1000).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), small_opts());
    m.check(&r);
}

/// Runs a compaction with budget 1500, interleaving appends, finishes and retries, and
/// "crashes" (drops the journal) after `crash_after` steps. Returns the model of what was
/// committed, and whether the compaction had finished.
fn compaction_with_traffic(dir: &Path, crash_after: usize) -> (Model, bool) {
    let mut m = Model::default();
    let mut j = churned(dir, &mut m);
    let mut step = 0;
    let mut now = 10_000;
    loop {
        if step == crash_after {
            return (m, false);
        }
        let more = j.compact_step(1500).unwrap();
        step += 1;
        // Traffic between slices: a new job, and old jobs that may or may not be copied yet.
        now += 1;
        let id = m.add(&mut j, 30);
        let old: Vec<u64> = m.jobs.keys().copied().take(2).collect();
        m.finish(&mut j, old[0]);
        m.retry(&mut j, old[1]);
        if step % 2 == 0 {
            m.finish(&mut j, id);
            m.sched(&mut j, "hourly", now, 9);
        }
        j.commit(now).unwrap();
        if !more {
            return (m, true);
        }
    }
}

#[test]
fn compaction_survives_a_crash_after_every_step() {
    let mut k = 0;
    loop {
        let d = TempDir::new("crashstep");
        let (m, done) = compaction_with_traffic(d.path(), k);
        let (_, r) = open(d.path(), small_opts());
        m.check(&r);
        assert!(
            files(d.path(), "snap-")
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(".tmp"))
        );
        if done {
            assert!(k > 5, "the compaction took {k} slices");
            break;
        }
        k += 1;
    }
}

#[test]
fn compaction_survives_a_crash_inside_its_last_step() {
    for stage in [Stage::TmpSynced, Stage::Renamed, Stage::DeletedOne] {
        let d = TempDir::new("crashstage");
        let mut m = Model::default();
        let mut j = churned(d.path(), &mut m);
        j.faults.crash_at = Some(stage);
        let mut n = 0;
        loop {
            match j.compact_step(4096) {
                Ok(true) => {
                    m.add(&mut j, 20);
                    j.commit(n).unwrap();
                    n += 1;
                }
                Err(StoreError::Crash) => break,
                other => panic!("{stage:?}: {other:?}"),
            }
        }
        drop(j);
        let names = files(d.path(), "");
        match stage {
            Stage::TmpSynced => {
                assert!(names.iter().any(|p| p.to_string_lossy().ends_with(".tmp")))
            }
            _ => assert!(names.iter().any(|p| p.to_string_lossy().ends_with(".snap"))),
        }
        let (j, r) = open(d.path(), small_opts());
        m.check(&r);
        let leftovers = if stage == Stage::TmpSynced { 1 } else { 0 };
        assert!(r.stats.leftovers_removed >= leftovers, "{stage:?}");
        assert!(
            files(d.path(), "")
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(".tmp")),
            "{stage:?}"
        );
        // Whatever the stage, the next compaction works and keeps the live set.
        drop(j);
        let (mut j, _) = open(
            d.path(),
            Options {
                compact_min_bytes: 0,
                ..small_opts()
            },
        );
        while j.compact_step(4096).unwrap() {}
        drop(j);
        let (_, r) = open(d.path(), small_opts());
        m.check(&r);
    }
}

#[test]
fn stray_files_from_a_crash_are_handled_at_open() {
    let d = TempDir::new("stray");
    let mut m = Model::default();
    let mut j = churned(d.path(), &mut m);
    while j.compact_step(1 << 20).unwrap() {}
    m.add(&mut j, 5);
    j.commit(1).unwrap();
    drop(j);
    // A temp snapshot, an older snapshot, a covered log and an old repair temp.
    let snap = files(d.path(), "snap-").pop().unwrap();
    let snap_no: u64 = snap.file_name().unwrap().to_str().unwrap()[5..25]
        .parse()
        .unwrap();
    fs::write(
        d.path()
            .join(file::name(Kind::Snapshot, snap_no + 5) + ".tmp"),
        b"junk",
    )
    .unwrap();
    fs::write(
        d.path().join(file::name(Kind::Snapshot, snap_no - 1)),
        b"old",
    )
    .unwrap();
    fs::write(d.path().join(file::name(Kind::Log, snap_no)), b"covered").unwrap();
    fs::write(
        d.path().join("wal-00000000000000000001.log.repair.tmp"),
        b"x",
    )
    .unwrap();
    let (_, r) = open(d.path(), small_opts());
    m.check(&r);
    assert_eq!(r.stats.leftovers_removed, 4);
    assert_eq!(files(d.path(), "snap-"), vec![snap]);
}

#[test]
fn long_waiting_jobs_do_not_make_the_journal_grow_without_bound() {
    // beanstalkd's failure: a few old jobs pin every segment after them. Here 1,000 future
    // jobs wait the whole time while 60,000 jobs come and go around them.
    let d = TempDir::new("bound");
    let o = Options {
        fsync: FsyncMode::Never,
        segment_bytes: 64 << 10,
        compact_min_bytes: 256 << 10,
        compact_dead_factor: 2.0,
    };
    let (mut j, _) = open(d.path(), o);
    let mut m = Model::default();
    for _ in 0..1000 {
        m.add(&mut j, 200);
    }
    j.commit(0).unwrap();
    let live = j.stats().live_bytes;
    let mut max_disk = 0;
    let mut churn_bytes = 0;
    for i in 0..60_000u64 {
        let id = m.add(&mut j, 200);
        j.commit(i).unwrap();
        m.finish(&mut j, id);
        j.commit(i).unwrap();
        churn_bytes += 300;
        j.compact_step(16 << 10).unwrap();
        if i % 100 == 0 {
            max_disk = max_disk.max(dir_bytes(d.path()));
        }
    }
    let s = j.stats();
    assert!(s.compactions >= 5, "{s:?}");
    // Bound: (1 + factor) x live before a compaction starts, plus the snapshot being written
    // (<= live) and the churn during one compaction.
    let bound = (3 * live).max(o.compact_min_bytes) + live + (256 << 10);
    assert!(
        max_disk <= bound,
        "journal reached {max_disk} bytes, bound {bound}, live {live}, churn {churn_bytes}"
    );
    assert!(churn_bytes > 10 * max_disk, "{churn_bytes} {max_disk}");
    eprintln!(
        "live {live} bytes, largest journal {max_disk} bytes, bound {bound}, written {churn_bytes}"
    );
    drop(j);
    let (_, r) = open(d.path(), o);
    m.check(&r);
    assert_eq!(r.jobs.len(), 1000);
}

#[test]
fn compaction_waits_for_unwritten_records_and_syncs_every_mode() {
    let d = TempDir::new("cwait");
    let o = Options {
        fsync: FsyncMode::Every(1_000_000),
        ..small_opts()
    };
    let (mut j, _) = open(d.path(), o);
    let mut m = Model::default();
    for i in 0..200 {
        let id = m.add(&mut j, 60);
        m.finish(&mut j, id);
        j.commit(i).unwrap();
    }
    m.add(&mut j, 60);
    assert!(j.needs_compaction());
    assert!(j.compact_step(1 << 20).unwrap(), "waits for the commit");
    assert!(!j.is_compacting());
    j.commit(300).unwrap();
    assert!(j.next_fsync_deadline().is_some());
    while j.compact_step(1 << 20).unwrap() {}
    assert_eq!(j.stats().compactions, 1);
    drop(j);
    let (_, r) = open(d.path(), o);
    m.check(&r);
}

#[test]
fn compaction_never_rewrites_its_own_snapshot() {
    // With no minimum and factor 0 every compaction opportunity is taken.
    let d = TempDir::new("eager");
    let o = Options {
        compact_min_bytes: 0,
        compact_dead_factor: 0.0,
        ..opts(FsyncMode::Always)
    };
    let mut m = Model::default();
    let (mut j, _) = open(d.path(), o);
    assert!(!j.needs_compaction(), "nothing written yet");
    assert!(!j.compact_step(1 << 20).unwrap());
    m.add(&mut j, 10);
    j.commit(1).unwrap();
    for round in 0..3 {
        assert!(j.needs_compaction(), "round {round}");
        while j.compact_step(1 << 20).unwrap() {}
        // The snapshot is the newest file: nothing to compact until something is written.
        assert!(!j.needs_compaction(), "round {round}");
        assert!(!j.compact_step(1 << 20).unwrap());
        assert_eq!(files(d.path(), "snap-").len(), 1);
        drop(j);
        let (j2, r) = open(d.path(), o);
        m.check(&r);
        assert!(!j2.needs_compaction());
        j = j2;
        m.add(&mut j, 10);
        j.commit(2).unwrap();
    }
}

// ---- measurements (run by hand) ----

/// A temp dir under `$GEARWHEEL_STORE_BENCH_DIR` (to measure another disk) or the temp dir.
fn bench_dir(name: &str) -> TempDir {
    match std::env::var_os("GEARWHEEL_STORE_BENCH_DIR") {
        Some(b) => {
            let p = PathBuf::from(b).join(format!("gearwheel-store-bench-{name}"));
            let _ = fs::remove_dir_all(&p);
            TempDir(p)
        }
        None => TempDir::new(name),
    }
}

/// `cargo test --release --lib store::tests::measure -- --ignored --nocapture`
#[test]
#[ignore]
fn measure_commit_rates() {
    use std::time::{Duration, Instant};
    for (label, mode, per_commit) in [
        ("fsync always, 1 job/commit", FsyncMode::Always, 1),
        ("fsync always, 100 jobs/commit", FsyncMode::Always, 100),
        ("fsync every 100 ms, 1 job/commit", FsyncMode::Every(100), 1),
        ("fsync never, 1 job/commit", FsyncMode::Never, 1),
    ] {
        let d = bench_dir("rate");
        let (mut j, _) = open(d.path(), opts(mode));
        let t = Instant::now();
        let (mut commits, mut id) = (0u64, 0u64);
        let mut fsync_us = Vec::new();
        while t.elapsed() < Duration::from_secs(2) {
            for _ in 0..per_commit {
                id += 1;
                j.append(&Record::JobAdded(job(id, 100))).unwrap();
            }
            let o = j.commit(t.elapsed().as_millis() as u64).unwrap();
            if o.fsynced {
                fsync_us.push(o.fsync_us);
            }
            commits += 1;
        }
        let secs = t.elapsed().as_secs_f64();
        fsync_us.sort_unstable();
        let p50 = fsync_us.get(fsync_us.len() / 2).copied().unwrap_or(0);
        let p99 = fsync_us
            .get(fsync_us.len() * 99 / 100)
            .copied()
            .unwrap_or(0);
        println!(
            "{label}: {:.0} commits/s, {:.0} jobs/s, fsync p50 {p50} us p99 {p99} us",
            commits as f64 / secs,
            id as f64 / secs
        );
    }
}

#[test]
#[ignore]
fn measure_replay() {
    use std::time::Instant;
    let d = bench_dir("replay");
    let n = 1_000_000u64;
    {
        let (mut j, _) = open(d.path(), opts(FsyncMode::Never));
        for id in 1..=n {
            j.append(&Record::JobAdded(job(id, 100))).unwrap();
            if id % 1000 == 0 {
                j.commit(id).unwrap();
            }
        }
        j.close(0).unwrap();
    }
    let bytes = dir_bytes(d.path());
    let t = Instant::now();
    let (_, r) = open(d.path(), opts(FsyncMode::Never));
    println!(
        "replay of {} jobs ({} MB, {} bytes per job with 100 data bytes): {:?}",
        r.jobs.len(),
        bytes >> 20,
        bytes / n,
        t.elapsed()
    );
}
