//! The kept results: what ended jobs printed and returned, by handle, within
//! `--keep-output-total` bytes (the oldest go first) and for `--keep-results` after they
//! ended; the newest `RUNS_KEPT` runs of each schedule entry are held past both, for as long
//! as they are in the entry's history. Pure: the engine passes the time in and journals what
//! comes and goes.

use std::collections::VecDeque;
use std::hash::BuildHasher as _;
use std::rc::Rc;

use bytes::Bytes;
use hashbrown::HashTable;

use crate::engine::FastMap;
use crate::engine::schedules::run_history::RUNS_KEPT;

/// What the byte bound counts for a kept job besides its variable fields: the struct, its
/// places in the indexes (the engine's and the journal's live set) and the allocator's share,
/// so that many jobs with no output are bounded too. Measured: about 730 bytes of RSS per
/// kept job that printed one byte (benches/kept_output.py, `OUTPUT=1`).
pub const OVERHEAD: usize = 768;

/// How a kept job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// WORK_COMPLETE.
    Complete,
    /// WORK_FAIL, `--job-retries` spent or cancelled.
    Failed,
    /// WORK_EXCEPTION.
    Exception,
    /// It ran past its time (CAN_DO_TIMEOUT, a lease) and the server failed it.
    Expired,
}

impl Ending {
    /// The word `show output`, `show runs` and `/jobs/HANDLE`'s `state` use.
    pub fn name(self) -> &'static str {
        match self {
            Ending::Complete => "complete",
            Ending::Failed => "failed",
            Ending::Exception => "exception",
            Ending::Expired => "expired",
        }
    }

    /// The journal's number for it.
    pub fn code(self) -> u8 {
        match self {
            Ending::Complete => 0,
            Ending::Failed => 1,
            Ending::Exception => 2,
            Ending::Expired => 3,
        }
    }

    pub fn from_code(c: u8) -> Option<Ending> {
        Some(match c {
            0 => Ending::Complete,
            1 => Ending::Failed,
            2 => Ending::Exception,
            3 => Ending::Expired,
            _ => return None,
        })
    }
}

/// One ended job: how it ended and the tail of what it printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptJob {
    pub handle: Bytes,
    pub func: Bytes,
    pub ending: Ending,
    pub started_ms: u64,
    pub ended_ms: u64,
    /// The worker's identity (`addr:IP`, `cn:NAME`), as `/workers` shows it.
    pub worker: Rc<str>,
    /// How many times a worker was given it.
    pub attempts: u32,
    /// WORK_EXCEPTION's text, or what went wrong in words; `None` for a complete job.
    pub error: Option<Bytes>,
    /// The schedule entry whose run it was, and the run's scheduled time.
    pub entry: Option<Rc<str>>,
    pub scheduled_ms: Option<u64>,
    /// A manual run of its entry (`run schedule`, run-now, the console's Run).
    pub manual: bool,
    /// A backfill's run (`backfill schedule`).
    pub backfill: bool,
    /// The last `--keep-output` bytes of its output.
    pub output: Bytes,
    /// Every byte it printed, kept or not.
    pub output_bytes: u64,
    /// A complete job's result is the last this many bytes it printed (its WORK_COMPLETE
    /// payload); `None` for any other ending.
    pub result_len: Option<u32>,
}

/// A result longer than this is shown cut to its last this many bytes.
pub const RESULT_SHOWN: usize = 64 << 10;

impl KeptJob {
    /// Only the last `--keep-output` bytes were kept.
    pub fn cut(&self) -> bool {
        self.output_bytes > self.output.len() as u64
    }

    /// The WORK_COMPLETE payload (its last `RESULT_SHOWN` bytes), for a complete job.
    pub fn result(&self) -> Option<&[u8]> {
        let n = (self.result_len? as usize)
            .min(self.output.len())
            .min(RESULT_SHOWN);
        self.output.get(self.output.len() - n..)
    }

    /// What the byte bound counts.
    pub fn bytes(&self) -> usize {
        OVERHEAD
            + self.output.len()
            + self.handle.len()
            + self.func.len()
            + self.worker.len()
            + self.error.as_ref().map_or(0, |e| e.len())
            + self.entry.as_ref().map_or(0, |e| e.len())
    }
}

#[derive(Debug)]
struct Slot {
    job: KeptJob,
    /// One of the newest `RUNS_KEPT` runs of its entry: past the bounds until it falls off.
    pinned: bool,
}

/// Places of jobs that left out of order the ring holds, beyond one per job kept, before it
/// closes them up.
const GAPS_AT_MOST: usize = 64;

/// The kept jobs, oldest first.
#[derive(Debug)]
pub struct KeptResults {
    /// In the order they were kept: the job kept `seq`-th is at `seq - first` (`None` once it
    /// left before older ones; the front is trimmed of those). A ring, not an ordered map:
    /// jobs are kept in order, so keeping one is a push and finding one by its place an index.
    slots: VecDeque<Option<Slot>>,
    /// The place (`seq`) of `slots[0]`.
    first: u64,
    /// Jobs kept: the `Some`s in `slots`.
    count: usize,
    /// By handle: each job's place with the hash of its handle, which is read from the job
    /// itself (the index holds no copy of it, and a table that grows hashes nothing again).
    by_handle: HashTable<(u64, u64)>,
    hasher: foldhash::fast::RandomState,
    /// Each entry's newest runs (their places in `slots`), oldest first.
    by_entry: FastMap<Rc<str>, VecDeque<u64>>,
    next: u64,
    bytes: usize,
    max_bytes: usize,
    ttl_ms: u64,
    /// Jobs dropped by the byte bound before their time.
    dropped: u64,
}

impl KeptResults {
    pub fn new(max_bytes: usize, ttl_ms: u64) -> KeptResults {
        KeptResults {
            slots: VecDeque::new(),
            first: 0,
            count: 0,
            by_handle: HashTable::new(),
            hasher: Default::default(),
            by_entry: FastMap::default(),
            next: 0,
            bytes: 0,
            max_bytes,
            ttl_ms,
            dropped: 0,
        }
    }

    /// Keep `job` (in place of an older one with its handle), then drop the oldest until the
    /// byte bound holds. Returns the handles dropped, the new one's too when it is not kept,
    /// for the journal.
    pub fn push(&mut self, job: KeptJob) -> Vec<Bytes> {
        let mut gone = Vec::new();
        let hash = self.hash(&job.handle);
        if let Some(old) = self.find(hash, &job.handle) {
            self.forget(old);
            gone.push(job.handle.clone());
        }
        let seq = self.next;
        self.next += 1;
        let pinned = match &job.entry {
            Some(e) => {
                let runs = self.by_entry.entry(Rc::clone(e)).or_default();
                runs.push_back(seq);
                if runs.len() > RUNS_KEPT {
                    if let Some(old) = runs.pop_front() {
                        if let Some(s) = self.slot_mut(old) {
                            s.pinned = false;
                        }
                    }
                }
                true
            }
            None => false,
        };
        self.bytes += job.bytes();
        self.by_handle.insert_unique(hash, (hash, seq), |&(h, _)| h);
        if self.slots.is_empty() {
            self.first = seq;
        }
        self.slots.push_back(Some(Slot { job, pinned }));
        self.count += 1;
        // With --keep-results 0 nothing stays once it ended but an entry's last runs.
        let mut over = Vec::new();
        let mut bytes = self.bytes;
        for (s, slot) in self.kept() {
            if bytes <= self.max_bytes && self.ttl_ms > 0 {
                break;
            }
            if !slot.pinned {
                bytes -= slot.job.bytes();
                over.push(s);
            }
        }
        self.dropped += over.len() as u64;
        for s in over {
            if let Some(j) = self.forget(s) {
                gone.push(j.handle);
            }
        }
        self.close_gaps();
        gone
    }

    /// Drop the oldest jobs not pinned until at most `max_bytes` are kept (running jobs'
    /// outputs need the rest of the bound). Returns their handles, for the journal.
    pub fn make_room(&mut self, max_bytes: usize) -> Vec<Bytes> {
        let mut over = Vec::new();
        let mut bytes = self.bytes;
        for (s, slot) in self.kept() {
            if bytes <= max_bytes {
                break;
            }
            if !slot.pinned {
                bytes -= slot.job.bytes();
                over.push(s);
            }
        }
        self.dropped += over.len() as u64;
        let gone = over
            .into_iter()
            .filter_map(|s| self.forget(s).map(|j| j.handle))
            .collect();
        self.close_gaps();
        gone
    }

    /// Drop the jobs kept past `--keep-results` at `now` (the pinned stay). Returns their
    /// handles, for the journal.
    pub fn expire(&mut self, now: u64) -> Vec<Bytes> {
        let mut due = Vec::new();
        for (s, slot) in self.kept() {
            if slot.pinned {
                continue;
            }
            if slot.job.ended_ms.saturating_add(self.ttl_ms) > now {
                break;
            }
            due.push(s);
        }
        let gone = due
            .into_iter()
            .filter_map(|s| self.forget(s).map(|j| j.handle))
            .collect();
        self.close_gaps();
        gone
    }

    /// When the oldest job not pinned is due to go.
    pub fn next_expiry(&self) -> Option<u64> {
        let (_, first) = self.kept().find(|(_, s)| !s.pinned)?;
        Some(first.job.ended_ms.saturating_add(self.ttl_ms))
    }

    pub fn get(&self, handle: &[u8]) -> Option<&KeptJob> {
        let seq = self.find(self.hash(handle), handle)?;
        self.slot(seq).map(|s| &s.job)
    }

    /// Take a job out.
    #[cfg(test)]
    pub fn remove(&mut self, handle: &[u8]) -> Option<KeptJob> {
        let seq = self.find(self.hash(handle), handle)?;
        let job = self.forget(seq);
        self.close_gaps();
        job
    }

    /// Number the kept jobs again from 0, without the places of those that left out of
    /// order: an entry's last runs held for months at the front must not keep a place for
    /// every job kept after them. O(kept), once the gaps outnumber them: O(1) a job.
    fn close_gaps(&mut self) {
        if self.slots.len() <= 2 * self.count + GAPS_AT_MOST {
            return;
        }
        let old = std::mem::take(&mut self.slots);
        self.by_handle.clear();
        self.by_entry.clear();
        for (seq, slot) in (0..).zip(old.into_iter().flatten()) {
            let hash = self.hash(&slot.job.handle);
            self.by_handle.insert_unique(hash, (hash, seq), |&(h, _)| h);
            // The pinned are exactly their entries' newest runs.
            if let (true, Some(e)) = (slot.pinned, &slot.job.entry) {
                self.by_entry
                    .entry(Rc::clone(e))
                    .or_default()
                    .push_back(seq);
            }
            self.slots.push_back(Some(slot));
        }
        self.first = 0;
        self.next = self.slots.len() as u64;
    }

    fn hash(&self, handle: &[u8]) -> u64 {
        self.hasher.hash_one(handle)
    }

    /// The place of the job kept under `handle`, whose hash is `hash`.
    fn find(&self, hash: u64, handle: &[u8]) -> Option<u64> {
        self.by_handle
            .find(hash, |&(h, seq)| {
                h == hash && self.slot(seq).is_some_and(|s| s.job.handle == handle)
            })
            .map(|&(_, seq)| seq)
    }

    /// The kept jobs with their places, oldest first.
    fn kept(&self) -> impl Iterator<Item = (u64, &Slot)> {
        (self.first..)
            .zip(&self.slots)
            .filter_map(|(s, slot)| Some((s, slot.as_ref()?)))
    }

    fn slot(&self, seq: u64) -> Option<&Slot> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.slots.get(i)?.as_ref()
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Slot> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.slots.get_mut(i)?.as_mut()
    }

    fn forget(&mut self, seq: u64) -> Option<KeptJob> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        let slot = self.slots.get_mut(i)?.take()?;
        self.count -= 1;
        // Places left empty at the front go, so the ring holds what is kept and the gaps of
        // jobs that left out of order (replaced, dropped by the journal) between them.
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.first += 1;
        }
        let job = slot.job;
        self.bytes -= job.bytes();
        let hash = self.hash(&job.handle);
        if let Ok(e) = self
            .by_handle
            .find_entry(hash, |&(h, s)| h == hash && s == seq)
        {
            e.remove();
        }
        if let Some(e) = &job.entry {
            if let Some(runs) = self.by_entry.get_mut(e) {
                runs.retain(|&s| s != seq);
                if runs.is_empty() {
                    self.by_entry.remove(e);
                }
            }
        }
        Some(job)
    }

    /// The entry's newest `RUNS_KEPT` runs, oldest first.
    pub fn newest_runs<'a>(&'a self, entry: &str) -> impl Iterator<Item = &'a KeptJob> + 'a {
        self.by_entry
            .get(entry)
            .into_iter()
            .flatten()
            .filter_map(|&s| self.slot(s).map(|s| &s.job))
    }

    /// Every kept job, oldest first.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &KeptJob> {
        self.kept().map(|(_, s)| &s.job)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Jobs dropped by the byte bound before their time, since start.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3_600_000;

    fn job(n: u64, ended_ms: u64, out: usize, entry: Option<&str>) -> KeptJob {
        KeptJob {
            handle: format!("H:t:{n}").into(),
            func: Bytes::from_static(b"f"),
            ending: Ending::Complete,
            started_ms: ended_ms,
            ended_ms,
            worker: "addr:127.0.0.1".into(),
            attempts: 1,
            error: None,
            entry: entry.map(Rc::from),
            scheduled_ms: None,
            manual: false,
            backfill: false,
            output: vec![b'x'; out].into(),
            output_bytes: out as u64,
            result_len: Some(out as u32),
        }
    }

    fn handles(k: &KeptResults) -> Vec<String> {
        k.iter()
            .map(|j| String::from_utf8_lossy(&j.handle).into_owned())
            .collect()
    }

    #[test]
    fn a_result_is_kept_for_its_time_then_goes() {
        let mut k = KeptResults::new(1 << 20, 24 * HOUR);
        assert!(k.push(job(1, 0, 10, None)).is_empty());
        assert_eq!(k.next_expiry(), Some(24 * HOUR));
        assert!(k.expire(24 * HOUR - 1).is_empty());
        assert!(k.get(b"H:t:1").is_some());
        assert_eq!(k.expire(24 * HOUR), vec![Bytes::from("H:t:1")]);
        assert!(k.get(b"H:t:1").is_none());
        assert_eq!((k.len(), k.bytes(), k.next_expiry()), (0, 0, None));
    }

    #[test]
    fn the_total_bound_drops_the_oldest_first() {
        let one = job(1, 0, 1000, None).bytes();
        let mut k = KeptResults::new(one * 3, HOUR);
        for n in 1..=3 {
            assert!(k.push(job(n, n, 1000, None)).is_empty());
        }
        assert_eq!(k.push(job(4, 4, 1000, None)), vec![Bytes::from("H:t:1")]);
        assert_eq!(handles(&k), ["H:t:2", "H:t:3", "H:t:4"]);
        assert!(k.bytes() <= one * 3);
        assert_eq!(k.dropped(), 1);
        // One job larger than the whole bound is not kept at all.
        let gone = k.push(job(5, 5, one * 4, None));
        assert!(gone.contains(&Bytes::from("H:t:5")));
        assert!(k.get(b"H:t:5").is_none());
        assert!(k.bytes() <= one * 3);
    }

    #[test]
    fn jobs_with_no_output_are_bounded_too() {
        let mut k = KeptResults::new(OVERHEAD * 100, HOUR);
        for n in 0..1000 {
            k.push(job(n, n, 0, None));
        }
        assert!(k.len() <= 100, "{}", k.len());
    }

    #[test]
    fn an_entrys_last_runs_outlive_the_bounds_until_they_fall_off() {
        let one = job(1, 0, 100, Some("backup")).bytes();
        let mut k = KeptResults::new(one, HOUR);
        for n in 0..RUNS_KEPT as u64 {
            k.push(job(n, n, 100, Some("backup")));
        }
        assert_eq!(k.len(), RUNS_KEPT);
        assert!(k.expire(10 * HOUR).is_empty());
        assert_eq!(k.next_expiry(), None);
        // The 21st run unpins the first, which is then past both bounds.
        let gone = k.push(job(100, 100, 100, Some("backup")));
        assert_eq!(gone, vec![Bytes::from("H:t:0")]);
        assert_eq!(k.newest_runs("backup").count(), RUNS_KEPT);
        assert_eq!(k.newest_runs("other").count(), 0);
    }

    #[test]
    fn make_room_drops_the_oldest_but_not_the_pinned() {
        let one = job(1, 0, 100, None).bytes();
        let mut k = KeptResults::new(1 << 20, HOUR);
        k.push(job(1, 1, 100, Some("e")));
        k.push(job(2, 2, 100, None));
        k.push(job(3, 3, 100, None));
        assert_eq!(k.make_room(one * 2 + 1), vec![Bytes::from("H:t:2")]);
        assert_eq!(k.make_room(0), vec![Bytes::from("H:t:3")]);
        assert_eq!(handles(&k), ["H:t:1"]);
    }

    #[test]
    fn a_handle_kept_again_replaces_the_old_one() {
        let mut k = KeptResults::new(1 << 20, HOUR);
        k.push(job(1, 0, 10, None));
        let gone = k.push(job(1, 5, 20, None));
        assert_eq!(gone, vec![Bytes::from("H:t:1")]);
        assert_eq!(k.len(), 1);
        assert_eq!(k.get(b"H:t:1").map(|j| j.output.len()), Some(20));
        assert_eq!(k.bytes(), job(1, 5, 20, None).bytes());
    }

    #[test]
    fn zero_time_keeps_only_pinned_runs() {
        let mut k = KeptResults::new(1 << 20, 0);
        assert_eq!(k.push(job(1, 0, 10, None)), vec![Bytes::from("H:t:1")]);
        assert!(k.push(job(2, 0, 10, Some("e"))).is_empty());
        assert_eq!(handles(&k), ["H:t:2"]);
    }

    #[test]
    fn the_result_is_the_tail_of_the_output() {
        let mut j = job(1, 0, 0, None);
        j.output = Bytes::from_static(b"warning\nresult");
        j.output_bytes = 14;
        j.result_len = Some(6);
        assert_eq!(j.result(), Some(&b"result"[..]));
        j.result_len = Some(100);
        assert_eq!(j.result(), Some(&b"warning\nresult"[..]));
        j.result_len = None;
        assert_eq!(j.result(), None);
        assert!(!j.cut());
        j.output_bytes = 20;
        assert!(j.cut());
    }

    #[test]
    fn an_entrys_old_runs_at_the_front_do_not_hold_a_place_for_every_job_after_them() {
        let mut k = KeptResults::new(1 << 30, HOUR);
        k.push(job(0, 0, 10, Some("monthly")));
        for n in 1..10_000 {
            k.push(job(n, n, 10, None));
            // Each goes before the run at the front: a gap behind it, closed up in time.
            assert_eq!(
                k.remove(format!("H:t:{n}").as_bytes()).map(|j| j.ended_ms),
                Some(n)
            );
            assert!(
                k.slots.len() <= 2 * k.len() + GAPS_AT_MOST,
                "{}",
                k.slots.len()
            );
        }
        k.push(job(20_000, 20_000, 10, None));
        k.push(job(20_001, 20_001, 10, Some("monthly")));
        assert_eq!(handles(&k), ["H:t:0", "H:t:20000", "H:t:20001"]);
        assert_eq!(k.get(b"H:t:20000").map(|j| j.ended_ms), Some(20_000));
        assert_eq!(k.newest_runs("monthly").count(), 2);
        // Past the bound and the time: the pinned runs stay, renumbered or not.
        assert_eq!(k.expire(10 * HOUR), vec![Bytes::from("H:t:20000")]);
        assert_eq!(handles(&k), ["H:t:0", "H:t:20001"]);
    }
}
