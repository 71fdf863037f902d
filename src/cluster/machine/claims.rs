//! Claims of schedule runs: what is decided without etcd (leadership, the lease, the
//! recorded time, overlap across servers), the fenced transaction's outcome, and the cache of
//! each entry's run record.

use super::*;

impl Machine {
    /// What can be decided without etcd: leadership, the lease, the recorded time, overlap.
    pub(super) fn precheck(&self, ask: &ClaimAsk, now: u64) -> Result<(), Refusal> {
        if self.fence.is_none() || !self.runs_loaded {
            return Err(if self.safety_stopped {
                Refusal::LeaseUnsure
            } else {
                Refusal::NotLeader
            });
        }
        if !self.lease_ok(now) {
            return Err(Refusal::LeaseUnsure);
        }
        if let Some(c) = self.runs.get(&ask.entry) {
            if c.record.nominal_ms >= ask.nominal_ms {
                return Err(Refusal::AlreadyClaimed {
                    recorded_ms: c.record.nominal_ms,
                });
            }
            let r = &c.record;
            // Another live server's run of this entry still within its time limit.
            if ask.overlap_skip
                && r.server != self.s.id
                && r.until_ms > ask.wall_ms
                && self.members.contains_key(&r.server)
            {
                return Err(Refusal::Busy {
                    server: r.server.clone(),
                });
            }
        }
        Ok(())
    }

    /// The engine asks to fire a due run.
    pub fn claim(&mut self, ask: ClaimAsk, now: u64, out: &mut Output) {
        self.observe(now, out);
        if let Err(r) = self.precheck(&ask, now) {
            return self.decide(ask, Err(r), out);
        }
        let waiting = self
            .queue
            .iter()
            .filter(|p| matches!(p, Purpose::Claim { .. }))
            .count();
        if !self.unary_up {
            return self.decide(
                ask,
                Err(Refusal::Unknown("no connection to etcd".into())),
                out,
            );
        }
        if waiting >= self.s.max_pending_claims {
            return self.decide(ask, Err(Refusal::QueueFull), out);
        }
        self.enqueue(Purpose::Claim { ask, tries: 0 });
        self.send_next(now, out);
    }

    pub(super) fn decide(&mut self, ask: ClaimAsk, result: Result<(), Refusal>, out: &mut Output) {
        match &result {
            Ok(()) => self.stats.claims_granted += 1,
            Err(Refusal::Unknown(_)) => self.stats.claims_unknown += 1,
            Err(_) => self.stats.claims_refused += 1,
        }
        out.decisions.push(Decision { ask, result });
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn claim_result(
        &mut self,
        ask: ClaimAsk,
        tries: u8,
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
        now: u64,
        out: &mut Output,
    ) {
        if succeeded {
            let record = RunRecord {
                nominal_ms: ask.nominal_ms,
                leader: self.s.id.clone(),
                fence: self.fence.unwrap_or(0),
                server: self.s.id.clone(),
                unique: ask.unique.clone(),
                until_ms: ask.until_ms,
            };
            self.runs.insert(
                ask.entry.clone(),
                CachedRun {
                    record,
                    mod_revision: revision,
                },
            );
            return self.decide(ask, Ok(()), out);
        }
        let leader = ranges.first().and_then(|r| r.first());
        if leader.map(|kv| kv.create_revision) != self.fence || self.fence.is_none() {
            self.leader_seen(leader);
            if self.fence.is_some() {
                self.fence_lost();
            }
            return self.decide(ask, Err(Refusal::FenceRejected), out);
        }
        // The record changed since it was read: learn it and judge again (bounded).
        match ranges.get(1).and_then(|r| r.first()) {
            Some(kv) => self.cache_run(kv),
            None => {
                self.runs.remove(&ask.entry);
            }
        }
        if tries >= 2 {
            return self.decide(
                ask,
                Err(Refusal::Unknown("the run's record kept changing".into())),
                out,
            );
        }
        if let Err(r) = self.precheck(&ask, now) {
            return self.decide(ask, Err(r), out);
        }
        self.queue.push_front(Purpose::Claim {
            ask,
            tries: tries + 1,
        });
    }

    pub(super) fn cache_run(&mut self, kv: &Kv) {
        let key = String::from_utf8_lossy(&kv.key);
        let Some(id) = key.strip_prefix(&format!("{}runs/", self.prefix)) else {
            return;
        };
        let Some(record) = RunRecord::parse(&kv.value) else {
            log::warn!("cluster: the run record of {id} does not parse; it is ignored");
            return;
        };
        let newer = self
            .runs
            .get(id)
            .is_none_or(|c| c.mod_revision < kv.mod_revision);
        if newer {
            self.runs.insert(
                id.to_string(),
                CachedRun {
                    record,
                    mod_revision: kv.mod_revision,
                },
            );
        }
    }

    pub(super) fn collect_stale_runs(&mut self) {
        if !self.runs_loaded || self.entry_ids.is_empty() {
            return;
        }
        self.stale_runs = self
            .runs
            .keys()
            .filter(|id| !self.entry_ids.contains(id))
            .cloned()
            .collect();
        for id in &self.stale_runs {
            self.runs.remove(id);
        }
        if !self.stale_runs.is_empty() && !self.pending(|p| *p == Purpose::DeleteRun) {
            self.enqueue(Purpose::DeleteRun);
        }
    }
}
