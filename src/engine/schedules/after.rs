//! `@after` entries in the engine: each child's set (the newest run of each parent since the
//! child last ran), journalled; the child's run when the set is complete (fan-in, once per
//! set), `when=`, `within=` (a set not complete in time is a missed run, alerted with the
//! parents that did not run), the `{after}` placeholder and the links from a child's runs
//! to its parents' runs; in a cluster, each set kept in etcd for the next leader.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use bytes::Bytes;

use super::run_history::{RunOutcome, RunRecord};
use crate::engine::{Engine, JobKey, Outbox, TimerEvent, rfc3339};
use crate::schedule::cron::Timing;
use crate::schedule::duration::show_duration;
use crate::store::{AfterParent, AfterSet, Record};
use crate::timer::TimerKey;

/// Links kept per child: as many as its run history holds.
const LINKS_KEPT: usize = 20;

/// One parent's run, as a child sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParentRun {
    pub id: Rc<str>,
    pub handle: String,
    pub scheduled_ms: u64,
    pub ended_ms: u64,
    pub ok: bool,
}

/// A child's run and the parents' runs it was made from.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub scheduled_ms: u64,
    pub parents: Vec<ParentRun>,
}

#[derive(Default)]
pub(crate) struct AfterState {
    /// By child: the newest run of each parent since the child last ran.
    sets: HashMap<Rc<str>, Vec<ParentRun>>,
    /// By parent: the slots of its children (made again at each load).
    children: HashMap<Rc<str>, Vec<usize>>,
    /// By child: its `within=` timer.
    within: HashMap<Rc<str>, TimerKey>,
    /// By child: its last runs made from a set, newest last.
    links: HashMap<Rc<str>, VecDeque<Link>>,
    /// Parents' fan-out runs with jobs still going: whether the ended parts all completed.
    partial: HashMap<(Rc<str>, u64), bool>,
}

impl AfterState {
    /// The parents' runs a run of `child` at `scheduled_ms` was made from.
    pub(crate) fn link(&self, child: &str, scheduled_ms: u64) -> Option<&Link> {
        self.links
            .get(child)?
            .iter()
            .rev()
            .find(|l| l.scheduled_ms == scheduled_ms)
    }

    /// The parents' runs the child has seen since it last ran.
    pub(crate) fn pending(&self, child: &str) -> &[ParentRun] {
        self.sets.get(child).map_or(&[], Vec::as_slice)
    }
}

/// `{after}`: the parents' runs as a JSON array, in the order the entry names them:
/// `[{"id":"a","handle":"H:host:12","scheduled":"2026-01-01T03:00:00Z","ended":"...","outcome":"complete"}]`.
pub(crate) fn after_json(parents: &[ParentRun]) -> String {
    let mut out = String::from("[");
    for (i, p) in parents.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut o = crate::json::Obj::new(&mut out);
        o.str("id", &p.id)
            .str("handle", &p.handle)
            .str("scheduled", &rfc3339(p.scheduled_ms))
            .str("ended", &rfc3339(p.ended_ms))
            .str("outcome", if p.ok { "complete" } else { "failed" });
        o.end();
    }
    out.push(']');
    out
}

/// A child's set as kept in etcd (`P/after/{child}`):
/// `[{"id":"a","handle":"H:host:12","scheduled":MS,"ended":MS,"ok":true}]`.
pub(crate) fn set_json(parents: &[ParentRun]) -> String {
    let mut out = String::with_capacity(64 * parents.len() + 2);
    crate::json::array(&mut out, parents, |out, p| {
        let mut o = crate::json::Obj::new(out);
        o.str("id", &p.id)
            .str("handle", &p.handle)
            .num("scheduled", p.scheduled_ms)
            .num("ended", p.ended_ms)
            .bool("ok", p.ok);
        o.end();
    });
    out
}

/// A set read back from etcd; `None` when it is not one (another version, a hand-made key).
pub(crate) fn parse_set(bytes: &[u8]) -> Option<Vec<ParentRun>> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    v.as_array()?
        .iter()
        .map(|p| {
            Some(ParentRun {
                id: Rc::from(p.get("id")?.as_str()?),
                handle: p.get("handle")?.as_str()?.to_string(),
                scheduled_ms: p.get("scheduled")?.as_u64()?,
                ended_ms: p.get("ended")?.as_u64()?,
                ok: p.get("ok")?.as_bool()?,
            })
        })
        .collect()
}

/// Two sets of one child merged: for each parent its newest run (by its end), but those
/// `used` (the child already ran from them).
pub(crate) fn merge_sets(
    mine: Vec<ParentRun>,
    theirs: Vec<ParentRun>,
    used: impl Fn(&ParentRun) -> bool,
) -> Vec<ParentRun> {
    let mut merged: Vec<ParentRun> = Vec::new();
    for r in mine.into_iter().chain(theirs) {
        if used(&r) {
            continue;
        }
        match merged.iter_mut().find(|m| m.id == r.id) {
            Some(m) if m.ended_ms < r.ended_ms => *m = r,
            Some(_) => {}
            None => merged.push(r),
        }
    }
    merged
}

/// `show runs`' and the console's form of a link: `a H:host:1 2026-...Z complete, b ...`.
pub(crate) fn link_text(parents: &[ParentRun]) -> String {
    parents
        .iter()
        .map(|p| {
            format!(
                "{} {} {} {}",
                p.id,
                p.handle,
                rfc3339(p.scheduled_ms),
                if p.ok { "complete" } else { "failed" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Engine {
    /// Bring back a child's set from the journal (before the first load).
    pub(in crate::engine) fn restore_after_set(&mut self, set: AfterSet) {
        let child: Rc<str> = Rc::from(String::from_utf8_lossy(&set.entry).as_ref());
        let parents = set
            .parents
            .into_iter()
            .map(|p| ParentRun {
                id: Rc::from(String::from_utf8_lossy(&p.id).as_ref()),
                handle: String::from_utf8_lossy(&p.handle).into_owned(),
                scheduled_ms: p.scheduled_ms,
                ended_ms: p.ended_ms,
                ok: p.ok,
            })
            .collect();
        self.schedules.after.sets.insert(child, parents);
    }

    /// After a load: who follows whom, and each child's set kept honest. A set of an entry
    /// that is no longer `@after` is dropped; a parent the child no longer names leaves its
    /// set. Nothing fires here: the next parent's run that completes a set does.
    pub(super) fn after_loaded(&mut self, now: u64, out: &mut Outbox) {
        let a = &mut self.schedules.after;
        a.children.clear();
        for t in std::mem::take(&mut a.within).into_values() {
            self.timers.cancel(t);
        }
        let mut names: HashMap<Rc<str>, Vec<Rc<str>>> = HashMap::new();
        for (slot, st) in self.schedules.entries.iter().enumerate() {
            if let Timing::After(p) = &st.entry.timing {
                let parents: Vec<Rc<str>> = p.ids.iter().map(|s| Rc::from(s.as_str())).collect();
                for id in &parents {
                    a.children.entry(Rc::clone(id)).or_default().push(slot);
                }
                names.insert(Rc::clone(&st.id), parents);
            }
        }
        a.links.retain(|child, _| names.contains_key(child));
        let mut changed = Vec::new();
        a.sets.retain(|child, set| {
            let Some(parents) = names.get(child) else {
                changed.push(Rc::clone(child));
                return false;
            };
            let before = set.len();
            set.retain(|r| parents.contains(&r.id));
            if set.len() != before {
                changed.push(Rc::clone(child));
            }
            true
        });
        for child in changed {
            self.journal_after_set(&child);
        }
        for slot in 0..self.schedules.entries.len() {
            self.after_expire(slot, now, out);
            self.arm_within(slot);
        }
    }

    /// A job of a scheduled run ended for good (`ok`: it completed). When the entry is a
    /// parent and this was its run's last job, the run counts for each of its children.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn after_parent_job_ended(
        &mut self,
        job: JobKey,
        entry: &Rc<str>,
        handle: &str,
        scheduled_ms: u64,
        ok: bool,
        now: u64,
        out: &mut Outbox,
    ) {
        let Some(children) = self.schedules.after.children.get(entry).cloned() else {
            return;
        };
        let others_going = self.other_parts_going(job, entry, scheduled_ms);
        // A fan-out run ends with its last job, and completed only if every part did.
        let key = (Rc::clone(entry), scheduled_ms);
        let partial = &mut self.schedules.after.partial;
        if others_going {
            let all = partial.entry(key).or_insert(true);
            *all &= ok;
            return;
        }
        let ok = ok && partial.remove(&key).unwrap_or(true);
        let run = ParentRun {
            id: Rc::clone(entry),
            handle: handle.to_string(),
            scheduled_ms,
            ended_ms: now,
            ok,
        };
        for slot in children {
            self.after_parent_ran(slot, run.clone(), now, out);
        }
    }

    /// Whether another job of the same run (a fan-out's part) is still queued, running or
    /// waiting for a retry. One pass over the jobs, only for a parent with `fanout=`.
    fn other_parts_going(&self, job: JobKey, entry: &Rc<str>, scheduled_ms: u64) -> bool {
        let fanout = self
            .schedules
            .by_id
            .get(entry)
            .map_or(1, |&s| self.schedules.entries[s].entry.fanout);
        if fanout <= 1 {
            return false;
        }
        self.jobs.iter().any(|(k, _)| {
            k != job
                && self
                    .rare(k)
                    .and_then(|r| r.origin.as_ref())
                    .is_some_and(|o| o.entry == *entry && o.scheduled_ms == scheduled_ms)
        })
    }

    fn after_parent_ran(&mut self, slot: usize, run: ParentRun, now: u64, out: &mut Outbox) {
        // A set whose `within=` ran out is missed before this run starts a new one.
        self.after_expire(slot, now, out);
        let st = &self.schedules.entries[slot];
        let Timing::After(names) = &st.entry.timing else {
            return;
        };
        let rule = st.entry.after;
        let child = Rc::clone(&st.id);
        let order: Vec<String> = names.ids.clone();
        let paused = st.history.marks.paused;
        let set = self
            .schedules
            .after
            .sets
            .entry(Rc::clone(&child))
            .or_default();
        set.retain(|r| r.id != run.id);
        if rule.counts(run.ok) {
            set.push(run);
        } else {
            // With when=success the newest run decides: a failure undoes an earlier success.
            log::info!(
                "schedule {child}: parent {} failed its run at {} (when=success): it has not run for this entry",
                run.id,
                rfc3339(run.scheduled_ms)
            );
        }
        let complete = order.iter().all(|id| set.iter().any(|r| *r.id == **id));
        // A server of a cluster that does not lead (an old leader whose parent's job ended
        // after a failover) keeps the set for the leader, which fires the child when it
        // sees it.
        let follower = self.schedules.clustered && !self.schedules.cluster.leading;
        if !complete || paused || follower {
            // A paused entry fires nothing; its set waits for `resume` and the next parent.
            self.journal_after_set(&child);
            self.arm_within(slot);
            return;
        }
        self.after_fire(slot, now, out);
    }

    /// The child's set is complete: the child runs (in a cluster, a claim), made from it.
    fn after_fire(&mut self, slot: usize, now: u64, out: &mut Outbox) {
        let st = &self.schedules.entries[slot];
        let Timing::After(names) = &st.entry.timing else {
            return;
        };
        let child = Rc::clone(&st.id);
        let order: Vec<String> = names.ids.clone();
        let mut parents = self.schedules.after.sets.remove(&child).unwrap_or_default();
        parents.sort_by_key(|r| order.iter().position(|id| **id == *r.id));
        log::info!(
            "schedule {child}: its parents ran ({}): running it",
            link_text(&parents)
        );
        let links = self
            .schedules
            .after
            .links
            .entry(Rc::clone(&child))
            .or_default();
        if links.len() >= LINKS_KEPT {
            links.pop_front();
        }
        links.push_back(Link {
            scheduled_ms: now,
            parents,
        });
        self.journal_after_set(&child);
        self.arm_within(slot);
        self.run_entry(slot, now, now, out);
    }

    /// `within=`: a set begun more than that long ago and still not complete is a missed
    /// run of the child, alerted with the parents that did not run; the set starts afresh.
    fn after_expire(&mut self, slot: usize, now: u64, out: &mut Outbox) {
        let st = &self.schedules.entries[slot];
        let (Timing::After(names), Some(within)) = (&st.entry.timing, st.entry.after.within_ms)
        else {
            return;
        };
        let Some(set) = self.schedules.after.sets.get(&st.id) else {
            return;
        };
        let Some(first) = set.iter().min_by_key(|r| r.ended_ms) else {
            return;
        };
        if now < first.ended_ms.saturating_add(within) {
            return;
        }
        let missing: Vec<&str> = names
            .ids
            .iter()
            .filter(|id| !set.iter().any(|r| *r.id == ***id))
            .map(String::as_str)
            .collect();
        let reason = format!(
            "missed: parent {} did not run within {} of {}'s run at {} (within=)",
            missing.join(", "),
            show_duration(within),
            first.id,
            rfc3339(first.scheduled_ms)
        );
        let record = RunRecord::never(first.ended_ms.saturating_add(within), RunOutcome::Missed);
        let child = Rc::clone(&st.id);
        log::warn!("schedule {child}: {reason}");
        self.schedules.after.sets.remove(&child);
        self.journal_after_set(&child);
        let h = &mut self.schedules.entries[slot].history;
        h.skips += 1;
        self.journal_history(slot);
        self.run_not_made(slot, record, reason, true, now, out);
    }

    /// Arm (or disarm) the child's `within=` timer for its set as it is now.
    fn arm_within(&mut self, slot: usize) {
        let st = &self.schedules.entries[slot];
        let a = &mut self.schedules.after;
        if let Some(t) = a.within.remove(&st.id) {
            self.timers.cancel(t);
        }
        let Some(within) = st.entry.after.within_ms else {
            return;
        };
        let Some(first) = a
            .sets
            .get(&st.id)
            .and_then(|s| s.iter().map(|r| r.ended_ms).min())
        else {
            return;
        };
        let generation = self.schedules.generation;
        let key = self.timers.insert(
            first.saturating_add(within),
            TimerEvent::AfterWithin { slot, generation },
        );
        self.schedules.after.within.insert(Rc::clone(&st.id), key);
    }

    /// A child's `within=` timer went off.
    pub(in crate::engine) fn after_within(
        &mut self,
        slot: usize,
        generation: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        if generation != self.schedules.generation || slot >= self.schedules.entries.len() {
            return;
        }
        let id = Rc::clone(&self.schedules.entries[slot].id);
        self.schedules.after.within.remove(&id);
        self.after_expire(slot, now, out);
        self.arm_within(slot);
    }

    /// The sets of the children whose set changed here, as kept in etcd.
    pub fn take_cluster_after_sets(&mut self) -> Vec<(String, Vec<u8>)> {
        std::mem::take(&mut self.schedules.cluster.after_dirty)
            .into_iter()
            .map(|child| {
                let json = set_json(self.schedules.after.pending(&child));
                (child.to_string(), json.into_bytes())
            })
            .collect()
    }

    /// The cluster's set of `child`, written by the server that saw its parents' runs end
    /// (the leader then): this server takes it, so that when it leads, the parents that ran
    /// on an earlier leader still count.
    pub fn cluster_after_seen(&mut self, child: &str, bytes: &[u8], now: u64, out: &mut Outbox) {
        let Some(&slot) = self.schedules.by_id.get(child) else {
            return;
        };
        if !matches!(self.schedules.entries[slot].entry.timing, Timing::After(_)) {
            return;
        }
        let Some(set) = parse_set(bytes) else {
            log::warn!(
                "schedule {child}: the cluster's set of its parents' runs does not parse; ignored"
            );
            return;
        };
        let child = Rc::clone(&self.schedules.entries[slot].id);
        if set.is_empty() {
            self.schedules.after.sets.remove(&child);
        } else {
            self.schedules.after.sets.insert(Rc::clone(&child), set);
        }
        self.journal_after_set_quietly(&child);
        self.arm_within(slot);
        // Complete with a run the writer saw and this leader had not (around a failover):
        // the leader runs the child.
        if self.schedules.cluster.leading && self.after_complete(slot) {
            self.after_fire(slot, now, out);
        }
    }

    /// Whether the child's set has a run of each parent (and the child is not paused).
    fn after_complete(&self, slot: usize) -> bool {
        let st = &self.schedules.entries[slot];
        let Timing::After(names) = &st.entry.timing else {
            return false;
        };
        let set = self.schedules.after.pending(&st.id);
        !st.history.marks.paused && names.ids.iter().all(|id| set.iter().any(|r| *r.id == **id))
    }

    /// This server's write of `child`'s set met another written first (two servers around a
    /// failover): the two are merged, each parent's newest run kept, those the child already
    /// ran from left out; the merge is written in turn, and fires the child here if it is
    /// complete and this server leads.
    pub fn cluster_after_conflict(
        &mut self,
        child: &str,
        bytes: &[u8],
        now: u64,
        out: &mut Outbox,
    ) {
        let Some(&slot) = self.schedules.by_id.get(child) else {
            return;
        };
        if !matches!(self.schedules.entries[slot].entry.timing, Timing::After(_)) {
            return;
        }
        let theirs = if bytes.is_empty() {
            Vec::new()
        } else {
            parse_set(bytes).unwrap_or_else(|| {
                log::warn!("schedule {child}: the cluster's set of its parents' runs does not parse; this server's is kept");
                Vec::new()
            })
        };
        let child = Rc::clone(&self.schedules.entries[slot].id);
        let h = &self.schedules.entries[slot].history;
        // A timed run of the child (not a manual one) was made from every parent's run that
        // ended before it.
        let ran = h.last_run_ms.filter(|_| !h.marks.last_manual);
        let a = &mut self.schedules.after;
        let used = a.links.get(&child);
        let mine = a.sets.remove(&child).unwrap_or_default();
        let merged = merge_sets(mine, theirs, |r| {
            ran.is_some_and(|t| r.ended_ms <= t)
                || used.is_some_and(|l| l.iter().any(|l| l.parents.contains(r)))
        });
        if !merged.is_empty() {
            a.sets.insert(Rc::clone(&child), merged);
        }
        self.journal_after_set(&child);
        self.arm_within(slot);
        if self.schedules.cluster.leading && self.after_complete(slot) {
            self.after_fire(slot, now, out);
        }
    }

    /// The parents' runs (`{after}`'s JSON) of the run whose job is `handle`, while the
    /// job is here or its output kept; `None` for a job not made from an `@after` set.
    pub fn run_parents(&self, handle: &[u8]) -> Option<String> {
        let (entry, scheduled) = match self.by_handle.get(handle, &self.jobs) {
            Some(k) => {
                let o = self.rare(k)?.origin.as_ref()?;
                (Rc::clone(&o.entry), o.scheduled_ms)
            }
            None => {
                let k = self.kept_job(handle)?;
                (Rc::clone(k.entry.as_ref()?), k.scheduled_ms?)
            }
        };
        let link = self.schedules.after.link(&entry, scheduled)?;
        Some(after_json(&link.parents))
    }

    /// `{after}` of a run of `child` at `scheduled_ms`: its parents' runs, or `[]` for a
    /// run not made from a set (a manual run).
    pub(super) fn after_placeholder(&self, child: &str, scheduled_ms: u64) -> String {
        match self.schedules.after.link(child, scheduled_ms) {
            Some(l) => after_json(&l.parents),
            None => "[]".into(),
        }
    }

    fn journal_after_set(&mut self, child: &Rc<str>) {
        if self.schedules.clustered {
            // The next leader needs the set: a parent may run here and the child there.
            self.schedules.cluster.after_dirty.insert(Rc::clone(child));
        }
        self.journal_after_set_quietly(child);
    }

    /// Journal the child's set without telling the cluster (it came from there).
    fn journal_after_set_quietly(&mut self, child: &Rc<str>) {
        if !self.config.durable {
            return;
        }
        let parents = self
            .schedules
            .after
            .pending(child)
            .iter()
            .map(|r| AfterParent {
                id: Bytes::copy_from_slice(r.id.as_bytes()),
                handle: Bytes::copy_from_slice(r.handle.as_bytes()),
                scheduled_ms: r.scheduled_ms,
                ended_ms: r.ended_ms,
                ok: r.ok,
            })
            .collect();
        self.durable.push(Record::AfterSet(AfterSet {
            entry: crate::engine::durable::entry_bytes(child),
            parents,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_round_trips_through_etcd_and_garbage_is_not_one() {
        let set = vec![
            ParentRun {
                id: Rc::from("backup.db"),
                handle: "H:db1:\"17\"".into(),
                scheduled_ms: 1_700_000_000_000,
                ended_ms: 1_700_000_060_000,
                ok: true,
            },
            ParentRun {
                id: Rc::from("b"),
                handle: "H:x:2".into(),
                scheduled_ms: 0,
                ended_ms: 5,
                ok: false,
            },
        ];
        assert_eq!(parse_set(set_json(&set).as_bytes()), Some(set));
        assert_eq!(parse_set(b"[]"), Some(Vec::new()));
        assert_eq!(parse_set(b"[{\"id\":\"a\"}]"), None);
        assert_eq!(parse_set(b"{}"), None);
        assert_eq!(parse_set(b"\xff"), None);
    }
}
