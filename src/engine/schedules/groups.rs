//! `group=NAME`: runs of the entries of one group never run at the same time. A run due while
//! its group has a job queued, running or waiting for a retry is held back (at most one per
//! entry; a later one of the same entry is skipped, as `overlap=skip` would) and made when
//! the group's last job leaves, oldest first.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use super::super::{Engine, JobKey, Outbox, rfc3339};

/// The groups' state: their live jobs and the runs waiting for them.
#[derive(Default)]
pub(crate) struct Groups {
    /// Each group's jobs that have not left, and which group each such job is of.
    live: HashMap<Rc<str>, u32>,
    of_job: HashMap<u32, Rc<str>>,
    /// Runs held back, per group, oldest first: the entry and the run's scheduled time.
    waiting: HashMap<Rc<str>, VecDeque<(Rc<str>, u64)>>,
    /// Groups whose last job left this request: their next run is made once `now` and the
    /// outbox are at hand.
    released: Vec<Rc<str>>,
}

impl Engine {
    /// The group of the entry at `slot`, if it has one.
    fn group_of_slot(&self, slot: usize) -> Option<Rc<str>> {
        let g = self.schedules.entries[slot].entry.group.as_deref()?;
        Some(Rc::from(g))
    }

    /// Whether the run of the entry at `slot` scheduled at `nominal` must wait for its group;
    /// if so it is held back (or skipped, when the entry has one waiting already).
    pub(super) fn wait_for_group(&mut self, slot: usize, nominal: u64) -> bool {
        let Some(g) = self.group_of_slot(slot) else {
            return false;
        };
        if self.schedules.groups.live.get(&g).copied().unwrap_or(0) == 0 {
            return false;
        }
        let id = Rc::clone(&self.schedules.entries[slot].id);
        let queue = self
            .schedules
            .groups
            .waiting
            .entry(Rc::clone(&g))
            .or_default();
        if queue.iter().any(|(e, _)| *e == id) {
            let h = &mut self.schedules.entries[slot].history;
            h.skips += 1;
            h.seen_ms = h.seen_ms.max(Some(nominal));
            log::info!(
                "schedule {id}: run at {} skipped: a run of it already waits for group {g}",
                rfc3339(nominal)
            );
            self.journal_history(slot);
            return true;
        }
        queue.push_back((Rc::clone(&id), nominal));
        log::info!(
            "schedule {id}: run at {} waits: group {g} has a run going",
            rfc3339(nominal)
        );
        true
    }

    /// The job at `k` is a run of the entry at `slot` (or a retry of one): its group is busy
    /// until it leaves.
    pub(super) fn group_job_made(&mut self, slot: usize, k: JobKey) {
        if let Some(g) = self.group_of_slot(slot) {
            self.join_group(g, k);
        }
    }

    /// The job at `k` keeps `g` busy until it leaves (a retry of a group run, say).
    pub(in crate::engine) fn join_group(&mut self, g: Rc<str>, k: JobKey) {
        let groups = &mut self.schedules.groups;
        *groups.live.entry(Rc::clone(&g)).or_default() += 1;
        groups.of_job.insert(k as u32, g);
    }

    /// The group the job at `k` keeps busy, if any.
    pub(in crate::engine) fn group_of_job(&self, k: JobKey) -> Option<Rc<str>> {
        self.schedules.groups.of_job.get(&(k as u32)).cloned()
    }

    /// The job at `k` leaves the engine.
    pub(in crate::engine) fn group_job_gone(&mut self, k: JobKey) {
        let groups = &mut self.schedules.groups;
        if groups.of_job.is_empty() {
            return;
        }
        let Some(g) = groups.of_job.remove(&(k as u32)) else {
            return;
        };
        let n = groups.live.get_mut(&g).map_or(0, |n| {
            *n -= 1;
            *n
        });
        if n == 0 {
            groups.live.remove(&g);
            if groups.waiting.contains_key(&g) {
                groups.released.push(g);
            }
        }
    }

    /// Make the next held-back run of each group whose last job left.
    pub(in crate::engine) fn release_groups(&mut self, now: u64, out: &mut Outbox) {
        while let Some(g) = self.schedules.groups.released.pop() {
            loop {
                if self.schedules.groups.live.contains_key(&g) {
                    break;
                }
                let next = self
                    .schedules
                    .groups
                    .waiting
                    .get_mut(&g)
                    .and_then(VecDeque::pop_front);
                let Some((entry, nominal)) = next else {
                    self.schedules.groups.waiting.remove(&g);
                    break;
                };
                // An entry a reload removed, or moved out of the group, has nothing to wait.
                let Some(&slot) = self.schedules.by_id.get(&entry) else {
                    continue;
                };
                if self.group_of_slot(slot).as_deref() != Some(&*g) {
                    continue;
                }
                log::info!(
                    "schedule {entry}: group {g} is free: its run at {} starts",
                    rfc3339(nominal)
                );
                self.make_run(slot, nominal, now, out);
            }
        }
    }

    /// Whether the group of the entry at `slot` has a job now (a manual run waits for none:
    /// it is refused).
    pub(super) fn group_busy(&self, slot: usize) -> Option<Rc<str>> {
        let g = self.group_of_slot(slot)?;
        self.schedules.groups.live.contains_key(&g).then_some(g)
    }
}
