//! Journal records: the typed values, their byte layout, and the checks that tell an intact
//! record from a torn or damaged one. Pure code: no files, no clock.
//!
//! - `mod.rs`: the record types (`kinds!`, `Record` and its structs), their sizes, the header
//!   check and the readers of a live record's key from its bytes.
//! - `encode`: a record to its bytes.
//! - `decode`: a checked payload back to its `Record`.

mod decode;
mod encode;

pub(crate) use decode::decode;
pub(crate) use encode::encode;

use bytes::Bytes;

/// Bytes in front of every payload: length, type, version, header check, checksum.
pub(crate) const HEADER_LEN: usize = 12;
/// The payload layout version written for every type today.
pub(crate) const VERSION: u8 = 1;
/// ScheduleState with a marks byte after the counters (paused, skip the next run, last run
/// manual). Written only when a mark is set, so a journal without marks stays version 1 and
/// readable by the release before; version 1 records read as "no marks".
pub(crate) const SCHEDULE_STATE_MARKED: u8 = 2;
/// ScheduleState with the marks byte and then the duration alerts' counts (too_long,
/// too_short). Written only when one of them is not 0, so a journal without duration alerts
/// stays version 1 or 2, readable by the releases before.
pub(crate) const SCHEDULE_STATE_DURATIONS: u8 = 3;

/// Declares `RecordKind`, the record types, from one line each: its type number (the next free
/// one, never reused: old journals are read back with it) and its name in messages.
/// `RecordKind::of` reads a type number; every other use is a `match` on `RecordKind`.
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident = $n:literal, $name:literal;)*) => {
        /// A record's type, the byte after its length.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum RecordKind {
            $($(#[$doc])* $kind = $n,)*
        }

        impl RecordKind {
            /// The type a number names, if this version knows it.
            pub(crate) fn of(ty: u8) -> Option<RecordKind> {
                match ty {
                    $($n => Some(RecordKind::$kind),)*
                    _ => None,
                }
            }

            /// Its name, for `show journal`, errors and repair's report.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(RecordKind::$kind => $name,)*
                }
            }
        }
    };
}

kinds! {
    JobAdded = 1, "job-added";
    JobFinished = 2, "job-finished";
    JobRetried = 3, "job-retried";
    /// A schedule entry's last run (older journals; no longer written).
    ScheduleRan = 4, "schedule-ran";
    /// A schedule entry's last run with its counters; written instead of ScheduleRan since
    /// the counters were kept, and read alongside it.
    ScheduleState = 5, "schedule-state";
    /// A background job failed for good and is kept in the failed list; it also ends the job
    /// (one record, so a torn write cannot leave the job both queued and failed).
    FailedKept = 6, "failed-kept";
    /// A job left the failed list (dropped, retried, or past its bounds).
    FailedGone = 7, "failed-gone";
    /// A job is a retry: its failed attempts so far, when the first failed, and its schedule
    /// entry (the policy it retries under). Written right after the retry's JobAdded.
    JobAttempts = 8, "job-attempts";
    /// A function's job lease (`timeout FUNCTION DURATION`); the newest per function wins.
    FunctionLease = 9, "function-lease";
    /// A function's retry policy (`retry FUNCTION N BACKOFF`); the newest per function counts.
    FunctionRetry = 10, "function-retry";
    /// An ended job's kept output and result (`--keep-output`); the newest per handle counts.
    OutputKept = 13, "output-kept";
    /// A kept output left (past `--keep-results` or `--keep-output-total`).
    OutputGone = 14, "output-gone";
    /// A function's limits (`limit`, `rate`, `pause function`, `expire`); the newest per
    /// function wins.
    FunctionLimits = 11, "function-limits";
    /// An operator's action (the audit trail): live while among the newest `--keep-audit`.
    Audit = 12, "audit";
    /// An alert waiting to be POSTed to a webhook (`on_failure=https://...`): live until its
    /// HookDone.
    HookQueued = 15, "hook-queued";
    /// A webhook's alert delivered or given up: its HookQueued is dead.
    HookDone = 16, "hook-done";
    /// An `@after` entry's parents' runs since it last ran; the newest per entry wins (an
    /// empty set too: a tombstone).
    AfterSet = 17, "after-set";
    /// A schedule entry's runs waiting to be made: a backfill's and `catchup=all`'s times
    /// still to come, and the run `overlap=queue` holds; the newest per entry wins, an empty
    /// one ends it.
    SchedulePending = 18, "schedule-pending";
}

/// Fixed part of a FunctionRetry payload: retries, first backoff, cap; the name follows.
const FUNCTION_RETRY_FIXED: usize = 4 + 8 + 8;
/// Fixed part of a JobAttempts payload: id, failures, first failure, has-entry byte.
const JOB_ATTEMPTS_FIXED: usize = 8 + 4 + 8 + 1;
/// Fixed part of an OutputKept payload: started, ended, bytes printed, scheduled time,
/// attempts, result length, ending, flags, five field lengths (handle, function, worker,
/// entry, error); the output is the rest.
const OUTPUT_KEPT_FIXED: usize = 8 * 4 + 4 + 4 + 1 + 1 + 5 * 4;
/// Where OutputKept's handle length is (the first of the five).
const OUTPUT_HANDLE_LEN_AT: usize = 8 * 4 + 4 + 4 + 1 + 1;
const OUTPUT_ENTRY: u8 = 1;
const OUTPUT_ERROR: u8 = 2;
const OUTPUT_SCHEDULED: u8 = 4;
const OUTPUT_RESULT: u8 = 8;
const OUTPUT_MANUAL: u8 = 16;
const OUTPUT_BACKFILL: u8 = 32;
/// JobAttempts' flags byte: the entry follows; the run was manual; it was a backfill's. The
/// two marks are set only on such runs, so a journal without them reads in the release before.
const ATTEMPTS_ENTRY: u8 = 1;
const ATTEMPTS_MANUAL: u8 = 2;
const ATTEMPTS_BACKFILL: u8 = 4;
/// Fixed part of an Audit payload: seq, floor, time, three field lengths (identity, peer,
/// command); the outcome is the rest.
const AUDIT_FIXED: usize = 8 + 8 + 8 + 3 * 4;
/// Fixed part of a FunctionLease payload: ms u64 (0: none); the function is the rest.
const FUNCTION_LEASE_FIXED: usize = 8;
/// Fixed part of a FunctionLimits payload: limit u32, rate count u32, rate window u64, paused
/// u8, expire u64; the function is the rest.
const FUNCTION_LIMITS_FIXED: usize = 4 + 4 + 8 + 1 + 8;
/// Fixed part of one parent's run in an AfterSet: scheduled, ended, ok, two field lengths.
const AFTER_PARENT_FIXED: usize = 8 + 8 + 1 + 4 + 4;
/// Fixed part of a SchedulePending payload: the queued run (0: none), the span count; then
/// each span (after, to, left, backfill byte) and the entry (the rest).
const SCHEDULE_PENDING_FIXED: usize = 8 + 4;
/// One span of a SchedulePending payload.
const PENDING_SPAN_LEN: usize = 8 + 8 + 8 + 1;

/// Fixed part of a HookQueued payload: id, queued time, the URL's length; URL and body follow.
const HOOK_QUEUED_FIXED: usize = 8 + 8 + 4;
const HOOK_DONE_PAYLOAD: usize = 8;
const JOB_FINISHED_PAYLOAD: usize = 9;
const JOB_RETRIED_PAYLOAD: usize = 12;
/// Fixed part of a JobAdded payload: id, priority, flags, due time, four field lengths.
const JOB_ADDED_FIXED: usize = 8 + 1 + 1 + 8 + 4 * 4;
const SCHEDULE_RAN_FIXED: usize = 8 + 1;
/// Fixed part of a ScheduleState payload: last run, last seen, runs, failures, skips.
const SCHEDULE_STATE_FIXED: usize = 8 * 5;
/// Fixed part of a FailedKept payload: job id, attempts, first and last failure, flags,
/// five field lengths (handle, function, unique, entry, error); the workload is the rest.
const FAILED_KEPT_FIXED: usize = 8 + 4 + 8 + 8 + 1 + 5 * 4;
const FLAG_ENTRY: u8 = 1;
/// ... and in its version 2, the marks byte.
const SCHEDULE_STATE_MARKED_FIXED: usize = SCHEDULE_STATE_FIXED + 1;
/// ... and in its version 3, the marks byte and the two duration alerts' counts.
const SCHEDULE_STATE_DURATIONS_FIXED: usize = SCHEDULE_STATE_MARKED_FIXED + 2 * 8;

const MARK_PAUSED: u8 = 1;
const MARK_SKIP_NEXT: u8 = 2;
const MARK_LAST_MANUAL: u8 = 4;

/// Size of a whole JobRetried record; a live job with retries > 0 carries one.
pub(crate) const RETRIED_LEN: u32 = (HEADER_LEN + JOB_RETRIED_PAYLOAD) as u32;

const FLAG_DUE: u8 = 1;
const FLAG_REDUCER: u8 = 2;

/// A background job as the journal keeps it: everything needed to queue it again after a
/// restart under the same handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobAdded {
    /// The handle counter `n` of `H:<host>:n`; unique for the life of the journal.
    pub id: u64,
    pub handle: Bytes,
    pub func: Bytes,
    pub unique: Bytes,
    /// SUBMIT_REDUCE_JOB's reducer, if any.
    pub reducer: Option<Bytes>,
    /// 0 high, 1 normal, 2 low (stored as given).
    pub priority: u8,
    /// When a future job becomes runnable, in ms since the epoch; `None` runs now.
    pub due_ms: Option<u64>,
    pub data: Bytes,
}

/// Why a job left the queue. Informational: every reason ends the job the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    Complete,
    Fail,
    Exception,
    Cancel,
    RetriesSpent,
    Timeout,
    /// A code this version does not know (written by a newer one).
    Other(u8),
}

impl FinishReason {
    pub fn code(self) -> u8 {
        match self {
            FinishReason::Complete => 0,
            FinishReason::Fail => 1,
            FinishReason::Exception => 2,
            FinishReason::Cancel => 3,
            FinishReason::RetriesSpent => 4,
            FinishReason::Timeout => 5,
            FinishReason::Other(c) => c,
        }
    }

    pub fn from_code(c: u8) -> FinishReason {
        match c {
            0 => FinishReason::Complete,
            1 => FinishReason::Fail,
            2 => FinishReason::Exception,
            3 => FinishReason::Cancel,
            4 => FinishReason::RetriesSpent,
            5 => FinishReason::Timeout,
            c => FinishReason::Other(c),
        }
    }
}

/// What a schedule entry has done, kept with its last run so that `show schedules` reads the
/// same after a restart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScheduleCounters {
    /// The latest scheduled time dealt with, run or skipped (0: none): runs missed while the
    /// server was down are counted from here, so none is counted twice.
    pub seen_ms: u64,
    pub runs: u64,
    pub failures: u64,
    pub skips: u64,
    /// The operator paused the entry (`pause schedule`).
    pub paused: bool,
    /// The operator asked to skip its next run (`skip schedule`).
    pub skip_next: bool,
    /// Its last run was a manual one (`run schedule`).
    pub last_manual: bool,
    /// Runs still going at their `max_duration=` (version 3; 0 before).
    pub too_long: u64,
    /// Runs that succeeded sooner than their `min_duration=` (version 3; 0 before).
    pub too_short: u64,
}

impl ScheduleCounters {
    /// Whether the duration alerts' counts must be written (version 3).
    fn durations(&self) -> bool {
        self.too_long != 0 || self.too_short != 0
    }

    /// The layout version and fixed size this state is written with: the oldest that holds it.
    fn layout(&self) -> (u8, usize) {
        if self.durations() {
            (SCHEDULE_STATE_DURATIONS, SCHEDULE_STATE_DURATIONS_FIXED)
        } else if self.marks() != 0 {
            (SCHEDULE_STATE_MARKED, SCHEDULE_STATE_MARKED_FIXED)
        } else {
            (VERSION, SCHEDULE_STATE_FIXED)
        }
    }

    fn marks(&self) -> u8 {
        [
            (self.paused, MARK_PAUSED),
            (self.skip_next, MARK_SKIP_NEXT),
            (self.last_manual, MARK_LAST_MANUAL),
        ]
        .iter()
        .filter(|(set, _)| *set)
        .fold(0, |m, (_, bit)| m | bit)
    }
}

/// A job in the failed list as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedKept {
    /// The job it ends (its JobAdded is dead from here on).
    pub id: u64,
    pub handle: Bytes,
    pub func: Bytes,
    pub unique: Bytes,
    pub data: Bytes,
    pub error: Bytes,
    pub attempts: u32,
    pub first_ms: u64,
    pub last_ms: u64,
    pub entry: Option<Bytes>,
}

/// A schedule entry's state: it fired at `fire_ms` (0: never yet); the newest per entry is
/// what a restart brings back. With `counters` it is written as ScheduleState (and
/// `outcome` is not kept), without as the older ScheduleRan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRan {
    pub entry: Bytes,
    pub fire_ms: u64,
    pub outcome: u8,
    /// `None` from a journal written before the counters were kept.
    pub counters: Option<ScheduleCounters>,
}

/// An alert queued for a webhook: its id (which the journal's HookDone names), when it was
/// queued (with the id, its idempotency key), the URL it goes to and the body to POST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookQueued {
    pub id: u64,
    pub queued_ms: u64,
    pub url: Bytes,
    pub body: Bytes,
}

/// `retry FUNCTION N BACKOFF`: the function's retry policy; the newest per function counts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FunctionRetry {
    pub func: Bytes,
    pub retries: u32,
    pub base_ms: u64,
    pub max_ms: u64,
}

/// Job `id` (written right after its JobAdded) is a retry after `failures` failed attempts,
/// the first at `first_ms`, of a run of schedule entry `entry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobAttempts {
    pub id: u64,
    pub failures: u32,
    pub first_ms: u64,
    pub entry: Option<Bytes>,
    /// The run was a manual one, or a backfill's: kept so that the run keeps its mark in
    /// its entry's history after a restart.
    pub manual: bool,
    pub backfill: bool,
}

/// `timeout FUNCTION DURATION`: function `func`'s job lease is `ms` (0: none); the newest per
/// function wins.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FunctionLease {
    pub func: Bytes,
    pub ms: u64,
}

/// A schedule entry's runs waiting to be made (src/engine/schedules/backfill.rs); the newest
/// per entry wins, and one with nothing waiting ends the entry's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulePending {
    pub entry: Bytes,
    /// `overlap=queue`: the scheduled time of the run waiting for the previous one to end.
    pub queued_ms: Option<u64>,
    /// Backfill and catch-up runs still to make, in order.
    pub spans: Vec<PendingSpan>,
}

/// Runs of an entry's timing still to make: its times after `after_ms` up to `to_ms`, at most
/// `left` more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingSpan {
    pub after_ms: u64,
    pub to_ms: u64,
    pub left: u64,
    /// A backfill (manual runs) rather than a catch-up (the entry's own runs).
    pub backfill: bool,
}

impl SchedulePending {
    /// Nothing waits: the record ends the entry's.
    pub fn is_empty(&self) -> bool {
        self.queued_ms.is_none() && self.spans.is_empty()
    }
}

/// An ended job's output and how it ended, as the journal keeps it (the engine's kept
/// results, src/engine/output/).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputKept {
    pub handle: Bytes,
    pub func: Bytes,
    /// 0 complete, 1 failed, 2 exception, 3 expired (the engine's `Ending`).
    pub ending: u8,
    pub started_ms: u64,
    pub ended_ms: u64,
    pub worker: Bytes,
    pub attempts: u32,
    pub error: Option<Bytes>,
    pub entry: Option<Bytes>,
    pub scheduled_ms: Option<u64>,
    /// The run was a manual one (`run schedule`, the console's Run). A flag bit set only
    /// then, so a journal without manual runs reads in the release before this field, and a
    /// record written before it reads as not manual.
    pub manual: bool,
    /// The run was a backfill's (`backfill schedule`): a flag bit, as `manual`.
    pub backfill: bool,
    /// Every byte the job printed; `output` holds the last of them.
    pub output_bytes: u64,
    /// A complete job's result is the last this many bytes of its output.
    pub result_len: Option<u32>,
    pub output: Bytes,
}

/// `limit`, `rate`, `pause function`, `expire`: function `func`'s limits now (0: none; all
/// none and not paused lifts them); the newest per function wins.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FunctionLimits {
    pub func: Bytes,
    pub limit: u32,
    pub rate_count: u32,
    pub rate_window_ms: u64,
    pub paused: bool,
    pub expire_ms: u64,
}

impl FunctionLimits {
    /// Nothing set: the record lifts the function's limits.
    pub fn is_none(&self) -> bool {
        self.limit == 0 && self.rate_count == 0 && !self.paused && self.expire_ms == 0
    }
}

/// An operator's action, as the audit trail keeps it: who did what from where, and what
/// came of it. Every record names the oldest action still kept after it (`floor`), so the
/// bound needs no record of its own: older ones are dead from here on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audit {
    /// Its number in the trail, from 1, never reused.
    pub seq: u64,
    /// The oldest `seq` kept once this one is (`--keep-audit`).
    pub floor: u64,
    pub at_ms: u64,
    /// `cn:NAME`, `token:NAME`, `addr:IP` (or `etcd` for a pushed schedules file).
    pub identity: Bytes,
    /// The peer's address (`-` when none).
    pub peer: Bytes,
    /// The command, escaped for a log line.
    pub command: Bytes,
    /// `OK`, or the error.
    pub outcome: Bytes,
}

/// One parent's run in an `@after` entry's set: which entry, its job, when it was due and
/// ended, and whether it completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterParent {
    pub id: Bytes,
    pub handle: Bytes,
    pub scheduled_ms: u64,
    pub ended_ms: u64,
    pub ok: bool,
}

/// An `@after` entry's set: the newest run of each parent since the entry last ran (empty
/// once it ran, or its set was missed); the newest per entry wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterSet {
    pub entry: Bytes,
    pub parents: Vec<AfterParent>,
}

/// One journal record. Built on the caller's stack and passed by reference to
/// `Journal::append`, which encodes it straight into the shared write buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A background job was accepted.
    JobAdded(JobAdded),
    /// The job is gone for good (complete, fail, exception, cancel, retries spent).
    JobFinished {
        id: u64,
        reason: FinishReason,
    },
    /// The job was given back `retries` times so far (a newer record supersedes an older one).
    JobRetried {
        id: u64,
        retries: u32,
    },
    /// A schedule entry's state changed (it ran, skipped, failed, was paused).
    ScheduleRan(ScheduleRan),
    /// A job failed for good and was kept in the failed list.
    FailedKept(FailedKept),
    /// The failed job with this handle left the list.
    FailedGone {
        handle: Bytes,
    },
    /// `retry FUNCTION N BACKOFF`: the function's retry policy.
    FunctionRetry(FunctionRetry),
    /// A job is a retry: its failed attempts so far.
    JobAttempts(JobAttempts),
    /// `timeout FUNCTION DURATION`: the function's job lease.
    FunctionLease(FunctionLease),
    /// An ended job's kept output.
    OutputKept(OutputKept),
    /// The kept output of this handle left.
    OutputGone {
        handle: Bytes,
    },
    HookQueued(HookQueued),
    HookDone {
        id: u64,
    },
    /// The function's limits.
    FunctionLimits(FunctionLimits),
    /// An operator's action, for the audit trail.
    Audit(Audit),
    /// An `@after` entry's parents' runs since it last ran.
    AfterSet(AfterSet),
    /// A schedule entry's runs waiting to be made.
    SchedulePending(SchedulePending),
}

impl Record {
    fn kind(&self) -> RecordKind {
        match self {
            Record::JobAdded(_) => RecordKind::JobAdded,
            Record::JobFinished { .. } => RecordKind::JobFinished,
            Record::JobRetried { .. } => RecordKind::JobRetried,
            Record::ScheduleRan(ScheduleRan { counters: None, .. }) => RecordKind::ScheduleRan,
            Record::ScheduleRan(_) => RecordKind::ScheduleState,
            Record::FailedKept(_) => RecordKind::FailedKept,
            Record::FailedGone { .. } => RecordKind::FailedGone,
            Record::JobAttempts(_) => RecordKind::JobAttempts,
            Record::FunctionLease(_) => RecordKind::FunctionLease,
            Record::FunctionRetry(_) => RecordKind::FunctionRetry,
            Record::OutputKept(_) => RecordKind::OutputKept,
            Record::OutputGone { .. } => RecordKind::OutputGone,
            Record::FunctionLimits(_) => RecordKind::FunctionLimits,
            Record::Audit(_) => RecordKind::Audit,
            Record::AfterSet(_) => RecordKind::AfterSet,
            Record::SchedulePending(_) => RecordKind::SchedulePending,
            Record::HookQueued(_) => RecordKind::HookQueued,
            Record::HookDone { .. } => RecordKind::HookDone,
        }
    }

    fn version(&self) -> u8 {
        match self {
            Record::ScheduleRan(ScheduleRan {
                counters: Some(c), ..
            }) => c.layout().0,
            // Every other layout is the first: a new record type is listed here on purpose.
            Record::JobAdded(_)
            | Record::JobFinished { .. }
            | Record::JobRetried { .. }
            | Record::ScheduleRan(_)
            | Record::FailedKept(_)
            | Record::FailedGone { .. }
            | Record::FunctionRetry(_)
            | Record::JobAttempts(_)
            | Record::FunctionLease(_)
            | Record::OutputKept(_)
            | Record::OutputGone { .. }
            | Record::FunctionLimits(_)
            | Record::Audit(_)
            | Record::AfterSet(_) => VERSION,
            Record::SchedulePending(_) | Record::HookQueued(_) | Record::HookDone { .. } => VERSION,
        }
    }

    fn payload_len(&self) -> u64 {
        match self {
            Record::JobAdded(j) => {
                let reducer = j.reducer.as_ref().map_or(0, |r| r.len());
                (JOB_ADDED_FIXED + j.handle.len() + j.func.len() + j.unique.len() + reducer) as u64
                    + j.data.len() as u64
            }
            Record::JobFinished { .. } => JOB_FINISHED_PAYLOAD as u64,
            Record::JobRetried { .. } => JOB_RETRIED_PAYLOAD as u64,
            Record::ScheduleRan(ScheduleRan {
                entry, counters, ..
            }) => {
                let fixed = match counters {
                    None => SCHEDULE_RAN_FIXED,
                    Some(c) => c.layout().1,
                };
                (fixed + entry.len()) as u64
            }
            Record::FailedKept(f) => {
                let entry = f.entry.as_ref().map_or(0, |e| e.len());
                (FAILED_KEPT_FIXED
                    + f.handle.len()
                    + f.func.len()
                    + f.unique.len()
                    + entry
                    + f.error.len()) as u64
                    + f.data.len() as u64
            }
            Record::FailedGone { handle } => handle.len() as u64,
            Record::FunctionRetry(r) => (FUNCTION_RETRY_FIXED + r.func.len()) as u64,
            Record::JobAttempts(a) => {
                (JOB_ATTEMPTS_FIXED + a.entry.as_ref().map_or(0, |e| e.len())) as u64
            }
            Record::FunctionLease(l) => (FUNCTION_LEASE_FIXED + l.func.len()) as u64,
            Record::OutputKept(o) => {
                let opt = |b: &Option<Bytes>| b.as_ref().map_or(0, |b| b.len());
                (OUTPUT_KEPT_FIXED
                    + o.handle.len()
                    + o.func.len()
                    + o.worker.len()
                    + opt(&o.entry)
                    + opt(&o.error)) as u64
                    + o.output.len() as u64
            }
            Record::OutputGone { handle } => handle.len() as u64,
            Record::FunctionLimits(l) => (FUNCTION_LIMITS_FIXED + l.func.len()) as u64,
            Record::Audit(a) => {
                (AUDIT_FIXED + a.identity.len() + a.peer.len() + a.command.len()) as u64
                    + a.outcome.len() as u64
            }
            Record::AfterSet(s) => {
                let parents: usize = s
                    .parents
                    .iter()
                    .map(|p| AFTER_PARENT_FIXED + p.id.len() + p.handle.len())
                    .sum();
                (4 + s.entry.len() + parents) as u64
            }
            Record::SchedulePending(p) => {
                (SCHEDULE_PENDING_FIXED + p.spans.len() * PENDING_SPAN_LEN + p.entry.len()) as u64
            }
            Record::HookQueued(h) => (HOOK_QUEUED_FIXED + h.url.len()) as u64 + h.body.len() as u64,
            Record::HookDone { .. } => HOOK_DONE_PAYLOAD as u64,
        }
    }
}

/// A record header that passed its own check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecHeader {
    pub len: u32,
    pub ty: RecordKind,
    /// The payload layout version (1, or 2 and 3 for a ScheduleState with marks, and with
    /// duration alerts' counts).
    pub ver: u8,
    /// CRC-32C of header bytes 0..6, the seed of the whole-record checksum.
    pre: u32,
    crc: u32,
}

impl RecHeader {
    /// Header plus payload.
    pub fn total(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.len)
    }

    pub fn body_ok(&self, payload: &[u8]) -> bool {
        crc32c::crc32c_append(self.pre, payload) == self.crc
    }
}

/// Parses a header, or `None` when it is not one this version wrote (header check, type,
/// version or length wrong). The 16-bit header check means a damaged length is caught
/// before it is trusted, so a flipped bit cannot pass for a torn tail.
pub(crate) fn parse_header(h: &[u8]) -> Option<RecHeader> {
    let h = h.get(..HEADER_LEN)?;
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let ver = h[5];
    let pre = crc32c::crc32c(&h[0..6]);
    if u16::from_le_bytes([h[6], h[7]]) != pre as u16 {
        return None;
    }
    let ty = RecordKind::of(h[4])?;
    let state_layout = matches!(ver, SCHEDULE_STATE_MARKED | SCHEDULE_STATE_DURATIONS);
    if ver != VERSION && !(ty == RecordKind::ScheduleState && state_layout) {
        return None;
    }
    if u64::from(len) + HEADER_LEN as u64 > u64::from(u32::MAX) {
        return None;
    }
    Some(RecHeader {
        len,
        ty,
        ver,
        pre,
        crc: u32::from_le_bytes([h[8], h[9], h[10], h[11]]),
    })
}

/// The end of the intact, decodable record at `off` in `data`, if there is one.
pub(crate) fn intact_at(data: &[u8], off: usize) -> Option<usize> {
    let h = parse_header(data.get(off..)?)?;
    let end = off.checked_add(h.total() as usize)?;
    let payload = data.get(off + HEADER_LEN..end)?;
    if h.body_ok(payload) && decode(&h, payload).is_ok() {
        Some(end)
    } else {
        None
    }
}

/// The offset of the first intact record at or after `from`.
pub(crate) fn next_intact(data: &[u8], from: usize) -> Option<usize> {
    (from..data.len().saturating_sub(HEADER_LEN - 1)).find(|&o| intact_at(data, o).is_some())
}

/// The job id of a JobAdded payload (its first field) without decoding the rest.
pub(crate) fn job_id(payload: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(payload.get(..8)?.try_into().ok()?))
}

/// The entry name of a ScheduleRan or ScheduleState payload without decoding the rest.
pub(crate) fn schedule_entry<'a>(h: &RecHeader, payload: &'a [u8]) -> Option<&'a [u8]> {
    match (h.ty, h.ver) {
        (RecordKind::ScheduleRan, _) => payload.get(SCHEDULE_RAN_FIXED..),
        (RecordKind::ScheduleState, SCHEDULE_STATE_MARKED) => {
            payload.get(SCHEDULE_STATE_MARKED_FIXED..)
        }
        (RecordKind::ScheduleState, SCHEDULE_STATE_DURATIONS) => {
            payload.get(SCHEDULE_STATE_DURATIONS_FIXED..)
        }
        (RecordKind::ScheduleState, _) => payload.get(SCHEDULE_STATE_FIXED..),
        _ => None,
    }
}

/// The entry of a SchedulePending payload without decoding the rest.
pub(crate) fn pending_entry(payload: &[u8]) -> Option<&[u8]> {
    let n = payload
        .get(8..SCHEDULE_PENDING_FIXED)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)?;
    payload.get(SCHEDULE_PENDING_FIXED + (n as usize).checked_mul(PENDING_SPAN_LEN)?..)
}

/// The function of a FunctionLease payload without decoding the rest.
pub(crate) fn lease_function(payload: &[u8]) -> Option<&[u8]> {
    payload.get(FUNCTION_LEASE_FIXED..)
}

/// The function of a FunctionLimits payload without decoding the rest.
pub(crate) fn limits_function(payload: &[u8]) -> Option<&[u8]> {
    payload.get(FUNCTION_LIMITS_FIXED..)
}

/// The entry of an AfterSet payload (its first field) without decoding the rest.
pub(crate) fn after_entry(payload: &[u8]) -> Option<&[u8]> {
    let n = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize;
    payload.get(4..4usize.checked_add(n)?)
}

/// The seq of an Audit payload (its first field) without decoding the rest.
pub(crate) fn audit_seq(payload: &[u8]) -> Option<u64> {
    job_id(payload)
}

/// The function of a FunctionRetry payload without decoding the rest.
pub(crate) fn retry_function(payload: &[u8]) -> Option<&[u8]> {
    payload.get(FUNCTION_RETRY_FIXED..)
}

/// The handle of a FailedKept or FailedGone payload without decoding the rest.
pub(crate) fn failed_handle<'a>(h: &RecHeader, payload: &'a [u8]) -> Option<&'a [u8]> {
    match h.ty {
        RecordKind::FailedGone => Some(payload),
        RecordKind::FailedKept => {
            let n = u32::from_le_bytes(payload.get(29..33)?.try_into().ok()?) as usize;
            let start = FAILED_KEPT_FIXED;
            payload.get(start..start.checked_add(n)?)
        }
        _ => None,
    }
}

/// The handle of an OutputKept or OutputGone payload without decoding the rest.
pub(crate) fn output_handle<'a>(h: &RecHeader, payload: &'a [u8]) -> Option<&'a [u8]> {
    match h.ty {
        RecordKind::OutputGone => Some(payload),
        RecordKind::OutputKept => {
            let at = OUTPUT_HANDLE_LEN_AT;
            let n = u32::from_le_bytes(payload.get(at..at + 4)?.try_into().ok()?) as usize;
            payload.get(OUTPUT_KEPT_FIXED..OUTPUT_KEPT_FIXED.checked_add(n)?)
        }
        _ => None,
    }
}
