//! What the engine reports for the journal (background jobs added, finished, given back;
//! schedule runs), and how jobs read back from it are put back in place. The engine never
//! writes a file: the reactor hands these to the store.

use std::rc::Rc;

use bytes::Bytes;

use super::handles::KeyRef;
use super::types::FOREIGN;
use super::{Engine, JobKey, JobState, NewJob};
use crate::peer_text::shown;
use crate::proto::request::JobBody;
use crate::proto::request::Priority;

/// How a journalled job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishKind {
    Complete,
    Fail,
    Exception,
    Cancel,
    RetriesSpent,
    Timeout,
    /// A foreground job whose clients left (never journalled; here for completeness).
    Abandoned,
}

/// A change that must survive a crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Durable {
    JobAdded {
        id: u64,
        handle: Bytes,
        func: Bytes,
        unique: Bytes,
        reducer: Option<Bytes>,
        priority: Priority,
        due_ms: Option<u64>,
        data: Bytes,
    },
    JobFinished {
        id: u64,
        how: FinishKind,
    },
    JobRetried {
        id: u64,
        retries: u32,
    },
    /// A schedule entry's state changed: it ran (at `fire_ms`; 0 when it never has), skipped
    /// or failed. The newest per entry is what a restart brings back.
    ScheduleRan {
        entry: Rc<str>,
        fire_ms: u64,
        /// The latest scheduled time run or skipped (0: none).
        seen_ms: u64,
        runs: u64,
        failures: u64,
        skips: u64,
        marks: super::ScheduleMarks,
    },
    /// A background job failed for good and was kept in the failed list; this ends job `id`
    /// in the journal too (no JobFinished for it), so a crash cannot leave it both.
    FailedKept {
        id: u64,
        job: super::FailedJob,
    },
    /// The failed job with this handle left the list (dropped, retried or past its bounds).
    FailedGone {
        handle: Bytes,
    },
    /// `retry FUNCTION N BACKOFF`: the function's retry policy (the newest counts).
    FunctionRetry {
        func: Bytes,
        policy: crate::schedule::backoff::RetryPolicy,
    },
    /// Job `id` (just added) is a retry after `failures` failed attempts (retries.rs).
    JobAttempts {
        id: u64,
        failures: u32,
        first_ms: u64,
        entry: Option<Rc<str>>,
    },
    /// `timeout FUNCTION DURATION`: the function's job lease now (0: none).
    FunctionLease {
        func: Bytes,
        ms: u64,
    },
}

/// A background job read back from the journal.
#[derive(Clone, Debug)]
pub struct RestoredJob {
    pub id: u64,
    pub handle: Bytes,
    pub func: Bytes,
    pub unique: Bytes,
    pub reducer: Option<Bytes>,
    pub priority: Priority,
    pub due_ms: Option<u64>,
    pub data: Bytes,
    pub retries: u32,
    /// A retry: failed attempts before it, when the first failed, its schedule entry.
    pub attempts: Option<(u32, u64, Option<Rc<str>>)>,
}

impl Engine {
    /// Take the durable changes of this turn, for the journal.
    pub fn take_durable(&mut self) -> std::vec::Drain<'_, Durable> {
        self.durable.drain(..)
    }

    /// Changes wait for the journal.
    pub fn has_durable(&self) -> bool {
        !self.durable.is_empty()
    }

    pub(super) fn journal_added(&mut self, k: JobKey) {
        if !self.config.durable {
            return;
        }
        let job = &self.jobs[k];
        if !job.background() {
            return;
        }
        // A future job keeps its due time; one already queued runs at once after a restart.
        self.durable.push(Durable::JobAdded {
            id: job.id,
            handle: self.by_handle.of(job).to_bytes(),
            func: self.functions[job.func()].name.clone(),
            unique: job.unique(),
            reducer: self.rare(k).and_then(|r| r.reducer.clone()),
            priority: job.priority,
            due_ms: self.due_ms(k),
            data: job.data(),
        });
    }

    /// Put a job from the journal back, with its handle: queued, or in the wheel if it is
    /// still in the future. Jobs that were running when the server stopped run again.
    pub fn restore_job(&mut self, r: RestoredJob, now: u64, out: &mut super::Outbox) {
        let f = self.func_id(&r.func);
        // Two live jobs with one unique cannot come from one run of the engine, but a journal
        // written by another version might hold them: keep both, coalesce on the first.
        let key = KeyRef::of(&r.unique, &r.data).filter(|&uk| {
            let taken = self.by_unique.get(f, uk, &self.jobs).is_some();
            if taken {
                log::warn!(
                    "journal: job {} has the unique of a job already restored; kept as a separate job",
                    shown(&r.handle)
                );
            }
            !taken
        });
        self.next_handle = self.next_handle.max(r.id + 1);
        let saved = self.next_handle;
        // create_job takes its handle from the counter: point it at the saved id.
        self.next_handle = r.id;
        let new = NewJob {
            func: f,
            // One copy of what the job keeps, so the record's other fields are not pinned.
            body: JobBody::new(&r.unique, &r.data),
            reducer: r.reducer,
            priority: r.priority,
            background: true,
            due_ms: r.due_ms,
            origin: None,
        };
        let durable = std::mem::replace(&mut self.config.durable, false);
        let k = self.create_job(new, key.is_some(), None, now, out);
        self.config.durable = durable;
        self.next_handle = saved;
        if r.retries > 0 {
            self.extra_mut(k).retries = r.retries;
        }
        if let Some((failures, first_fail_ms, entry)) = r.attempts {
            let rare = self.extra_mut(k).rare.get_or_insert_with(Default::default);
            rare.failures = failures;
            rare.first_fail_ms = first_fail_ms;
            rare.origin = entry.map(|entry| super::Origin {
                entry,
                scheduled_ms: first_fail_ms,
                started_ms: None,
                manual: false,
                too_long: None,
            });
        }
        let job = &mut self.jobs[k];
        if !self.by_handle.is_own(&r.handle, job.id) {
            // A different --job-handle-prefix than when it was saved: keep the saved handle,
            // clients may hold it.
            self.by_handle.remove_job(job, k);
            job.flags |= FOREIGN;
            self.by_handle.insert_foreign(k, job.id, r.handle);
        }
    }

    /// The handle counter after replay: the next job gets this number.
    pub fn set_next_handle(&mut self, n: u64) {
        self.next_handle = self.next_handle.max(n);
    }

    /// The number the next job's handle will get.
    pub fn next_handle(&self) -> u64 {
        self.next_handle
    }
}

impl Engine {
    /// The journal could not write this turn's new jobs: take back those that no worker has
    /// yet, so that nothing is acknowledged that a crash could lose. Returns the handles
    /// taken back; their JOB_CREATED replies must become `ERROR QUEUE_ERROR`.
    pub fn refuse_jobs(&mut self, handles: &[Bytes]) -> Vec<Bytes> {
        let mut refused = Vec::new();
        for h in handles {
            let Some(k) = self.by_handle.get(h, &self.jobs) else {
                continue;
            };
            if matches!(self.jobs[k].state(), JobState::Queued | JobState::Future) {
                // A JobFinished follows the buffered JobAdded, so a later successful write
                // does not bring the job back.
                self.remove_job(k, FinishKind::Fail);
                refused.push(h.clone());
            }
        }
        refused
    }
}
