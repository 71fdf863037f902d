//! An operator's hand on an entry, for the whole cluster: `P/ops/{entry}` (pause, skip, run
//! now), written from any server and obeyed by the leader, this one or the next; and each
//! entry's account of its runs (`P/history/{entry}`), written by the server that saw them and
//! shown by every server; and each `@after` child's set of its parents' runs (`P/after/{child}`),
//! written by the server that saw them end and read by the next leader. The bytes are the
//! engine's: the machine only carries them.

use super::*;
use crate::cluster::records::OpsRecord;

/// Operators' asks waiting for etcd, at most; more are refused (the reply says so).
pub(in crate::cluster::machine) const OPS_OWED_MAX: usize = 1024;
/// A write of an ops record that keeps meeting a newer one is given up after this many tries.
const OPS_TRIES: u8 = 4;
/// A write of an `@after` set that keeps meeting a newer one is given up after this many
/// merges.
const AFTER_TRIES: u8 = 4;

#[derive(Clone, Debug)]
pub(super) struct CachedOps {
    pub record: OpsRecord,
    pub mod_revision: i64,
}

impl Machine {
    pub(super) fn ops_key(&self, entry: &str) -> Vec<u8> {
        self.key(&format!("ops/{entry}"))
    }

    pub(super) fn history_key(&self, entry: &str) -> Vec<u8> {
        self.key(&format!("history/{entry}"))
    }

    /// An operator asked `op` of `entry` on this server; `ticket` names the answer that waits
    /// for etcd's (`Output::ops_done`). Err (why) when etcd cannot take it now; else it is
    /// written, now or when the link is back, and answered once: when etcd takes it or not,
    /// when the link is lost first, or after `--etcd-request-timeout` without an answer.
    pub fn operate(
        &mut self,
        ticket: u64,
        entry: String,
        op: EntryOp,
        now: u64,
        out: &mut Output,
    ) -> Result<(), String> {
        let ask = Purpose::Operate {
            entry,
            op,
            tries: 0,
            ticket,
        };
        self.ask(ticket, ask, now, out)
    }

    /// An operator's ask (an operation, a backfill) named `ticket`, taken when etcd is within
    /// reach and fewer than `OPS_OWED_MAX` asks wait for it (Err says why not): queued, and
    /// its answer awaited until `--etcd-request-timeout` from now.
    pub(super) fn ask(
        &mut self,
        ticket: u64,
        ask: Purpose,
        now: u64,
        out: &mut Output,
    ) -> Result<(), String> {
        self.observe(now, out);
        if !(self.unary_up && self.lease_ok(now)) {
            return Err("etcd cannot be reached".into());
        }
        let owed = self.ops_retry.len()
            + self
                .queue
                .iter()
                .filter(|p| matches!(p, Purpose::Operate { .. } | Purpose::Backfill { .. }))
                .count();
        if owed >= OPS_OWED_MAX || self.op_waits.len() >= OPS_OWED_MAX {
            return Err("too many operations wait for etcd".into());
        }
        self.op_waits
            .insert(ticket, now.saturating_add(self.s.request_timeout_ms));
        self.enqueue(ask);
        self.advance(now, out);
        Ok(())
    }

    /// The answer of the ask `ticket`, once: a later one (a retry taken after its answer
    /// said it was lost) is not given.
    pub(super) fn op_answered(
        &mut self,
        ticket: u64,
        result: Result<(), String>,
        out: &mut Output,
    ) -> bool {
        let waiting = self.op_waits.remove(&ticket).is_some();
        if waiting {
            out.ops_done.push((ticket, result));
        }
        waiting
    }

    /// Asks etcd has not answered in time: their answer says so; the ask itself stays owed.
    pub(super) fn ops_overdue(&mut self, now: u64, out: &mut Output) {
        let due: Vec<u64> = self
            .op_waits
            .iter()
            .filter(|&(_, &at)| at <= now)
            .map(|(&t, _)| t)
            .collect();
        for ticket in due {
            let why = format!(
                "etcd did not answer within {} ms (--etcd-request-timeout); the ask stays queued and may still be taken",
                self.s.request_timeout_ms
            );
            self.op_answered(ticket, Err(why), out);
        }
    }

    /// This server's account of an entry's runs changed: write it (the newest only).
    pub fn history(&mut self, entry: String, account: Vec<u8>, now: u64, out: &mut Output) {
        self.history_out.insert(format!("history/{entry}"), account);
        self.advance(now, out);
    }

    /// This server's set of an `@after` child changed: write it (the newest only).
    pub fn after_set(&mut self, child: String, set: Vec<u8>, now: u64, out: &mut Output) {
        self.history_out.insert(format!("after/{child}"), set);
        self.advance(now, out);
    }

    /// The ops record as it would be after `op`, and the revision it is written over.
    pub(super) fn ops_after(&self, entry: &str, op: &EntryOp) -> (OpsRecord, i64) {
        let (mut r, rev) = self.ops.get(entry).map_or((OpsRecord::default(), 0), |c| {
            (c.record.clone(), c.mod_revision)
        });
        match op {
            EntryOp::Pause => r.paused = true,
            EntryOp::Resume => r.paused = false,
            EntryOp::Skip { after_ms } => r.skip_after_ms = r.skip_after_ms.max(*after_ms),
            EntryOp::Run => r.runs_asked += 1,
        }
        (r, rev)
    }

    /// The request of an operator's ask: written over the revision this server knows, so
    /// that two asks at once on two servers both count.
    pub(super) fn operate_request(&mut self, entry: &str, op: &EntryOp) -> Request {
        let key = self.ops_key(entry);
        let (record, revision) = self.ops_after(entry, op);
        let value = record.to_json();
        self.ops_sent = Some((entry.to_string(), record));
        Request::Txn(Txn {
            compare: vec![Compare::ModRevision {
                key: key.clone(),
                revision,
            }],
            success: vec![Op::Put {
                key: key.clone(),
                value,
                lease: 0,
            }],
            failure: vec![Op::Get { key }],
        })
    }

    /// The leader fires one asked run: it counts it fired, fenced, over the revision read.
    pub(super) fn fire_request(&mut self, entry: &str) -> Option<Request> {
        let fence = self.fence?;
        let c = self.ops.get(entry)?;
        if c.record.runs_fired >= c.record.runs_asked {
            return None;
        }
        let record = OpsRecord {
            runs_fired: c.record.runs_fired + 1,
            ..c.record.clone()
        };
        let revision = c.mod_revision;
        let key = self.ops_key(entry);
        let leader_key = self.key("leader");
        self.ops_sent = Some((entry.to_string(), record.clone()));
        Some(Request::Txn(super::requests::fenced_put(
            leader_key,
            fence,
            key,
            revision,
            record.to_json(),
        )))
    }

    /// `rel`: the key under the prefix (`history/{entry}` or `after/{child}`).
    pub(super) fn history_request(&mut self, rel: &str) -> Option<Request> {
        let account = self.history_out.remove(rel)?;
        self.history_written
            .insert(rel.to_string(), account.clone());
        let key = self.key(rel);
        if rel.starts_with("after/") {
            // Over the revision this server knows: a set another server wrote meanwhile (an
            // old leader's, around a failover) is read back and merged, not written over.
            let revision = self.after_revs.get(rel).copied().unwrap_or(0);
            return Some(Request::Txn(Txn {
                compare: vec![Compare::ModRevision {
                    key: key.clone(),
                    revision,
                }],
                success: vec![Op::Put {
                    key: key.clone(),
                    value: account,
                    lease: 0,
                }],
                failure: vec![Op::Get { key }],
            }));
        }
        Some(Request::Put {
            key,
            value: account,
            lease: 0,
        })
    }

    /// etcd's answer to this server's write of an `@after` set (`rel`: `after/{child}`). When
    /// another set was written first, the engine is handed it to merge with its own, and
    /// writes the merge over it (bounded: given up, logged, when the key keeps changing).
    pub(super) fn after_result(
        &mut self,
        rel: String,
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
        out: &mut Output,
    ) {
        if succeeded {
            self.after_revs.insert(rel.clone(), revision);
            self.after_tries.remove(&rel);
            return;
        }
        self.history_written.remove(&rel);
        let kv = ranges.first().and_then(|r| r.first());
        self.after_revs
            .insert(rel.clone(), kv.map_or(0, |kv| kv.mod_revision));
        let Some(child) = rel.strip_prefix("after/") else {
            return;
        };
        let tries = self.after_tries.entry(rel.clone()).or_insert(0);
        *tries += 1;
        if *tries >= AFTER_TRIES {
            log::warn!(
                "cluster: {child}: the @after set kept changing in etcd; this server's set was not written (the one in etcd stands)"
            );
            self.after_tries.remove(&rel);
            return;
        }
        let theirs = kv.map(|kv| kv.value.clone()).unwrap_or_default();
        out.after_conflicts.push((child.to_string(), theirs));
    }

    /// What is owed to etcd: asks lost with a connection, accounts to write, and (the
    /// leader) runs asked and not yet fired.
    pub(super) fn enqueue_ops(&mut self, now: u64) {
        for p in std::mem::take(&mut self.ops_retry) {
            self.enqueue(p);
        }
        let accounts: Vec<String> = self
            .history_out
            .keys()
            .filter(|e| {
                !self.pending(|p| matches!(p, Purpose::PutHistory { entry } if entry == *e))
            })
            .cloned()
            .collect();
        for entry in accounts {
            self.enqueue(Purpose::PutHistory { entry });
        }
        if !self.is_leader(now) {
            return;
        }
        let asked: Vec<String> = self
            .ops
            .iter()
            .filter(|(e, c)| {
                c.record.runs_asked > c.record.runs_fired
                    && self.entry_ids.iter().any(|id| id == *e)
                    && !self.pending(|p| matches!(p, Purpose::FireRun { entry } if entry == *e))
            })
            .map(|(e, _)| e.clone())
            .collect();
        for entry in asked {
            self.enqueue(Purpose::FireRun { entry });
        }
    }

    /// The record this server sent for `entry`, taken by etcd at `revision`: cached as etcd
    /// now holds it.
    fn cache_sent(
        &mut self,
        sent: Option<(String, OpsRecord)>,
        entry: &str,
        revision: i64,
        out: &mut Output,
    ) {
        if let Some((e, record)) = sent.filter(|(e, _)| e == entry) {
            self.cache_ops(&e, record, revision, out);
        }
    }

    /// etcd's answer to an operator's ask (entry, op, tries, ticket).
    pub(super) fn operate_result(
        &mut self,
        (entry, op, tries, ticket): (String, EntryOp, u8, u64),
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
        out: &mut Output,
    ) {
        let sent = self.ops_sent.take();
        if succeeded {
            self.cache_sent(sent, &entry, revision, out);
            self.op_answered(ticket, Ok(()), out);
            return;
        }
        // Someone else wrote the record first: learn it and ask again over it.
        self.ops_seen(&entry, ranges.first().and_then(|r| r.first()), out);
        if tries + 1 >= OPS_TRIES {
            let why = "the record kept changing in etcd (other asks at once); given up";
            // Logged with its answer, or here when its answer was given already (timed out).
            if !self.op_answered(ticket, Err(why.into()), out) {
                out.ops_failed.push((entry, format!("{op:?}: {why}")));
            }
            return;
        }
        self.queue.push_front(Purpose::Operate {
            entry,
            op,
            tries: tries + 1,
            ticket,
        });
    }

    /// etcd's answer to the leader's count of a fired run: fire it when etcd took the count.
    pub(super) fn fire_result(
        &mut self,
        entry: String,
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
        out: &mut Output,
    ) {
        let sent = self.ops_sent.take();
        if succeeded {
            self.cache_sent(sent, &entry, revision, out);
            out.run_now.push(entry);
            return;
        }
        let leader = ranges.first().and_then(|r| r.first());
        if self.fence.is_some() && leader.map(|kv| kv.create_revision) != self.fence {
            self.leader_seen(leader);
            if self.fence.is_some() {
                self.fence_lost();
            }
            return;
        }
        self.ops_seen(&entry, ranges.get(1).and_then(|r| r.first()), out);
    }

    /// etcd answered an ask or an account with an error: given up (logged), not retried,
    /// since the same request would meet the same error. True when `p` was one.
    pub(super) fn ops_refused(&mut self, p: &Purpose, why: &str, out: &mut Output) -> bool {
        match p {
            Purpose::Operate { entry, ticket, .. } => {
                let why = format!("etcd refused it: {why}");
                if !self.op_answered(*ticket, Err(why.clone()), out) {
                    out.ops_failed.push((entry.clone(), why));
                }
            }
            Purpose::PutHistory { entry } => {
                log::warn!("cluster: {entry}: etcd refused the entry's account: {why}");
            }
            _ => return false,
        }
        self.ops_sent = None;
        true
    }

    /// A request about ops or accounts got no answer: keep what is owed. An ask's answer
    /// says so now. One never `sent` (still queued here) changed nothing and is dropped, as
    /// its answer says. For one sent, whether etcd took it is unknown: a pause, resume or
    /// skip is asked again (the same record twice is the same record); a run is not (twice
    /// would be two runs), the operator is told to look first.
    pub(super) fn ops_lost(&mut self, p: Purpose, sent: bool, out: &mut Output) {
        if let Purpose::Operate { ticket, op, .. } = &p {
            let why = match (sent, op) {
                (false, _) => {
                    "the connection to etcd was lost before the ask was sent: the cluster did not take it (nothing changed); try again"
                }
                (true, EntryOp::Run) => {
                    "the connection to etcd was lost before etcd answered; etcd may have taken the run or not, and it is not asked again (twice would be two runs): look at show schedules before asking again"
                }
                (true, _) => {
                    "the connection to etcd was lost before etcd answered; the ask is sent again when etcd is back, and etcd may already have taken it"
                }
            };
            self.op_answered(*ticket, Err(why.into()), out);
        }
        match p {
            // A run is never asked twice; an ask never sent was answered as not taken.
            Purpose::Operate {
                op: EntryOp::Run, ..
            } => {}
            Purpose::Operate { .. } if !sent => {}
            Purpose::Operate { .. } if self.ops_retry.len() < OPS_OWED_MAX => {
                self.ops_retry.push(p);
            }
            Purpose::PutHistory { entry } => {
                if let Some(a) = self.history_written.remove(&entry) {
                    self.history_out.entry(entry).or_insert(a);
                }
            }
            _ => {}
        }
        self.ops_sent = None;
    }

    /// An ops record read or watched (`None`: absent).
    pub(super) fn ops_seen(&mut self, entry: &str, kv: Option<&Kv>, out: &mut Output) {
        match kv {
            Some(kv) => self.cache_ops(entry, OpsRecord::parse(&kv.value), kv.mod_revision, out),
            None => {
                if self.ops.remove(entry).is_some() {
                    out.ops
                        .push((entry.to_string(), OpsRecord::default(), false));
                }
            }
        }
    }

    fn cache_ops(&mut self, entry: &str, record: OpsRecord, revision: i64, out: &mut Output) {
        if self
            .ops
            .get(entry)
            .is_some_and(|c| c.mod_revision >= revision)
        {
            return;
        }
        self.ops.insert(
            entry.to_string(),
            CachedOps {
                record,
                mod_revision: revision,
            },
        );
        self.ops_changed(entry, out);
    }

    /// Hand the engine the entry's ops as this server knows them now (a claim may have
    /// spent a skip).
    pub(super) fn ops_changed(&self, entry: &str, out: &mut Output) {
        let Some(c) = self.ops.get(entry) else { return };
        let claimed = self.runs.get(entry).map_or(0, |r| r.record.nominal_ms);
        let pending = c.record.skip_pending(claimed);
        out.ops.push((entry.to_string(), c.record.clone(), pending));
    }

    /// Whether a granted claim of `ask` is the run an operator asked to skip: the first run
    /// claimed after the ask (`previous`: the scheduled time claimed before it).
    pub(super) fn skips(&self, ask: &ClaimAsk, previous: u64) -> bool {
        self.ops.get(&ask.entry).is_some_and(|c| {
            c.record.skip_pending(previous) && ask.nominal_ms > c.record.skip_after_ms
        })
    }

    /// Whether an operator paused the entry for the cluster.
    pub(super) fn paused(&self, entry: &str) -> bool {
        self.ops.get(entry).is_some_and(|c| c.record.paused)
    }

    /// Another server's account of an entry or set of a child, at `rel` (`history/{entry}`,
    /// `after/{child}`; this server's own comes back by the watch too).
    pub(super) fn history_seen(&mut self, rel: &str, kv: &Kv, out: &mut Output) {
        if rel.starts_with("after/") {
            let known = self.after_revs.entry(rel.to_string()).or_insert(0);
            *known = (*known).max(kv.mod_revision);
        }
        if self
            .history_written
            .get(rel)
            .is_some_and(|a| *a == kv.value)
        {
            return;
        }
        self.history_written.remove(rel);
        if let Some(entry) = rel.strip_prefix("history/") {
            out.history.push((entry.to_string(), kv.value.clone()));
        } else if let Some(child) = rel.strip_prefix("after/") {
            out.after_sets.push((child.to_string(), kv.value.clone()));
        }
    }
}
