//! Schedule runs on a server of a cluster (`--etcd`): a due run is not made at once but
//! handed out as a claim; the reactor has the cluster machine claim it in etcd and answers
//! with `claim_granted` or `claim_refused`. A server that becomes the leader is told each
//! entry's last claimed run and applies the entry's own catch-up rules. The engine never
//! sees etcd; the cluster machine never sees a job.

use std::rc::Rc;

use crate::engine::outbox::RunClaim;
use crate::engine::{Engine, Outbox};
use crate::schedule::cron::Timing;
use crate::schedule::file::{Catchup, Overlap};

impl Engine {
    /// Claim runs from the cluster before making them (on) or make them at once (off).
    pub fn set_clustered(&mut self, on: bool) {
        self.schedules.clustered = on;
    }

    /// The cluster's leader changed (for `show schedules`).
    pub fn set_cluster_leader(&mut self, leader: Option<String>) {
        self.schedules.leader = leader;
    }

    pub(in crate::engine) fn claim_for(&self, slot: usize, nominal: u64, now: u64) -> RunClaim {
        let st = &self.schedules.entries[slot];
        // overlap=queue's runs are one at a time too: another server's run blocks it.
        let skip = st.entry.overlap != Overlap::Allow;
        RunClaim {
            entry: Rc::clone(&st.id),
            nominal_ms: nominal,
            overlap_skip: skip,
            unique: if skip {
                st.entry.id.clone()
            } else {
                String::new()
            },
            until_ms: st.entry.timeout_ms.map_or(0, |t| now.saturating_add(t)),
        }
    }

    /// The cluster claimed the run: make it (its jobs are queued here). For overlap=skip,
    /// the cluster is told when the entry's jobs here have all ended (`runs_ended`), so that
    /// its record stops blocking the entry on other servers.
    /// `skip`: the cluster says an operator asked to skip this run (`skip schedule`).
    pub fn claim_granted(
        &mut self,
        entry: &str,
        nominal: u64,
        skip: bool,
        now: u64,
        out: &mut Outbox,
    ) {
        self.catch_up_answered(entry, nominal, true);
        match self.schedules.by_id.get(entry) {
            Some(&slot) => {
                self.count_unclaimed(slot, nominal, now, out);
                // The skip is the cluster's: this server's own mark does not decide it.
                self.schedules.entries[slot].history.marks.skip_next = skip;
                let started = self.make_run(slot, nominal, now, out);
                let st = &self.schedules.entries[slot];
                if st.entry.overlap != Overlap::Allow {
                    let id = Rc::clone(&st.id);
                    // Counted per entry, not per run: a run skipped because the last one is
                    // still going here ends with that one.
                    let open = self
                        .schedules
                        .cluster_open
                        .entry(Rc::clone(&id))
                        .or_default();
                    open.0 = nominal;
                    open.1 += started;
                    if open.1 == 0 {
                        self.schedules.cluster_open.remove(&id);
                        out.runs_ended.push((id, nominal));
                    }
                }
            }
            None => log::warn!(
                "schedule {entry}: claimed run at {} dropped: the entry is no longer loaded",
                crate::engine::rfc3339(nominal)
            ),
        }
    }

    /// The leader was granted `nominal`: the entry's times since the last one dealt with
    /// and before it were claimed by nobody (etcd could not be reached while this server
    /// stayed the leader, or another server's run still held the entry). They did not run:
    /// counted, logged and alerted as missed, once, by the leader that goes on.
    fn count_unclaimed(&mut self, slot: usize, nominal: u64, now: u64, out: &mut Outbox) {
        let st = &mut self.schedules.entries[slot];
        let Some(from) = st.history.last_run_ms.max(st.history.seen_ms) else {
            return;
        };
        let Some(first) = st.time_after(from).filter(|&t| t < nominal) else {
            return;
        };
        let (n, capped) = st.entry.timing.runs_between(
            super::utc(from),
            super::utc(nominal - 1),
            &st.entry.zone,
            super::MISSED_COUNT_CAP,
        );
        st.history.skips += n;
        st.history.seen_ms = st.history.seen_ms.max(Some(nominal - 1));
        let reason = format!(
            "{} missed from {} (before {}): claimed by no server (etcd could not be reached, or another server's run still held the entry)",
            super::missed_runs(n, capped),
            crate::engine::rfc3339(first),
            crate::engine::rfc3339(nominal)
        );
        self.journal_history(slot);
        self.report_missed(slot, first, reason, now, out);
    }

    /// The cluster did not grant the run. `quiet`: the usual case of a follower (it is not
    /// the leader), logged at DEBUG only.
    /// `already`: another claim had the time (it ran there), so a catch-up goes on.
    pub fn claim_refused(
        &mut self,
        entry: &str,
        nominal: u64,
        why: &str,
        quiet: bool,
        already: bool,
    ) {
        self.catch_up_answered(entry, nominal, already);
        if let (true, Some(&slot)) = (already, self.schedules.by_id.get(entry)) {
            // Claimed by a server before: dealt with, never counted as missed here.
            let h = &mut self.schedules.entries[slot].history;
            h.seen_ms = h.seen_ms.max(Some(nominal));
        }
        let level = if quiet {
            log::Level::Debug
        } else {
            log::Level::Warn
        };
        log::log!(
            level,
            "schedule {entry}: run at {} not made: {why}",
            crate::engine::rfc3339(nominal)
        );
    }

    /// This server became the cluster's leader. `records` holds the last claimed scheduled
    /// time of each entry the cluster knows: runs missed since then (while no server was the
    /// leader) are made up once for `catchup=last` entries (unless older than `deadline=`)
    /// and counted as missed for the others, exactly as after a restart of one server.
    pub fn cluster_takeover(&mut self, records: &[(String, u64)], now: u64, out: &mut Outbox) {
        self.drop_catch_up("a new term as the cluster's leader");
        for (id, nominal) in records {
            if let Some(&slot) = self.schedules.by_id.get(id.as_str()) {
                let h = &mut self.schedules.entries[slot].history;
                h.seen_ms = h.seen_ms.max(Some(*nominal));
            }
        }
        let loaded = self.schedules.loaded_ms;
        for slot in 0..self.schedules.entries.len() {
            let st = &mut self.schedules.entries[slot];
            // A heartbeat's runs happen elsewhere: the pings say what ran, not the claims.
            if st.history.marks.paused
                || st.entry.expect_ping
                || matches!(st.entry.timing, Timing::Reboot)
            {
                continue;
            }
            // An entry the cluster never ran (its first time fell in the failover) is due
            // since this server loaded it.
            let h = &mut st.history;
            if h.last_run_ms.is_none() && h.seen_ms.is_none() {
                h.seen_ms = Some(loaded);
            }
            match st.entry.catchup {
                Catchup::Last | Catchup::All { .. } => self.catch_up(slot, now, out),
                Catchup::None => self.count_missed_while_down(
                    slot,
                    now,
                    out,
                    "while no server led the cluster (a failover, or etcd unreachable)",
                ),
            }
        }
    }
}

impl Engine {
    /// A job of a scheduled run ended for good (not requeued, not retried): the last one of
    /// a clustered overlap=skip entry ends its claimed run.
    pub(in crate::engine) fn cluster_job_ended(&mut self, entry: &Rc<str>, out: &mut Outbox) {
        let Some(open) = self.schedules.cluster_open.get_mut(entry) else {
            return;
        };
        open.1 = open.1.saturating_sub(1);
        if open.1 == 0 {
            let nominal = open.0;
            self.schedules.cluster_open.remove(entry);
            out.runs_ended.push((Rc::clone(entry), nominal));
        }
    }
}
