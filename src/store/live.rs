//! The live set: the records that still matter (each live job's JobAdded, the newest
//! ScheduleRan per entry, each kept failed job's FailedKept, ...), where each one is and how
//! long, and so the live byte count that decides when a compaction pays.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;

use super::Record;
use super::record::{self, RETRIED_LEN, RecHeader, RecordKind};

/// Where a live job's JobAdded record is. `slot` is its position during replay only.
#[derive(Clone, Copy, Debug)]
pub(super) struct JobLoc {
    pub(super) off: u64,
    pub(super) file: u32,
    len: u32,
    pub(super) retries: u32,
    pub(super) slot: u32,
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

/// Where a record that is live by its key (a failed job's FailedKept, the newest
/// ScheduleRan per entry, FunctionLease, FunctionRetry or FunctionLimits per function, a live job's
/// JobAttempts) is. `seq` orders the failed list during replay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Loc {
    pub(super) off: u64,
    pub(super) file: u32,
    len: u32,
    pub(super) seq: u64,
}

/// Hashes job ids cheaply. Ids come from the server's own counter, never from a peer, so
/// SipHash's flooding resistance buys nothing here. The low bits stay the id, so consecutive
/// jobs land in neighbouring buckets (cache-friendly appends and replay); the top bits, which
/// hashbrown uses as a tag, come from a multiply so tags still differ. Any hash is correct;
/// this one made replaying a million jobs about twice as fast as SipHash.
#[derive(Default)]
pub(super) struct IdHasher(u64);

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

pub(super) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

impl Loc {
    fn at(off: u64, file: u32, len: u32) -> Loc {
        Loc {
            off,
            file,
            len,
            seq: 0,
        }
    }
}

/// A live record's key: which map of the live set says where it is.
#[derive(Clone, Debug)]
pub(super) enum LiveKey {
    Job(u64),
    Schedule(Bytes),
    Failed(Bytes),
    Attempts(u64),
    Lease(Bytes),
    FuncRetry(Bytes),
    Output(Bytes),
    Limits(Bytes),
    Audit(u64),
    After(Bytes),
    Pending(Bytes),
    Hook(u64),
}

/// Put `new` in `map` under `key`: its bytes are live, those of the record it replaces not.
fn keep_newest<K: std::hash::Hash + Eq, S: std::hash::BuildHasher>(
    map: &mut HashMap<K, Loc, S>,
    key: K,
    new: Loc,
    live_bytes: &mut u64,
) {
    *live_bytes += u64::from(new.len);
    if let Some(o) = map.insert(key, new) {
        *live_bytes -= u64::from(o.len);
    }
}

impl LiveSet {
    fn forget_attempts(&mut self, id: u64) {
        if let Some(o) = self.attempts.remove(&id) {
            self.live_bytes -= u64::from(o.len);
        }
    }
}

/// The live set: which records still matter, and how many bytes they take.
#[derive(Debug, Default)]
pub(super) struct LiveSet {
    pub(super) jobs: IdMap<JobLoc>,
    pub(super) schedules: HashMap<Bytes, Loc>,
    /// Kept failed jobs by handle.
    pub(super) failed: HashMap<Bytes, Loc>,
    /// JobAttempts records of live jobs that are retries, by job id.
    pub(super) attempts: IdMap<Loc>,
    /// The newest FunctionLease per function.
    /// (A lease of 0 is kept too: a tombstone, so an older lease in another file cannot
    /// come back.)
    pub(super) leases: HashMap<Bytes, Loc>,
    /// The newest FunctionRetry per function.
    pub(super) func_retry: HashMap<Bytes, Loc>,
    /// Kept outputs by handle; `seq` orders them during replay.
    pub(super) outputs: HashMap<Bytes, Loc>,
    /// OutputKept records seen, to order the kept outputs.
    output_seq: u64,
    /// The newest FunctionLimits per function (one with nothing set too: a tombstone).
    pub(super) limits: HashMap<Bytes, Loc>,
    /// The newest AfterSet per `@after` entry (an empty one too: a tombstone).
    pub(super) after: HashMap<Bytes, Loc>,
    /// The newest SchedulePending per entry (an empty one too: a tombstone, so that runs
    /// already made in an older file cannot come back).
    pub(super) pending: HashMap<Bytes, Loc>,
    /// The audit trail's records still kept, by seq (those below the newest floor are dead).
    pub(super) audit: std::collections::BTreeMap<u64, Loc>,
    /// Webhook alerts not yet delivered or given up, by id.
    pub(super) hooks: IdMap<Loc>,
    /// FailedKept records seen, to order the failed list.
    failed_seq: u64,
    pub(super) live_bytes: u64,
    pub(super) max_id: u64,
}

impl LiveSet {
    /// Applies a record found at (`file`, `off`), `len` bytes long. Returns the job it
    /// finished or replaced, if any.
    pub(super) fn apply(
        &mut self,
        rec: &Record,
        file: u32,
        off: u64,
        len: u32,
        slot: u32,
    ) -> Option<JobLoc> {
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
            Record::FailedKept(f) => {
                self.failed_seq += 1;
                let new = Loc {
                    off,
                    file,
                    len,
                    seq: self.failed_seq,
                };
                keep_newest(
                    &mut self.failed,
                    f.handle.clone(),
                    new,
                    &mut self.live_bytes,
                );
                // It ends its job, as a JobFinished would.
                self.forget_attempts(f.id);
                let old = self.jobs.remove(&f.id);
                if let Some(o) = &old {
                    self.live_bytes -= o.live_len();
                }
                old
            }
            Record::FailedGone { handle } => {
                if let Some(o) = self.failed.remove(handle) {
                    self.live_bytes -= u64::from(o.len);
                }
                None
            }
            Record::FunctionRetry(r) => {
                let new = Loc::at(off, file, len);
                keep_newest(
                    &mut self.func_retry,
                    r.func.clone(),
                    new,
                    &mut self.live_bytes,
                );
                None
            }
            Record::JobAttempts(a) => {
                let new = Loc::at(off, file, len);
                keep_newest(&mut self.attempts, a.id, new, &mut self.live_bytes);
                None
            }
            Record::JobFinished { id, .. } => {
                self.forget_attempts(*id);
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
            Record::ScheduleRan(r) => {
                let new = Loc::at(off, file, len);
                keep_newest(
                    &mut self.schedules,
                    r.entry.clone(),
                    new,
                    &mut self.live_bytes,
                );
                None
            }
            Record::FunctionLease(l) => {
                let new = Loc::at(off, file, len);
                keep_newest(&mut self.leases, l.func.clone(), new, &mut self.live_bytes);
                None
            }
            Record::AfterSet(s) => {
                let new = Loc::at(off, file, len);
                keep_newest(&mut self.after, s.entry.clone(), new, &mut self.live_bytes);
                None
            }
            Record::OutputKept(o) => {
                self.output_seq += 1;
                let new = Loc {
                    off,
                    file,
                    len,
                    seq: self.output_seq,
                };
                keep_newest(
                    &mut self.outputs,
                    o.handle.clone(),
                    new,
                    &mut self.live_bytes,
                );
                None
            }
            Record::OutputGone { handle } => {
                if let Some(o) = self.outputs.remove(handle) {
                    self.live_bytes -= u64::from(o.len);
                }
                None
            }
            Record::FunctionLimits(l) => {
                let new = Loc::at(off, file, len);
                keep_newest(&mut self.limits, l.func.clone(), new, &mut self.live_bytes);
                None
            }
            Record::SchedulePending(p) => {
                let new = Loc::at(off, file, len);
                keep_newest(
                    &mut self.pending,
                    p.entry.clone(),
                    new,
                    &mut self.live_bytes,
                );
                None
            }
            Record::HookQueued(q) => {
                let new = Loc::at(off, file, len);
                keep_newest(&mut self.hooks, q.id, new, &mut self.live_bytes);
                None
            }
            Record::HookDone { id } => {
                if let Some(o) = self.hooks.remove(id) {
                    self.live_bytes -= u64::from(o.len);
                }
                None
            }
            Record::Audit(a) => {
                let kept = self.audit.split_off(&a.floor);
                for gone in std::mem::replace(&mut self.audit, kept).into_values() {
                    self.live_bytes -= u64::from(gone.len);
                }
                if a.seq >= a.floor {
                    self.live_bytes += u64::from(len);
                    if let Some(o) = self.audit.insert(a.seq, Loc::at(off, file, len)) {
                        self.live_bytes -= u64::from(o.len);
                    }
                }
                None
            }
        }
    }
}

impl LiveSet {
    /// The key of the record at (`file`, `off`) when it is still live: the newest of its key.
    /// Read from the record's bytes without decoding them (compaction copies the bytes).
    pub(super) fn live_key(
        &self,
        h: &RecHeader,
        payload: &[u8],
        file: u32,
        off: u64,
    ) -> Option<LiveKey> {
        let here = |l: &Loc| l.file == file && l.off == off;
        // The map's own key, cloned: a `Bytes` clone copies nothing.
        fn key_of<'a>(
            map: &'a HashMap<Bytes, Loc>,
            k: &[u8],
            here: impl Fn(&Loc) -> bool,
        ) -> Option<&'a Bytes> {
            map.get_key_value(k)
                .filter(|(_, l)| here(l))
                .map(|(k, _)| k)
        }
        match h.ty {
            RecordKind::JobAdded => {
                let id = record::job_id(payload)?;
                let l = self.jobs.get(&id)?;
                (l.file == file && l.off == off).then_some(LiveKey::Job(id))
            }
            RecordKind::ScheduleRan | RecordKind::ScheduleState => {
                let entry = record::schedule_entry(h, payload)?;
                key_of(&self.schedules, entry, here).map(|k| LiveKey::Schedule(k.clone()))
            }
            RecordKind::FailedKept => {
                let handle = record::failed_handle(h, payload)?;
                key_of(&self.failed, handle, here).map(|k| LiveKey::Failed(k.clone()))
            }
            RecordKind::JobAttempts => {
                let id = record::job_id(payload)?;
                self.attempts
                    .get(&id)
                    .filter(|l| here(l))
                    .map(|_| LiveKey::Attempts(id))
            }
            RecordKind::FunctionLease => {
                let func = record::lease_function(payload)?;
                key_of(&self.leases, func, here).map(|k| LiveKey::Lease(k.clone()))
            }
            RecordKind::AfterSet => {
                let entry = record::after_entry(payload)?;
                key_of(&self.after, entry, here).map(|k| LiveKey::After(k.clone()))
            }
            RecordKind::FunctionRetry => {
                let func = record::retry_function(payload)?;
                key_of(&self.func_retry, func, here).map(|k| LiveKey::FuncRetry(k.clone()))
            }
            RecordKind::OutputKept => {
                let handle = record::output_handle(h, payload)?;
                key_of(&self.outputs, handle, here).map(|k| LiveKey::Output(k.clone()))
            }
            // Folded into the live set: a finish or a gone only ends something, and a job's
            // retry count is written after its JobAdded when that is copied.
            RecordKind::JobFinished
            | RecordKind::JobRetried
            | RecordKind::FailedGone
            | RecordKind::OutputGone
            | RecordKind::HookDone => None,
            RecordKind::HookQueued => {
                let id = record::job_id(payload)?;
                self.hooks
                    .get(&id)
                    .filter(|l| here(l))
                    .map(|_| LiveKey::Hook(id))
            }
            RecordKind::FunctionLimits => {
                let func = record::limits_function(payload)?;
                key_of(&self.limits, func, here).map(|k| LiveKey::Limits(k.clone()))
            }
            RecordKind::SchedulePending => {
                let entry = record::pending_entry(payload)?;
                key_of(&self.pending, entry, here).map(|k| LiveKey::Pending(k.clone()))
            }
            RecordKind::Audit => {
                let seq = record::audit_seq(payload)?;
                self.audit
                    .get(&seq)
                    .filter(|l| here(l))
                    .map(|_| LiveKey::Audit(seq))
            }
        }
    }

    /// Where the record kept under `key` is: its file and offset, to move it.
    pub(super) fn place(&mut self, key: &LiveKey) -> Option<(&mut u32, &mut u64)> {
        fn loc(l: &mut Loc) -> (&mut u32, &mut u64) {
            (&mut l.file, &mut l.off)
        }
        match key {
            LiveKey::Job(id) => self.jobs.get_mut(id).map(|l| (&mut l.file, &mut l.off)),
            LiveKey::Schedule(e) => self.schedules.get_mut(e).map(loc),
            LiveKey::Failed(h) => self.failed.get_mut(h).map(loc),
            LiveKey::Attempts(id) => self.attempts.get_mut(id).map(loc),
            LiveKey::Lease(f) => self.leases.get_mut(f).map(loc),
            LiveKey::FuncRetry(f) => self.func_retry.get_mut(f).map(loc),
            LiveKey::Output(h) => self.outputs.get_mut(h).map(loc),
            LiveKey::Limits(f) => self.limits.get_mut(f).map(loc),
            LiveKey::Audit(seq) => self.audit.get_mut(seq).map(loc),
            LiveKey::After(e) => self.after.get_mut(e).map(loc),
            LiveKey::Pending(e) => self.pending.get_mut(e).map(loc),
            LiveKey::Hook(id) => self.hooks.get_mut(id).map(loc),
        }
    }
}
