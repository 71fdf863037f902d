//! The engine's two indexes: handle to job, and (function, unique) to job.
//!
//! Handles: the index from job handle to job. Handles the engine makes are `<prefix>:<n>` with a unique
//! n, so they are found by their number (8 bytes a key, no handle bytes hashed); a handle
//! read back from a journal written under another prefix is kept by its bytes.

use bytes::Bytes;
use slab::Slab;

use super::{FastMap, FuncId, Job, JobKey, UniqueKey};
use crate::proto::response::Handle;

#[derive(Debug)]
pub struct HandleIndex {
    /// `<prefix>:` of this run's handles.
    prefix: Bytes,
    by_number: FastMap<u64, JobKey>,
    foreign: FastMap<Bytes, JobKey>,
}

impl HandleIndex {
    pub fn new(prefix: &str) -> Self {
        HandleIndex {
            prefix: Bytes::from(format!("{prefix}:")),
            by_number: FastMap::default(),
            foreign: FastMap::default(),
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

    pub fn get(&self, handle: &[u8]) -> Option<JobKey> {
        match self.number(handle) {
            Some(n) => self.by_number.get(&n).copied(),
            None => self.foreign.get(handle).copied(),
        }
    }

    pub fn contains(&self, handle: &[u8]) -> bool {
        self.get(handle).is_some()
    }

    pub fn insert(&mut self, handle: &Bytes, k: JobKey) {
        match self.number(handle) {
            Some(n) => {
                self.by_number.insert(n, k);
            }
            None => {
                self.foreign.insert(handle.clone(), k);
            }
        }
    }

    pub fn remove(&mut self, handle: &[u8]) {
        match self.number(handle) {
            Some(n) => {
                self.by_number.remove(&n);
            }
            None => {
                self.foreign.remove(handle);
            }
        }
    }

    /// `job`'s handle: `<prefix>:<id>` sharing the prefix's block (no allocation), or its
    /// foreign handle.
    pub fn of(&self, job: &Job) -> Handle {
        match &job.foreign_handle {
            None => self.own(job.id),
            Some(h) => Handle::Other((**h).clone()),
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

    /// Index `job` (at `k`) under its handle.
    pub fn insert_job(&mut self, job: &Job, k: JobKey) {
        match &job.foreign_handle {
            None => {
                self.by_number.insert(job.id, k);
            }
            Some(h) => self.insert(h, k),
        }
    }

    /// Forget `job`'s handle.
    pub fn remove_job(&mut self, job: &Job) {
        match &job.foreign_handle {
            None => {
                self.by_number.remove(&job.id);
            }
            Some(h) => self.remove(h),
        }
    }

    pub fn shrink_to_fit(&mut self) {
        self.by_number.shrink_to_fit();
        self.foreign.shrink_to_fit();
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.by_number.capacity() + self.foreign.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_handles_by_number_and_others_by_bytes() {
        let mut h = HandleIndex::new("H:box");
        h.insert(&Bytes::from_static(b"H:box:17"), 3);
        h.insert(&Bytes::from_static(b"H:old:17"), 4);
        assert_eq!(h.get(b"H:box:17"), Some(3));
        assert_eq!(h.get(b"H:old:17"), Some(4));
        // Not the same handle, even if it names the same number.
        assert_eq!(h.get(b"H:box:017"), None);
        assert_eq!(h.get(b"H:box:17x"), None);
        assert_eq!(h.get(b"H:box:"), None);
        assert_eq!(h.get(b"H:box:99999999999999999999999"), None);
        h.remove(b"H:box:17");
        assert!(!h.contains(b"H:box:17"));
        assert!(h.contains(b"H:old:17"));
    }
}

/// The coalescing index: (function, unique key) to job. It keeps only the function and a
/// 64-bit hash of the key (16 bytes an entry rather than a copy of the key); a hit is
/// checked against the job's own unique, so a collision can only cost a missed coalescing,
/// never a wrong one. The hash is seeded per process, so peers cannot aim for collisions.
#[derive(Debug, Default)]
pub struct UniqueIndex {
    map: FastMap<(u32, u64), JobKey>,
    hasher: foldhash::fast::RandomState,
}

impl UniqueIndex {
    fn key(&self, f: FuncId, uk: &UniqueKey) -> (u32, u64) {
        use std::hash::BuildHasher;
        (f as u32, self.hasher.hash_one(uk))
    }

    /// The job indexed under (f, uk), if it really has that key.
    pub fn get(&self, f: FuncId, uk: &UniqueKey, jobs: &Slab<Job>) -> Option<JobKey> {
        let k = *self.map.get(&self.key(f, uk))?;
        let job = jobs.get(k)?;
        (job.func == f && UniqueKey::of(&job.unique, &job.data).as_ref() == Some(uk)).then_some(k)
    }

    /// Index `k` under (f, uk). False when another job holds that slot (a hash collision):
    /// the new job is then not coalesced with.
    pub fn insert(&mut self, f: FuncId, uk: &UniqueKey, k: JobKey) -> bool {
        let key = self.key(f, uk);
        match self.map.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(k);
                true
            }
        }
    }

    /// Forget (f, uk) if it still points at `k`.
    pub fn remove(&mut self, f: FuncId, uk: &UniqueKey, k: JobKey) {
        let key = self.key(f, uk);
        if self.map.get(&key) == Some(&k) {
            self.map.remove(&key);
        }
    }

    pub fn shrink_to_fit(&mut self) {
        self.map.shrink_to_fit();
    }
}
