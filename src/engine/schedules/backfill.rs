//! Runs of an entry that wait to be made: a backfill's times (`backfill schedule ID FROM TO`),
//! the missed times `catchup=all` makes up, and the one run `overlap=queue` holds while the
//! previous job goes on. Each is made when the entry's previous job has ended (and its group
//! is free), so they keep to `overlap=`; they are journalled per entry, so a restart (even a
//! kill -9) goes on where it stopped. In a cluster (`--etcd`) only the leader makes them, each
//! as a claim: a catch-up time as a run of the entry's timing, a backfilled time taken off
//! the cluster's backfill record (kept in etcd, mirrored here), so each runs once.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use bytes::Bytes;

use super::cluster_history::Asked;
use super::ops::OpTicket;
use super::{missed_runs, utc};
use crate::engine::handles::KeyRef;
use crate::engine::{Engine, Outbox, rfc3339};
use crate::schedule::cron::Timing;
use crate::schedule::file::Overlap;
use crate::store::{PendingSpan, Record, SchedulePending};

/// Times walked at most to find the missed runs of one entry (an every-second entry down for
/// eleven days); older ones count as missed beyond the cap.
const WALK_LIMIT: usize = 1_000_000;

/// Every entry's waiting runs.
#[derive(Default)]
pub(crate) struct Pending {
    pub(super) by_entry: HashMap<Rc<str>, Waiting>,
    /// A job left, or runs were added: look at the waiting runs before the request ends.
    pub(super) dirty: bool,
}

/// One entry's waiting runs.
#[derive(Clone, Debug, Default)]
pub(super) struct Waiting {
    /// `overlap=queue`: the scheduled time of the run waiting for the previous one.
    queued: Option<u64>,
    /// Backfill and catch-up runs, in the order they were asked for.
    pub(super) spans: VecDeque<PendingSpan>,
    /// In a cluster: the cluster's backfill of the entry, as etcd holds it (not journalled
    /// here: etcd keeps it).
    pub(super) mirror: Vec<PendingSpan>,
    /// In a cluster: the catch-up time claimed and not yet answered, and whether a backfilled
    /// time is; one at a time, so they keep their order.
    pub(super) claiming: Option<u64>,
    pub(super) backfill_claiming: bool,
}

impl Waiting {
    fn left(&self) -> u64 {
        self.spans
            .iter()
            .chain(&self.mirror)
            .map(|s| s.left)
            .sum::<u64>()
            + u64::from(self.queued.is_some())
    }

    fn is_empty(&self) -> bool {
        self.queued.is_none()
            && self.spans.is_empty()
            && self.mirror.is_empty()
            && self.claiming.is_none()
            && !self.backfill_claiming
    }
}

impl Pending {
    /// A job left the engine, or a pause was lifted: an entry's waiting run may start (at
    /// the turn's end, `Engine::end_turn`, whatever path it came by).
    pub(in crate::engine) fn may_release(&mut self) {
        if !self.by_entry.is_empty() {
            self.dirty = true;
        }
    }
}

/// Why a backfill was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackfillError {
    UnknownEntry,
    /// A heartbeat entry (`expect=ping`) or `@reboot`: it has no times to run.
    NotRunnable(&'static str),
    /// FROM or TO could not be read, or FROM is after TO, or TO is in the future.
    BadRange(String),
    /// More runs than `--max-backfill` (with those already waiting).
    TooMany {
        runs: u64,
        max: usize,
    },
    /// With `--etcd`: etcd cannot be reached, so the cluster cannot take the backfill, or
    /// etcd did not take it (why).
    ClusterUnreachable(String),
}

impl BackfillError {
    /// The admin protocol's reply: gearmand's `ERR CODE text+with+pluses`.
    pub fn admin_reply(&self) -> Bytes {
        let (code, text) = self.code_and_text();
        format!("ERR {code} {}\r\n", text.replace(' ', "+")).into()
    }

    /// The error's code and its text, for the admin reply and HTTP.
    pub fn code_and_text(&self) -> (&'static str, String) {
        match self {
            BackfillError::UnknownEntry => {
                ("UNKNOWN_SCHEDULE", "No schedule entry has this id".into())
            }
            BackfillError::NotRunnable(why) => ("NOT_RUNNABLE", (*why).into()),
            BackfillError::BadRange(why) => ("INVALID_ARGUMENTS", why.clone()),
            BackfillError::TooMany { runs, max } => (
                "TOO_MANY_RUNS",
                format!(
                    "{} in the range (with those already waiting), more than --max-backfill {max}; backfill a shorter range",
                    if *runs > *max as u64 {
                        format!("more than {max} runs")
                    } else {
                        crate::plural::count(*runs, "run", "runs")
                    }
                ),
            ),
            BackfillError::ClusterUnreachable(why) => ("CLUSTER_UNREACHABLE", why.clone()),
        }
    }

    /// The HTTP status: 404 unknown entry, 409 not runnable, 413 too many, 503 etcd
    /// unreachable, 400 else.
    pub fn http_status(&self) -> u16 {
        match self {
            BackfillError::UnknownEntry => 404,
            BackfillError::ClusterUnreachable(_) => 503,
            BackfillError::NotRunnable(_) => 409,
            BackfillError::TooMany { .. } => 413,
            BackfillError::BadRange(_) => 400,
        }
    }
}

/// What a backfill did: the scheduled times it stands for, in order (a dry run lists them and
/// makes nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backfilled {
    pub times: Vec<u64>,
    pub dry_run: bool,
    /// In a cluster: the ask handed to it, whose answer (`OK N` or why not) waits for etcd's
    /// (`Engine::cluster_op_done`); `None` when answered now.
    pub asked: Option<OpTicket>,
}

impl Backfilled {
    /// The admin reply: `OK N` for runs queued; a dry run lists each time, then `.`.
    pub fn admin_reply(&self) -> Bytes {
        if !self.dry_run {
            return format!("OK {}\n", self.times.len()).into();
        }
        let mut s = String::with_capacity(self.times.len() * 21 + 2);
        for &t in &self.times {
            s.push_str(&rfc3339(t));
            s.push('\n');
        }
        s.push_str(".\n");
        s.into()
    }
}

impl Engine {
    /// `backfill schedule ID FROM TO`: the entry's times in `[from_ms, to_ms]` run as manual
    /// runs, in order, each when the previous has ended (as `overlap=` allows), with `{time}`
    /// the time it stands for. At most `--max-backfill` runs, counting those still waiting
    /// from an earlier backfill. `dry_run` lists the times and makes nothing.
    pub fn backfill_schedule(
        &mut self,
        id: &[u8],
        (from_ms, to_ms): (u64, u64),
        dry_run: bool,
        now: u64,
        out: &mut Outbox,
    ) -> Result<Backfilled, BackfillError> {
        let slot = std::str::from_utf8(id)
            .ok()
            .and_then(|id| self.schedules.by_id.get(id).copied())
            .ok_or(BackfillError::UnknownEntry)?;
        let st = &self.schedules.entries[slot];
        if st.entry.expect_ping {
            return Err(BackfillError::NotRunnable(super::ops::HEARTBEAT_NOT_RUN));
        }
        if matches!(st.entry.timing, Timing::Reboot) {
            return Err(BackfillError::NotRunnable(
                "an @reboot entry has no times to backfill",
            ));
        }
        if from_ms > to_ms {
            return Err(BackfillError::BadRange(format!(
                "FROM {} is after TO {}",
                rfc3339(from_ms),
                rfc3339(to_ms)
            )));
        }
        if to_ms > now {
            return Err(BackfillError::BadRange(format!(
                "TO {} is in the future (now {}): a backfill runs times that have passed",
                rfc3339(to_ms),
                rfc3339(now)
            )));
        }
        if self.schedules.clustered && !dry_run && !self.schedules.cluster.reachable {
            log::warn!(
                "schedule {}: backfill refused: etcd cannot be reached, so the cluster cannot take it",
                st.id
            );
            return Err(BackfillError::ClusterUnreachable(
                super::ops::CLUSTER_UNREACHABLE.into(),
            ));
        }
        let max = self.config.max_backfill;
        let waiting = self
            .schedules
            .pending
            .by_entry
            .get(&st.id)
            .map_or(0, Waiting::left);
        let room = (max as u64).saturating_sub(waiting);
        let mut times = Vec::new();
        let mut at = utc(from_ms.saturating_sub(1));
        while let Some(t) = st.entry.timing.next_after(at, &st.entry.zone) {
            let ms = t.timestamp_millis().max(0) as u64;
            if ms > to_ms {
                break;
            }
            if times.len() as u64 >= room {
                return Err(BackfillError::TooMany {
                    runs: waiting + times.len() as u64 + 1,
                    max,
                });
            }
            times.push(ms);
            at = t;
        }
        let mut done = Backfilled {
            times,
            dry_run,
            asked: None,
        };
        let (Some(&first), Some(&last)) = (done.times.first(), done.times.last()) else {
            return Ok(done);
        };
        if dry_run {
            return Ok(done);
        }
        let id = Rc::clone(&st.id);
        log::info!(
            "schedule {id}: backfill of {} from {} to {}",
            crate::plural::count(done.times.len() as u64, "run", "runs"),
            rfc3339(first),
            rfc3339(last)
        );
        let span = PendingSpan {
            after_ms: first - 1,
            to_ms: last,
            left: done.times.len() as u64,
            backfill: true,
        };
        if self.schedules.clustered {
            // The leader runs it, this server or another, once etcd has it.
            log::info!(
                "schedule {id}: backfill handed to the cluster (the leader runs it); the answer waits for etcd's"
            );
            let c = &mut self.schedules.cluster;
            let ticket = c.ask(Rc::clone(&id), Asked::Backfill(done.times.len()));
            c.backfills_out.push((ticket, id, span));
            done.asked = Some(ticket);
            return Ok(done);
        }
        let w = self.schedules.pending.by_entry.entry(id).or_default();
        w.spans.push_back(span);
        self.journal_pending(slot);
        self.release_entry(slot, now, out);
        Ok(done)
    }

    /// `backfill_schedule` with FROM and TO as an operator wrote them (RFC 3339 times or
    /// dates, src/schedule/span.rs).
    pub fn backfill_text(
        &mut self,
        id: &[u8],
        (from, to): (&str, &str),
        dry_run: bool,
        now: u64,
        out: &mut Outbox,
    ) -> Result<Backfilled, BackfillError> {
        let range =
            crate::schedule::span::parse_range(from, to).map_err(BackfillError::BadRange)?;
        self.backfill_schedule(id, range, dry_run, now, out)
    }

    /// `catchup=all`: every time missed since the entry last ran, oldest first, at most
    /// `max` (the older ones beyond it, and those older than `deadline=`, are missed and
    /// alerted); they wait in turn like a backfill, as the entry's own runs.
    pub(super) fn catch_up_all(&mut self, slot: usize, max: u32, now: u64, out: &mut Outbox) {
        let st = &self.schedules.entries[slot];
        // From the latest time dealt with, as `catch_up`.
        let Some(from) = st
            .history
            .last_run_ms
            .max(st.history.seen_ms)
            .or(st.next_ms.map(|n| n.saturating_sub(1)))
        else {
            return;
        };
        let mut kept: VecDeque<u64> = VecDeque::new();
        let mut total = 0u64;
        let mut first = None;
        let mut at = utc(from);
        for _ in 0..WALK_LIMIT {
            match st.entry.timing.next_after(at, &st.entry.zone) {
                Some(t) if (t.timestamp_millis().max(0) as u64) <= now => {
                    let ms = t.timestamp_millis().max(0) as u64;
                    total += 1;
                    first.get_or_insert(ms);
                    kept.push_back(ms);
                    if kept.len() > max as usize {
                        kept.pop_front();
                    }
                    at = t;
                }
                _ => break,
            }
        }
        let Some(first) = first else { return };
        let newest = kept.back().copied().unwrap_or(first);
        if let Some(d) = st.entry.deadline_ms {
            kept.retain(|&t| now.saturating_sub(t) <= d);
        }
        let missed = total - kept.len() as u64;
        let id = Rc::clone(&st.id);
        let clustered = self.schedules.clustered;
        let h = &mut self.schedules.entries[slot].history;
        if clustered {
            // Only the times beyond the cap are dealt with now: the kept ones count as seen
            // as each is claimed, so that a next leader (which merges this account) makes up
            // those this one did not reach.
            let before = kept.front().map_or(newest, |t| t - 1);
            h.seen_ms = h.seen_ms.max(Some(before));
        } else {
            h.seen_ms = h.seen_ms.max(Some(newest));
        }
        if missed > 0 {
            h.skips += missed;
            let reason = format!(
                "{} missed from {} (now {}): catchup=all makes up the newest {} at most{}",
                missed_runs(missed, false),
                rfc3339(first),
                rfc3339(now),
                max,
                if st_deadline(self, slot) {
                    ", within deadline="
                } else {
                    ""
                }
            );
            self.report_missed(slot, first, reason, now, out);
        }
        self.journal_history(slot);
        let (Some(&oldest), Some(&last)) = (kept.front(), kept.back()) else {
            return;
        };
        log::info!(
            "schedule {id}: catching up {} missed from {} to {}",
            crate::plural::count(kept.len() as u64, "run", "runs"),
            rfc3339(oldest),
            rfc3339(last)
        );
        let w = self.schedules.pending.by_entry.entry(id).or_default();
        w.spans.push_back(PendingSpan {
            after_ms: oldest - 1,
            to_ms: last,
            left: kept.len() as u64,
            backfill: false,
        });
        self.journal_pending(slot);
        self.release_entry(slot, now, out);
    }

    /// `overlap=queue`: a run due while the entry's previous job is still going waits for it
    /// (true). When one waits already this one is skipped, counted and alerted as under
    /// `overlap=skip` (true too). False: nothing is going, the run is made now.
    pub(super) fn queue_behind(
        &mut self,
        slot: usize,
        nominal: u64,
        now: u64,
        out: &mut Outbox,
    ) -> bool {
        if self.schedules.entries[slot].entry.overlap != Overlap::Queue {
            return false;
        }
        let Some(previous) = self.entry_busy(slot) else {
            return false;
        };
        let id = Rc::clone(&self.schedules.entries[slot].id);
        let w = self
            .schedules
            .pending
            .by_entry
            .entry(Rc::clone(&id))
            .or_default();
        let h = &mut self.schedules.entries[slot].history;
        h.seen_ms = h.seen_ms.max(Some(nominal));
        if w.queued.is_none() {
            w.queued = Some(nominal);
            log::info!(
                "schedule {id}: run at {} waits: its previous job {previous} is still queued or running (overlap=queue)",
                rfc3339(nominal)
            );
            self.journal_pending(slot);
            self.journal_history(slot);
            return true;
        }
        h.skips += 1;
        h.skip_streak += 1;
        let streak = h.skip_streak;
        log::log!(
            super::streak_level(streak),
            "schedule {id}: run at {} skipped: its previous job {previous} is still going and a run already waits (overlap=queue){}",
            rfc3339(nominal),
            super::streak_note(streak)
        );
        self.journal_history(slot);
        self.run_skipped(slot, nominal, Some(previous), now, out);
        true
    }

    /// Whether a waiting run of the entry must wait: its previous run, or a run of its
    /// group, still goes.
    pub(super) fn run_going(&self, slot: usize) -> bool {
        self.entry_busy(slot).is_some() || self.group_busy(slot).is_some()
    }

    /// The handle of a job of the entry's previous run still queued or running (by its
    /// uniques), if any; `overlap=allow` entries are never busy.
    fn entry_busy(&self, slot: usize) -> Option<String> {
        let entry = &self.schedules.entries[slot].entry;
        if entry.overlap == Overlap::Allow {
            return None;
        }
        let f = *self.func_by_name.get(entry.function.as_bytes())?;
        (0..entry.fanout).find_map(|i| {
            let unique = if entry.fanout == 1 {
                entry.id.clone()
            } else {
                format!("{}#{i}", entry.id)
            };
            let key = KeyRef::of(unique.as_bytes(), b"")?;
            let k = self.by_unique.get(f, key, &self.jobs)?;
            Some(self.by_handle.of(&self.jobs[k]).to_string())
        })
    }

    /// Make the waiting runs that may start now (a job left, or runs were added).
    pub(in crate::engine) fn release_pending(&mut self, now: u64, out: &mut Outbox) {
        if !std::mem::take(&mut self.schedules.pending.dirty) {
            return;
        }
        let ids: Vec<Rc<str>> = self.schedules.pending.by_entry.keys().cloned().collect();
        for id in ids {
            if let Some(&slot) = self.schedules.by_id.get(&id) {
                self.release_entry(slot, now, out);
            }
        }
    }

    /// Make the entry's waiting runs while nothing of it is going: the run `overlap=queue`
    /// holds first (the entry's timing goes on), then the backfill and catch-up runs in order.
    /// Each step makes one run or drops a spent span, so the loop ends.
    fn release_entry(&mut self, slot: usize, now: u64, out: &mut Outbox) {
        let id = Rc::clone(&self.schedules.entries[slot].id);
        let mut changed = false;
        loop {
            if self.run_going(slot) {
                break;
            }
            let st = &self.schedules.entries[slot];
            let paused = st.history.marks.paused;
            let Some(w) = self.schedules.pending.by_entry.get_mut(&id) else {
                break;
            };
            // A pause holds the waiting run too (it is the entry's own); the resume lets
            // it start.
            if let Some(q) = w.queued.take_if(|_| !paused) {
                changed = true;
                log::info!(
                    "schedule {id}: its previous run ended: the run at {} that waited starts",
                    rfc3339(q)
                );
                self.make_run(slot, q, now, out);
                continue;
            }
            if self.schedules.clustered {
                if w.spans.front().is_some_and(|s| s.backfill) {
                    // A backfilled time the cluster granted this server while the entry's
                    // previous run went on: it is this server's to run, leading or not.
                    let t = w.spans.pop_front().map_or(0, |s| s.to_ms);
                    changed = true;
                    self.make_backfill_run(slot, t, now, out);
                    continue;
                }
                // Only the leader claims them, one at a time.
                if !self.schedules.cluster.leading || w.claiming.is_some() || w.backfill_claiming {
                    break;
                }
                let next = if paused {
                    None
                } else {
                    take_next(&mut w.spans, st)
                };
                match next {
                    Some(None) => {
                        changed = true;
                        continue;
                    }
                    Some(Some((t, _))) => {
                        changed = true;
                        w.claiming = Some(t);
                        let claim = self.claim_for(slot, t, now);
                        out.claims.push(claim);
                        break;
                    }
                    None => {}
                }
                let Some(&front) = w.mirror.first() else {
                    break;
                };
                let next = st.time_after(front.after_ms).filter(|&t| t <= front.to_ms);
                w.backfill_claiming = true;
                self.schedules
                    .cluster
                    .backfill_runs_out
                    .push((Rc::clone(&id), front, next));
                break;
            }
            // A paused entry makes none of its own runs; a backfill is an operator's, as a
            // manual run is.
            if w.spans.front().is_some_and(|s| paused && !s.backfill) {
                break;
            }
            let Some(next) = take_next(&mut w.spans, st) else {
                break;
            };
            changed = true;
            let Some((t, backfill)) = next else {
                continue;
            };
            if backfill {
                self.make_backfill_run(slot, t, now, out);
            } else {
                self.make_run(slot, t, now, out);
            }
        }
        if self
            .schedules
            .pending
            .by_entry
            .get(&id)
            .is_some_and(Waiting::is_empty)
        {
            self.schedules.pending.by_entry.remove(&id);
        }
        if changed {
            self.journal_pending(slot);
        }
    }

    /// One backfill run: a manual run standing for the scheduled time `nominal` (`{time}` is
    /// that time), marked `backfill` in its history.
    pub(super) fn make_backfill_run(
        &mut self,
        slot: usize,
        nominal: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        let run = self.inject_run_as(slot, nominal, now, super::RunKind::Backfill, out);
        let st = &mut self.schedules.entries[slot];
        if run.handles.is_empty() {
            st.history.skips += run.skipped;
            log::warn!(
                "schedule {}: backfill run for {} not started: the queue of {} is full",
                st.id,
                rfc3339(nominal),
                st.entry.function
            );
            self.journal_history(slot);
            return;
        }
        let h = &mut st.history;
        h.runs += run.handles.len() as u64;
        h.last_run_ms = Some(h.last_run_ms.map_or(now, |l| l.max(now)));
        h.marks.last_manual = true;
        log::info!(
            "schedule {}: backfill run for {} started {} -> {}",
            st.id,
            rfc3339(nominal),
            rfc3339(now),
            run.handles.join(" ")
        );
        self.journal_history(slot);
    }

    /// Journal the entry's waiting runs after they changed; the newest record per entry is
    /// what a restart brings back, an empty one says none wait.
    pub(super) fn journal_pending(&mut self, slot: usize) {
        if !self.config.durable {
            return;
        }
        let id = &self.schedules.entries[slot].id;
        let w = self.schedules.pending.by_entry.get(id);
        self.durable.push(Record::SchedulePending(SchedulePending {
            entry: crate::engine::durable::entry_bytes(id),
            queued_ms: w.and_then(|w| w.queued),
            spans: w.map_or_else(Vec::new, |w| w.spans.iter().copied().collect()),
        }));
    }

    /// Bring back an entry's waiting runs from the journal; they are made once the schedules
    /// are loaded (an entry no longer in the file drops them).
    pub(in crate::engine) fn restore_pending(&mut self, p: SchedulePending) {
        let id = crate::engine::durable::entry_str(&p.entry);
        let mut spans: VecDeque<PendingSpan> = p.spans.into_iter().filter(|s| s.left > 0).collect();
        let catch_up: u64 = spans.iter().filter(|s| !s.backfill).map(|s| s.left).sum();
        if self.schedules.clustered && catch_up > 0 {
            // The cluster keeps them: its leader makes up missed runs from the cluster's
            // history. Backfilled times waiting here were granted to this server (taken off
            // etcd's record): they stay and run here.
            log::info!(
                "schedule {id}: {} of catchup=all waiting from before the restart left to the cluster's leader",
                crate::plural::count(catch_up, "run", "runs")
            );
            spans.retain(|s| s.backfill);
        }
        let w = Waiting {
            queued: p.queued_ms,
            spans,
            ..Waiting::default()
        };
        if !w.is_empty() {
            self.schedules.pending.by_entry.insert(id, w);
        }
    }

    /// After a load of the schedules file: entries no longer in it drop their waiting runs;
    /// the others' are looked at before the load's turn ends.
    pub(super) fn pending_loaded(&mut self, now: u64, out: &mut Outbox) {
        let by_id = &self.schedules.by_id;
        self.schedules.pending.by_entry.retain(|id, w| {
            let keep = by_id.contains_key(id);
            if !keep {
                log::warn!(
                    "schedule {id}: no longer in the file: its {} waiting dropped",
                    crate::plural::count(w.left(), "run", "runs")
                );
            }
            keep
        });
        self.schedules.pending.dirty = true;
        self.release_pending(now, out);
    }

    /// Runs waiting for the entry (backfill, catch-up, a queued run), for `show schedules`.
    pub(in crate::engine) fn pending_runs(&self, id: &str) -> u64 {
        self.schedules
            .pending
            .by_entry
            .get(id)
            .map_or(0, Waiting::left)
    }
}

fn st_deadline(e: &Engine, slot: usize) -> bool {
    e.schedules.entries[slot].entry.deadline_ms.is_some()
}

/// The next time of the front span of `spans`, taken off it (a spent span goes), with
/// whether it is a backfill's. `None`: no span waits; `Some(None)`: the front span had no
/// time left, and went.
fn take_next(
    spans: &mut VecDeque<PendingSpan>,
    st: &super::EntryState,
) -> Option<Option<(u64, bool)>> {
    let span = spans.front_mut()?;
    let Some(t) = st
        .time_after(span.after_ms)
        .filter(|&t| t <= span.to_ms && span.left > 0)
    else {
        spans.pop_front();
        return Some(None);
    };
    span.after_ms = t;
    span.left -= 1;
    let backfill = span.backfill;
    if span.left == 0 {
        spans.pop_front();
    }
    Some(Some((t, backfill)))
}
