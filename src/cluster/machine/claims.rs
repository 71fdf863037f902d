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
        if self.paused(&ask.entry) {
            return Err(Refusal::Paused);
        }
        if let Some(c) = self.runs.get(&ask.entry) {
            if c.record.nominal_ms >= ask.nominal_ms {
                return Err(Refusal::AlreadyClaimed {
                    recorded_ms: c.record.nominal_ms,
                });
            }
            let r = &c.record;
            if ask.overlap_skip && r.server != self.s.id && self.still_going(r, ask.wall_ms) {
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
        out.decisions.push(Decision {
            ask,
            result,
            skip: false,
        });
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
            let skip = self.skips(&ask, self.claim_previous);
            let record = self.claim_record(&ask, self.fence.unwrap_or(0));
            if ask.overlap_skip {
                self.own.insert(
                    ask.entry.clone(),
                    OwnRun {
                        record: record.clone(),
                        revision,
                        ended: false,
                    },
                );
            }
            self.runs.insert(
                ask.entry.clone(),
                CachedRun {
                    record,
                    mod_revision: revision,
                },
            );
            self.stats.claims_granted += 1;
            self.ops_changed(&ask.entry, out);
            out.decisions.push(Decision {
                ask,
                result: Ok(()),
                skip,
            });
            return;
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

    /// The record this server writes when it claims a run.
    pub(super) fn claim_record(&self, ask: &ClaimAsk, fence: i64) -> RunRecord {
        RunRecord {
            nominal_ms: ask.nominal_ms,
            leader: self.s.id.clone(),
            fence,
            server: self.s.id.clone(),
            unique: ask.unique.clone(),
            until_ms: ask.until_ms,
            boot: self.s.boot.clone(),
            done: ask.overlap_skip.then_some(false),
        }
    }

    /// Whether another server's recorded run still blocks an overlap=skip run (wall ms).
    /// Only a live member's run can still be going, and only in the same start of that
    /// server (a restart ended it); then it goes on until the server marks it done, or
    /// until its `timeout=` (`until`) if it has one.
    fn still_going(&self, r: &RunRecord, wall: u64) -> bool {
        let Some(m) = self.members.get(&r.server) else {
            return false;
        };
        if !r.boot.is_empty() && m.boot != r.boot {
            return false;
        }
        let in_time = r.until_ms > wall;
        match r.done {
            Some(true) => false,
            Some(false) => r.until_ms == 0 || in_time,
            None => in_time,
        }
    }

    /// The engine saw every job of this server's run of `entry` at `nominal` end: its
    /// record is marked done (now, or when etcd can be reached again).
    pub fn run_ended(&mut self, entry: &str, nominal: u64, now: u64, out: &mut Output) {
        self.observe(now, out);
        if let Some(o) = self.own.get_mut(entry) {
            if o.record.nominal_ms == nominal {
                o.ended = true;
            }
        }
        self.advance(now, out);
    }

    pub(super) fn enqueue_finishes(&mut self) {
        let owed: Vec<String> = self
            .own
            .iter()
            .filter(|(e, o)| {
                o.ended
                    && !self.pending(|p| matches!(p, Purpose::FinishRun { entry } if entry == *e))
            })
            .map(|(e, _)| e.clone())
            .collect();
        for entry in owed {
            self.enqueue(Purpose::FinishRun { entry });
        }
    }

    pub(super) fn finish_result(&mut self, entry: &str, succeeded: bool, revision: i64) {
        let Some(o) = self.own.remove(entry) else {
            return;
        };
        if !succeeded {
            // A newer claim replaced the record: that one is not this server's to mark.
            log::debug!("cluster: the run record of {entry} changed before it was marked done");
            return;
        }
        if self
            .runs
            .get(entry)
            .is_none_or(|c| c.mod_revision <= o.revision)
        {
            let record = RunRecord {
                done: Some(true),
                ..o.record
            };
            self.runs.insert(
                entry.to_string(),
                CachedRun {
                    record,
                    mod_revision: revision,
                },
            );
        }
    }

    /// etcd answered the mark with an error: give it up rather than retry without end; the
    /// record then blocks the entry elsewhere while this server lives (or until `until`).
    pub(super) fn finish_failed(&mut self, p: &Purpose, why: &str) {
        if let Purpose::FinishRun { entry } = p {
            self.own.remove(entry);
            log::warn!("cluster: the run record of {entry} could not be marked done: {why}");
        }
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
        let mut stale: Vec<String> = self
            .runs
            .keys()
            .chain(self.ops.keys())
            .filter(|id| !self.entry_ids.contains(id))
            .cloned()
            .collect();
        stale.sort();
        stale.dedup();
        self.stale_runs = stale;
        for id in &self.stale_runs {
            self.runs.remove(id);
            self.ops.remove(id);
        }
        if !self.stale_runs.is_empty() && !self.pending(|p| *p == Purpose::DeleteRun) {
            self.enqueue(Purpose::DeleteRun);
        }
    }
}
