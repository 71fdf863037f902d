//! One history and one operator's hand for a cluster (`--etcd`): each entry's account of its
//! runs (counts, last outcome and error, the ring of its last runs) as the JSON kept in etcd
//! and shown by every server; and operators' asks (`pause|resume|skip|run schedule`, and
//! backfills) handed to the cluster instead of acted on here, each answered when etcd has
//! answered, with the cluster's state mirrored back.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use crate::engine::schedules::ops::{Applied, CLUSTER_UNREACHABLE, OpTicket, ScheduleOpError};
use crate::engine::{ConnId, Engine, Outbox};
use crate::json::{self, Obj};
use crate::proto::admin::ScheduleOp;

use super::run_history::{History, RunOutcome, RunRecord, RunRing};

/// What a clustered engine owes the cluster and knows of it.
#[derive(Default)]
pub(crate) struct ClusterSide {
    /// This server leads the cluster (it fires the schedule).
    pub leading: bool,
    /// etcd confirmed this server's lease lately: an operator's ask can be taken.
    pub reachable: bool,
    /// Operators' asks for the cluster: their ticket, entry, what, and when (wall ms).
    pub ops_out: Vec<(OpTicket, Rc<str>, ScheduleOp, u64)>,
    /// The last ticket given.
    pub tickets: OpTicket,
    /// Asks handed to the cluster whose answer has not come: one per ticket, each answered
    /// once (the etcd link answers every ticket it takes, within `--etcd-request-timeout`).
    pub waiting: HashMap<OpTicket, Waiter>,
    /// Entries whose account changed here since it was last handed to the cluster.
    pub dirty: BTreeSet<Rc<str>>,
    /// `@after` children whose set changed here since it was last handed to the cluster.
    pub after_dirty: BTreeSet<Rc<str>>,
    /// Backfills asked here, for the cluster's records (backfill.rs): their ticket, entry
    /// and span.
    pub backfills_out: Vec<(OpTicket, Rc<str>, crate::store::PendingSpan)>,
    /// The leader's claims of backfilled times: entry, the front span, its next time.
    pub backfill_runs_out: Vec<(Rc<str>, crate::store::PendingSpan, Option<u64>)>,
}

/// What an ask handed to the cluster asked: an operation, or a backfill of so many runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    Op(ScheduleOp),
    Backfill(usize),
}

/// Who waits for the answer to an ask, and what it asked (for the log and the reply).
pub(crate) struct Waiter {
    entry: Rc<str>,
    what: Asked,
    /// The connection answered, and whether it asked by an admin line (answered here, its
    /// later lines held until then) or otherwise (HTTP: answered by the reactor). `None`
    /// while nobody waits (not yet, or it left).
    conn: Option<(ConnId, bool)>,
}

impl ClusterSide {
    /// A new ask of `entry`, answered when the cluster answers it: its ticket.
    pub fn ask(&mut self, entry: Rc<str>, what: Asked) -> OpTicket {
        self.tickets += 1;
        let waiter = Waiter {
            entry,
            what,
            conn: None,
        };
        self.waiting.insert(self.tickets, waiter);
        self.tickets
    }

    /// Whether connection `id` waits for an answer to an admin line: what it sent after the
    /// line waits too, so that its replies keep their order.
    pub fn line_waits(&self, id: ConnId) -> bool {
        !self.waiting.is_empty() && self.waiting.values().any(|w| w.conn == Some((id, true)))
    }

    /// Connection `id` closed: nobody waits for its answers (still logged when they come).
    pub fn conn_gone(&mut self, id: ConnId) {
        for w in self.waiting.values_mut() {
            if w.conn.is_some_and(|(c, _)| c == id) {
                w.conn = None;
            }
        }
    }
}

impl Engine {
    /// Whether this server leads the cluster, and whether etcd can be reached (set by the
    /// etcd link every turn).
    pub fn set_cluster_standing(&mut self, leading: bool, reachable: bool) {
        let c = &mut self.schedules.cluster;
        let was = std::mem::replace(&mut c.leading, leading);
        c.reachable = reachable;
        if was != leading {
            self.pending_standing(leading);
        }
    }

    /// `op` on the entry in `slot`, asked of a clustered server: handed to the cluster (the
    /// leader obeys it), never acted on here. Refused at once when etcd cannot be reached;
    /// else asked, and answered when etcd has answered (`cluster_op_done`).
    pub(super) fn cluster_op(
        &mut self,
        slot: usize,
        op: ScheduleOp,
        now: u64,
    ) -> Result<Applied, ScheduleOpError> {
        let st = &self.schedules.entries[slot];
        if op == ScheduleOp::Run && st.entry.expect_ping {
            return Err(ScheduleOpError::Heartbeat);
        }
        if !self.schedules.cluster.reachable {
            log::warn!(
                "schedule {}: {} schedule refused: etcd cannot be reached, so the cluster cannot take it",
                st.id,
                op.word()
            );
            return Err(ScheduleOpError::ClusterUnreachable(
                CLUSTER_UNREACHABLE.into(),
            ));
        }
        log::info!(
            "schedule {}: {} schedule handed to the cluster; the answer waits for etcd's",
            st.id,
            op.word()
        );
        let entry = Rc::clone(&st.id);
        let c = &mut self.schedules.cluster;
        let ticket = c.ask(Rc::clone(&entry), Asked::Op(op));
        c.ops_out.push((ticket, entry, op, now));
        Ok(Applied::Asked(ticket))
    }

    /// Connection `conn` waits for the answer to the ask `ticket`; `line`: it asked by an
    /// admin line, which is answered here (its later lines wait: `input_paused`).
    pub fn cluster_op_wait(&mut self, ticket: OpTicket, conn: ConnId, line: bool) {
        if let Some(w) = self.schedules.cluster.waiting.get_mut(&ticket) {
            w.conn = Some((conn, line));
        }
    }

    /// Operators' asks for the cluster, taken by the etcd link.
    pub fn take_cluster_ops(&mut self) -> Vec<(OpTicket, Rc<str>, ScheduleOp, u64)> {
        std::mem::take(&mut self.schedules.cluster.ops_out)
    }

    /// The cluster's answer to the ask `ticket`: `Ok` when etcd took it, else why not. An
    /// admin line is answered (and its connection served on); another asker is handed to
    /// the reactor (`Outbox::ops_answered`).
    pub fn cluster_op_done(
        &mut self,
        ticket: OpTicket,
        result: Result<(), String>,
        out: &mut Outbox,
    ) {
        let Some(w) = self.schedules.cluster.waiting.remove(&ticket) else {
            return;
        };
        let (word, ok) = match w.what {
            Asked::Op(op) => (format!("{} schedule", op.word()), "OK\r\n".to_string()),
            Asked::Backfill(runs) => ("backfill".to_string(), format!("OK {runs}\n")),
        };
        match &result {
            Ok(()) => log::info!("schedule {}: {word} taken by the cluster", w.entry),
            Err(why) => log::warn!(
                "schedule {}: {word} not confirmed by the cluster: {why}",
                w.entry
            ),
        }
        match w.conn {
            None => {}
            Some((conn, true)) => {
                // A backfill's error reads as an operation's (`ERR CLUSTER_UNREACHABLE why`).
                let reply = match result {
                    Ok(()) => bytes::Bytes::from(ok),
                    Err(why) => ScheduleOpError::ClusterUnreachable(why).admin_reply(),
                };
                out.push(conn, crate::proto::response::Response::text(reply));
                out.resumed.push(conn);
            }
            Some((conn, false)) => out.ops_answered.push((conn, ticket, result)),
        }
    }

    /// The cluster's operators' record of `entry`: paused or not, a skip pending or not.
    /// Every server shows it; the leader obeys it.
    pub fn cluster_ops_seen(&mut self, entry: &str, paused: bool, skip_pending: bool, now: u64) {
        let Some(&slot) = self.schedules.by_id.get(entry) else {
            return;
        };
        let st = &mut self.schedules.entries[slot];
        let before = st.history.marks;
        st.history.marks.skip_next = skip_pending;
        if paused && !before.paused {
            st.history.marks.paused = true;
            st.next_ms = None;
            if let Some(t) = st.timer.take() {
                self.timers.cancel(t);
            }
            log::info!("schedule {entry}: paused in the cluster; it fires nothing until resumed");
        } else if !paused && before.paused {
            let h = &mut st.history;
            h.marks.paused = false;
            // As on one server: the runs that fell while paused are not made up.
            h.seen_ms = h.seen_ms.max(Some(now));
            self.arm_after(slot, now);
            log::info!("schedule {entry}: resumed in the cluster");
        }
        if self.schedules.entries[slot].history.marks != before {
            self.journal_quietly(slot);
        }
    }

    /// This server, the leader, won the right to fire a run an operator asked for.
    pub fn cluster_run_now(&mut self, entry: &str, now: u64, out: &mut Outbox) {
        let Some(&slot) = self.schedules.by_id.get(entry) else {
            log::warn!(
                "schedule {entry}: run asked of the cluster dropped: the entry is not loaded"
            );
            return;
        };
        if let Err(e) = self.run_now(slot, now, out) {
            log::warn!("schedule {entry}: run asked of the cluster not started: {e:?}");
        }
    }

    /// The accounts of the entries whose history changed here, as kept in etcd.
    pub fn take_cluster_accounts(&mut self) -> Vec<(String, Vec<u8>)> {
        let dirty = std::mem::take(&mut self.schedules.cluster.dirty);
        dirty
            .into_iter()
            .filter_map(|id| {
                let slot = *self.schedules.by_id.get(&id)?;
                let h = &self.schedules.entries[slot].history;
                Some((id.to_string(), account(h).into_bytes()))
            })
            .collect()
    }

    /// The entry's history changed here: the cluster is told at the end of the turn.
    pub(super) fn account_changed(&mut self, slot: usize) {
        if self.schedules.clustered {
            let id = Rc::clone(&self.schedules.entries[slot].id);
            self.schedules.cluster.dirty.insert(id);
        }
    }

    /// Another server's account of `entry`: it is the cluster's, so this server shows it.
    /// Merged, not replaced: counters only grow, so the larger is the one that saw more, and
    /// the last runs of both are kept. Two servers that wrote at the same moment (an old
    /// leader's retry ending just after a failover) then lose neither's runs.
    pub fn cluster_account_seen(&mut self, entry: &str, bytes: &[u8]) {
        let Some(&slot) = self.schedules.by_id.get(entry) else {
            return;
        };
        let Some(a) = parse_account(bytes) else {
            log::warn!(
                "schedule {entry}: the cluster's account of its runs does not parse; ignored"
            );
            return;
        };
        let start = a.ping.started.map(|s| (s.at_ms, s.scheduled_ms));
        merge(&mut self.schedules.entries[slot].history, a);
        self.pings_seen(slot, start);
        self.journal_quietly(slot);
    }

    /// Journal the entry's history without telling the cluster (it came from there).
    fn journal_quietly(&mut self, slot: usize) {
        let id = Rc::clone(&self.schedules.entries[slot].id);
        let owed = self.schedules.cluster.dirty.contains(&id);
        self.journal_history(slot);
        if !owed {
            self.schedules.cluster.dirty.remove(&id);
        }
    }
}

/// The newest time an account speaks of: its last run, or its newest run record.
fn newest(h: &History) -> u64 {
    let recent = h.recent.iter().map(|r| r.scheduled_ms).max();
    h.last_run_ms.max(recent).unwrap_or(0)
}

/// `theirs` (the cluster's account) into `mine`: the larger counters, the later last run, the
/// last outcome and error of the newer account, and the last runs of both.
fn merge(mine: &mut History, theirs: History) {
    // The last outcome and error are the newer account's: two writers around a failover
    // must not leave the older run's word on top.
    let newer = newest(&theirs) >= newest(mine);
    if theirs.last_run_ms >= mine.last_run_ms {
        mine.marks.last_manual = theirs.marks.last_manual;
    }
    mine.last_run_ms = mine.last_run_ms.max(theirs.last_run_ms);
    mine.seen_ms = mine.seen_ms.max(theirs.seen_ms);
    mine.runs = mine.runs.max(theirs.runs);
    mine.failures = mine.failures.max(theirs.failures);
    mine.skips = mine.skips.max(theirs.skips);
    mine.too_long = mine.too_long.max(theirs.too_long);
    mine.too_short = mine.too_short.max(theirs.too_short);
    if theirs.last_outcome.is_some() && (newer || mine.last_outcome.is_none()) {
        mine.last_outcome = theirs.last_outcome;
        mine.last_duration_ms = theirs.last_duration_ms;
    }
    if theirs.last_error.is_some() && (newer || mine.last_error.is_none()) {
        mine.last_error = theirs.last_error;
    }
    let mut runs: Vec<RunRecord> = theirs.recent.iter().cloned().collect();
    for r in mine.recent.iter() {
        if !runs.contains(r) {
            runs.push(r.clone());
        }
    }
    runs.sort_by_key(|r| r.scheduled_ms);
    let mut ring = RunRing::default();
    for r in runs {
        ring.push(r);
    }
    mine.recent = ring;
}

/// An entry's account of its runs, as kept in etcd (`P/history/{entry}`).
pub(super) fn account(h: &History) -> String {
    let mut s = String::with_capacity(512);
    let mut o = Obj::new(&mut s);
    o.opt_num("last_run", h.last_run_ms)
        .opt_str("last_outcome", h.last_outcome.as_deref())
        .opt_num("last_duration", h.last_duration_ms)
        .num("runs", h.runs)
        .num("failures", h.failures)
        .num("skips", h.skips)
        .num("too_long", h.too_long)
        .num("too_short", h.too_short)
        .opt_num("seen", h.seen_ms)
        .bool("last_manual", h.marks.last_manual)
        .opt_str("last_error", h.last_error.as_deref());
    // A heartbeat's run begun by a `/start` ping and not ended: the leader stops waiting
    // for it, and its end may reach another server.
    if let Some(st) = &h.ping.started {
        let mut o = Obj::new(o.key("ping_started"));
        o.num("at", st.at_ms).num("scheduled", st.scheduled_ms);
        o.end();
    }
    let runs: Vec<&RunRecord> = h.recent.iter().collect();
    json::array(o.key("recent"), &runs, |out, r| {
        let mut o = Obj::new(out);
        o.num("scheduled", r.scheduled_ms)
            .opt_num("started", r.started_ms)
            .opt_num("duration", r.duration_ms)
            .str("outcome", r.outcome.name())
            .bool("manual", r.manual)
            .bool("backfill", r.backfill)
            .opt_str(
                "handle",
                r.handle
                    .as_ref()
                    .map(|h| String::from_utf8_lossy(h))
                    .as_deref(),
            );
        o.end();
    });
    o.end();
    s
}

/// An account read back; `None` when it is not one (another version, a hand-made key).
pub(super) fn parse_account(bytes: &[u8]) -> Option<History> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64());
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let mut h = History {
        last_run_ms: n(&v, "last_run"),
        last_outcome: text("last_outcome"),
        last_duration_ms: n(&v, "last_duration"),
        runs: n(&v, "runs")?,
        failures: n(&v, "failures").unwrap_or(0),
        skips: n(&v, "skips").unwrap_or(0),
        too_long: n(&v, "too_long").unwrap_or(0),
        too_short: n(&v, "too_short").unwrap_or(0),
        seen_ms: n(&v, "seen"),
        last_error: text("last_error").map(|e| super::run_history::one_line(&e)),
        ..History::default()
    };
    h.marks.last_manual = v.get("last_manual").and_then(|x| x.as_bool()) == Some(true);
    if let Some(p) = v.get("ping_started") {
        if let (Some(at_ms), Some(scheduled_ms)) = (n(p, "at"), n(p, "scheduled")) {
            h.ping.started = Some(super::ping_state::Started {
                at_ms,
                scheduled_ms,
                too_long: None,
            });
        }
    }
    let mut ring = RunRing::default();
    for r in v
        .get("recent")
        .and_then(|x| x.as_array())
        .into_iter()
        .flatten()
    {
        let Some(outcome) = r
            .get("outcome")
            .and_then(|x| x.as_str())
            .and_then(RunOutcome::from_name)
        else {
            continue;
        };
        ring.push(RunRecord {
            scheduled_ms: n(r, "scheduled").unwrap_or(0),
            started_ms: n(r, "started"),
            duration_ms: n(r, "duration"),
            outcome,
            manual: r.get("manual").and_then(|x| x.as_bool()) == Some(true),
            backfill: r.get("backfill").and_then(|x| x.as_bool()) == Some(true),
            handle: r
                .get("handle")
                .and_then(|x| x.as_str())
                .map(|h| bytes::Bytes::copy_from_slice(h.as_bytes())),
        });
    }
    h.recent = ring;
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_round_trips_and_garbage_is_not_one() {
        let mut h = History {
            last_run_ms: Some(1_700_000_000_000),
            last_outcome: Some("exception: disk full".into()),
            last_duration_ms: Some(12),
            runs: 25,
            failures: 3,
            skips: 4,
            too_long: 2,
            too_short: 1,
            seen_ms: Some(1_700_000_000_000),
            last_error: Some("disk full".into()),
            ..History::default()
        };
        h.marks.last_manual = true;
        h.ping.started = Some(super::super::ping_state::Started {
            at_ms: 1_700_000_000_500,
            scheduled_ms: 1_700_000_000_000,
            too_long: None,
        });
        for i in 0..25u64 {
            h.recent.push(RunRecord {
                scheduled_ms: 1_700_000_000_000 + i,
                started_ms: (i % 2 == 0).then_some(1_700_000_000_001 + i),
                duration_ms: (i % 2 == 0).then_some(i),
                outcome: if i % 3 == 0 {
                    RunOutcome::Failed
                } else {
                    RunOutcome::Missed
                },
                manual: i == 24,
                backfill: i == 23,
                handle: (i % 2 == 0).then(|| bytes::Bytes::from(format!("H:x:{i}"))),
            });
        }
        let back = parse_account(account(&h).as_bytes()).unwrap();
        assert_eq!(account(&back), account(&h));
        assert!(
            account(&h)
                .contains(r#""ping_started":{"at":1700000000500,"scheduled":1700000000000}"#)
        );
        let started = back.ping.started.map(|s| (s.at_ms, s.scheduled_ms));
        assert_eq!(started, Some((1_700_000_000_500, 1_700_000_000_000)));
        assert_eq!(back.recent.column(), h.recent.column());
        assert_eq!(
            back.recent.iter().count(),
            super::super::run_history::RUNS_KEPT
        );
        assert!(parse_account(b"{\"x\":1}").is_none());
        // Merged into an account that saw fewer runs, it loses nothing of either.
        let mut mine = History {
            runs: 30,
            ..History::default()
        };
        let extra = RunRecord {
            scheduled_ms: 1_800_000_000_000,
            started_ms: None,
            duration_ms: None,
            outcome: RunOutcome::Skipped,
            manual: false,
            backfill: false,
            handle: None,
        };
        mine.recent.push(extra.clone());
        merge(&mut mine, back);
        assert_eq!((mine.runs, mine.failures, mine.skips), (30, 3, 4));
        assert_eq!(
            (mine.too_long, mine.too_short),
            (2, 1),
            "duration alerts kept too"
        );
        assert_eq!(mine.recent.iter().last(), Some(&extra));
        assert_eq!(mine.last_error.as_deref(), Some("disk full"));
        assert!(parse_account(b"\xff").is_none());
    }

    #[test]
    fn the_newer_accounts_last_outcome_wins_whichever_arrives_last() {
        let at = |ms: u64, outcome: &str, error: Option<&str>| History {
            last_run_ms: Some(ms),
            last_outcome: Some(outcome.into()),
            last_error: error.map(str::to_string),
            ..History::default()
        };
        // The new leader's run (later) merged with the old leader's account of an earlier
        // failed one, arriving after it: the later run's word stays.
        let mut mine = at(2_000, "complete", None);
        mine.last_error = Some("an older error".into());
        merge(
            &mut mine,
            at(1_000, "exception: disk full", Some("disk full")),
        );
        assert_eq!(mine.last_outcome.as_deref(), Some("complete"));
        assert_eq!(mine.last_error.as_deref(), Some("an older error"));
        // And the other way round: the newer one replaces it.
        merge(&mut mine, at(3_000, "fail", Some("failed (WORK_FAIL)")));
        assert_eq!(mine.last_outcome.as_deref(), Some("fail"));
        assert_eq!(mine.last_error.as_deref(), Some("failed (WORK_FAIL)"));
    }
}
