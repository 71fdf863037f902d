//! What the engine hands the journal and takes back from it: the store's own records
//! (`store::Record`), pushed where the change happens, and the one restore entry point that
//! puts a replayed journal (`store::Replayed`) back in place. The engine never writes a
//! file: the reactor appends these records and hands back what the store replayed.

use std::rc::Rc;

use bytes::Bytes;

use super::handles::KeyRef;
use super::types::FOREIGN;
use super::{Engine, JobKey, JobState, NewJob};
use super::{FailedJob, ScheduleMarks};
use crate::peer_text::shown;
use crate::proto::request::JobBody;
use crate::proto::request::Priority;
use crate::schedule::backoff::{Backoff, RetryPolicy};
use crate::store::{FinishReason, JobAdded, JobAttempts, Record, Replayed, ReplayedJob};

/// Bytes of a journalled name (a schedule entry's id) as the engine keeps it.
pub(super) fn entry_bytes(e: &str) -> Bytes {
    Bytes::copy_from_slice(e.as_bytes())
}

/// A journalled name back as the engine keeps it (the bytes were written from a `str`).
pub(super) fn entry_str(e: &[u8]) -> Rc<str> {
    String::from_utf8_lossy(e).into()
}

/// A JobAdded's priority byte: 0 high, 1 normal, 2 low (as `Priority as u8` wrote it).
fn priority_from(b: u8) -> Priority {
    match b {
        0 => Priority::High,
        2 => Priority::Low,
        _ => Priority::Normal,
    }
}

impl Engine {
    /// Take the durable changes of this turn, for the journal.
    pub fn take_durable(&mut self) -> std::vec::Drain<'_, Record> {
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
        self.durable.push(Record::JobAdded(JobAdded {
            id: job.id,
            handle: self.by_handle.of(job).to_bytes(),
            func: self.functions[job.func()].name.clone(),
            unique: job.unique(),
            reducer: self.rare(k).and_then(|r| r.reducer.clone()),
            priority: job.priority as u8,
            due_ms: self.due_ms(k),
            data: job.data(),
        }));
        // A schedule run's first attempt names its entry, so that after a restart the run
        // still counts as the entry's (its history, `overlap=`, its `group=`). A retry writes
        // its own record with its failures right after this one, and the newer wins.
        if let Some(r) = self.rare(k)
            && r.failures == 0
            && let Some(o) = &r.origin
        {
            let attempts = JobAttempts {
                id: self.jobs[k].id,
                failures: 0,
                first_ms: o.scheduled_ms,
                entry: Some(entry_bytes(&o.entry)),
                manual: o.manual,
                backfill: o.backfill,
            };
            self.durable.push(Record::JobAttempts(attempts));
        }
    }

    /// Put back what the journal replayed: its jobs, the failed list, the functions' retry
    /// policies and leases, the schedule entries' histories, and the handle counter past every
    /// journalled job. The one place a journal record's state re-enters the engine.
    pub fn restore(&mut self, replayed: Replayed, now: u64, out: &mut super::Outbox) {
        let Replayed {
            jobs,
            schedules,
            failed,
            leases,
            limits,
            func_retries,
            outputs,
            audit,
            after_sets,
            pending,
            hooks,
            max_id,
            stats: _,
        } = replayed;
        for s in after_sets {
            self.restore_after_set(s);
        }
        for h in hooks {
            self.restore_hook(h, now);
        }
        // Before the schedules file is read: an entry's run history is rebuilt from them.
        for o in outputs {
            self.restore_output(o);
        }
        self.restore_audit(audit);
        for p in pending {
            self.restore_pending(p);
        }
        for r in jobs {
            self.restore_job(r, now, out);
        }
        for r in func_retries {
            let backoff = Backoff {
                base_ms: r.base_ms,
                max_ms: r.max_ms,
            };
            let retries = r.retries;
            self.restore_retry(&r.func, RetryPolicy { retries, backoff });
        }
        for f in failed {
            self.restore_failed(FailedJob {
                handle: f.handle,
                func: f.func,
                unique: f.unique,
                data: f.data,
                error: f.error,
                attempts: f.attempts,
                first_ms: f.first_ms,
                last_ms: f.last_ms,
                entry: f.entry.as_deref().map(entry_str),
            });
        }
        for l in leases {
            self.restore_lease(l.func, l.ms);
        }
        for l in limits {
            self.restore_limits(&l.func, super::limits::settings_of(&l), now);
        }
        self.warn_settings_past_bounds();
        for s in schedules {
            let id = String::from_utf8_lossy(&s.entry);
            // A state written before the entry's first run says 0.
            if s.fire_ms > 0 {
                self.restore_schedule_run(&id, s.fire_ms);
            }
            if let Some(c) = s.counters {
                self.restore_schedule_counters(
                    &id,
                    (c.seen_ms > 0).then_some(c.seen_ms),
                    [c.runs, c.failures, c.skips],
                );
                self.restore_schedule_durations(&id, c.too_long, c.too_short);
                let marks = ScheduleMarks {
                    paused: c.paused,
                    skip_next: c.skip_next,
                    last_manual: c.last_manual,
                };
                self.restore_schedule_marks(&id, marks);
            }
        }
        // Past every journalled job; the reactor also raises it past the reserved handles.
        self.set_next_handle(max_id + 1);
    }

    /// A restart with a lower `--max-function-settings` or `--max-rate-count` keeps every
    /// setting the journal held (dropping them would lose an operator's word on a flag
    /// change); say so once, since a new function's setting is refused until enough go.
    fn warn_settings_past_bounds(&self) {
        let max = self.config.max_function_settings;
        let tables = [
            ("a lease", self.lease_count()),
            ("a retry policy", self.retry_policy_count()),
            ("limits", self.limited),
        ];
        for (what, n) in tables {
            if n > max {
                log::warn!(
                    "journal: {} have {what}, past --max-function-settings {max}: all kept, a new one refused until fewer than {max} have one",
                    crate::plural::count(n as u64, "function", "functions")
                );
            }
        }
        let max_rate = self.config.max_rate_count;
        let over = self
            .all_limits()
            .iter()
            .filter(|(_, s)| s.rate.is_some_and(|r| r.count > max_rate))
            .count();
        if over > 0 {
            log::warn!(
                "journal: {} a rate past --max-rate-count {max_rate}: kept as set",
                crate::plural::count(over as u64, "function has", "functions have")
            );
        }
    }

    /// Put a job from the journal back, with its handle: queued, or in the wheel if it is
    /// still in the future. Jobs that were running when the server stopped run again.
    fn restore_job(&mut self, replayed: ReplayedJob, now: u64, out: &mut super::Outbox) {
        let ReplayedJob {
            job: r,
            retries,
            attempts,
        } = replayed;
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
            priority: priority_from(r.priority),
            background: true,
            due_ms: r.due_ms,
            origin: None,
        };
        let durable = std::mem::replace(&mut self.config.durable, false);
        let k = self.create_job(new, key.is_some(), None, now, out);
        self.config.durable = durable;
        self.next_handle = saved;
        if retries > 0 {
            self.extra_mut(k).retries = retries;
        }
        if let Some(a) = attempts {
            let rare = self.extra_mut(k).rare.get_or_insert_with(Default::default);
            rare.failures = a.failures;
            // Before its first failure the record's time is the run's scheduled time.
            rare.first_fail_ms = if a.failures == 0 { 0 } else { a.first_ms };
            rare.origin = a.entry.map(|entry| super::Origin {
                entry: entry_str(&entry),
                scheduled_ms: a.first_ms,
                started_ms: None,
                manual: a.manual,
                backfill: a.backfill,
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
                self.remove_job(k, FinishReason::Fail);
                refused.push(h.clone());
            }
        }
        refused
    }
}
