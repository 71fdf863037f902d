//! Backfills for the whole cluster: `P/backfill/{entry}`, asked on any server (each ask adds a
//! span over the revision this server knows, as an operator's ask is written) and run by the
//! leader, this one or the next: each backfilled time is claimed by a fenced write that takes
//! it off the record, so that it runs once even across a failover. Backfilled times are
//! claimed in this key space, not the entry's run record: a backfilled time may be one the
//! entry already ran.

use super::*;
use crate::cluster::records::{BackfillRecord, BackfillSpan};

/// An ask that keeps meeting a newer record is given up after this many tries.
const BACKFILL_TRIES: u8 = 4;

#[derive(Clone, Debug, Default)]
pub(super) struct CachedBackfill {
    pub record: BackfillRecord,
    pub mod_revision: i64,
}

impl Machine {
    fn backfill_key(&self, entry: &str) -> Vec<u8> {
        self.key(&format!("backfill/{entry}"))
    }

    /// A backfill of `entry` asked on this server: `span` is added to the cluster's record;
    /// `ticket` names the answer that waits for etcd's (`Output::ops_done`), as an
    /// operation's. Err (why) when etcd cannot take it now; else it is written and answered
    /// once: when etcd takes it or not, when the link is lost first (it is not sent again:
    /// twice would run each time twice), or after `--etcd-request-timeout`.
    pub fn backfill(
        &mut self,
        ticket: u64,
        entry: String,
        span: BackfillSpan,
        now: u64,
        out: &mut Output,
    ) -> Result<(), String> {
        let ask = Purpose::Backfill {
            entry,
            span,
            tries: 0,
            ticket,
        };
        self.ask(ticket, ask, now, out)
    }

    /// The leader runs the next time of `entry`'s backfill: `nominal`, the next time of the
    /// record's `front` span (`None`: that span has no time left). Answered in
    /// `Output::backfill_runs`, granted once etcd took the time off the record.
    pub fn backfill_run(
        &mut self,
        entry: String,
        front: BackfillSpan,
        nominal: Option<u64>,
        now: u64,
        out: &mut Output,
    ) {
        self.observe(now, out);
        if !(self.unary_up && self.is_leader(now)) {
            out.backfill_runs
                .push((entry, Err("this server is not the cluster's leader".into())));
            return;
        }
        self.enqueue(Purpose::BackfillRun {
            entry,
            front,
            nominal,
        });
        self.advance(now, out);
    }

    /// The request of a backfill's ask or of the leader's run of its next time.
    pub(super) fn backfill_request(&mut self, p: &Purpose, out: &mut Output) -> Option<Request> {
        match p {
            Purpose::Backfill { entry, span, .. } => {
                let key = self.backfill_key(entry);
                let (mut record, revision) = self
                    .backfills
                    .get(entry)
                    .map_or((BackfillRecord::default(), 0), |c| {
                        (c.record.clone(), c.mod_revision)
                    });
                record.spans.push(*span);
                let value = record.to_json();
                self.backfill_sent = Some((entry.clone(), record));
                Some(Request::Txn(Txn {
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
                }))
            }
            Purpose::BackfillRun {
                entry,
                front,
                nominal,
            } => {
                let refuse = |out: &mut Output, why: &str| {
                    out.backfill_runs.push((entry.clone(), Err(why.into())));
                    None
                };
                let Some(fence) = self.fence else {
                    return refuse(out, "this server is not the cluster's leader");
                };
                let Some(c) = self.backfills.get(entry) else {
                    return refuse(out, "the backfill is no longer in etcd");
                };
                if c.record.spans.first() != Some(front) {
                    return refuse(out, "the backfill changed in etcd");
                }
                let record = c.record.after_run(*nominal);
                let revision = c.mod_revision;
                self.backfill_sent = Some((entry.clone(), record.clone()));
                Some(Request::Txn(super::requests::fenced_put(
                    self.key("leader"),
                    fence,
                    self.backfill_key(entry),
                    revision,
                    record.to_json(),
                )))
            }
            _ => None,
        }
    }

    /// etcd's answer to a backfill's ask or run.
    pub(super) fn backfill_result(
        &mut self,
        p: Purpose,
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
        out: &mut Output,
    ) {
        let sent = self.backfill_sent.take();
        match p {
            Purpose::Backfill {
                entry,
                span,
                tries,
                ticket,
            } => {
                if succeeded {
                    if let Some((e, record)) = sent.filter(|(e, _)| *e == entry) {
                        self.cache_backfill(&e, record, revision, out);
                    }
                    self.op_answered(ticket, Ok(()), out);
                    return;
                }
                // Another ask (or the leader's run) wrote first: learn it, add to it again.
                self.backfill_seen(&entry, ranges.first().and_then(|r| r.first()), out);
                if tries + 1 >= BACKFILL_TRIES {
                    let why =
                        "the backfill record kept changing in etcd (other asks at once); given up";
                    // Logged with its answer, or here when its answer was given already.
                    if !self.op_answered(ticket, Err(why.into()), out) {
                        out.ops_failed.push((entry, why.into()));
                    }
                    return;
                }
                self.queue.push_front(Purpose::Backfill {
                    entry,
                    span,
                    tries: tries + 1,
                    ticket,
                });
            }
            Purpose::BackfillRun { entry, nominal, .. } => {
                if succeeded {
                    if let Some((e, record)) = sent.filter(|(e, _)| *e == entry) {
                        self.cache_backfill(&e, record, revision, out);
                    }
                    out.backfill_runs.push((entry, Ok(nominal)));
                    return;
                }
                let leader = ranges.first().and_then(|r| r.first());
                if self.fence.is_some() && leader.map(|kv| kv.create_revision) != self.fence {
                    self.leader_seen(leader);
                    if self.fence.is_some() {
                        self.fence_lost();
                    }
                    out.backfill_runs
                        .push((entry, Err("another server holds the leader key now".into())));
                    return;
                }
                self.backfill_seen(&entry, ranges.get(1).and_then(|r| r.first()), out);
                out.backfill_runs
                    .push((entry, Err("the backfill changed in etcd".into())));
            }
            _ => {}
        }
    }

    /// A backfill request got an error (`Ok(why)`) or no answer (`Err(sent)`: it went to etcd,
    /// else it was still queued here). An ask is answered and never sent again: a lost write
    /// may have been taken, and twice would run each time twice; a refused or unsent one
    /// changed nothing. A run is not granted (a time is lost rather than run twice).
    pub(super) fn backfill_lost(
        &mut self,
        p: Purpose,
        error: Result<&str, bool>,
        out: &mut Output,
    ) {
        self.backfill_sent = None;
        match p {
            Purpose::Backfill { entry, ticket, .. } => {
                let why = match error {
                    Ok(why) => format!("etcd refused it: {why}"),
                    Err(true) => "the connection to etcd was lost before etcd answered; etcd may have taken the backfill or not, and it is not asked again (twice would run each time twice): look at the entry's runs_waiting and recent runs (GET /schedules) before asking again".into(),
                    Err(false) => "the connection to etcd was lost before the backfill was sent: the cluster did not take it (nothing changed); try again".into(),
                };
                // Logged with its answer (`Engine::cluster_op_done`); a refusal as an
                // operation's.
                if !self.op_answered(ticket, Err(why.clone()), out) && error.is_ok() {
                    out.ops_failed.push((entry, why));
                }
            }
            Purpose::BackfillRun { entry, .. } => {
                let why = error.unwrap_or("no answer from etcd");
                out.backfill_runs
                    .push((entry, Err(format!("not confirmed by etcd ({why})"))));
            }
            _ => {}
        }
    }

    /// A backfill record read or watched (`None`: absent).
    pub(super) fn backfill_seen(&mut self, entry: &str, kv: Option<&Kv>, out: &mut Output) {
        match kv {
            Some(kv) => {
                let record = BackfillRecord::parse(&kv.value);
                self.cache_backfill(entry, record, kv.mod_revision, out);
            }
            None => {
                if self.backfills.remove(entry).is_some() {
                    out.backfills.push((entry.to_string(), Vec::new()));
                }
            }
        }
    }

    fn cache_backfill(
        &mut self,
        entry: &str,
        record: BackfillRecord,
        revision: i64,
        out: &mut Output,
    ) {
        if self
            .backfills
            .get(entry)
            .is_some_and(|c| c.mod_revision >= revision)
        {
            return;
        }
        out.backfills
            .push((entry.to_string(), record.spans.clone()));
        self.backfills.insert(
            entry.to_string(),
            CachedBackfill {
                record,
                mod_revision: revision,
            },
        );
    }
}
