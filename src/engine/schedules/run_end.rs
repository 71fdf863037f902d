//! How a run of a schedule entry ends in the entry: the outcome of its job, or a run that
//! never happened (missed, skipped); each is logged, kept in the run history and alerted.

use std::collections::HashMap;
use std::rc::Rc;

use bytes::Bytes;

use super::alerts::RunAccount;
use super::run_history::{RunOutcome, RunRecord, one_line};
use super::{Outcome, missed_runs, opt_time};
use crate::engine::{Engine, JobKey, Outbox, rfc3339};

impl Engine {
    /// Retries waiting for their backoff (future jobs after a failed attempt), by schedule
    /// entry: one pass over the jobs, for `show schedules` and `/schedules`.
    pub(in crate::engine) fn retries_pending_by_entry(&self) -> HashMap<Rc<str>, u32> {
        let mut pending: HashMap<Rc<str>, u32> = HashMap::new();
        if self.schedules.entries.is_empty() {
            return pending;
        }
        for (k, j) in &self.jobs {
            if j.state() != crate::engine::JobState::Future || self.prior_failures(k).0 == 0 {
                continue;
            }
            if let Some(origin) = self.rare(k).and_then(|r| r.origin.as_ref()) {
                *pending.entry(Rc::clone(&origin.entry)).or_default() += 1;
            }
        }
        pending
    }

    /// A scheduled job ended (or was requeued): log it, keep it in the entry's history, and
    /// send the entry's alert (`on_failure=`, `on_success=`).
    pub(in crate::engine) fn schedule_outcome(
        &mut self,
        k: JobKey,
        outcome: Outcome<'_>,
        now: u64,
        out: &mut Outbox,
    ) {
        self.run_ended(k);
        let job = &self.jobs[k];
        let Some(origin) = self.rare(k).and_then(|r| r.origin.as_ref()) else {
            return;
        };
        let duration = origin.started_ms.map(|s| now.saturating_sub(s));
        let text = outcome.text();
        let handle = self.by_handle.of(job).to_string();
        // A failed or timed-out run needs an operator; a cancel was one.
        let level = if outcome.is_failure() && !matches!(outcome, Outcome::Cancelled) {
            log::Level::Warn
        } else {
            log::Level::Info
        };
        log::log!(
            level,
            "schedule {} job {handle} ({} {}): {text}{}",
            origin.entry,
            if origin.manual {
                "manual run"
            } else {
                "scheduled"
            },
            rfc3339(origin.scheduled_ms),
            duration.map_or_else(String::new, |d| format!(" after {d} ms"))
        );
        let short = match outcome {
            Outcome::Complete => self.job_too_short(&origin.entry, duration),
            _ => None,
        };
        let record = outcome.run_outcome().map(|o| RunRecord {
            scheduled_ms: origin.scheduled_ms,
            started_ms: origin.started_ms,
            duration_ms: duration,
            outcome: if short.is_some() {
                RunOutcome::TooShort
            } else {
                o
            },
            manual: origin.manual,
            backfill: origin.backfill,
            handle: Some(Bytes::copy_from_slice(handle.as_bytes())),
        });
        let ended = (record.is_some() && !origin.manual).then(|| Rc::clone(&origin.entry));
        // A parent's run that ended, for its `@after` children (after.rs).
        let parent_run = record
            .as_ref()
            .map(|_| (Rc::clone(&origin.entry), origin.scheduled_ms));
        // Given back by workers that left, plus failed attempts before a retry (retries.rs).
        let retries = self.extra(k).map_or(0, |e| e.retries) + self.prior_failures(k).0;
        let failure = outcome.failure(retries);
        let slot = self.schedules.by_id.get(&origin.entry).copied();
        if let Some(entry) = ended {
            self.cluster_job_ended(&entry, out);
        }
        if let Some((entry, scheduled)) = parent_run {
            let ok = matches!(outcome, Outcome::Complete);
            self.after_parent_job_ended(k, &entry, &handle, scheduled, ok, now, out);
        }
        let Some(slot) = slot else {
            return;
        };
        let h = &mut self.schedules.entries[slot].history;
        if outcome.is_failure() {
            h.failures += 1;
            self.journal_history(slot);
        }
        self.account_changed(slot);
        let h = &mut self.schedules.entries[slot].history;
        h.last_outcome = Some(text);
        if !matches!(outcome, Outcome::Requeued) {
            h.last_duration_ms = duration;
        }
        let Some(record) = record else { return };
        h.recent.push(record.clone());
        if record.outcome == RunOutcome::TooShort {
            h.too_short += 1;
            self.journal_history(slot);
        }
        let h = &mut self.schedules.entries[slot].history;
        let (error, attempts) = match failure {
            Some((text, attempts)) => (Some(one_line(&String::from_utf8_lossy(&text))), attempts),
            None => (short, retries + 1),
        };
        if let Some(e) = &error {
            h.last_error = Some(e.clone());
        }
        let account = RunAccount {
            run: record,
            attempts,
            error: error.as_deref(),
            handle: Some(&handle),
        };
        self.alert(slot, account, now, out);
    }

    /// Times of the entry that did not run, the first at `first`: one WARNING line, one
    /// record in its history and one `missed` alert, `reason` saying how many and why.
    pub(super) fn report_missed(
        &mut self,
        slot: usize,
        first: u64,
        reason: String,
        now: u64,
        out: &mut Outbox,
    ) {
        log::warn!("schedule {}: {reason}", self.schedules.entries[slot].id);
        self.run_not_made(
            slot,
            RunRecord::never(first, RunOutcome::Missed),
            reason,
            true,
            now,
            out,
        );
    }

    /// A run that never happened (missed, or skipped past the entry's interval): keep it in the
    /// history, and alert `on_failure=` with the reason.
    pub(in crate::engine) fn run_not_made(
        &mut self,
        slot: usize,
        record: RunRecord,
        reason: String,
        alert: bool,
        now: u64,
        out: &mut Outbox,
    ) {
        self.account_changed(slot);
        let h = &mut self.schedules.entries[slot].history;
        h.recent.push(record.clone());
        h.last_error = Some(one_line(&reason));
        if alert {
            let account = RunAccount {
                run: record,
                attempts: 0,
                error: Some(&reason),
                handle: None,
            };
            self.alert(slot, account, now, out);
        }
    }

    /// None of a run's jobs started: keep it in the history; the second such run in a row
    /// means nothing ran for longer than the entry's interval, which alerts `on_failure=`
    /// once per streak.
    pub(in crate::engine) fn run_skipped(
        &mut self,
        slot: usize,
        nominal: u64,
        busy: Option<String>,
        now: u64,
        out: &mut Outbox,
    ) {
        let st = &mut self.schedules.entries[slot];
        let h = &mut st.history;
        h.runs_skipped_in_row += 1;
        let in_row = h.runs_skipped_in_row;
        let why = match busy {
            Some(previous) => {
                format!("its previous job {previous} is still queued or running (overlap=skip)")
            }
            None => format!("the queue of {} is full", st.entry.function),
        };
        let reason = format!(
            "skipped: {} in a row not started since {}: {why}",
            missed_runs(in_row, false),
            opt_time(h.last_run_ms)
        );
        let record = RunRecord::never(nominal, RunOutcome::Skipped);
        self.run_not_made(slot, record, reason, in_row == 2, now, out);
    }
}

/// A streak of skips is logged at WARNING at its 1st, 10th, 100th, ... run, else at DEBUG:
/// an entry every 10 s with no worker says so at once, then rarely.
pub(super) fn streak_level(streak: u64) -> log::Level {
    let mut n = streak;
    while n >= 10 && n % 10 == 0 {
        n /= 10;
    }
    if n == 1 {
        log::Level::Warn
    } else {
        log::Level::Debug
    }
}

pub(super) fn streak_note(streak: u64) -> String {
    if streak > 1 && streak_level(streak) == log::Level::Warn {
        format!(
            "; {streak} runs in a row, the next note at {}",
            streak.saturating_mul(10)
        )
    } else if streak == 1 {
        "; further skips in a row are noted at the 10th, 100th, ...".into()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn skip_streaks_are_logged_at_powers_of_ten() {
        let warned: Vec<u64> = (1..=1000)
            .filter(|&n| super::streak_level(n) == log::Level::Warn)
            .collect();
        assert_eq!(warned, vec![1, 10, 100, 1000]);
        assert!(super::streak_note(10).contains("10 runs in a row, the next note at 100"));
    }
}
