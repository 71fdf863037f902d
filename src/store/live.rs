//! The live set: the records that still matter (each live job's JobAdded, the newest
//! ScheduleRan per entry, each kept failed job's FailedKept, ...), where each one is and how
//! long, and so the live byte count that decides when a compaction pays.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::Bytes;

use super::Record;
use super::record::RETRIED_LEN;

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
/// ScheduleRan per entry, FunctionLease or FunctionRetry per function, a live job's
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
        }
    }
}
