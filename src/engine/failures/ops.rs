//! A background job failing for good, and the operator's hand on the failed list: `show
//! failed`, `retry failed`, `drop failed` (admin lines and HTTP alike).

use std::io::Write as _;

use bytes::Bytes;

use super::failed::{FailedJob, FailedList, FailedSelector};
use crate::engine::durable::entry_bytes;
use crate::engine::schedules::Outcome;
use crate::engine::{Engine, JobKey, NewJob, Origin, Outbox};
use crate::peer_text::shown;
use crate::proto::names::push_escaped;
use crate::proto::request::{JobBody, Priority};
use crate::store::{FailedKept, Record};

impl Engine {
    /// THE one place where a background job has failed for good: WORK_FAIL, WORK_EXCEPTION, a
    /// CAN_DO_TIMEOUT or `--job-retries` spent, after any retries it had are used up. Called
    /// from `end_job` while the job is still in place (its fields, extras and origin readable),
    /// just before it is removed. The failed list is kept here; `end_job` then tells the
    /// schedule side (run history, last error, on_failure alert: `schedule_outcome`), which a
    /// failed attempt that will be retried never reaches (retries.rs), so both see only final
    /// failures. Returns the journal record that
    /// ends the job when it was kept (see `Record::FailedKept`).
    pub(in crate::engine) fn failed_for_good(
        &mut self,
        k: JobKey,
        outcome: &Outcome<'_>,
        now: u64,
    ) -> Option<Record> {
        let job = &self.jobs[k];
        let retries = self.extra(k).map_or(0, |e| e.retries);
        // Attempts that failed before this one (retries with backoff), and when the first did.
        let (before, first) = self.prior_failures(k);
        // Not failures of the job: a cancel was an operator's, a requeue goes on.
        let (error, attempts) = outcome.failure(retries + before)?;
        let origin = self.rare(k).and_then(|r| r.origin.as_ref());
        let failed = FailedJob {
            handle: self.by_handle.of(job).to_bytes(),
            func: self.functions[job.func()].name.clone(),
            unique: job.unique(),
            data: job.data(),
            error,
            attempts: attempts.max(1),
            first_ms: if first > 0 { first } else { now },
            last_ms: now,
            entry: origin.map(|o| std::rc::Rc::clone(&o.entry)),
        };
        let id = job.id;
        let record = self.config.durable.then(|| FailedKept {
            id,
            handle: failed.handle.clone(),
            func: failed.func.clone(),
            unique: failed.unique.clone(),
            data: failed.data.clone(),
            error: failed.error.clone(),
            attempts: failed.attempts,
            first_ms: failed.first_ms,
            last_ms: failed.last_ms,
            entry: failed.entry.as_deref().map(entry_bytes),
        });
        let kept = self.keep_failed(failed);
        Some(Record::FailedKept(record?)).filter(|_| kept)
    }

    /// Put a failed job in the list, dropping the oldest past the bounds; false when the job
    /// itself did not fit.
    fn keep_failed(&mut self, job: FailedJob) -> bool {
        let handle = job.handle.clone();
        let mut kept = true;
        for d in self.failed.push(job) {
            log::warn!(
                "failed job {} ({}) dropped from the failed list: past --keep-failed or --keep-failed-bytes",
                shown(&d.handle),
                shown(&d.func)
            );
            if d.handle == handle {
                kept = false;
            } else {
                self.journal_failed_gone(d.handle);
            }
        }
        kept
    }

    fn journal_failed_gone(&mut self, handle: Bytes) {
        if self.config.durable {
            self.durable.push(Record::FailedGone { handle });
        }
    }

    /// A failed job read back from the journal.
    pub fn restore_failed(&mut self, job: FailedJob) {
        self.keep_failed(job);
    }

    /// The failed list, for `/failed` and the metrics.
    pub fn failed_list(&self) -> &FailedList {
        &self.failed
    }

    /// `show failed [FUNCTION]`: one tab-separated line per kept job, oldest first.
    pub(in crate::engine) fn failed_listing(&self, func: Option<&[u8]>) -> Vec<u8> {
        let mut s = Vec::new();
        for j in self.failed.iter() {
            if func.is_some_and(|f| f != j.func.as_ref()) {
                continue;
            }
            push_escaped(&mut s, &j.handle);
            s.push(b'\t');
            push_escaped(&mut s, &j.func);
            s.push(b'\t');
            push_escaped(&mut s, &j.unique);
            let _ = write!(
                s,
                "\t{}\t{}\t{}\t{}\t",
                j.attempts,
                crate::engine::rfc3339(j.first_ms),
                crate::engine::rfc3339(j.last_ms),
                j.entry.as_deref().unwrap_or("-")
            );
            push_escaped(&mut s, &j.error);
            s.push(b'\n');
        }
        s.extend_from_slice(b".\n");
        s
    }

    /// `drop failed`: forget the jobs `sel` names; how many there were.
    pub fn drop_failed(&mut self, sel: FailedSelector<'_>) -> usize {
        let gone = self.failed.take(sel);
        for j in &gone {
            self.journal_failed_gone(j.handle.clone());
            log::info!(
                "failed job {} ({}) dropped by an operator",
                shown(&j.handle),
                shown(&j.func)
            );
        }
        gone.len()
    }

    /// `retry failed`: queue the jobs `sel` names again as new background jobs, same unique
    /// and workload, and take them off the list. Returns the new handles (a unique already
    /// queued joins that job, as a submit would); a job whose queue is full stays listed.
    pub fn retry_failed(
        &mut self,
        sel: FailedSelector<'_>,
        now: u64,
        out: &mut Outbox,
    ) -> Vec<String> {
        let mut handles = Vec::new();
        let mut full = Vec::new();
        for j in self.failed.take(sel) {
            let f = self.func_id(&j.func);
            let key = crate::engine::handles::KeyRef::of(&j.unique, &j.data);
            if let Some(existing) = key.and_then(|uk| self.by_unique.get(f, uk, &self.jobs)) {
                handles.push(self.by_handle.of(&self.jobs[existing]).to_string());
                self.journal_failed_gone(j.handle.clone());
                continue;
            }
            if self.queue_full(f, Priority::Normal) {
                full.push(j);
                continue;
            }
            let new = NewJob {
                func: f,
                body: JobBody::new(&j.unique, &j.data),
                reducer: None,
                priority: Priority::Normal,
                background: true,
                due_ms: None,
                origin: j.entry.as_ref().map(|e| Origin {
                    entry: std::rc::Rc::clone(e),
                    scheduled_ms: now,
                    started_ms: None,
                    manual: true,
                    backfill: false,
                    too_long: None,
                }),
            };
            // The new job's JobAdded goes before the FailedGone: a torn write between them
            // leaves the job listed twice, never lost.
            let k = self.create_job(new, key.is_some(), None, now, out);
            if let Some(e) = &j.entry {
                // A job of the entry run again by hand is a run: FAILURES never passes RUNS.
                self.count_manual_run(e, 1, now);
            }
            self.journal_failed_gone(j.handle.clone());
            let h = self.by_handle.of(&self.jobs[k]).to_string();
            log::info!(
                "failed job {} ({}) queued again as {h}",
                shown(&j.handle),
                shown(&j.func)
            );
            handles.push(h);
        }
        for j in full {
            log::warn!(
                "failed job {} not queued again: the queue of {} is full",
                shown(&j.handle),
                shown(&j.func)
            );
            // Still listed and still in the journal, unless the bounds now drop it.
            let handle = j.handle.clone();
            if !self.keep_failed(j) {
                self.journal_failed_gone(handle);
            }
        }
        handles
    }
}
