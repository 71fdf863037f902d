//! The journal: the durable queue behind `--data-dir`. Owns the files under DIR (segments,
//! snapshots, the lock) and nothing else: no sockets, no jobs' behaviour, no clock (time comes
//! in as `now_ms`; the one exception is an `Instant` around fsync to report its latency).
//!
//! # API
//!
//! ```text
//! Journal::open(dir, Options) -> Result<(Journal, Replayed), StoreError>   // lock, replay
//! journal.append(&Record) -> Result<(), StoreError>     // encode into the buffer; no I/O
//! journal.commit(now_ms) -> Result<CommitOutcome, StoreError>  // ONE write (+ fsync per mode)
//! journal.next_fsync_deadline() -> Option<u64>          // FsyncMode::Every: commit again then
//! journal.compact_step(budget_bytes) -> Result<bool, StoreError>  // true: more work pending
//! journal.stats() -> JournalStats                       // `show journal`
//! journal.close(now_ms)                                 // commit + fsync whatever the mode
//! repair(dir) -> Result<RepairReport, StoreError>       // `serve --repair`, before open
//! ```
//!
//! Records (`Record`): `JobAdded` (a background job, with its handle counter as `id`),
//! `JobFinished`, `JobRetried`, `ScheduleRan` (newest per entry wins). Ids must not be reused
//! while the journal lives: start the handle counter at `Replayed::max_id + 1`.
//!
//! Loop contract: append while handling a turn, then `commit` once before flushing replies
//! (in every mode, so a reply always follows the `write()`); under `FsyncMode::Always` hold
//! replies that promise durability (JOB_CREATED of a background job) until it returns Ok.
//! On Err nothing of the batch is durable and it stays buffered: the next commit writes it
//! again. A caller that gives up on those jobs appends `JobFinished` for them, so a later
//! commit cannot bring them back. Then call `compact_step` while it returns true (poll with
//! a zero timeout meanwhile), and wake for `next_fsync_deadline()`.
//!
//! # Files
//!
//! DIR/LOCK (flock, holds the owner's pid), log segments `wal-<20 digits>.log` numbered from 1
//! and consecutive, and at most one snapshot `snap-<N>.snap` that replaces every log segment
//! numbered <= N. Replay reads the snapshot, then the logs > N in order. A new segment is
//! started after a commit once the current one reaches `segment_bytes`.
//!
//! File header, 32 bytes: `GWJRNL` | format version u8 (1) | kind u8 (1 log, 2 snapshot) |
//! number u64 | id floor u64 (the largest job id handed out before the file began, so the
//! handle counter survives compaction of finished jobs) | 4 zero bytes | CRC-32C of bytes 0..28.
//!
//! Record, little-endian:
//!
//! ```text
//! 0   u32  len      payload length
//! 4   u8   type     1 JobAdded, 2 JobFinished, 3 JobRetried, 4 ScheduleRan, 5 ScheduleState
//! 5   u8   version  payload layout version (1)
//! 6   u16  hcrc     low 16 bits of CRC-32C(bytes 0..6): a damaged length is never trusted
//! 8   u32  crc      CRC-32C(bytes 0..6 ++ payload)
//! 12  ...  payload
//!   JobAdded:    id u64 | priority u8 | flags u8 (1 due, 2 reducer) | due_ms u64 |
//!                handle, func, unique, reducer: each u32 length + bytes | data (the rest)
//!   JobFinished: id u64 | reason u8          JobRetried: id u64 | retries u32
//!   ScheduleRan: fire_ms u64 | outcome u8 | entry (the rest)      (read; no longer written)
//!   ScheduleState: fire_ms u64 (0: none yet) | seen_ms u64 (latest time run or skipped) |
//!                  runs u64 | failures u64 | skips u64 | entry
//!   (both are `Record::ScheduleRan`, the second with its counters; the newest per entry wins)
//! ```
//!
//! # Damage at replay
//!
//! A record that ends the *last log segment* and is incomplete (short header, short body) or
//! fails its checksum with nothing intact after it is a torn write: it is cut off (the file is
//! truncated) with a warning. Anything else (a bad record with intact records after it, damage
//! in an earlier segment or in a snapshot, a bad file header, a missing segment) stops start-up
//! with a `StoreError` naming the file and byte offset; `repair` then keeps every intact record.
//!
//! # Durability per `FsyncMode`
//!
//! - kill -9 (process crash, OS keeps running): nothing whose `write()` returned is lost, in
//!   any mode; records appended but not yet committed are lost, and their replies were never
//!   sent because commit comes before the flush.
//! - Power loss or kernel crash: `Always` loses nothing acknowledged (replies wait for the
//!   fsync; new segments and snapshots also get a directory fsync); the batch in flight may be
//!   torn. `Every(ms)` loses at most the last `ms` ms of commits (their replies were sent).
//!   `Never` loses what the kernel had not written back (Linux: typically up to ~30 s).
//!   A power loss in the middle of a multi-page write can leave a hole followed by intact
//!   records of the same unacknowledged batch: replay refuses to guess and names the offset;
//!   `repair` keeps the intact records.
//!
//! Write errors (disk full): the file is cut back to its last good length, so it never holds
//! half a batch, and the batch is retried. A failed fsync also cuts the unsynced bytes and
//! rewrites them from the buffer (the kernel may have dropped the pages, and a second fsync
//! would report success for them), so in `Every` mode the buffer keeps the unsynced bytes.
//!
//! # Compaction
//!
//! The journal tracks the live set itself (live jobs with their record's location and size,
//! the newest ScheduleRan per entry), so it knows live and total bytes. When total reaches
//! `compact_min_bytes` and dead bytes are `compact_dead_factor` times the live ones, the
//! active segment is closed (number N) and new appends go to N+1; `compact_step` then reads
//! the old files in order, `budget` bytes per call, and copies each record that is still live
//! (plus one JobRetried per retried job) into `snap-N.snap.tmp`. At the end: fsync it, rename
//! it to `snap-N.snap`, fsync DIR, then delete the old files. Replay copes with every state in
//! between: a `.tmp` is deleted; with `snap-N` present, older snapshots and logs <= N are
//! deleted; records after N that finish or retry jobs of the snapshot apply on top of it
//! (finishes of unknown ids are ignored). Long-waiting jobs are copied forward, so they never
//! pin old segments (beanstalkd's unbounded binlog).

mod error;
mod file;
mod handles;
mod metrics;
mod record;
mod repair;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;

pub use error::StoreError;
pub use handles::{handles_path, read_reserved, write_reserved};
pub use metrics::{FSYNC_BUCKETS_US, FsyncHistogram, JournalMetrics};
pub use record::{FinishReason, JobAdded, Record, ScheduleCounters};
pub use repair::{DroppedRange, RepairReport, RepairedFile, repair};

use file::{FILE_HEADER_LEN, FileHeader, Kind};
use record::{HEADER_LEN, RETRIED_LEN};

/// When the journal calls fsync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncMode {
    /// After every commit that wrote something; the caller holds replies until it returns.
    Always,
    /// At most once per this many milliseconds; replies are not held.
    Every(u64),
    /// Never (the kernel writes back when it likes); `close` still fsyncs.
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    pub fsync: FsyncMode,
    /// Start a new log segment after a commit that leaves the current one this large.
    pub segment_bytes: u64,
    /// Never compact a journal smaller than this.
    pub compact_min_bytes: u64,
    /// Compact when dead bytes >= this factor times live bytes.
    pub compact_dead_factor: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fsync: FsyncMode::Always,
            segment_bytes: 64 << 20,
            compact_min_bytes: 16 << 20,
            compact_dead_factor: 2.0,
        }
    }
}

/// What one `commit` did, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitOutcome {
    /// Records in the batch that was written.
    pub records: usize,
    pub bytes_written: u64,
    pub fsynced: bool,
    /// Duration of the fsync (file and, for a new file, directory), in microseconds.
    pub fsync_us: u64,
}

/// The state rebuilt from the files at `open`.
#[derive(Debug, Default)]
pub struct Replayed {
    /// Live jobs in the order they were added.
    pub jobs: Vec<ReplayedJob>,
    /// The newest ScheduleRan per entry, sorted by entry.
    pub schedules: Vec<ScheduleRun>,
    /// The largest job id ever handed out (records and file headers): start the handle
    /// counter after it.
    pub max_id: u64,
    pub stats: ReplayStats,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedJob {
    pub job: JobAdded,
    pub retries: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRun {
    pub entry: Bytes,
    pub fire_ms: u64,
    pub outcome: u8,
    /// `None` from a journal written before the counters were kept.
    pub counters: Option<ScheduleCounters>,
}

/// For the start-up log line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    pub files: usize,
    pub bytes: u64,
    pub records: u64,
    pub torn_tail: Option<TornTail>,
    /// Files of an interrupted compaction or repair that were deleted.
    pub leftovers_removed: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub path: PathBuf,
    pub offset: u64,
    pub bytes_cut: u64,
}

/// For `show journal`.
#[derive(Clone, Debug, PartialEq)]
pub struct JournalStats {
    pub fsync: FsyncMode,
    /// Segment and snapshot files, the active one included once it exists.
    pub files: usize,
    pub live_jobs: usize,
    pub schedule_entries: usize,
    pub live_bytes: u64,
    /// Bytes in the journal's files plus buffered bytes not yet written.
    pub total_bytes: u64,
    /// Appended, not yet written.
    pub pending_bytes: u64,
    /// Written since the last fsync.
    pub unsynced_bytes: u64,
    /// write() calls on segments (group commit: one per commit).
    pub writes: u64,
    pub fsyncs: u64,
    /// Failed writes and fsyncs so far.
    pub write_errors: u64,
    pub last_fsync_us: u64,
    /// `now_ms` of the last fsync (0: none yet).
    pub last_fsync_ms: u64,
    pub compactions: u64,
    pub compacting: bool,
}

/// Where a live job's JobAdded record is. `slot` is its position during replay only.
#[derive(Clone, Copy, Debug)]
struct JobLoc {
    off: u64,
    file: u32,
    len: u32,
    retries: u32,
    slot: u32,
}

impl JobLoc {
    fn live_len(&self) -> u64 {
        u64::from(self.len)
            + if self.retries > 0 {
                u64::from(RETRIED_LEN)
            } else {
                0
            }
    }
}

#[derive(Clone, Copy, Debug)]
struct SchedLoc {
    off: u64,
    file: u32,
    len: u32,
    fire_ms: u64,
    outcome: u8,
    counters: Option<ScheduleCounters>,
}

/// Hashes job ids cheaply. Ids come from the server's own counter, never from a peer, so
/// SipHash's flooding resistance buys nothing here. The low bits stay the id, so consecutive
/// jobs land in neighbouring buckets (cache-friendly appends and replay); the top bits, which
/// hashbrown uses as a tag, come from a multiply so tags still differ. Any hash is correct;
/// this one made replaying a million jobs about twice as fast as SipHash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        let n = self.0 ^ n;
        self.0 = n ^ (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (0x7F << 57));
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// The live set: which records still matter, and how many bytes they take.
#[derive(Debug, Default)]
struct LiveSet {
    jobs: IdMap<JobLoc>,
    schedules: HashMap<Bytes, SchedLoc>,
    live_bytes: u64,
    max_id: u64,
}

impl LiveSet {
    /// Applies a record found at (`file`, `off`), `len` bytes long. Returns the job it
    /// finished or replaced, if any.
    fn apply(&mut self, rec: &Record, file: u32, off: u64, len: u32, slot: u32) -> Option<JobLoc> {
        match rec {
            Record::JobAdded(j) => {
                self.max_id = self.max_id.max(j.id);
                self.live_bytes += u64::from(len);
                let loc = JobLoc {
                    off,
                    file,
                    len,
                    retries: 0,
                    slot,
                };
                let old = self.jobs.insert(j.id, loc);
                if let Some(o) = &old {
                    // Ids are not reused; if one is, the newer job wins and the older is dead.
                    self.live_bytes -= o.live_len();
                }
                old
            }
            Record::JobFinished { id, .. } => {
                let old = self.jobs.remove(id);
                if let Some(o) = &old {
                    self.live_bytes -= o.live_len();
                }
                old
            }
            Record::JobRetried { id, retries } => {
                if let Some(l) = self.jobs.get_mut(id) {
                    self.live_bytes -= l.live_len();
                    l.retries = *retries;
                    self.live_bytes += l.live_len();
                }
                None
            }
            Record::ScheduleRan {
                entry,
                fire_ms,
                outcome,
                counters,
            } => {
                let new = SchedLoc {
                    off,
                    file,
                    len,
                    fire_ms: *fire_ms,
                    outcome: *outcome,
                    counters: *counters,
                };
                self.live_bytes += u64::from(len);
                if let Some(s) = self.schedules.get_mut(entry.as_ref()) {
                    self.live_bytes -= u64::from(s.len);
                    *s = new;
                } else {
                    self.schedules.insert(entry.clone(), new);
                }
                None
            }
        }
    }
}

/// A closed file: the snapshot or a log segment that is no longer appended to.
#[derive(Clone, Debug)]
struct SegInfo {
    kind: Kind,
    no: u64,
    path: PathBuf,
    len: u64,
}

impl SegInfo {
    fn id(&self) -> u32 {
        file::file_id(self.kind, self.no)
    }
}

#[derive(Debug, Default)]
struct Counters {
    writes: u64,
    fsyncs: u64,
    write_errors: u64,
    last_fsync_us: u64,
    compactions: u64,
    compaction_writes: u64,
}

/// An unsynced temp snapshot is fsynced once it holds this much, so the final fsync is short.
const COMPACT_SYNC_EVERY: u64 = 8 << 20;
/// Largest write buffer kept between commits; a bigger one (one huge batch) is given back.
const KEEP_BUF: usize = 4 << 20;

#[derive(Debug)]
struct Compaction {
    no: u64,
    tmp_path: PathBuf,
    final_path: PathBuf,
    tmp: File,
    tmp_unsynced: u64,
    renamed: bool,
    inputs: Vec<SegInfo>,
    input: usize,
    reader: Option<File>,
    read_off: u64,
    rbuf: Vec<u8>,
    snap: SnapOut,
}

/// The snapshot being written: its length so far, bytes not yet written, and where each
/// copied record landed (applied to the live set once the snapshot is durable).
#[derive(Debug, Default)]
struct SnapOut {
    len: u64,
    out: Vec<u8>,
    moved_jobs: Vec<(u64, u64)>,
    moved_scheds: Vec<(Bytes, u64)>,
}

#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    TmpSynced,
    Renamed,
    DeletedOne,
}

#[cfg(test)]
#[derive(Debug, Default)]
struct Faults {
    /// The next write stops half way with ENOSPC.
    fail_write: bool,
    /// The next fsync fails with EIO.
    fail_fsync: bool,
    /// Compaction stops at this stage as if the process died (no clean-up).
    crash_at: Option<Stage>,
}

/// The embedded journal. See the module documentation.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    opts: Options,
    _lock: file::DirLock,
    live: LiveSet,
    /// The snapshot (first) and closed log segments, oldest first; compaction inputs excluded.
    closed: Vec<SegInfo>,
    cur_no: u64,
    cur_path: PathBuf,
    /// `None` until the first write into a new segment creates the file.
    cur: Option<File>,
    /// Bytes of the active file written so far.
    file_len: u64,
    /// Bytes of the active file known to be on disk (fsynced).
    synced_len: u64,
    /// File offset of `buf[0]`: the active file's bytes from here on are in `buf`, so a
    /// failed write or fsync can be redone (all of them in Always/Every mode).
    buf_base: u64,
    buf: Vec<u8>,
    written_in_buf: usize,
    batch_records: usize,
    /// Written since the last fsync.
    dirty: bool,
    /// A failed write could not be cut back: cut before the next write.
    needs_truncate: bool,
    dir_sync_pending: bool,
    last_fsync_ms: u64,
    compaction: Option<Compaction>,
    /// After a failed compaction, wait until the journal reaches this size to try again.
    compact_retry_at: u64,
    counters: Counters,
    #[cfg(test)]
    faults: Faults,
}

impl Journal {
    /// Locks DIR (creating it if missing), replays it, finishes or discards an interrupted
    /// compaction, cuts a torn tail, and returns the journal ready to append and the state to
    /// feed the engine.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<(Journal, Replayed), StoreError> {
        let dir = dir.as_ref().to_path_buf();
        file::ensure_dir(&dir)?;
        let lock = file::lock(&dir)?;
        let listing = file::list(&dir)?;
        let mut stats = ReplayStats {
            leftovers_removed: remove_leftovers(&dir, &listing)?,
            ..ReplayStats::default()
        };
        let snap = listing.snaps.last_key_value().map(|(n, p)| (*n, p.clone()));
        let snap_no = snap.as_ref().map_or(0, |s| s.0);
        for p in &listing.corrupt {
            log::warn!(
                "journal: {} is a copy of a damaged file kept by --repair; delete it once it is not needed",
                p.display()
            );
        }
        for p in &listing.unknown {
            log::warn!("journal: ignoring {}: not a journal file", p.display());
        }

        let logs: Vec<(u64, PathBuf)> = listing
            .logs
            .range(snap_no + 1..)
            .map(|(n, p)| (*n, p.clone()))
            .collect();
        let mut expect = snap.as_ref().map(|_| snap_no + 1);
        for (no, _) in &logs {
            if let Some(e) = expect.filter(|e| e != no) {
                return Err(StoreError::MissingSegment {
                    dir,
                    name: file::name(Kind::Log, e),
                });
            }
            expect = Some(no + 1);
        }

        let mut rb = Rebuild::default();
        let mut closed = Vec::new();
        if let Some((no, path)) = snap {
            let end = replay_file(&mut rb, &path, Kind::Snapshot, no, false, &mut stats)?;
            closed.push(SegInfo {
                kind: Kind::Snapshot,
                no,
                path,
                len: end.len,
            });
        }
        let mut active = None;
        let n_logs = logs.len();
        for (i, (no, path)) in logs.into_iter().enumerate() {
            let last = i + 1 == n_logs;
            let end = replay_file(&mut rb, &path, Kind::Log, no, last, &mut stats)?;
            if last {
                active = Some((no, path, end));
            } else {
                closed.push(SegInfo {
                    kind: Kind::Log,
                    no,
                    path,
                    len: end.len,
                });
            }
        }

        let Rebuild { live, slots } = rb;
        let mut jobs = Vec::with_capacity(live.jobs.len());
        for j in slots.into_iter().flatten() {
            let retries = live.jobs.get(&j.id).map_or(0, |l| l.retries);
            jobs.push(ReplayedJob { job: *j, retries });
        }
        let mut schedules: Vec<ScheduleRun> = live
            .schedules
            .iter()
            .map(|(e, s)| ScheduleRun {
                entry: e.clone(),
                fire_ms: s.fire_ms,
                outcome: s.outcome,
                counters: s.counters,
            })
            .collect();
        schedules.sort_by(|a, b| a.entry.cmp(&b.entry));
        let max_id = live.max_id;

        let mut j = Journal {
            dir,
            opts,
            _lock: lock,
            live,
            closed,
            cur_no: 0,
            cur_path: PathBuf::new(),
            cur: None,
            file_len: 0,
            synced_len: 0,
            buf_base: 0,
            buf: Vec::new(),
            written_in_buf: 0,
            batch_records: 0,
            dirty: false,
            needs_truncate: false,
            dir_sync_pending: false,
            last_fsync_ms: 0,
            compaction: None,
            compact_retry_at: 0,
            counters: Counters::default(),
            #[cfg(test)]
            faults: Faults::default(),
        };
        match active {
            Some((no, path, end)) => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(StoreError::io(&path, "open"))?;
                // What replay used may have been written but not synced before the crash.
                f.sync_data().map_err(StoreError::io(&path, "fsync"))?;
                j.cur_no = no;
                j.cur_path = path;
                j.cur = Some(f);
                if end.header_ok {
                    j.file_len = end.len;
                    j.synced_len = end.len;
                    j.buf_base = end.len;
                } else {
                    j.start_buffer_with_header();
                    j.dir_sync_pending = true;
                }
            }
            None => {
                j.cur_no = snap_no + 1;
                j.cur_path = j.dir.join(file::name(Kind::Log, j.cur_no));
                j.start_buffer_with_header();
            }
        }
        let replayed = Replayed {
            jobs,
            schedules,
            max_id,
            stats,
        };
        Ok((j, replayed))
    }

    /// Encodes `rec` into the write buffer and updates the live set. No I/O; the record is
    /// durable after the next successful `commit` (and fsync, per mode).
    pub fn append(&mut self, rec: &Record) -> Result<(), StoreError> {
        let off = self.buf_base + self.buf.len() as u64;
        let len =
            record::encode(&mut self.buf, rec).map_err(|b| StoreError::TooLarge { bytes: b })?;
        self.batch_records += 1;
        let fid = file::file_id(Kind::Log, self.cur_no);
        self.live.apply(rec, fid, off, len, 0);
        Ok(())
    }

    /// Writes everything appended since the last commit with one `write()`, then fsyncs if
    /// the mode says so (Always: now; Every(ms): if `ms` have passed since the last fsync).
    /// Nothing to write and no fsync due: a no-op.
    pub fn commit(&mut self, now_ms: u64) -> Result<CommitOutcome, StoreError> {
        self.commit_inner(now_ms, false)
    }

    /// Like `commit`, but fsyncs whatever the mode (graceful stop, tests).
    pub fn sync(&mut self, now_ms: u64) -> Result<CommitOutcome, StoreError> {
        self.commit_inner(now_ms, true)
    }

    /// Under `FsyncMode::Every`, when bytes are written but not yet synced: the time at which
    /// `commit` will fsync them. The loop should not sleep past it.
    pub fn next_fsync_deadline(&self) -> Option<u64> {
        match self.opts.fsync {
            FsyncMode::Every(ms) if self.dirty => Some(self.last_fsync_ms.saturating_add(ms)),
            _ => None,
        }
    }

    /// Records appended and not yet written.
    pub fn has_pending(&self) -> bool {
        self.unwritten()
    }

    /// True when a compaction should start (the next `compact_step` starts it).
    pub fn needs_compaction(&self) -> bool {
        if self.compaction.is_some() {
            return false;
        }
        let total = self.total_bytes();
        let live = self.live.live_bytes;
        self.compactable()
            && total >= self.opts.compact_min_bytes
            && total >= self.compact_retry_at
            && (total - live) as f64 >= self.opts.compact_dead_factor * live as f64
    }

    pub fn is_compacting(&self) -> bool {
        self.compaction.is_some()
    }

    /// Does a bounded slice of compaction: starts one if `needs_compaction()`, then reads at
    /// most `budget_bytes` of old files (at least one record) and copies the live records.
    /// Returns Ok(true) while more work remains. Call it after `commit` (it does not start
    /// while appended records are unwritten). On Err the compaction is abandoned, its temp
    /// file deleted, and the journal goes on as before; it is tried again once the journal
    /// has grown a little.
    pub fn compact_step(&mut self, budget_bytes: usize) -> Result<bool, StoreError> {
        if self.compaction.is_none() {
            if !self.needs_compaction() {
                return Ok(false);
            }
            if self.unwritten() {
                return Ok(true);
            }
            match self.start_compaction() {
                Ok(Some(c)) => self.compaction = Some(c),
                Ok(None) => return Ok(false),
                Err(e) => {
                    self.compaction_failed();
                    return Err(e);
                }
            }
        }
        let Some(mut c) = self.compaction.take() else {
            return Ok(false);
        };
        let r = match self.compact_slice(&mut c, budget_bytes) {
            Ok(true) => {
                self.compaction = Some(c);
                return Ok(true);
            }
            Ok(false) => self.finish_compaction(&mut c),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => Ok(false),
            #[cfg(test)]
            Err(StoreError::Crash) => Err(StoreError::Crash),
            Err(e) => {
                self.abort_compaction(c);
                self.compaction_failed();
                Err(e)
            }
        }
    }

    /// Commits and fsyncs whatever the mode, abandons a compaction in progress, and unlocks.
    pub fn close(mut self, now_ms: u64) -> Result<(), StoreError> {
        if let Some(c) = self.compaction.take() {
            self.abort_compaction(c);
        }
        self.commit_inner(now_ms, true).map(|_| ())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True if the job's JobAdded was appended and no JobFinished since.
    pub fn is_live(&self, id: u64) -> bool {
        self.live.jobs.contains_key(&id)
    }

    pub fn stats(&self) -> JournalStats {
        let pending = (self.buf.len() - self.written_in_buf) as u64;
        let files = self.closed.len()
            + self.compaction.as_ref().map_or(0, |c| c.inputs.len())
            + usize::from(self.cur.is_some());
        JournalStats {
            fsync: self.opts.fsync,
            files,
            live_jobs: self.live.jobs.len(),
            schedule_entries: self.live.schedules.len(),
            live_bytes: self.live.live_bytes,
            total_bytes: self.total_bytes(),
            pending_bytes: if self.unwritten() { pending } else { 0 },
            unsynced_bytes: self.file_len.saturating_sub(self.synced_len),
            writes: self.counters.writes,
            fsyncs: self.counters.fsyncs,
            write_errors: self.counters.write_errors,
            last_fsync_us: self.counters.last_fsync_us,
            last_fsync_ms: self.last_fsync_ms,
            compactions: self.counters.compactions,
            compacting: self.compaction.is_some(),
        }
    }

    // ---- write path ----

    fn total_bytes(&self) -> u64 {
        let closed: u64 = self.closed.iter().map(|s| s.len).sum();
        let inputs: u64 = self
            .compaction
            .as_ref()
            .map_or(0, |c| c.inputs.iter().map(|s| s.len).sum());
        closed + inputs + self.buf_base + self.buf.len() as u64
    }

    /// Appended bytes that are not in the file yet (a pending header alone does not count).
    fn unwritten(&self) -> bool {
        let header_only = self.buf_base == 0
            && self.written_in_buf == 0
            && self.buf.len() == FILE_HEADER_LEN as usize;
        self.buf.len() > self.written_in_buf && !header_only
    }

    fn start_buffer_with_header(&mut self) {
        self.file_len = 0;
        self.synced_len = 0;
        self.buf_base = 0;
        self.written_in_buf = 0;
        self.buf.clear();
        self.buf.extend_from_slice(&file::encode_header(FileHeader {
            kind: Kind::Log,
            no: self.cur_no,
            floor: self.live.max_id,
        }));
    }

    fn commit_inner(&mut self, now_ms: u64, force_sync: bool) -> Result<CommitOutcome, StoreError> {
        let mut out = CommitOutcome::default();
        if self.unwritten() {
            out.bytes_written = self.write_buffered()?;
            out.records = std::mem::take(&mut self.batch_records);
        }
        let due = self.dirty
            && (force_sync
                || match self.opts.fsync {
                    FsyncMode::Always => true,
                    // A clock set back must not postpone the fsync.
                    FsyncMode::Every(ms) => {
                        now_ms < self.last_fsync_ms
                            || now_ms >= self.last_fsync_ms.saturating_add(ms)
                    }
                    FsyncMode::Never => false,
                });
        if due {
            out.fsync_us = self.fsync_active()?;
            out.fsynced = true;
            self.last_fsync_ms = now_ms;
        } else if self.opts.fsync == FsyncMode::Never {
            self.drop_written();
        }
        if self.cur.is_some() && self.buf.is_empty() && self.file_len >= self.opts.segment_bytes {
            self.rotate()?;
        }
        Ok(out)
    }

    /// Writes `buf[written_in_buf..]` at the end of the active file, creating it if needed.
    fn write_buffered(&mut self) -> Result<u64, StoreError> {
        if self.cur.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&self.cur_path)
                .map_err(StoreError::io(&self.cur_path, "create"))?;
            self.cur = Some(f);
            self.dir_sync_pending = true;
        }
        let Some(f) = self.cur.as_ref() else {
            return Ok(0);
        };
        if self.needs_truncate {
            f.set_len(self.file_len)
                .map_err(StoreError::io(&self.cur_path, "truncate"))?;
            self.needs_truncate = false;
        }
        let data = &self.buf[self.written_in_buf..];
        #[cfg(test)]
        let r = if std::mem::take(&mut self.faults.fail_write) {
            let _ = f.write_at(&data[..data.len() / 2], self.file_len);
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        } else {
            write_all_at(f, data, self.file_len, &mut self.counters.writes)
        };
        #[cfg(not(test))]
        let r = write_all_at(f, data, self.file_len, &mut self.counters.writes);
        match r {
            Ok(()) => {
                let n = data.len() as u64;
                self.file_len += n;
                self.written_in_buf = self.buf.len();
                self.dirty = true;
                Ok(n)
            }
            Err(e) => {
                self.counters.write_errors += 1;
                // Never leave half a batch in the file: later records would follow garbage.
                if f.set_len(self.file_len).is_err() {
                    self.needs_truncate = true;
                }
                Err(StoreError::io(&self.cur_path, "write")(e))
            }
        }
    }

    /// fsyncs the active file (and DIR after a new file). Returns the time taken in µs.
    fn fsync_active(&mut self) -> Result<u64, StoreError> {
        let Some(f) = self.cur.as_ref() else {
            return Ok(0);
        };
        let t = Instant::now();
        let mut r = f
            .sync_data()
            .map_err(StoreError::io(&self.cur_path, "fsync"));
        #[cfg(test)]
        if std::mem::take(&mut self.faults.fail_fsync) {
            r = Err(StoreError::io(&self.cur_path, "fsync")(
                std::io::Error::from_raw_os_error(libc::EIO),
            ));
        }
        if r.is_ok() && self.dir_sync_pending {
            r = file::sync_dir(&self.dir);
            if r.is_ok() {
                self.dir_sync_pending = false;
            }
        }
        let us = t.elapsed().as_micros() as u64;
        match r {
            Ok(()) => {
                self.counters.fsyncs += 1;
                self.counters.last_fsync_us = us;
                self.dirty = false;
                self.synced_len = self.file_len;
                self.drop_written();
                Ok(us)
            }
            Err(e) => {
                self.counters.write_errors += 1;
                // The kernel may have dropped the pages it failed to write, and a second
                // fsync would not report them: cut the unsynced bytes and write them again.
                if self.written_in_buf > 0 {
                    self.file_len = self.buf_base;
                    self.written_in_buf = 0;
                    if f.set_len(self.file_len).is_err() {
                        self.needs_truncate = true;
                    }
                }
                Err(e)
            }
        }
    }

    /// Forgets buffered bytes that are in the file (after an fsync, or in Never mode).
    fn drop_written(&mut self) {
        if self.written_in_buf == 0 || self.written_in_buf != self.buf.len() {
            return;
        }
        self.buf.clear();
        self.written_in_buf = 0;
        self.buf_base = self.file_len;
        if self.buf.capacity() > KEEP_BUF {
            self.buf.shrink_to(KEEP_BUF / 4);
        }
    }

    /// Closes the active segment; the next one is created by the next write. Only called with
    /// nothing buffered.
    fn rotate(&mut self) -> Result<(), StoreError> {
        if self.cur_no >= file::MAX_NO {
            return Err(StoreError::corrupt(
                &self.cur_path,
                self.file_len,
                "segment numbers are exhausted",
            ));
        }
        self.cur = None;
        self.closed.push(SegInfo {
            kind: Kind::Log,
            no: self.cur_no,
            path: std::mem::take(&mut self.cur_path),
            len: self.file_len,
        });
        self.cur_no += 1;
        self.cur_path = self.dir.join(file::name(Kind::Log, self.cur_no));
        self.dirty = false;
        self.start_buffer_with_header();
        Ok(())
    }

    // ---- compaction ----

    /// Something was written since the last snapshot. (Without this, a snapshot N with no
    /// segment after it would be compacted into a new snapshot N: itself.)
    fn compactable(&self) -> bool {
        (self.cur.is_some() && self.file_len > 0)
            || self.closed.last().is_some_and(|s| s.kind == Kind::Log)
    }

    fn compaction_failed(&mut self) {
        let step = (self.opts.compact_min_bytes / 4).max(1 << 20);
        self.compact_retry_at = self.total_bytes().saturating_add(step);
    }

    fn start_compaction(&mut self) -> Result<Option<Compaction>, StoreError> {
        if !self.compactable() {
            return Ok(None);
        }
        // An active file with nothing written stays active: closed, it would be a segment
        // without a header in the middle of the sequence.
        if self.cur.is_some() && self.file_len > 0 {
            if !self.buf.is_empty() {
                // Every mode: written, not yet synced; the old segment must be complete.
                self.fsync_active()?;
            }
            self.rotate()?;
        }
        let no = self.cur_no - 1;
        if no == 0
            || !self
                .closed
                .last()
                .is_some_and(|s| s.kind == Kind::Log && s.no == no)
        {
            return Ok(None);
        }
        let tmp_path = self.dir.join(format!(
            "{}{}",
            file::name(Kind::Snapshot, no),
            file::TMP_SUFFIX
        ));
        let tmp = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp_path)
            .map_err(StoreError::io(&tmp_path, "create"))?;
        let mut snap = SnapOut::default();
        snap.out.extend_from_slice(&file::encode_header(FileHeader {
            kind: Kind::Snapshot,
            no,
            floor: self.live.max_id,
        }));
        log::info!(
            "journal: compacting {} bytes ({} live) into {}",
            self.total_bytes(),
            self.live.live_bytes,
            file::name(Kind::Snapshot, no)
        );
        Ok(Some(Compaction {
            no,
            final_path: self.dir.join(file::name(Kind::Snapshot, no)),
            tmp_path,
            tmp,
            tmp_unsynced: 0,
            renamed: false,
            inputs: std::mem::take(&mut self.closed),
            input: 0,
            reader: None,
            read_off: 0,
            rbuf: Vec::new(),
            snap,
        }))
    }

    /// Reads about `budget` bytes of old files and copies their live records. Ok(false) when
    /// every input has been read.
    fn compact_slice(&mut self, c: &mut Compaction, budget: usize) -> Result<bool, StoreError> {
        let budget = budget.max(HEADER_LEN) as u64;
        let mut read = 0u64;
        let mut chunk = std::mem::take(&mut c.rbuf);
        let r = loop {
            if c.input >= c.inputs.len() {
                break Ok(false);
            }
            if read >= budget {
                break Ok(true);
            }
            let (fid, seg_len) = (c.inputs[c.input].id(), c.inputs[c.input].len);
            if c.reader.is_none() {
                let p = &c.inputs[c.input].path;
                match File::open(p) {
                    Ok(f) => c.reader = Some(f),
                    Err(e) => break Err(StoreError::io(p, "open")(e)),
                }
                c.read_off = FILE_HEADER_LEN;
            }
            if c.read_off >= seg_len {
                c.input += 1;
                c.reader = None;
                continue;
            }
            match self.copy_chunk(c, &mut chunk, fid, seg_len, budget - read) {
                Ok(n) => read += n,
                Err(e) => break Err(e),
            }
        };
        c.rbuf = chunk;
        if c.rbuf.capacity() > KEEP_BUF {
            c.rbuf = Vec::new();
        }
        r?;
        self.flush_compaction_out(c)?;
        Ok(c.input < c.inputs.len())
    }

    /// Reads one chunk of the current input at `c.read_off` and copies its live records.
    /// Returns the bytes consumed (whole records only).
    fn copy_chunk(
        &mut self,
        c: &mut Compaction,
        chunk: &mut Vec<u8>,
        fid: u32,
        seg_len: u64,
        want: u64,
    ) -> Result<u64, StoreError> {
        let path = &c.inputs[c.input].path;
        let base = c.read_off;
        let rest = seg_len - base;
        let want = want.max(HEADER_LEN as u64).min(rest) as usize;
        chunk.resize(want, 0);
        let Some(reader) = c.reader.as_ref() else {
            return Ok(0);
        };
        reader
            .read_exact_at(chunk, base)
            .map_err(StoreError::io(path, "read"))?;
        let mut p = 0usize;
        while p + HEADER_LEN <= chunk.len() {
            let at = base + p as u64;
            let h = record::parse_header(&chunk[p..]).ok_or_else(|| {
                StoreError::corrupt(path, at, "damaged record header (found while compacting)")
            })?;
            if at + h.total() > seg_len {
                return Err(StoreError::corrupt(
                    path,
                    at,
                    "record runs past the end of the file",
                ));
            }
            let end = p + h.total() as usize;
            if end > chunk.len() {
                if p > 0 {
                    break;
                }
                // One record larger than the budget: read all of it.
                let have = chunk.len();
                chunk.resize(end, 0);
                reader
                    .read_exact_at(&mut chunk[have..], base + have as u64)
                    .map_err(StoreError::io(path, "read"))?;
            }
            if !h.body_ok(&chunk[p + HEADER_LEN..end]) {
                return Err(StoreError::corrupt(
                    path,
                    at,
                    format!(
                        "checksum mismatch in a {} record (found while compacting)",
                        record::type_name(h.ty)
                    ),
                ));
            }
            copy_if_live(&self.live, &mut c.snap, h.ty, &chunk[p..end], fid, at);
            p = end;
        }
        if p == 0 {
            return Err(StoreError::corrupt(
                path,
                base,
                "file ends inside a record header",
            ));
        }
        c.read_off += p as u64;
        Ok(p as u64)
    }

    fn flush_compaction_out(&mut self, c: &mut Compaction) -> Result<(), StoreError> {
        let s = &mut c.snap;
        if s.out.is_empty() {
            return Ok(());
        }
        write_all_at(&c.tmp, &s.out, s.len, &mut self.counters.compaction_writes)
            .map_err(StoreError::io(&c.tmp_path, "write"))?;
        s.len += s.out.len() as u64;
        c.tmp_unsynced += s.out.len() as u64;
        s.out.clear();
        if s.out.capacity() > KEEP_BUF {
            s.out = Vec::new();
        }
        if c.tmp_unsynced >= COMPACT_SYNC_EVERY {
            c.tmp
                .sync_data()
                .map_err(StoreError::io(&c.tmp_path, "fsync"))?;
            c.tmp_unsynced = 0;
        }
        Ok(())
    }

    fn finish_compaction(&mut self, c: &mut Compaction) -> Result<(), StoreError> {
        self.flush_compaction_out(c)?;
        c.tmp
            .sync_data()
            .map_err(StoreError::io(&c.tmp_path, "fsync"))?;
        #[cfg(test)]
        if self.faults.crash_at == Some(Stage::TmpSynced) {
            return Err(StoreError::Crash);
        }
        fs::rename(&c.tmp_path, &c.final_path).map_err(StoreError::io(&c.final_path, "rename"))?;
        c.renamed = true;
        file::sync_dir(&self.dir)?;
        #[cfg(test)]
        if self.faults.crash_at == Some(Stage::Renamed) {
            return Err(StoreError::Crash);
        }

        // The snapshot is durable: it now holds the live records of every input.
        let snap_id = file::file_id(Kind::Snapshot, c.no);
        let is_input = |f: u32| f & file::SNAP_BIT != 0 || u64::from(f) <= c.no;
        for (id, off) in c.snap.moved_jobs.drain(..) {
            if let Some(l) = self.live.jobs.get_mut(&id).filter(|l| is_input(l.file)) {
                l.file = snap_id;
                l.off = off;
            }
        }
        for (e, off) in c.snap.moved_scheds.drain(..) {
            if let Some(s) = self.live.schedules.get_mut(&e).filter(|s| is_input(s.file)) {
                s.file = snap_id;
                s.off = off;
            }
        }
        let before: u64 = c.inputs.iter().map(|s| s.len).sum();
        for seg in c.inputs.drain(..) {
            if let Err(e) = remove_if_present(&seg.path) {
                // Covered by the snapshot: the next open deletes it.
                log::warn!("{e}");
            }
            #[cfg(test)]
            if self.faults.crash_at == Some(Stage::DeletedOne) {
                return Err(StoreError::Crash);
            }
        }
        self.closed.insert(
            0,
            SegInfo {
                kind: Kind::Snapshot,
                no: c.no,
                path: c.final_path.clone(),
                len: c.snap.len,
            },
        );
        self.counters.compactions += 1;
        self.compact_retry_at = 0;
        log::info!(
            "journal: compacted {before} bytes into {} ({} bytes)",
            c.final_path.display(),
            c.snap.len
        );
        Ok(())
    }

    /// Gives up a compaction: deletes its output and puts its inputs back.
    fn abort_compaction(&mut self, c: Compaction) {
        drop(c.tmp);
        let _ = fs::remove_file(&c.tmp_path);
        if c.renamed {
            // Every input still exists, so the snapshot can go.
            let _ = fs::remove_file(&c.final_path);
        }
        let mut inputs = c.inputs;
        inputs.append(&mut self.closed);
        self.closed = inputs;
    }
}

/// Copies one intact record from a compaction input to the snapshot if it is still live.
fn copy_if_live(live: &LiveSet, c: &mut SnapOut, ty: u8, rec: &[u8], fid: u32, at: u64) {
    let payload = &rec[HEADER_LEN..];
    let new_off = c.len + c.out.len() as u64;
    match ty {
        record::T_JOB_ADDED => {
            let Some(id) = record::job_id(payload) else {
                return;
            };
            let Some(l) = live.jobs.get(&id).filter(|l| l.file == fid && l.off == at) else {
                return;
            };
            c.out.extend_from_slice(rec);
            c.moved_jobs.push((id, new_off));
            if l.retries > 0 {
                // Cannot fail: a retried record is 24 bytes.
                let _ = record::encode(
                    &mut c.out,
                    &Record::JobRetried {
                        id,
                        retries: l.retries,
                    },
                );
            }
        }
        record::T_SCHEDULE_RAN | record::T_SCHEDULE_STATE => {
            let Some(entry) = record::schedule_entry(ty, payload) else {
                return;
            };
            let Some((key, _)) = live
                .schedules
                .get_key_value(entry)
                .filter(|(_, s)| s.file == fid && s.off == at)
            else {
                return;
            };
            c.out.extend_from_slice(rec);
            c.moved_scheds.push((key.clone(), new_off));
        }
        // Finished and retried records are folded into the live set.
        _ => {}
    }
}

/// `pwrite` until done, counting the calls; EINTR is retried.
fn write_all_at(f: &File, mut data: &[u8], mut off: u64, calls: &mut u64) -> std::io::Result<()> {
    while !data.is_empty() {
        *calls += 1;
        match f.write_at(data, off) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                data = &data[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Deletes what an interrupted compaction or repair left: temp files, snapshots older than
/// the newest, and log segments the newest snapshot covers. Returns how many.
fn remove_leftovers(dir: &Path, listing: &file::Listing) -> Result<usize, StoreError> {
    let snap_no = listing.snaps.last_key_value().map_or(0, |(n, _)| *n);
    let mut leftovers = listing.temps.clone();
    leftovers.extend(listing.snaps.range(..snap_no).map(|(_, p)| p.clone()));
    leftovers.extend(listing.logs.range(..=snap_no).map(|(_, p)| p.clone()));
    for p in &leftovers {
        log::info!(
            "journal: removing {}, left over from an interrupted compaction or repair",
            p.display()
        );
        remove_if_present(p)?;
    }
    if !leftovers.is_empty() {
        file::sync_dir(dir)?;
    }
    Ok(leftovers.len())
}

fn remove_if_present(p: &Path) -> Result<(), StoreError> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(p, "delete")(e)),
        _ => Ok(()),
    }
}

// ---- replay ----

#[derive(Debug, Default)]
struct Rebuild {
    live: LiveSet,
    /// Jobs in the order they were added; finished ones become None.
    slots: Vec<Option<Box<JobAdded>>>,
}

impl Rebuild {
    fn apply(&mut self, rec: Record, file: u32, off: u64, len: u32) {
        let slot = self.slots.len() as u32;
        if let Some(old) = self.live.apply(&rec, file, off, len, slot) {
            if let Some(s) = self.slots.get_mut(old.slot as usize) {
                *s = None;
            }
        }
        if let Record::JobAdded(j) = rec {
            self.slots.push(Some(Box::new(j)));
        }
    }
}

/// How a replayed file ends.
struct FileEnd {
    /// Its length after any torn tail was cut.
    len: u64,
    /// False when a torn header was cut (the file is now empty).
    header_ok: bool,
}

#[derive(Clone, Copy)]
enum Damage {
    ShortHeader,
    BadHeader,
    ShortBody(u8),
    BadChecksum { ty: u8, end: u64 },
}

/// Replays one file into `rb`. Only the last log segment may have its tail cut.
fn replay_file(
    rb: &mut Rebuild,
    path: &Path,
    kind: Kind,
    no: u64,
    last: bool,
    stats: &mut ReplayStats,
) -> Result<FileEnd, StoreError> {
    let f = File::open(path).map_err(StoreError::io(path, "open"))?;
    let len = f.metadata().map_err(StoreError::io(path, "stat"))?.len();
    let tail_ok = last && kind == Kind::Log;
    stats.files += 1;
    stats.bytes += len;
    let mut r = BufReader::with_capacity(256 << 10, f);
    let mut hb = [0u8; FILE_HEADER_LEN as usize];
    let header = if len >= FILE_HEADER_LEN {
        r.read_exact(&mut hb)
            .map_err(StoreError::io(path, "read"))?;
        file::parse_header(&hb)
    } else {
        Err("the file is shorter than its 32-byte header".to_string())
    };
    let header = match header {
        Ok(h) if h.kind == kind && h.no == no => h,
        Ok(h) => {
            return Err(StoreError::corrupt(
                path,
                0,
                format!("its header names {}", file::name(h.kind, h.no)),
            ));
        }
        Err(why) => {
            if tail_ok && find_intact(path, FILE_HEADER_LEN, len)?.is_none() {
                cut(path, 0, len, "a torn file header", stats)?;
                return Ok(FileEnd {
                    len: 0,
                    header_ok: false,
                });
            }
            return Err(StoreError::corrupt(path, 0, why));
        }
    };
    rb.live.max_id = rb.live.max_id.max(header.floor);
    let fid = file::file_id(kind, no);
    let mut off = FILE_HEADER_LEN;
    let mut scratch = Vec::new();
    loop {
        let remaining = len - off;
        if remaining == 0 {
            return Ok(FileEnd {
                len,
                header_ok: true,
            });
        }
        let damage = if remaining < HEADER_LEN as u64 {
            Damage::ShortHeader
        } else {
            let mut rh = [0u8; HEADER_LEN];
            r.read_exact(&mut rh)
                .map_err(StoreError::io(path, "read"))?;
            match record::parse_header(&rh) {
                None => Damage::BadHeader,
                Some(h) if h.total() > remaining => Damage::ShortBody(h.ty),
                Some(h) => {
                    scratch.resize(h.len as usize, 0);
                    r.read_exact(&mut scratch)
                        .map_err(StoreError::io(path, "read"))?;
                    if h.body_ok(&scratch) {
                        let rec = record::decode(h.ty, &scratch).map_err(|why| {
                            StoreError::corrupt(
                                path,
                                off,
                                format!(
                                    "a {} record passes its checksum but is malformed ({why})",
                                    record::type_name(h.ty)
                                ),
                            )
                        })?;
                        rb.apply(rec, fid, off, h.total() as u32);
                        stats.records += 1;
                        off += h.total();
                        if scratch.capacity() > KEEP_BUF {
                            scratch = Vec::new();
                        }
                        continue;
                    }
                    Damage::BadChecksum {
                        ty: h.ty,
                        end: off + h.total(),
                    }
                }
            }
        };
        let what = match damage {
            Damage::ShortHeader => "the file ends inside a record header".to_string(),
            Damage::BadHeader => "damaged record header".to_string(),
            Damage::ShortBody(ty) => {
                format!("the file ends inside a {} record", record::type_name(ty))
            }
            Damage::BadChecksum { ty, .. } => {
                format!("checksum mismatch in a {} record", record::type_name(ty))
            }
        };
        if !tail_ok {
            let why = if kind == Kind::Snapshot {
                " (in a snapshot, which is complete before it is used)"
            } else {
                " (not the last segment, so this is not a torn write)"
            };
            return Err(StoreError::corrupt(path, off, format!("{what}{why}")));
        }
        // A torn write leaves a short file; intact records after the damage mean it is not one.
        let scan_from = match damage {
            Damage::ShortHeader | Damage::ShortBody(_) => None,
            Damage::BadHeader => Some(off + 1),
            Damage::BadChecksum { end, .. } => (end < len).then_some(end),
        };
        if let Some(from) = scan_from {
            if let Some(at) = find_intact(path, from, len)? {
                return Err(StoreError::corrupt(
                    path,
                    off,
                    format!("{what}, and intact records follow at byte offset {at}"),
                ));
            }
        }
        cut(path, off, len, &what, stats)?;
        return Ok(FileEnd {
            len: off,
            header_ok: true,
        });
    }
}

/// The offset of the first intact record in `path` at or after `from`.
fn find_intact(path: &Path, from: u64, len: u64) -> Result<Option<u64>, StoreError> {
    if from >= len {
        return Ok(None);
    }
    let f = File::open(path).map_err(StoreError::io(path, "open"))?;
    let mut data = vec![0u8; (len - from) as usize];
    f.read_exact_at(&mut data, from)
        .map_err(StoreError::io(path, "read"))?;
    Ok(record::next_intact(&data, 0).map(|o| from + o as u64))
}

/// Cuts a torn tail off the last segment.
fn cut(
    path: &Path,
    off: u64,
    len: u64,
    what: &str,
    stats: &mut ReplayStats,
) -> Result<(), StoreError> {
    log::warn!(
        "journal: {}: cut {} bytes at byte offset {off} ({what}): a write the server did not finish before it stopped",
        path.display(),
        len - off
    );
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(StoreError::io(path, "open"))?;
    f.set_len(off).map_err(StoreError::io(path, "truncate"))?;
    f.sync_data().map_err(StoreError::io(path, "fsync"))?;
    stats.torn_tail = Some(TornTail {
        path: path.to_path_buf(),
        offset: off,
        bytes_cut: len - off,
    });
    Ok(())
}
