//! etcd's answers on the unary link: each purpose's reply (`unary_reply`), an error
//! (`unary_error`), and a request whose answer will never come (`lost`).

use super::*;

impl Machine {
    /// A request's answer will never come; `sent`: it went to etcd (which may have taken it),
    /// else it was still queued here.
    pub(super) fn lost(&mut self, p: Purpose, why: &str, sent: bool, out: &mut Output) {
        match p {
            Purpose::Claim { ask, .. } => self.decide(ask, Err(Refusal::Unknown(why.into())), out),
            // Re-read on the next success: we may or may not hold the key.
            Purpose::Campaign => self.want_campaign = true,
            Purpose::PutMember => self.member_put = false,
            // Owed until etcd takes them (ops.rs); a run asked is fired by the next try.
            p @ (Purpose::Operate { .. } | Purpose::PutHistory { .. }) => {
                self.ops_lost(p, sent, out)
            }
            Purpose::FireRun { .. } => self.ops_sent = None,
            p @ (Purpose::Backfill { .. } | Purpose::BackfillRun { .. }) => {
                self.backfill_lost(p, Err(sent), out)
            }
            // Asked again by their own timers or the next leader's work; nothing to undo.
            Purpose::Grant
            | Purpose::KeepAlive { .. }
            | Purpose::LoadRuns
            | Purpose::PublishLeader
            | Purpose::ReadState
            | Purpose::DeleteRun
            | Purpose::FinishRun { .. }
            | Purpose::Compact { .. } => {}
        }
    }

    pub(super) fn unary_error(&mut self, p: Purpose, e: EtcdError, out: &mut Output) {
        let text = e.to_string();
        if self.already_compacted(&p, &text) {
            return;
        }
        self.stats.request_errors += 1;
        self.finish_failed(&p, &text);
        if self.ops_refused(&p, &text, out) {
            return;
        }
        if matches!(p, Purpose::Backfill { .. } | Purpose::BackfillRun { .. }) {
            log::warn!("cluster: etcd answered an error: {text}");
            return self.backfill_lost(p, Ok(&text), out);
        }
        if text.contains("lease not found") {
            log::warn!("cluster: etcd no longer knows this server's lease; taking a new one");
            self.lease_gone();
        } else {
            log::warn!("cluster: etcd answered an error: {text}");
        }
        self.lost(p, &text, true, out);
    }

    pub(super) fn unary_reply(&mut self, f: InFlight, r: Reply, now: u64, out: &mut Output) {
        match (f.purpose, r) {
            (Purpose::Grant, Reply::LeaseGranted { lease, ttl_secs }) => {
                crate::notice!("cluster: lease {lease:x} granted ({ttl_secs} s)");
                self.lease = Some(lease);
                self.safety_stopped = false;
                if f.epoch == self.epoch {
                    self.valid_until = f.sent + self.valid_ms(ttl_secs);
                }
                self.was_valid = self.lease_ok(now);
                self.next_keepalive = f.sent + (self.ttl_ms() / 3).max(1);
                self.member_put = false;
            }
            (Purpose::KeepAlive { lease }, Reply::LeaseKeptAlive { ttl_secs, .. }) => {
                if self.lease != Some(lease) {
                    return;
                }
                if ttl_secs <= 0 {
                    log::warn!("cluster: lease {lease:x} expired in etcd; taking a new one");
                    self.lease_gone();
                    return;
                }
                let was_ok = self.lease_ok(now);
                if f.epoch == self.epoch {
                    self.valid_until = self.valid_until.max(f.sent + self.valid_ms(ttl_secs));
                }
                self.was_valid = self.lease_ok(now);
                if !was_ok && self.was_valid {
                    log::warn!("cluster: etcd confirmed the lease again");
                    self.want_campaign = true;
                    self.safety_stopped = false;
                }
            }
            (Purpose::PutMember, Reply::Put { .. }) => {
                self.member_put = true;
                self.members.insert(self.s.id.clone(), self.me.clone());
                self.want_campaign = true;
            }
            (Purpose::Campaign, Reply::Txn { ranges, .. }) => {
                let kv = ranges.last().and_then(|r| r.first()).cloned();
                self.campaign_result(kv, now);
            }
            (Purpose::PublishLeader, Reply::Txn { succeeded, .. }) => {
                if !succeeded && self.fence.is_some() {
                    self.fence_lost();
                }
            }
            (Purpose::LoadRuns, Reply::Txn { ranges, .. }) => {
                if self.fence.is_none() {
                    return;
                }
                let mut ranges = ranges.into_iter();
                self.runs.clear();
                for kv in &ranges.next().unwrap_or_default() {
                    self.cache_run(kv);
                }
                // Merged by the engine before the takeover below is (the link's order).
                for kv in ranges.flatten() {
                    self.watch_event(etcd::WatchEvent { deleted: false, kv }, out);
                }
                self.runs_loaded = true;
                self.stats.leaderships += 1;
                let records: Vec<(String, u64)> = self
                    .runs
                    .iter()
                    .map(|(id, c)| (id.clone(), c.record.nominal_ms))
                    .collect();
                log::warn!(
                    "cluster: this server ({}) is the leader now (fence {}); it fires the schedules",
                    self.s.id,
                    self.fence.unwrap_or(0)
                );
                out.takeover = Some(records);
                self.collect_stale_runs();
            }
            (Purpose::ReadState, Reply::Txn { ranges, .. }) => {
                let mut it = ranges.into_iter();
                let leader = it.next().and_then(|r| r.into_iter().next());
                self.leader_seen(leader.as_ref());
                if let Some(members) = it.next() {
                    self.members.clear();
                    for kv in &members {
                        let m = Member::parse(&kv.value);
                        if !m.id.is_empty() {
                            self.members.insert(m.id.clone(), m);
                        }
                    }
                }
                if let Some(kv) = it.next().and_then(|r| r.into_iter().next()) {
                    self.schedules_seen(&kv, out);
                }
                // What the cluster did and was asked before this server watched.
                for kv in it.next().unwrap_or_default() {
                    self.cache_run(&kv);
                }
                // Ops, accounts and `@after` sets.
                for kv in it.flatten() {
                    self.watch_event(etcd::WatchEvent { deleted: false, kv }, out);
                }
            }
            (Purpose::DeleteRun, Reply::Txn { .. }) => {
                if !self.stale_runs.is_empty() {
                    self.enqueue(Purpose::DeleteRun);
                }
            }
            (
                Purpose::Claim { ask, tries },
                Reply::Txn {
                    succeeded,
                    revision,
                    ranges,
                },
            ) => self.claim_result(ask, tries, succeeded, revision, ranges, now, out),
            (
                Purpose::FinishRun { entry },
                Reply::Txn {
                    succeeded,
                    revision,
                    ..
                },
            ) => self.finish_result(&entry, succeeded, revision),
            (Purpose::Compact { revision }, Reply::Compacted { .. }) => self.compacted(revision),
            (
                Purpose::Operate {
                    entry,
                    op,
                    tries,
                    ticket,
                },
                Reply::Txn {
                    succeeded,
                    revision,
                    ranges,
                },
            ) => {
                let ask = (entry, op, tries, ticket);
                self.operate_result(ask, succeeded, revision, ranges, out)
            }
            (
                Purpose::FireRun { entry },
                Reply::Txn {
                    succeeded,
                    revision,
                    ranges,
                },
            ) => self.fire_result(entry, succeeded, revision, ranges, out),
            (Purpose::PutHistory { .. }, Reply::Put { .. }) => {}
            (
                Purpose::PutHistory { entry },
                Reply::Txn {
                    succeeded,
                    revision,
                    ranges,
                },
            ) => self.after_result(entry, succeeded, revision, ranges, out),
            (
                p @ (Purpose::Backfill { .. } | Purpose::BackfillRun { .. }),
                Reply::Txn {
                    succeeded,
                    revision,
                    ranges,
                },
            ) => self.backfill_result(p, succeeded, revision, ranges, out),
            (p, r) => {
                log::warn!("cluster: unexpected etcd reply {r:?} to {p:?}");
                self.finish_failed(&p, "unexpected reply");
                self.lost(p, "unexpected reply", true, out);
            }
        }
    }
}
