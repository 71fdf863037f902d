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
//! Records (`Record`, record.rs): `JobAdded` (a background job, with its handle counter as
//! `id`), `JobFinished`, `JobRetried`, `ScheduleRan` (newest per entry wins), and the rest
//! listed in `kinds!` there. The engine emits them as they are and takes `Replayed` back
//! (`Engine::restore`). Ids must not be reused while the journal lives: `Replayed::max_id`.
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
//! 4   u8   type     1 JobAdded, 2 JobFinished, 3 JobRetried, 4 ScheduleRan, 5 ScheduleState,
//!                   ... (`kinds!` in record.rs numbers every type)
//! 5   u8   version  payload layout version (1; ScheduleState 1 or 2)
//! 6   u16  hcrc     low 16 bits of CRC-32C(bytes 0..6): a damaged length is never trusted
//! 8   u32  crc      CRC-32C(bytes 0..6 ++ payload)
//! 12  ...  payload
//!   JobAdded:    id u64 | priority u8 | flags u8 (1 due, 2 reducer) | due_ms u64 |
//!                handle, func, unique, reducer: each u32 length + bytes | data (the rest)
//!   JobFinished: id u64 | reason u8          JobRetried: id u64 | retries u32
//!   ScheduleRan: fire_ms u64 | outcome u8 | entry (the rest)      (read; no longer written)
//!   ScheduleState: fire_ms u64 (0: none yet) | seen_ms u64 (latest time run or skipped) |
//!                  runs u64 | failures u64 | skips u64 | [marks u8, versions 2 and 3] |
//!                  [too_long u64 | too_short u64, version 3] | entry
//!                  marks: 1 paused, 2 skip the next run, 4 last run manual; written as
//!                  version 2 only when a mark is set (version 1 reads as no marks), as
//!                  version 3 only when a duration alert was counted (else they read as 0)
//!   (both are `Record::ScheduleRan`, the second with its counters; the newest per entry wins)
//!   FailedKept (6): id u64 | attempts u32 | first_ms u64 | last_ms u64 | flags u8 (1 entry) |
//!                  lengths u32 of handle, func, unique, entry, error | those bytes | data
//!   FailedGone (7): handle (the whole payload)
//!   JobAttempts (8): id u64 | failures u32 | first_ms u64 | flags u8 (1 entry, 2 manual,
//!                  4 backfill; the marks set only on such runs) | entry (the rest); first_ms is the first failure's time, or with 0 failures (a schedule
//!                  run's first attempt) the run's scheduled time
//!   FunctionLease (9): ms u64 (0: none) | function (the rest); the newest per function
//!                  wins (`timeout FUNCTION DURATION`)
//!   FunctionRetry (10): retries u32 | base_ms u64 | max_ms u64 | function (the rest)
//!   OutputKept (13): started_ms u64 | ended_ms u64 | output_bytes u64 | scheduled_ms u64 |
//!                  attempts u32 | result_len u32 | ending u8 (0 complete, 1 failed,
//!                  2 exception, 3 expired) | flags u8 (1 entry, 2 error, 4 scheduled,
//!                  8 result, 16 manual, 32 backfill) | lengths u32 of handle, func, worker, entry, error | those
//!                  bytes | output (the rest); the newest per handle counts
//!   OutputGone (14): handle (the whole payload)
//!   FunctionLimits (11): limit u32 | rate count u32 | rate window ms u64 | paused u8 |
//!                  expire ms u64 (0: none each) | function (the rest); the newest per
//!                  function wins (`limit`, `rate`, `pause function`, `expire`)
//!   Audit (12): seq u64 | floor u64 (older seqs are dead) | at_ms u64 | lengths u32 of
//!                  identity, peer, command | those bytes | outcome (the rest)
//!   HookQueued (15): id u64 | queued_ms u64 | URL length u32 | URL | body (the rest); live
//!                  until the HookDone of its id
//!   HookDone (16): id u64
//!   AfterSet (17): entry length u32 | entry | then per parent's run, to the end:
//!                  scheduled_ms u64 | ended_ms u64 | ok u8 | id length u32 | id |
//!                  handle length u32 | handle; the newest per entry wins (`@after`)
//!   SchedulePending (18): queued_ms u64 (0: none) | spans u32 | each span: after_ms u64,
//!                  to_ms u64, left u64, backfill u8 | entry (the rest); the newest per
//!                  entry wins, an empty one ends it (kept as a tombstone)
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
//!
//! # Modules
//!
//! - `journal`: the `Journal` (open, append, commit, the write path).
//! - `live`: the live set (and which records stay live: `LiveSet::live_key`); `compact`:
//!   compaction; `replay`: reading files back at open into `Replayed`.
//! - `record` and `file`: the formats above; `error`: `StoreError`.
//! - `repair`: `serve --repair`.
//! - `handles`: DIR/HANDLES, the server's reserved handle numbers.
//! - `metrics`: the journal's numbers for `/metrics`.
//! - `tests`: the journal's unit tests.

mod compact;
mod error;
mod file;
mod handles;
mod journal;
mod live;
mod metrics;
mod record;
mod repair;
mod replay;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use error::StoreError;
pub use handles::{handles_path, read_reserved, write_reserved};
pub use journal::Journal;
pub use metrics::{FSYNC_BUCKETS_US, FsyncHistogram, JournalMetrics};
pub use record::{
    AfterParent, AfterSet, Audit, FailedKept, FinishReason, FunctionLease, FunctionLimits,
    FunctionRetry, HookQueued, JobAdded, JobAttempts, OutputKept, PendingSpan, Record,
    ScheduleCounters, SchedulePending, ScheduleRan,
};
pub use repair::{DroppedRange, RepairReport, RepairedFile, repair};

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
    pub schedules: Vec<ScheduleRan>,
    /// The failed list, oldest first.
    pub failed: Vec<FailedKept>,
    /// Job leases by function (`timeout FUNCTION DURATION`), sorted by function.
    pub leases: Vec<FunctionLease>,
    /// Function limits (`limit`, `rate`, `pause function`, `expire`), sorted by function.
    pub limits: Vec<FunctionLimits>,
    /// Function retry policies (`retry FUNCTION`), sorted by function.
    pub func_retries: Vec<FunctionRetry>,
    /// Kept outputs of ended jobs, oldest first.
    pub outputs: Vec<OutputKept>,
    /// The audit trail, oldest first.
    pub audit: Vec<Audit>,
    /// The newest set of each `@after` entry (empty ones left out), sorted by entry.
    pub after_sets: Vec<AfterSet>,
    /// Schedule entries' runs waiting to be made (backfill, `catchup=all`, `overlap=queue`),
    /// sorted by entry.
    pub pending: Vec<SchedulePending>,
    /// Webhook alerts not yet delivered or given up, oldest first.
    pub hooks: Vec<HookQueued>,
    /// The largest job id ever handed out (records and file headers): start the handle
    /// counter after it.
    pub max_id: u64,
    pub stats: ReplayStats,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayedJob {
    pub job: JobAdded,
    pub retries: u32,
    /// A retry: its JobAttempts record.
    pub attempts: Option<JobAttempts>,
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

/// Largest write buffer kept between commits; a bigger one (one huge batch) is given back.
const KEEP_BUF: usize = 4 << 20;
