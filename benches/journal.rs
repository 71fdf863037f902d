//! Journal measurements through the public API (`Journal::open`, `append`, `commit`,
//! `close`) on real files: commit rates and fsync latencies per `FsyncMode`, and the time to
//! replay a million jobs at open. They depend on the disk, so they report figures and assert
//! nothing. Set `GEARWHEEL_STORE_BENCH_DIR` to measure another disk than the temp dir's.
//!
//! `cargo bench --bench journal [-- FILTER]`

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Harness;
use gearwheel::store::{FsyncMode, JobAdded, Journal, Options, Record, Replayed};

/// A journal directory under `$GEARWHEEL_STORE_BENCH_DIR` or the temp dir, removed on drop.
struct BenchDir(PathBuf);

impl BenchDir {
    fn new(name: &str) -> BenchDir {
        let base = std::env::var_os("GEARWHEEL_STORE_BENCH_DIR")
            .map_or_else(std::env::temp_dir, PathBuf::from);
        let p = base.join(format!(
            "gearwheel-store-bench-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        BenchDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for BenchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn open(dir: &Path, fsync: FsyncMode) -> (Journal, Replayed) {
    let opts = Options {
        fsync,
        ..Options::default()
    };
    match Journal::open(dir, opts) {
        Ok(x) => x,
        Err(e) => panic!("open {}: {e}", dir.display()),
    }
}

/// A background job like the server journals, with `data_len` bytes of data.
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

/// Bytes of journal files in `dir` (all but the lock file).
fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "LOCK")
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Commits for `secs` per mode, `per_commit` jobs of 100 data bytes each.
fn commit_rates(h: &mut Harness, secs: Duration) {
    for (label, mode, per_commit) in [
        ("fsync always, 1 job/commit", FsyncMode::Always, 1),
        ("fsync always, 100 jobs/commit", FsyncMode::Always, 100),
        ("fsync every 100 ms, 1 job/commit", FsyncMode::Every(100), 1),
        ("fsync never, 1 job/commit", FsyncMode::Never, 1),
    ] {
        let d = BenchDir::new("rate");
        let (mut j, _) = open(d.path(), mode);
        let t = Instant::now();
        let (mut commits, mut id) = (0u64, 0u64);
        let mut fsync_us = Vec::new();
        while t.elapsed() < secs {
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
        h.note(format!(
            "{label}: {:.0} commits/s, {:.0} jobs/s, fsync p50 {p50} us p99 {p99} us",
            commits as f64 / secs,
            id as f64 / secs
        ));
    }
}

/// Writes `n` jobs of 100 data bytes (a commit per 1,000), then times one open.
fn replay(h: &mut Harness, n: u64) {
    let d = BenchDir::new("replay");
    {
        let (mut j, _) = open(d.path(), FsyncMode::Never);
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
    let (_, r) = open(d.path(), FsyncMode::Never);
    let took = t.elapsed();
    h.note(format!(
        "replay of {} jobs ({} MB, {} bytes per job with 100 data bytes): {took:?}",
        r.jobs.len(),
        bytes >> 20,
        bytes / n,
    ));
}

fn main() {
    let mut h = Harness::from_args("journal");
    if h.enabled("commit") {
        let ms = h.size(2_000, 100);
        commit_rates(&mut h, Duration::from_millis(ms as u64));
    }
    if h.enabled("replay") {
        let n = h.size(1_000_000, 10_000);
        replay(&mut h, n as u64);
    }
    h.finish();
}
