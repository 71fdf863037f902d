//! Journal records: the typed values, their byte layout, and the checks that tell an intact
//! record from a torn or damaged one. Pure code: no files, no clock.

use bytes::Bytes;

/// Bytes in front of every payload: length, type, version, header check, checksum.
pub(crate) const HEADER_LEN: usize = 12;
/// The payload layout version written for every type today.
pub(crate) const VERSION: u8 = 1;
/// ScheduleState with a marks byte after the counters (paused, skip the next run, last run
/// manual). Written only when a mark is set, so a journal without marks stays version 1 and
/// readable by the release before; version 1 records read as "no marks".
pub(crate) const SCHEDULE_STATE_MARKED: u8 = 2;

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
/// Fixed part of an Audit payload: seq, floor, time, three field lengths (identity, peer,
/// command); the outcome is the rest.
const AUDIT_FIXED: usize = 8 + 8 + 8 + 3 * 4;
/// Fixed part of a FunctionLease payload: ms u64 (0: none); the function is the rest.
const FUNCTION_LEASE_FIXED: usize = 8;
/// Fixed part of a FunctionLimits payload: limit u32, rate count u32, rate window u64, paused
/// u8, expire u64; the function is the rest.
const FUNCTION_LIMITS_FIXED: usize = 4 + 4 + 8 + 1 + 8;

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
}

impl ScheduleCounters {
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
}

/// `timeout FUNCTION DURATION`: function `func`'s job lease is `ms` (0: none); the newest per
/// function wins.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FunctionLease {
    pub func: Bytes,
    pub ms: u64,
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

/// One journal record. Built on the caller's stack and passed by reference to
/// `Journal::append`, which encodes it straight into the shared write buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A background job was accepted.
    JobAdded(JobAdded),
    /// The job is gone for good (complete, fail, exception, cancel, retries spent).
    JobFinished { id: u64, reason: FinishReason },
    /// The job was given back `retries` times so far (a newer record supersedes an older one).
    JobRetried { id: u64, retries: u32 },
    /// A schedule entry's state changed (it ran, skipped, failed, was paused).
    ScheduleRan(ScheduleRan),
    /// A job failed for good and was kept in the failed list.
    FailedKept(FailedKept),
    /// The failed job with this handle left the list.
    FailedGone { handle: Bytes },
    /// `retry FUNCTION N BACKOFF`: the function's retry policy.
    FunctionRetry(FunctionRetry),
    /// A job is a retry: its failed attempts so far.
    JobAttempts(JobAttempts),
    /// `timeout FUNCTION DURATION`: the function's job lease.
    FunctionLease(FunctionLease),
    /// An ended job's kept output.
    OutputKept(OutputKept),
    /// The kept output of this handle left.
    OutputGone { handle: Bytes },
    /// The function's limits.
    FunctionLimits(FunctionLimits),
    /// An operator's action, for the audit trail.
    Audit(Audit),
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
        }
    }

    fn version(&self) -> u8 {
        match self {
            Record::ScheduleRan(ScheduleRan {
                counters: Some(c), ..
            }) if c.marks() != 0 => SCHEDULE_STATE_MARKED,
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
            | Record::Audit(_) => VERSION,
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
                    Some(c) if c.marks() != 0 => SCHEDULE_STATE_MARKED_FIXED,
                    Some(_) => SCHEDULE_STATE_FIXED,
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
        }
    }
}

/// Appends `rec` to `buf` and returns the record's whole length, or `Err(payload length)`
/// when it does not fit the 32-bit length field. Allocates only if `buf` must grow.
pub(crate) fn encode(buf: &mut Vec<u8>, rec: &Record) -> Result<u32, u64> {
    let plen = rec.payload_len();
    if plen > u64::from(u32::MAX) - HEADER_LEN as u64 {
        return Err(plen);
    }
    let start = buf.len();
    buf.reserve(HEADER_LEN + plen as usize);
    buf.extend_from_slice(&(plen as u32).to_le_bytes());
    buf.push(rec.kind() as u8);
    buf.push(rec.version());
    let pre = crc32c::crc32c(&buf[start..start + 6]);
    buf.extend_from_slice(&(pre as u16).to_le_bytes());
    buf.extend_from_slice(&[0; 4]);
    match rec {
        Record::JobAdded(j) => {
            let mut flags = 0;
            if j.due_ms.is_some() {
                flags |= FLAG_DUE;
            }
            if j.reducer.is_some() {
                flags |= FLAG_REDUCER;
            }
            buf.extend_from_slice(&j.id.to_le_bytes());
            buf.push(j.priority);
            buf.push(flags);
            buf.extend_from_slice(&j.due_ms.unwrap_or(0).to_le_bytes());
            for f in [&j.handle, &j.func, &j.unique] {
                put_field(buf, f);
            }
            put_field(buf, j.reducer.as_deref().unwrap_or(&[]));
            buf.extend_from_slice(&j.data);
        }
        Record::JobFinished { id, reason } => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.push(reason.code());
        }
        Record::JobRetried { id, retries } => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&retries.to_le_bytes());
        }
        Record::ScheduleRan(ScheduleRan {
            entry,
            fire_ms,
            outcome,
            counters,
        }) => {
            buf.extend_from_slice(&fire_ms.to_le_bytes());
            match counters {
                None => buf.push(*outcome),
                Some(c) => {
                    for n in [c.seen_ms, c.runs, c.failures, c.skips] {
                        buf.extend_from_slice(&n.to_le_bytes());
                    }
                    if c.marks() != 0 {
                        buf.push(c.marks());
                    }
                }
            }
            buf.extend_from_slice(entry);
        }
        Record::FailedKept(f) => {
            buf.extend_from_slice(&f.id.to_le_bytes());
            buf.extend_from_slice(&f.attempts.to_le_bytes());
            buf.extend_from_slice(&f.first_ms.to_le_bytes());
            buf.extend_from_slice(&f.last_ms.to_le_bytes());
            buf.push(if f.entry.is_some() { FLAG_ENTRY } else { 0 });
            // The lengths first, so the handle sits at a fixed offset (`failed_handle`).
            let entry = f.entry.as_deref().unwrap_or(&[]);
            let fields: [&[u8]; 5] = [&f.handle, &f.func, &f.unique, entry, &f.error];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&f.data);
        }
        Record::FailedGone { handle } => buf.extend_from_slice(handle),
        Record::FunctionRetry(FunctionRetry {
            func,
            retries,
            base_ms,
            max_ms,
        }) => {
            buf.extend_from_slice(&retries.to_le_bytes());
            buf.extend_from_slice(&base_ms.to_le_bytes());
            buf.extend_from_slice(&max_ms.to_le_bytes());
            buf.extend_from_slice(func);
        }
        Record::JobAttempts(JobAttempts {
            id,
            failures,
            first_ms,
            entry,
        }) => {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&failures.to_le_bytes());
            buf.extend_from_slice(&first_ms.to_le_bytes());
            buf.push(u8::from(entry.is_some()));
            buf.extend_from_slice(entry.as_deref().unwrap_or(&[]));
        }
        Record::FunctionLease(FunctionLease { func, ms }) => {
            buf.extend_from_slice(&ms.to_le_bytes());
            buf.extend_from_slice(func);
        }
        Record::OutputKept(o) => {
            for n in [
                o.started_ms,
                o.ended_ms,
                o.output_bytes,
                o.scheduled_ms.unwrap_or(0),
            ] {
                buf.extend_from_slice(&n.to_le_bytes());
            }
            buf.extend_from_slice(&o.attempts.to_le_bytes());
            buf.extend_from_slice(&o.result_len.unwrap_or(0).to_le_bytes());
            buf.push(o.ending);
            let flags = [
                (o.entry.is_some(), OUTPUT_ENTRY),
                (o.error.is_some(), OUTPUT_ERROR),
                (o.scheduled_ms.is_some(), OUTPUT_SCHEDULED),
                (o.result_len.is_some(), OUTPUT_RESULT),
            ]
            .iter()
            .filter(|(set, _)| *set)
            .fold(0, |f, (_, bit)| f | bit);
            buf.push(flags);
            // The lengths first, so the handle sits at a fixed offset (`output_handle`).
            let fields: [&[u8]; 5] = [
                &o.handle,
                &o.func,
                &o.worker,
                o.entry.as_deref().unwrap_or(&[]),
                o.error.as_deref().unwrap_or(&[]),
            ];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&o.output);
        }
        Record::OutputGone { handle } => buf.extend_from_slice(handle),
        Record::FunctionLimits(l) => {
            buf.extend_from_slice(&l.limit.to_le_bytes());
            buf.extend_from_slice(&l.rate_count.to_le_bytes());
            buf.extend_from_slice(&l.rate_window_ms.to_le_bytes());
            buf.push(u8::from(l.paused));
            buf.extend_from_slice(&l.expire_ms.to_le_bytes());
            buf.extend_from_slice(&l.func);
        }
        Record::Audit(a) => {
            for n in [a.seq, a.floor, a.at_ms] {
                buf.extend_from_slice(&n.to_le_bytes());
            }
            let fields: [&[u8]; 3] = [&a.identity, &a.peer, &a.command];
            for x in fields {
                // Fits: the whole payload was checked against u32 above.
                buf.extend_from_slice(&(x.len() as u32).to_le_bytes());
            }
            for x in fields {
                buf.extend_from_slice(x);
            }
            buf.extend_from_slice(&a.outcome);
        }
    }
    let crc = crc32c::crc32c_append(pre, &buf[start + HEADER_LEN..]);
    buf[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    Ok((HEADER_LEN as u64 + plen) as u32)
}

fn put_field(buf: &mut Vec<u8>, f: &[u8]) {
    // Fits: the whole payload was checked against u32 above.
    buf.extend_from_slice(&(f.len() as u32).to_le_bytes());
    buf.extend_from_slice(f);
}

/// A record header that passed its own check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecHeader {
    pub len: u32,
    pub ty: RecordKind,
    /// The payload layout version (1, or 2 for a ScheduleState with marks).
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
    if ver != VERSION && !(ty == RecordKind::ScheduleState && ver == SCHEDULE_STATE_MARKED) {
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
        (RecordKind::ScheduleState, _) => payload.get(SCHEDULE_STATE_FIXED..),
        _ => None,
    }
}

/// The function of a FunctionLease payload without decoding the rest.
pub(crate) fn lease_function(payload: &[u8]) -> Option<&[u8]> {
    payload.get(FUNCTION_LEASE_FIXED..)
}

/// The function of a FunctionLimits payload without decoding the rest.
pub(crate) fn limits_function(payload: &[u8]) -> Option<&[u8]> {
    payload.get(FUNCTION_LIMITS_FIXED..)
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

/// Decodes a payload whose checksum passed. A JobAdded is copied once into its own buffer and
/// its fields are slices of it, so a replayed job pins only its own bytes.
pub(crate) fn decode(h: &RecHeader, payload: &[u8]) -> Result<Record, &'static str> {
    let mut c = Cursor { b: payload, at: 0 };
    let rec = match h.ty {
        RecordKind::JobAdded => {
            let id = c.u64()?;
            let priority = c.u8()?;
            let flags = c.u8()?;
            if flags & !(FLAG_DUE | FLAG_REDUCER) != 0 {
                return Err("unknown flags in a job record");
            }
            let due = c.u64()?;
            let mut spans = [(0, 0); 4];
            for s in &mut spans {
                *s = c.field()?;
            }
            let all = Bytes::copy_from_slice(payload);
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::JobAdded(JobAdded {
                id,
                handle: slice(spans[0]),
                func: slice(spans[1]),
                unique: slice(spans[2]),
                reducer: (flags & FLAG_REDUCER != 0).then(|| slice(spans[3])),
                priority,
                due_ms: (flags & FLAG_DUE != 0).then_some(due),
                data: all.slice(c.at..),
            })
        }
        RecordKind::JobFinished => {
            let id = c.u64()?;
            let reason = FinishReason::from_code(c.u8()?);
            c.end()?;
            Record::JobFinished { id, reason }
        }
        RecordKind::JobRetried => {
            let id = c.u64()?;
            let retries = c.u32()?;
            c.end()?;
            Record::JobRetried { id, retries }
        }
        RecordKind::ScheduleRan => {
            let fire_ms = c.u64()?;
            let outcome = c.u8()?;
            Record::ScheduleRan(ScheduleRan {
                entry: Bytes::copy_from_slice(&payload[c.at..]),
                fire_ms,
                outcome,
                counters: None,
            })
        }
        RecordKind::ScheduleState => {
            let fire_ms = c.u64()?;
            let mut counters = ScheduleCounters {
                seen_ms: c.u64()?,
                runs: c.u64()?,
                failures: c.u64()?,
                skips: c.u64()?,
                ..ScheduleCounters::default()
            };
            if h.ver == SCHEDULE_STATE_MARKED {
                let marks = c.u8()?;
                if marks & !(MARK_PAUSED | MARK_SKIP_NEXT | MARK_LAST_MANUAL) != 0 {
                    return Err("unknown marks in a schedule record");
                }
                counters.paused = marks & MARK_PAUSED != 0;
                counters.skip_next = marks & MARK_SKIP_NEXT != 0;
                counters.last_manual = marks & MARK_LAST_MANUAL != 0;
            }
            Record::ScheduleRan(ScheduleRan {
                entry: Bytes::copy_from_slice(&payload[c.at..]),
                fire_ms,
                outcome: 0,
                counters: Some(counters),
            })
        }
        RecordKind::FailedKept => {
            let id = c.u64()?;
            let attempts = c.u32()?;
            let first_ms = c.u64()?;
            let last_ms = c.u64()?;
            let flags = c.u8()?;
            if flags & !FLAG_ENTRY != 0 {
                return Err("unknown flags in a failed-job record");
            }
            let mut lens = [0usize; 5];
            for l in &mut lens {
                *l = c.u32()? as usize;
            }
            let all = Bytes::copy_from_slice(payload);
            let mut spans = [(0, 0); 5];
            for (s, &n) in spans.iter_mut().zip(&lens) {
                let start = c.at;
                c.take(n)?;
                *s = (start, start + n);
            }
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::FailedKept(FailedKept {
                id,
                handle: slice(spans[0]),
                func: slice(spans[1]),
                unique: slice(spans[2]),
                entry: (flags & FLAG_ENTRY != 0).then(|| slice(spans[3])),
                error: slice(spans[4]),
                data: all.slice(c.at..),
                attempts,
                first_ms,
                last_ms,
            })
        }
        RecordKind::FunctionRetry => {
            let retries = c.u32()?;
            let base_ms = c.u64()?;
            let max_ms = c.u64()?;
            Record::FunctionRetry(FunctionRetry {
                func: Bytes::copy_from_slice(&payload[c.at..]),
                retries,
                base_ms,
                max_ms,
            })
        }
        RecordKind::JobAttempts => {
            let id = c.u64()?;
            let failures = c.u32()?;
            let first_ms = c.u64()?;
            let has_entry = match c.u8()? {
                0 => false,
                1 => true,
                _ => return Err("unknown flags in a job-attempts record"),
            };
            let rest = Bytes::copy_from_slice(&payload[c.at..]);
            if !has_entry && !rest.is_empty() {
                return Err("record longer than its fields");
            }
            Record::JobAttempts(JobAttempts {
                id,
                failures,
                first_ms,
                entry: has_entry.then_some(rest),
            })
        }
        RecordKind::FailedGone => Record::FailedGone {
            handle: Bytes::copy_from_slice(payload),
        },
        RecordKind::FunctionLease => Record::FunctionLease(FunctionLease {
            ms: c.u64()?,
            func: Bytes::copy_from_slice(&payload[FUNCTION_LEASE_FIXED..]),
        }),
        RecordKind::OutputKept => {
            let started_ms = c.u64()?;
            let ended_ms = c.u64()?;
            let output_bytes = c.u64()?;
            let scheduled = c.u64()?;
            let attempts = c.u32()?;
            let result_len = c.u32()?;
            let ending = c.u8()?;
            let flags = c.u8()?;
            if flags & !(OUTPUT_ENTRY | OUTPUT_ERROR | OUTPUT_SCHEDULED | OUTPUT_RESULT) != 0 {
                return Err("unknown flags in an output record");
            }
            let mut lens = [0usize; 5];
            for l in &mut lens {
                *l = c.u32()? as usize;
            }
            // One copy of the record, its fields slices of it: a kept output pins only its
            // own bytes, not the file buffer it was read from.
            let all = Bytes::copy_from_slice(payload);
            let mut spans = [(0, 0); 5];
            for (s, &n) in spans.iter_mut().zip(&lens) {
                let start = c.at;
                c.take(n)?;
                *s = (start, start + n);
            }
            let slice = |(a, b): (usize, usize)| all.slice(a..b);
            Record::OutputKept(OutputKept {
                handle: slice(spans[0]),
                func: slice(spans[1]),
                worker: slice(spans[2]),
                entry: (flags & OUTPUT_ENTRY != 0).then(|| slice(spans[3])),
                error: (flags & OUTPUT_ERROR != 0).then(|| slice(spans[4])),
                output: all.slice(c.at..),
                ending,
                started_ms,
                ended_ms,
                attempts,
                scheduled_ms: (flags & OUTPUT_SCHEDULED != 0).then_some(scheduled),
                output_bytes,
                result_len: (flags & OUTPUT_RESULT != 0).then_some(result_len),
            })
        }
        RecordKind::OutputGone => Record::OutputGone {
            handle: Bytes::copy_from_slice(payload),
        },
        RecordKind::FunctionLimits => Record::FunctionLimits(FunctionLimits {
            limit: c.u32()?,
            rate_count: c.u32()?,
            rate_window_ms: c.u64()?,
            paused: c.u8()? != 0,
            expire_ms: c.u64()?,
            func: Bytes::copy_from_slice(&payload[FUNCTION_LIMITS_FIXED..]),
        }),
        RecordKind::Audit => {
            let seq = c.u64()?;
            let floor = c.u64()?;
            let at_ms = c.u64()?;
            let mut lens = [0usize; 3];
            for l in &mut lens {
                *l = c.u32()? as usize;
            }
            let mut fields = [Bytes::new(), Bytes::new(), Bytes::new()];
            for (f, &n) in fields.iter_mut().zip(&lens) {
                *f = Bytes::copy_from_slice(c.take(n)?);
            }
            let [identity, peer, command] = fields;
            Record::Audit(Audit {
                seq,
                floor,
                at_ms,
                identity,
                peer,
                command,
                outcome: Bytes::copy_from_slice(&payload[c.at..]),
            })
        }
    };
    Ok(rec)
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], &'static str> {
        let end = self.at.checked_add(n).ok_or("length overflow")?;
        let s = self
            .b
            .get(self.at..end)
            .ok_or("record shorter than its fields")?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, &'static str> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, &'static str> {
        let s = self.take(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
    /// A u32-length-prefixed field, as a span of the payload.
    fn field(&mut self) -> Result<(usize, usize), &'static str> {
        let n = self.u32()? as usize;
        let start = self.at;
        self.take(n)?;
        Ok((start, start + n))
    }
    fn end(&self) -> Result<(), &'static str> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err("record longer than its fields")
        }
    }
}
