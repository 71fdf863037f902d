//! Watching runs: heartbeat entries (`expect=ping`), whose runs happen elsewhere and report by
//! ping, and the duration alerts (`max_duration=`, `min_duration=`) of any run. A heartbeat's
//! scheduled time arms a grace deadline in the wheel (no polling); a ping ends it, and a
//! deadline that passes first is a missed run, through the same history and alert path as the
//! runs gearwheel fires.

use std::rc::Rc;

use bytes::Bytes;

use super::alerts::RunAccount;
use super::ping_state::{PingState, Started};
use super::run_history::{RunOutcome, RunRecord, one_line};
use super::{missed_runs, utc};
use crate::engine::output::PingedRun;
use crate::engine::{Engine, JobKey, JobState, Outbox, TimerEvent, rfc3339};
use crate::schedule::duration::show_duration;

/// The characters of a ping's body kept as its run's error text: the tail, where a failing
/// command says why.
pub const PING_TAIL_CHARS: usize = 200;

/// What a ping says (`/ping/ID`, `/start`, `/fail`, `/EXIT_CODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingKind {
    /// The run succeeded.
    Success,
    /// A run began: its duration is measured from here.
    Start,
    /// The run failed.
    Fail,
    /// The run ended with this exit code (0 is success).
    Exit(u8),
}

/// Why a ping was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PingError {
    /// No entry has this id (a ping never makes one).
    UnknownEntry,
    /// The entry runs jobs of its own (no `expect=ping`).
    NotWatched,
}

/// The tail of a ping's body as one line of at most `PING_TAIL_CHARS` characters, blank lines
/// and surrounding space dropped; `None` when nothing is left.
pub fn body_tail(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let skip = text.chars().count().saturating_sub(PING_TAIL_CHARS);
    let tail: String = text.chars().skip(skip).collect();
    Some(one_line(&tail))
}

/// `too_short`'s error text, when a run that succeeded after `duration` ms was quicker than
/// the entry's `min_duration=`.
fn too_short(min: Option<u64>, duration: Option<u64>) -> Option<String> {
    let (min, d) = (min?, duration?);
    (d < min).then(|| {
        format!(
            "succeeded after {d} ms, sooner than its min_duration={}",
            show_duration(min)
        )
    })
}

/// An outcome a ping's run ends with (not a missed or skipped time, not a `too_long` record
/// of a run still going).
fn is_ping_run(o: RunOutcome) -> bool {
    matches!(
        o,
        RunOutcome::Complete | RunOutcome::Failed | RunOutcome::TooShort
    )
}

/// Whether a ping answered the heartbeat run at `scheduled` (here, or on another server of
/// the cluster: its account is merged into this history).
fn pinged(h: &super::run_history::History, scheduled: u64) -> bool {
    h.recent
        .iter()
        .any(|r| r.scheduled_ms == scheduled && is_ping_run(r.outcome))
}

impl super::EntryState {
    /// The entry's timing in words, and for a heartbeat what each time waits for (for
    /// `/schedules` and the console).
    pub(in crate::engine) fn says(&self) -> String {
        let says = crate::schedule::words::describe(&self.entry.spec, self.entry.zone.name());
        if !self.entry.expect_ping {
            return says;
        }
        format!(
            "{says}; no job: a ping expected within {} (expect=ping)",
            show_duration(self.entry.grace_ms)
        )
    }
}

impl Engine {
    /// A heartbeat entry's scheduled time came: wait for its ping until the grace is over.
    pub(super) fn ping_due(&mut self, slot: usize, nominal: u64) {
        let generation = self.schedules.generation;
        let st = &mut self.schedules.entries[slot];
        if st.history.marks.skip_next {
            // `skip schedule`: this run is not waited for (a maintenance window).
            let h = &mut st.history;
            h.marks.skip_next = false;
            h.skips += 1;
            h.seen_ms = h.seen_ms.max(Some(nominal));
            log::info!(
                "schedule {}: run at {} not waited for, as asked (skip schedule)",
                st.id,
                rfc3339(nominal)
            );
            self.journal_history(slot);
            return;
        }
        let grace = st.entry.grace_ms;
        let p = &mut st.history.ping;
        p.last_due = p.last_due.max(Some(nominal));
        if p.answered_early.is_some_and(|t| t >= nominal) {
            if p.answered_early == Some(nominal) {
                p.answered_early = None;
            }
            return;
        }
        if p.awaiting.is_some() {
            // An older run is still awaited (a grace longer than the interval): its deadline
            // decides for this one too.
            return;
        }
        if pinged(&st.history, nominal) {
            // Answered before it came, by a ping to another server of the cluster.
            return;
        }
        let key = self.timers.insert(
            nominal.saturating_add(grace),
            TimerEvent::PingGrace {
                slot,
                generation,
                scheduled_ms: nominal,
            },
        );
        self.schedules.entries[slot].history.ping.awaiting = Some((nominal, key));
    }

    /// After a load: arm again the deadlines of runs awaited or going on (a load cancels the
    /// wheel's entries of the one before).
    pub(super) fn rearm_watch(&mut self, slot: usize) {
        let generation = self.schedules.generation;
        let st = &mut self.schedules.entries[slot];
        let (grace, max) = (st.entry.grace_ms, st.entry.max_duration_ms);
        let watched = st.entry.expect_ping;
        let p = &mut st.history.ping;
        if !watched {
            *p = PingState::default();
            return;
        }
        if let Some((t, _)) = p.awaiting {
            let key = self.timers.insert(
                t.saturating_add(grace),
                TimerEvent::PingGrace {
                    slot,
                    generation,
                    scheduled_ms: t,
                },
            );
            p.awaiting = Some((t, key));
        }
        if let (Some(s), Some(max)) = (p.started.as_mut(), max) {
            s.too_long = Some(self.timers.insert(
                s.at_ms.saturating_add(max),
                TimerEvent::PingTooLong {
                    slot,
                    generation,
                    started_ms: s.at_ms,
                },
            ));
        }
    }

    /// A heartbeat run's grace is over: without a ping it is missed.
    pub(in crate::engine) fn ping_grace_over(
        &mut self,
        slot: usize,
        generation: u64,
        scheduled_ms: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        if generation != self.schedules.generation || slot >= self.schedules.entries.len() {
            return;
        }
        let judge = self.judges_pings();
        let st = &mut self.schedules.entries[slot];
        let p = &mut st.history.ping;
        if p.awaiting.map(|(t, _)| t) != Some(scheduled_ms) {
            return;
        }
        p.awaiting = None;
        if st.history.marks.paused {
            // Paused after its time came: the operator said not to wait for it.
            return;
        }
        if !judge || pinged(&st.history, scheduled_ms) {
            // A follower of a cluster leaves the verdict to the leader, which also hears of
            // the pings the others got (through the entry's account).
            return;
        }
        let p = &mut st.history.ping;
        p.missed_in_row += 1;
        let in_row = p.missed_in_row;
        // The scheduled times that came during the grace waited on this one: missed with it.
        // One not come yet (due at this very time, later in the turn) waits on its own.
        let came = p.last_due.unwrap_or(scheduled_ms).min(now);
        let (more, capped) = if came > scheduled_ms {
            st.entry.timing.runs_between(
                utc(scheduled_ms),
                utc(came),
                &st.entry.zone,
                super::MISSED_COUNT_CAP,
            )
        } else {
            (0, false)
        };
        let h = &mut st.history;
        h.skips += 1 + more;
        h.seen_ms = h.seen_ms.max(Some(now));
        let mut reason = format!(
            "no ping for the run at {} within its grace of {} (expect=ping)",
            rfc3339(scheduled_ms),
            show_duration(st.entry.grace_ms)
        );
        if more > 0 {
            reason.push_str(&format!(
                "; {} without a ping since",
                missed_runs(1 + more, capped)
            ));
        }
        if in_row > 1 {
            reason.push_str(&format!("; {in_row} in a row, alerted at the first"));
        }
        log::warn!("schedule {}: {reason}", st.id);
        self.journal_history(slot);
        self.run_not_made(
            slot,
            RunRecord::never(scheduled_ms, RunOutcome::Missed),
            reason,
            in_row == 1,
            now,
            out,
        );
    }

    /// A ping for the entry `id`: a run of a heartbeat entry began or ended. `body` is what
    /// the pinger sent (its output); its tail is kept as a failed run's error text.
    pub fn ping(
        &mut self,
        id: &[u8],
        kind: PingKind,
        body: &[u8],
        now: u64,
        out: &mut Outbox,
    ) -> Result<(), PingError> {
        let slot = std::str::from_utf8(id)
            .ok()
            .and_then(|id| self.schedules.by_id.get(id).copied())
            .ok_or(PingError::UnknownEntry)?;
        if !self.schedules.entries[slot].entry.expect_ping {
            return Err(PingError::NotWatched);
        }
        match kind {
            PingKind::Start => self.ping_start(slot, now),
            PingKind::Success | PingKind::Exit(0) => {
                self.ping_end(slot, None, body, now, out);
            }
            PingKind::Fail => {
                self.ping_end(slot, Some("failed (ping /fail)".into()), body, now, out)
            }
            PingKind::Exit(code) => {
                self.ping_end(slot, Some(format!("exit code {code}")), body, now, out);
            }
        }
        Ok(())
    }

    /// The run a ping without a `/start` before it belongs to: the one awaited, else the next
    /// when it is due within the grace (a ping a little early), else the latest that came.
    /// Answers it: its deadline is cancelled.
    fn answer(&mut self, slot: usize, now: u64) -> u64 {
        let st = &mut self.schedules.entries[slot];
        let grace = st.entry.grace_ms;
        let next = st.next_ms;
        let p = &mut st.history.ping;
        if let Some((t, key)) = p.awaiting.take() {
            self.timers.cancel(key);
            return t;
        }
        match next {
            Some(n) if n > now && n - now <= grace => {
                p.answered_early = Some(n);
                n
            }
            _ => p.last_due.unwrap_or(now),
        }
    }

    fn ping_start(&mut self, slot: usize, now: u64) {
        let scheduled_ms = self.answer(slot, now);
        let generation = self.schedules.generation;
        let st = &mut self.schedules.entries[slot];
        let max = st.entry.max_duration_ms;
        if let Some(old) = st.history.ping.started.take() {
            log::warn!(
                "schedule {}: a run started at {} never pinged its end; a new one started",
                st.id,
                rfc3339(old.at_ms)
            );
            if let Some(k) = old.too_long {
                self.timers.cancel(k);
            }
        }
        let too_long = max.map(|max| {
            self.timers.insert(
                now.saturating_add(max),
                TimerEvent::PingTooLong {
                    slot,
                    generation,
                    started_ms: now,
                },
            )
        });
        let st = &mut self.schedules.entries[slot];
        st.history.ping.started = Some(Started {
            at_ms: now,
            scheduled_ms,
            too_long,
        });
        log::info!(
            "schedule {}: run scheduled {} started (ping)",
            st.id,
            rfc3339(scheduled_ms)
        );
        // The run is answered: the leader stops waiting for it (the start goes in the
        // entry's account).
        self.account_changed(slot);
    }

    /// Whether this server decides that a heartbeat run is missed or too long: alone, or
    /// as the leader of its cluster (one verdict, one alert, for the pings of every server).
    fn judges_pings(&self) -> bool {
        !self.schedules.clustered || self.schedules.cluster.leading
    }

    /// The cluster's account of a heartbeat entry was merged into this one (`theirs_start`:
    /// the `/start` it carried): a run another server's ping answered is awaited no longer,
    /// a run started there is going on here too (its end may come here), and a run that
    /// ended there is over.
    pub(super) fn pings_seen(&mut self, slot: usize, theirs_start: Option<(u64, u64)>) {
        let generation = self.schedules.generation;
        let st = &mut self.schedules.entries[slot];
        if !st.entry.expect_ping {
            return;
        }
        let max = st.entry.max_duration_ms;
        let h = &mut st.history;
        let mut cancel = Vec::new();
        if let Some((t, key)) = h.ping.awaiting {
            if pinged(h, t) || theirs_start.is_some_and(|(_, s)| s == t) {
                h.ping.awaiting = None;
                cancel.push(key);
            }
        }
        if h.recent
            .iter()
            .last()
            .is_some_and(|r| is_ping_run(r.outcome))
        {
            h.ping.missed_in_row = 0;
        }
        let ended = |scheduled: u64| h.last_run_ms.is_some_and(|l| l >= scheduled);
        let mine = h.ping.started.map(|s| (s.at_ms, s.scheduled_ms));
        let adopt = theirs_start
            .filter(|&(at, sch)| !ended(sch) && mine.is_none_or(|(my_at, _)| at > my_at));
        let over = mine.is_some_and(|(_, sch)| ended(sch));
        if adopt.is_some() || over {
            if let Some(k) = h.ping.started.take().and_then(|s| s.too_long) {
                cancel.push(k);
            }
        }
        if let Some((at_ms, scheduled_ms)) = adopt {
            h.ping.started = Some(Started {
                at_ms,
                scheduled_ms,
                too_long: None,
            });
        }
        for k in cancel {
            self.timers.cancel(k);
        }
        if let (Some((at_ms, _)), Some(max)) = (adopt, max) {
            let key = self.timers.insert(
                at_ms.saturating_add(max),
                TimerEvent::PingTooLong {
                    slot,
                    generation,
                    started_ms: at_ms,
                },
            );
            if let Some(s) = self.schedules.entries[slot].history.ping.started.as_mut() {
                s.too_long = Some(key);
            }
        }
    }

    /// A run pinged its end: success (`failed` is `None`) or failure. It is a run of the entry
    /// as one gearwheel fires is: counted, kept in the history and alerted.
    fn ping_end(
        &mut self,
        slot: usize,
        failed: Option<String>,
        body: &[u8],
        now: u64,
        out: &mut Outbox,
    ) {
        let started = self.schedules.entries[slot].history.ping.started.take();
        let (scheduled_ms, started_ms) = match started {
            Some(s) => {
                if let Some(k) = s.too_long {
                    self.timers.cancel(k);
                }
                (s.scheduled_ms, Some(s.at_ms))
            }
            None => (self.answer(slot, now), None),
        };
        let duration_ms = started_ms.map(|s| now.saturating_sub(s));
        let st = &mut self.schedules.entries[slot];
        let short = if failed.is_none() {
            too_short(st.entry.min_duration_ms, duration_ms)
        } else {
            None
        };
        let outcome = match (&failed, &short) {
            (Some(_), _) => RunOutcome::Failed,
            (None, Some(_)) => RunOutcome::TooShort,
            (None, None) => RunOutcome::Complete,
        };
        let tail = body_tail(body);
        let error = match (failed, short) {
            (Some(why), _) => Some(match &tail {
                Some(t) => format!("{why}: {t}"),
                None => why,
            }),
            (None, short) => short,
        };
        let h = &mut st.history;
        h.ping.missed_in_row = 0;
        h.runs += 1;
        match outcome {
            RunOutcome::Failed => h.failures += 1,
            RunOutcome::TooShort => h.too_short += 1,
            _ => {}
        }
        h.last_run_ms = h.last_run_ms.max(Some(scheduled_ms));
        h.seen_ms = h.seen_ms.max(Some(scheduled_ms));
        h.marks.last_manual = false;
        h.last_outcome = Some(error.clone().unwrap_or_else(|| "complete".into()));
        h.last_duration_ms = duration_ms;
        let record = RunRecord {
            scheduled_ms,
            started_ms,
            duration_ms,
            outcome,
            manual: false,
            backfill: false,
            handle: None,
        };
        h.recent.push(record.clone());
        if let Some(e) = &error {
            h.last_error = Some(one_line(e));
        }
        let level = if error.is_some() {
            log::Level::Warn
        } else {
            log::Level::Info
        };
        log::log!(
            level,
            "schedule {} run scheduled {} (ping): {}{}",
            st.id,
            rfc3339(scheduled_ms),
            error.as_deref().unwrap_or("complete"),
            duration_ms.map_or_else(String::new, |d| format!(" after {d} ms"))
        );
        self.journal_history(slot);
        let st = &self.schedules.entries[slot];
        let (id, function) = (Rc::clone(&st.id), st.entry.function.clone());
        self.keep_ping_output(
            PingedRun {
                entry: &id,
                function: &function,
                scheduled_ms,
                started_ms,
                failed: outcome == RunOutcome::Failed,
                error: error.as_deref(),
                body,
            },
            now,
        );
        let account = RunAccount {
            run: record,
            attempts: 1,
            error: error.as_deref(),
            handle: None,
        };
        self.alert(slot, account, now, out);
    }

    /// A heartbeat run started by `/start` is still going at its `max_duration=`.
    pub(in crate::engine) fn ping_too_long(
        &mut self,
        slot: usize,
        generation: u64,
        started_ms: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        if generation != self.schedules.generation || slot >= self.schedules.entries.len() {
            return;
        }
        let Some(s) = self.schedules.entries[slot]
            .history
            .ping
            .started
            .as_mut()
            .filter(|s| s.at_ms == started_ms)
        else {
            return;
        };
        s.too_long = None;
        let scheduled_ms = s.scheduled_ms;
        if !self.judges_pings() {
            return;
        }
        self.run_too_long(slot, scheduled_ms, started_ms, false, None, now, out);
    }

    /// A job of a schedule entry was taken by a worker: arm its `max_duration=`.
    pub(in crate::engine) fn run_started(&mut self, k: JobKey, id: u64, now: u64) {
        let Some(origin) = self.rare(k).and_then(|r| r.origin.as_ref()) else {
            return;
        };
        let max = self
            .schedules
            .by_id
            .get(&origin.entry)
            .and_then(|&slot| self.schedules.entries[slot].entry.max_duration_ms);
        let Some(max) = max else { return };
        let key = self.timers.insert(
            now.saturating_add(max),
            TimerEvent::RunTooLong {
                job: k,
                id,
                started_ms: now,
            },
        );
        let origin = self
            .extra_get_mut(k)
            .and_then(|e| e.rare.as_mut())
            .and_then(|r| r.origin.as_mut());
        if let Some(o) = origin {
            if let Some(old) = o.too_long.replace(key) {
                self.timers.cancel(old);
            }
        }
    }

    /// A scheduled job's attempt ended (or was given back): its `max_duration=` deadline goes.
    pub(super) fn run_ended(&mut self, k: JobKey) {
        let key = self
            .extra_get_mut(k)
            .and_then(|e| e.rare.as_mut())
            .and_then(|r| r.origin.as_mut())
            .and_then(|o| o.too_long.take());
        if let Some(key) = key {
            self.timers.cancel(key);
        }
    }

    /// A scheduled job's `max_duration=` came: if that attempt is still running, alert.
    pub(in crate::engine) fn job_too_long(
        &mut self,
        k: JobKey,
        id: u64,
        started_ms: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        let Some(job) = self.jobs.get(k).filter(|j| j.id == id) else {
            return;
        };
        if !matches!(job.state(), JobState::Running(_)) {
            return;
        }
        let handle = self.by_handle.of(job).to_string();
        let Some(origin) = self
            .extra_get_mut(k)
            .and_then(|e| e.rare.as_mut())
            .and_then(|r| r.origin.as_mut())
            .filter(|o| o.started_ms == Some(started_ms))
        else {
            return;
        };
        origin.too_long = None;
        let (entry, scheduled_ms, manual) =
            (Rc::clone(&origin.entry), origin.scheduled_ms, origin.manual);
        let Some(slot) = self.schedules.by_id.get(&entry).copied() else {
            return;
        };
        self.run_too_long(
            slot,
            scheduled_ms,
            started_ms,
            manual,
            Some(&handle),
            now,
            out,
        );
    }

    /// A run still going past its entry's `max_duration=`: kept in the history and alerted
    /// (`too_long`), once; the run goes on (`timeout=` is what fails it).
    #[allow(clippy::too_many_arguments)]
    fn run_too_long(
        &mut self,
        slot: usize,
        scheduled_ms: u64,
        started_ms: u64,
        manual: bool,
        handle: Option<&str>,
        now: u64,
        out: &mut Outbox,
    ) {
        let st = &mut self.schedules.entries[slot];
        let max = st.entry.max_duration_ms.unwrap_or(0);
        let ran = now.saturating_sub(started_ms);
        let error = format!(
            "still running after {ran} ms, longer than its max_duration={}",
            show_duration(max)
        );
        log::warn!(
            "schedule {} run scheduled {}: {error}",
            st.id,
            rfc3339(scheduled_ms)
        );
        let record = RunRecord {
            scheduled_ms,
            started_ms: Some(started_ms),
            duration_ms: Some(ran),
            outcome: RunOutcome::TooLong,
            manual,
            backfill: false,
            handle: handle.map(|h| Bytes::copy_from_slice(h.as_bytes())),
        };
        st.history.recent.push(record.clone());
        st.history.too_long += 1;
        st.history.last_error = Some(one_line(&error));
        self.journal_history(slot);
        let account = RunAccount {
            run: record,
            attempts: 1,
            error: Some(&error),
            handle,
        };
        self.alert(slot, account, now, out);
    }

    /// A scheduled job completed: `too_short`'s text when it was quicker than its entry's
    /// `min_duration=`.
    pub(super) fn job_too_short(&self, entry: &str, duration: Option<u64>) -> Option<String> {
        let slot = *self.schedules.by_id.get(entry)?;
        too_short(self.schedules.entries[slot].entry.min_duration_ms, duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_kept_as_its_tail_on_one_line() {
        assert_eq!(body_tail(b""), None);
        assert_eq!(body_tail(b" \n\n"), None);
        assert_eq!(
            body_tail(b"copying\nrsync: error 23\n").as_deref(),
            Some("copying rsync: error 23")
        );
        let long = format!("{}END", "x".repeat(5000));
        let t = body_tail(long.as_bytes()).unwrap();
        assert_eq!(t.chars().count(), PING_TAIL_CHARS);
        assert!(t.ends_with("xEND"), "the tail, not the head");
        assert_eq!(
            body_tail(b"\xff\xfe bad").as_deref(),
            Some("\u{fffd}\u{fffd} bad")
        );
    }

    #[test]
    fn too_short_needs_a_minimum_and_a_duration() {
        assert_eq!(too_short(None, Some(1)), None);
        assert_eq!(too_short(Some(60_000), None), None);
        assert_eq!(too_short(Some(60_000), Some(60_000)), None);
        assert_eq!(
            too_short(Some(60_000), Some(2_000)).as_deref(),
            Some("succeeded after 2000 ms, sooner than its min_duration=1m")
        );
    }
}
