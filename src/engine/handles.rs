//! The handle index (handle to job), and the pieces it shares with the unique index
//! (`uniques.rs`).
//!
//! Both indexes hold the job's slab key and 32 bits of its hash (8 bytes a bucket, plus hashbrown's
//! control byte): no key is stored twice, and a table that grows rehashes from its own
//! entries, never reading a job (with a million jobs, reading each one was a cache miss per
//! job on every doubling, a third of the time spent filling the queue). Every entry names a
//! live job: a job leaves both indexes before it leaves the slab.
//!
//! Handles the engine makes are `<prefix>:<n>` with a unique n, so they are found by their
//! number (no handle bytes hashed); a handle read back from a journal written under another
//! prefix is kept by its bytes in a small map of its own.

use std::hash::BuildHasher;

use bytes::Bytes;
use hashbrown::HashTable;
use slab::Slab;

use super::types::FOREIGN;
use super::{FastMap, Job, JobKey};
use crate::proto::response::Handle;

/// The seeded hasher both tables hash with.
pub(super) type Seeded = foldhash::fast::RandomState;

/// One bucket of either table: the job's slab key and the low half of its seeded hash.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub hash: u32,
    pub key: u32,
}

/// The table hash of an entry, from the 32 bits it keeps. The multiply spreads them over the
/// 64 bits hashbrown reads (bucket index from the low bits, the tag from the top seven).
pub(super) fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// How a table recomputes an entry's hash when it grows: from the entry alone.
pub(super) fn rehash(e: &Entry) -> u64 {
    spread(e.hash)
}

#[derive(Debug)]
pub struct HandleIndex {
    /// `<prefix>:` of this run's handles.
    prefix: Bytes,
    /// Jobs with their own handle, hashed by `Job::id`.
    by_number: HashTable<Entry>,
    /// Jobs flagged `FOREIGN`: by handle, and the handle by job id.
    foreign: FastMap<Bytes, JobKey>,
    foreign_of: FastMap<u64, Bytes>,
    hasher: Seeded,
}

impl HandleIndex {
    pub fn new(prefix: &str) -> Self {
        HandleIndex {
            prefix: Bytes::from(format!("{prefix}:")),
            by_number: HashTable::new(),
            foreign: FastMap::default(),
            foreign_of: FastMap::default(),
            hasher: Seeded::default(),
        }
    }

    /// The number of one of our own handles (`<prefix>:<digits>`, no leading zero).
    fn number(&self, handle: &[u8]) -> Option<u64> {
        let digits = handle.strip_prefix(&self.prefix[..])?;
        if digits.is_empty() || digits.len() > 19 || (digits[0] == b'0' && digits.len() > 1) {
            return None;
        }
        digits.iter().try_fold(0u64, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + (d - b'0') as u64)
        })
    }

    /// The kept half of the hash of job number `n`.
    fn hash(&self, n: u64) -> u32 {
        self.hasher.hash_one(n) as u32
    }

    pub fn get(&self, handle: &[u8], jobs: &Slab<Job>) -> Option<JobKey> {
        match self.number(handle) {
            Some(n) => {
                let h = self.hash(n);
                self.by_number
                    .find(spread(h), |e| {
                        e.hash == h
                            && jobs
                                .get(e.key as usize)
                                .is_some_and(|j| j.id == n && !j.is(FOREIGN))
                    })
                    .map(|e| e.key as JobKey)
            }
            None => self.foreign.get(handle).copied(),
        }
    }

    pub fn contains(&self, handle: &[u8], jobs: &Slab<Job>) -> bool {
        self.get(handle, jobs).is_some()
    }

    /// `job`'s handle: `<prefix>:<id>` sharing the prefix's block (no allocation), or its
    /// foreign handle.
    pub fn of(&self, job: &Job) -> Handle {
        match self.foreign_of.get(&job.id).filter(|_| job.is(FOREIGN)) {
            None => self.own(job.id),
            Some(h) => Handle::Other(h.clone()),
        }
    }

    /// This run's handle number `n`.
    pub fn own(&self, n: u64) -> Handle {
        Handle::Own {
            prefix: self.prefix.clone(),
            n,
        }
    }

    /// Whether `handle` is this run's handle number `n`.
    pub fn is_own(&self, handle: &[u8], n: u64) -> bool {
        self.number(handle) == Some(n)
    }

    /// Index `job`, at `k` in the slab, under its own handle.
    pub fn insert_job(&mut self, k: JobKey, job: &Job) {
        let hash = self.hash(job.id);
        let e = Entry {
            hash,
            key: k as u32,
        };
        self.by_number.insert_unique(spread(hash), e, rehash);
    }

    /// Index the job at `k`, flagged `FOREIGN`, under the handle it was saved with.
    pub fn insert_foreign(&mut self, k: JobKey, id: u64, handle: Bytes) {
        self.foreign.insert(handle.clone(), k);
        self.foreign_of.insert(id, handle);
    }

    /// Forget the handle of `job`, which was at `k` (it may already be out of the slab).
    pub fn remove_job(&mut self, job: &Job, k: JobKey) {
        if job.is(FOREIGN) {
            if let Some(h) = self.foreign_of.remove(&job.id) {
                if self.foreign.get(&h) == Some(&k) {
                    self.foreign.remove(&h);
                }
            }
        } else if let Ok(e) = self
            .by_number
            .find_entry(spread(self.hash(job.id)), |e| e.key as usize == k)
        {
            e.remove();
        }
    }

    pub fn shrink_to_fit(&mut self) {
        self.by_number.shrink_to_fit(rehash);
        self.foreign.shrink_to_fit();
        self.foreign_of.shrink_to_fit();
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.by_number.capacity() + self.foreign.capacity()
    }
}

/// A unique key borrowed from a job or a request, as both indexes hash and compare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyRef<'a> {
    Unique(&'a [u8]),
    Data(&'a [u8]),
}

impl<'a> KeyRef<'a> {
    /// The coalescing key of a job: its unique, or its data when the unique is `-`.
    pub fn of(unique: &'a [u8], data: &'a [u8]) -> Option<KeyRef<'a>> {
        match unique {
            b"" => None,
            b"-" if data.is_empty() => None,
            b"-" => Some(KeyRef::Data(data)),
            _ => Some(KeyRef::Unique(unique)),
        }
    }
}

// Here rather than in types.rs, so that types does not import handles (handles uses types).
impl Job {
    /// The job's coalescing key (see `KeyRef::of`).
    pub fn key_ref(&self) -> Option<KeyRef<'_>> {
        KeyRef::of(self.body.unique_bytes(), self.body.data_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::super::FuncId;
    use super::*;

    #[test]
    fn own_handle_numbers() {
        let h = HandleIndex::new("H:box");
        assert_eq!(h.number(b"H:box:17"), Some(17));
        assert_eq!(h.number(b"H:box:0"), Some(0));
        // Not one of ours, or not the same handle even if it names the same number.
        assert_eq!(h.number(b"H:old:17"), None);
        assert_eq!(h.number(b"H:box:017"), None);
        assert_eq!(h.number(b"H:box:17x"), None);
        assert_eq!(h.number(b"H:box:"), None);
        assert_eq!(h.number(b"H:box:99999999999999999999999"), None);
        assert!(h.is_own(b"H:box:17", 17));
        assert!(!h.is_own(b"H:box:17", 18));
    }

    #[test]
    fn both_indexes_find_every_job_after_growing_and_shrinking_from_their_own_entries() {
        use crate::proto::request::{JobBody, Priority};
        let mut jobs = Slab::new();
        let mut handles = HandleIndex::new("H:t");
        let mut uniques = super::super::uniques::UniqueIndex::default();
        // Enough to double both tables many times; rehashing reads only the entries.
        let n = 20_000u64;
        for id in 0..n {
            let unique = format!("u{id}");
            let job = Job::new(
                JobBody::new(unique.as_bytes(), b"d"),
                id + 7,
                0,
                (id % 3) as FuncId,
                Priority::Normal,
                0,
            );
            let k = jobs.insert(job);
            handles.insert_job(k, &jobs[k]);
            uniques.insert(k, &jobs);
        }
        use super::super::uniques::UniqueIndex;
        let find = |handles: &HandleIndex, uniques: &UniqueIndex, jobs: &Slab<Job>, id: u64| {
            let h = handles.get(format!("H:t:{}", id + 7).as_bytes(), jobs);
            let unique = format!("u{id}");
            let u = uniques.get((id % 3) as FuncId, KeyRef::Unique(unique.as_bytes()), jobs);
            (h, u)
        };
        for id in 0..n {
            let (h, u) = find(&handles, &uniques, &jobs, id);
            assert_eq!(h, Some(id as JobKey), "handle of job {id}");
            assert_eq!(u, Some(id as JobKey), "unique of job {id}");
        }
        // Same unique under another function: not the same job.
        assert_eq!(uniques.get(1, KeyRef::Unique(b"u0"), &jobs), None);
        // Remove most, shrink, and look again.
        for id in (0..n).filter(|id| id % 10 != 0) {
            let k = id as JobKey;
            let job = jobs.remove(k);
            handles.remove_job(&job, k);
            uniques.remove(&job, k);
        }
        handles.shrink_to_fit();
        uniques.shrink_to_fit();
        for id in 0..n {
            let (h, u) = find(&handles, &uniques, &jobs, id);
            let want = (id % 10 == 0).then_some(id as JobKey);
            assert_eq!((h, u), (want, want), "job {id}");
        }
    }

    #[test]
    fn key_of_a_job() {
        assert_eq!(KeyRef::of(b"", b"x"), None);
        assert_eq!(KeyRef::of(b"-", b""), None);
        assert_eq!(KeyRef::of(b"-", b"x"), Some(KeyRef::Data(b"x")));
        assert_eq!(KeyRef::of(b"u", b"x"), Some(KeyRef::Unique(b"u")));
    }
}
