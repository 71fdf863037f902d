//! Unit tests of the journal on real files in temp directories: the shared helpers (temp
//! dirs, jobs, a model of what replay must give back), and one file per topic.

mod after_sets;
mod audit;
mod commit;
mod compaction;
mod failed;
mod hooks;
mod leases;
mod limits;
mod outputs;
mod pending;
mod records;
mod replay;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

use super::compact::Stage;
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

/// Small segments that compact early: compaction tests see many segments in few records.
fn small_opts() -> Options {
    Options {
        fsync: FsyncMode::Never,
        segment_bytes: 4096,
        compact_min_bytes: 8192,
        compact_dead_factor: 2.0,
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
    /// the arguments), so both kinds mix in one journal as after an upgrade; odd outcomes from
    /// 3 up also carry marks (the record's version 2), and multiples of 5 duration alerts'
    /// counts (version 3).
    fn sched(&mut self, j: &mut Journal, entry: &'static str, fire_ms: u64, outcome: u8) {
        let entry = Bytes::from_static(entry.as_bytes());
        let counters = (outcome >= 2).then_some(ScheduleCounters {
            seen_ms: fire_ms + 1,
            runs: fire_ms,
            failures: outcome.into(),
            skips: 1,
            paused: outcome % 2 == 1,
            skip_next: outcome % 4 == 3,
            last_manual: outcome % 2 == 1,
            too_long: if outcome % 5 == 0 { fire_ms } else { 0 },
            too_short: if outcome % 5 == 0 { 1 } else { 0 },
        });
        let outcome = if counters.is_some() { 0 } else { outcome };
        j.append(&Record::ScheduleRan(ScheduleRan {
            entry: entry.clone(),
            fire_ms,
            outcome,
            counters,
        }))
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
