//! The unique index: each coalescing key to its jobs, one per function.
//!
//! Coalescing asks for (function, key); GET_STATUS_UNIQUE asks for the key alone, across
//! functions, as gearmand. One table serves both in O(1): it holds one entry per distinct key
//! (the job's slab key and 32 bits of the key's hash, 8 bytes, as the handle index), and a key
//! that jobs of several functions share points instead to a group with the job of each
//! function. Nearly every key belongs to one job, so the usual job pays nothing more than
//! before; only shared keys pay for a group, and a peer that makes 10,000 functions share
//! one key gets one group in which insert, remove and both lookups stay O(1) or O(log n),
//! never a walk over its members or over the functions.

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as Slot;
use slab::Slab;

use super::handles::{Entry, KeyRef, Seeded, rehash, spread};
use super::{FastMap, FuncId, Job, JobKey};

/// `Entry::key` with this bit set is an index in `groups`, not a job.
const GROUP: u32 = 1 << 31;

/// The jobs of several functions under one key.
#[derive(Debug, Default)]
struct Group {
    /// Each function's job.
    by_func: FastMap<u32, u32>,
    /// The same jobs by id: GET_STATUS_UNIQUE answers the newest (the highest id), which is
    /// also the job gearmand answers (its unique hash chains put the newest job first).
    by_id: BTreeMap<u64, u32>,
}

impl Group {
    fn newest(&self) -> Option<JobKey> {
        self.by_id.last_key_value().map(|(_, &k)| k as JobKey)
    }
}

/// A job filed under entry `e`: the job itself, or the newest of its group.
fn some_job(groups: &Slab<Group>, e: &Entry) -> Option<JobKey> {
    if e.key & GROUP == 0 {
        Some(e.key as JobKey)
    } else {
        groups.get((e.key & !GROUP) as usize)?.newest()
    }
}

/// Whether entry `e` (of hash `h`) is the one of `key`: it compares the key of a job it holds.
fn holds(groups: &Slab<Group>, e: &Entry, h: u32, key: KeyRef<'_>, jobs: &Slab<Job>) -> bool {
    e.hash == h
        && some_job(groups, e)
            .and_then(|k| jobs.get(k))
            .is_some_and(|j| j.key_ref() == Some(key))
}

#[derive(Debug, Default)]
pub struct UniqueIndex {
    table: HashTable<Entry>,
    groups: Slab<Group>,
    hasher: Seeded,
    /// Lookups made, so tests can count that one request costs one lookup.
    #[cfg(test)]
    pub lookups: std::cell::Cell<u64>,
}

impl UniqueIndex {
    /// The kept half of the seeded hash of a key. Seeded per process, so peers cannot aim
    /// for collisions; a collision costs one comparison, never a wrong match.
    fn hash(&self, key: KeyRef<'_>) -> u32 {
        self.hasher.hash_one(key) as u32
    }

    fn find(&self, key: KeyRef<'_>, jobs: &Slab<Job>) -> Option<&Entry> {
        #[cfg(test)]
        self.lookups.set(self.lookups.get() + 1);
        let h = self.hash(key);
        self.table
            .find(spread(h), |e| holds(&self.groups, e, h, key, jobs))
    }

    /// The job of function `f` indexed under `key`, if any (the coalescing lookup).
    pub fn get(&self, f: FuncId, key: KeyRef<'_>, jobs: &Slab<Job>) -> Option<JobKey> {
        let e = self.find(key, jobs)?;
        if e.key & GROUP == 0 {
            let k = e.key as JobKey;
            (jobs.get(k)?.func() == f).then_some(k)
        } else {
            let g = self.groups.get((e.key & !GROUP) as usize)?;
            g.by_func.get(&(f as u32)).map(|&k| k as JobKey)
        }
    }

    /// A job of any function indexed under `key`: when several functions have one, the
    /// newest (GET_STATUS_UNIQUE, as gearmand).
    pub fn get_any(&self, key: KeyRef<'_>, jobs: &Slab<Job>) -> Option<JobKey> {
        self.find(key, jobs).and_then(|e| some_job(&self.groups, e))
    }

    /// Index the job at `k` in the slab. Its function must not have a job indexed under the
    /// same key (the caller coalesces first).
    pub fn insert(&mut self, k: JobKey, jobs: &Slab<Job>) {
        let job = &jobs[k];
        let Some(key) = job.key_ref() else { return };
        debug_assert!(k < GROUP as usize, "job keys stay below 2^31");
        let h = self.hash(key);
        let groups = &mut self.groups;
        let slot = self
            .table
            .entry(spread(h), |e| holds(groups, e, h, key, jobs), rehash);
        match slot {
            Slot::Vacant(v) => {
                v.insert(Entry {
                    hash: h,
                    key: k as u32,
                });
            }
            Slot::Occupied(mut o) => {
                let e = o.get_mut();
                // A second job of one function under one key would be a caller's bug: the
                // first stays indexed (and the second is never found), as a journal with
                // such twins is restored.
                if e.key & GROUP == 0 {
                    // A second function's job under this key: the entry becomes a group.
                    let other = e.key;
                    let Some(j) = jobs.get(other as usize).filter(|j| j.func != job.func) else {
                        debug_assert!(false, "one job per function and key");
                        return;
                    };
                    let mut g = Group::default();
                    g.by_func.insert(j.func, other);
                    g.by_id.insert(j.id, other);
                    e.key = GROUP | groups.insert(g) as u32;
                }
                if let Some(g) = groups.get_mut((e.key & !GROUP) as usize) {
                    match g.by_func.entry(job.func) {
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(k as u32);
                            g.by_id.insert(job.id, k as u32);
                        }
                        std::collections::hash_map::Entry::Occupied(_) => {
                            debug_assert!(false, "one job per function and key");
                        }
                    }
                }
            }
        }
    }

    /// Forget `job`, which was indexed at `k` (it may already be out of the slab, so nothing
    /// here reads it back).
    pub fn remove(&mut self, job: &Job, k: JobKey) {
        let Some(key) = job.key_ref() else { return };
        let h = self.hash(key);
        let groups = &mut self.groups;
        let Ok(mut o) = self.table.find_entry(spread(h), |e| {
            e.hash == h
                && if e.key & GROUP == 0 {
                    e.key as JobKey == k
                } else {
                    // A job is in one group only: its function's slot there names it.
                    groups
                        .get((e.key & !GROUP) as usize)
                        .is_some_and(|g| g.by_func.get(&job.func) == Some(&(k as u32)))
                }
        }) else {
            return;
        };
        let e = o.get_mut();
        if e.key & GROUP == 0 {
            o.remove();
            return;
        }
        let gi = (e.key & !GROUP) as usize;
        let Some(g) = groups.get_mut(gi) else { return };
        g.by_func.remove(&job.func);
        g.by_id.remove(&job.id);
        // Back to a plain entry when one job is left (a group never holds fewer than two).
        if g.by_func.len() == 1 {
            if let Some(&last) = g.by_func.values().next() {
                e.key = last;
            }
            groups.remove(gi);
        } else if g.by_func.capacity() > 4 * g.by_func.len() + 16 {
            // Memory comes back as a big group empties (amortised: after 3/4 of it left).
            g.by_func.shrink_to_fit();
        }
    }

    pub fn shrink_to_fit(&mut self) {
        self.table.shrink_to_fit(rehash);
        self.groups.shrink_to_fit();
    }

    /// The index holds exactly the jobs flagged `INDEXED`, each under its own key and
    /// function, and every group holds at least two jobs of distinct functions.
    #[cfg(test)]
    pub fn check(&self, jobs: &Slab<Job>) {
        use super::types::INDEXED;
        let mut listed = 0;
        let mut groups_seen = 0;
        for e in self.table.iter() {
            let members: Vec<u32> = if e.key & GROUP == 0 {
                vec![e.key]
            } else {
                let g = &self.groups[(e.key & !GROUP) as usize];
                groups_seen += 1;
                assert!(g.by_func.len() >= 2, "a group of one");
                assert_eq!(g.by_func.len(), g.by_id.len());
                for (&id, &k) in &g.by_id {
                    assert_eq!(jobs[k as usize].id, id);
                    assert_eq!(g.by_func.get(&jobs[k as usize].func), Some(&k));
                }
                g.by_func.values().copied().collect()
            };
            let key = jobs[members[0] as usize]
                .key_ref()
                .expect("indexed with a key");
            assert_eq!(e.hash, self.hash(key));
            for k in members {
                let job = &jobs[k as usize];
                assert!(job.is(INDEXED));
                assert_eq!(job.key_ref(), Some(key));
                assert_eq!(self.get(job.func(), key, jobs), Some(k as JobKey));
                listed += 1;
            }
        }
        assert_eq!(groups_seen, self.groups.len(), "a group no entry names");
        let indexed = jobs.iter().filter(|(_, j)| j.is(INDEXED)).count();
        assert_eq!(listed, indexed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::request::{JobBody, Priority};

    fn job(jobs: &mut Slab<Job>, id: u64, f: FuncId, unique: &str) -> JobKey {
        let flags = super::super::types::INDEXED;
        let body = JobBody::new(unique.as_bytes(), b"d");
        jobs.insert(Job::new(body, id, 0, f, Priority::Normal, flags))
    }

    /// 10,000 functions share one key: every job is found under its function, the key alone
    /// answers the newest, and removing them in any order keeps the index whole, down to a
    /// plain entry and then nothing.
    #[test]
    fn many_functions_share_one_key() {
        let (mut jobs, mut ix) = (Slab::new(), UniqueIndex::default());
        let n = 10_000;
        let keys: Vec<JobKey> = (0..n)
            .map(|f| {
                let k = job(&mut jobs, 100 + f as u64, f, "x");
                ix.insert(k, &jobs);
                k
            })
            .collect();
        let other = job(&mut jobs, 1, 3, "y");
        ix.insert(other, &jobs);
        ix.check(&jobs);
        assert_eq!(ix.groups.len(), 1);
        let x = KeyRef::Unique(b"x");
        for (f, &k) in keys.iter().enumerate() {
            assert_eq!(ix.get(f, x, &jobs), Some(k));
        }
        assert_eq!(ix.get(n, x, &jobs), None);
        assert_eq!(ix.get_any(x, &jobs), Some(keys[n - 1]));
        assert_eq!(ix.get_any(KeyRef::Unique(b"y"), &jobs), Some(other));
        assert_eq!(ix.get(4, KeyRef::Unique(b"y"), &jobs), None);
        assert_eq!(ix.get_any(KeyRef::Data(b"x"), &jobs), None);
        // Remove the newest, then every other from the oldest, then the rest.
        let order = std::iter::once(n - 1)
            .chain((0..n - 1).step_by(2))
            .chain((1..n - 1).step_by(2));
        for (i, f) in order.enumerate() {
            let k = keys[f];
            let gone = jobs.remove(k);
            ix.remove(&gone, k);
            assert_eq!(ix.get(f, x, &jobs), None);
            if i % 1000 == 0 || i + 2 >= n {
                ix.check(&jobs);
            }
            if i == 0 {
                assert_eq!(ix.get_any(x, &jobs), Some(keys[n - 2]));
            }
            if i == n - 100 {
                let g = ix.groups.iter().next().expect("the group").1;
                assert!(g.by_func.capacity() < 1024, "the group gave memory back");
            }
        }
        assert_eq!(ix.get_any(x, &jobs), None);
        assert_eq!(ix.groups.len(), 0);
        assert_eq!(ix.get_any(KeyRef::Unique(b"y"), &jobs), Some(other));
        ix.check(&jobs);
    }

    /// A key a job holds by its data (unique `-`) is another key than the same bytes as a
    /// unique, and jobs with no key are not indexed.
    #[test]
    fn data_keys_and_empty_uniques() {
        let (mut jobs, mut ix) = (Slab::new(), UniqueIndex::default());
        let body = JobBody::new(b"-", b"x");
        let k = jobs.insert(Job::new(body, 1, 0, 0, Priority::Normal, 0));
        ix.insert(k, &jobs);
        let e = job(&mut jobs, 2, 0, "");
        ix.insert(e, &jobs);
        assert_eq!(ix.get(0, KeyRef::Data(b"x"), &jobs), Some(k));
        assert_eq!(ix.get_any(KeyRef::Unique(b"x"), &jobs), None);
        assert_eq!(ix.get_any(KeyRef::Unique(b"-"), &jobs), None);
        assert_eq!(ix.get_any(KeyRef::Unique(b""), &jobs), None);
        assert_eq!(ix.table.len(), 1);
    }
}
