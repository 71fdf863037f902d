//! Waiting runs in a cluster (`--etcd`): the backfills kept in etcd (`backfill/ENTRY`), asked
//! here and mirrored from there, and the leader's claims of what waits, one at a time per
//! entry: a catch-up time as a run of its own time, a backfilled time taken off the cluster's
//! record. Each answer lets the next go.

use std::rc::Rc;

use crate::engine::{Engine, OpTicket, Outbox, rfc3339};
use crate::store::PendingSpan;
/// In a cluster (`--etcd`): the waiting runs the leader claims, and the backfills kept in
/// etcd.
impl Engine {
    /// Backfills asked on this server, for the etcd link to add to the cluster's records:
    /// each with the ticket its answer waits under (`cluster_op_done`).
    pub fn take_cluster_backfills(&mut self) -> Vec<(OpTicket, Rc<str>, PendingSpan)> {
        std::mem::take(&mut self.schedules.cluster.backfills_out)
    }

    /// The leader's next backfilled times to claim: the entry, the front span of its
    /// backfill as this server knows it, and that span's next time (`None`: it has none left,
    /// it goes).
    pub fn take_cluster_backfill_runs(&mut self) -> Vec<(Rc<str>, PendingSpan, Option<u64>)> {
        std::mem::take(&mut self.schedules.cluster.backfill_runs_out)
    }

    /// The cluster's backfill of `entry` as etcd holds it now (every server mirrors it; the
    /// leader runs it).
    pub fn cluster_backfill_seen(&mut self, entry: &str, spans: Vec<PendingSpan>) {
        let Some(&slot) = self.schedules.by_id.get(entry) else {
            return;
        };
        let id = Rc::clone(&self.schedules.entries[slot].id);
        let pending = &mut self.schedules.pending;
        if spans.is_empty() && !pending.by_entry.contains_key(&id) {
            return;
        }
        pending.by_entry.entry(id).or_default().mirror = spans;
        pending.dirty = true;
    }

    /// etcd's answer to the leader's claim of a backfilled time: `Ok(Some(t))`, run the time
    /// `t` now (etcd took it off the record); `Ok(None)`, a spent span went; `Err`, not
    /// granted (the record changed, or this server no longer leads).
    pub fn cluster_backfill_ran(
        &mut self,
        entry: &str,
        result: Result<Option<u64>, String>,
        now: u64,
        out: &mut Outbox,
    ) {
        let pending = &mut self.schedules.pending;
        if let Some(w) = pending.by_entry.get_mut(entry) {
            w.backfill_claiming = false;
        }
        match result {
            Ok(Some(t)) => match self.schedules.by_id.get(entry) {
                // Granted to this server, taken off the cluster's record: it runs here, now
                // or, while the entry's previous run still goes, when that ends.
                Some(&slot) if self.run_going(slot) => {
                    log::info!(
                        "schedule {entry}: backfill run for {} waits: the entry's previous run still goes",
                        rfc3339(t)
                    );
                    let w = self
                        .schedules
                        .pending
                        .by_entry
                        .entry(Rc::clone(&self.schedules.entries[slot].id))
                        .or_default();
                    // After any granted before it, before the catch-up runs.
                    let at = w.spans.iter().take_while(|s| s.backfill).count();
                    w.spans.insert(
                        at,
                        PendingSpan {
                            after_ms: t.saturating_sub(1),
                            to_ms: t,
                            left: 1,
                            backfill: true,
                        },
                    );
                    self.journal_pending(slot);
                }
                Some(&slot) => self.make_backfill_run(slot, t, now, out),
                None => log::warn!(
                    "schedule {entry}: backfill run for {} dropped: the entry is no longer loaded",
                    rfc3339(t)
                ),
            },
            Ok(None) => {}
            // Looked at again: the record may have changed before this answer came, its
            // news already spent while the claim was out, and nothing else would wake it.
            Err(why) => log::info!("schedule {entry}: backfill run not claimed: {why}"),
        }
        self.schedules.pending.dirty = true;
    }

    /// The cluster answered a claim of `entry`'s run at `nominal`: when it was the catch-up
    /// time waiting for it, the next may be claimed (a time already claimed elsewhere ran
    /// there; another refusal waits for the next job to end, the next leader or the
    /// entry's next time).
    pub(super) fn catch_up_answered(&mut self, entry: &str, nominal: u64, go_on: bool) {
        let pending = &mut self.schedules.pending;
        if let Some(w) = pending.by_entry.get_mut(entry)
            && w.claiming == Some(nominal)
        {
            w.claiming = None;
            pending.dirty |= go_on;
        }
    }

    /// A due run of a clustered entry while its catch-up runs wait: it joins them, after
    /// them, so that the claims go oldest first. False: none wait, claim it now.
    pub(super) fn behind_catch_up(&mut self, slot: usize, nominal: u64) -> bool {
        let id = &self.schedules.entries[slot].id;
        let pending = &mut self.schedules.pending;
        let Some(w) = pending
            .by_entry
            .get_mut(id)
            .filter(|w| !w.spans.is_empty() || w.claiming.is_some())
        else {
            return false;
        };
        w.spans.push_back(PendingSpan {
            after_ms: nominal.saturating_sub(1),
            to_ms: nominal,
            left: 1,
            backfill: false,
        });
        pending.dirty = true;
        true
    }

    /// This server began or stopped leading the cluster: a leader claims what waits; a
    /// server that no longer leads drops its catch-up runs (the next leader makes up the
    /// missed runs again from the cluster's history, and the claims keep each once).
    pub(super) fn pending_standing(&mut self, leading: bool) {
        self.schedules.pending.dirty = true;
        if !leading {
            self.drop_catch_up("no longer the cluster's leader");
        }
    }

    /// Drop the catch-up runs waiting (a server that stops leading, or a new leader that
    /// works them out again from the cluster's history). A claim still out stays marked
    /// until etcd's answer comes (the etcd link answers every one): a second claim asked
    /// meanwhile could be granted the next time while the first runs, and that time would
    /// be lost. Backfilled times already granted to this server stay: they run here.
    pub(super) fn drop_catch_up(&mut self, why: &str) {
        for (id, w) in self.schedules.pending.by_entry.iter_mut() {
            let left: u64 = w.spans.iter().filter(|s| !s.backfill).map(|s| s.left).sum();
            if left > 0 {
                log::warn!(
                    "schedule {id}: {why}: {} of catchup=all left to the cluster's leader",
                    crate::plural::count(left, "run", "runs")
                );
            }
            w.spans.retain(|s| s.backfill);
        }
    }

    /// After the etcd link's turn: make or claim what may go now.
    pub fn cluster_release(&mut self, now: u64, out: &mut Outbox) {
        self.release_pending(now, out);
    }
}
