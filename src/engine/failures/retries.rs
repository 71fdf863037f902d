//! Retries with backoff: a background job that fails (WORK_FAIL, WORK_EXCEPTION, a
//! CAN_DO_TIMEOUT) while its policy has retries left is queued again after its backoff, as a
//! future job in the timer wheel (and so in the journal), with the same unique and workload;
//! only when they are spent does it fail for good (`failed_for_good`). The policy is the
//! schedule entry's (`retry=`, `backoff=`), else the function's (`retry FUNCTION N BACKOFF`),
//! else the server's (`--retry`, `--retry-backoff`).

use std::io::Write as _;
use std::rc::Rc;

use crate::engine::schedules::Outcome;
use crate::engine::{Engine, JobKey, NewJob, Outbox};
use crate::peer_text::shown;
use crate::proto::names::push_escaped;
use crate::proto::request::JobBody;
use crate::schedule::backoff::RetryPolicy;
use crate::store::{FunctionRetry, JobAttempts, Record};

impl Engine {
    /// The policy for job `k`, and the entry's jitter.
    fn retry_policy(&self, k: JobKey) -> (RetryPolicy, u64) {
        let origin = self.rare(k).and_then(|r| r.origin.as_ref());
        if let Some(e) = origin
            .and_then(|o| self.schedules.by_id.get(&o.entry))
            .map(|&slot| &self.schedules.entries[slot].entry)
            .filter(|e| e.retry.retries > 0)
        {
            return (e.retry, e.jitter_ms);
        }
        let f = &self.functions[self.jobs[k].func()];
        (f.retry.unwrap_or(self.config.retry), 0)
    }

    /// If job `k` has retries left after `outcome`, end it and queue it again after its
    /// backoff; true when it did. Called from `end_job` before a failure is final.
    pub(in crate::engine) fn retry_later(
        &mut self,
        k: JobKey,
        outcome: &Outcome<'_>,
        now: u64,
    ) -> bool {
        if !self.jobs[k].background()
            || !matches!(
                outcome,
                Outcome::Fail | Outcome::Exception(_) | Outcome::Timeout(_)
            )
        {
            return false;
        }
        let (policy, jitter) = self.retry_policy(k);
        let rare = self.rare(k);
        let failures = rare.map_or(0, |r| r.failures) + 1;
        if failures > policy.retries {
            return false;
        }
        let first_fail_ms = match rare.map_or(0, |r| r.first_fail_ms) {
            0 => now,
            t => t,
        };
        let origin = rare.and_then(|r| r.origin.clone());
        let delay = policy.backoff.delay_ms(failures) + self.schedules.jitter(jitter);
        let due = now.saturating_add(delay);
        let job = &self.jobs[k];
        let (func, unique, data, priority) = (job.func(), job.unique(), job.data(), job.priority);
        let indexed = job.is(crate::engine::types::INDEXED);
        let old = self.by_handle.of(job).to_string();
        let entry: Option<Rc<str>> = origin.as_ref().map(|o| Rc::clone(&o.entry));
        let origin_marks = origin
            .as_ref()
            .map_or((false, false), |o| (o.manual, o.backfill));
        // The entry's history, counters and on_failure alert see the run once, when it ends
        // for good: a failed attempt with retries left is only logged here.
        let group = self.group_of_job(k);
        self.remove_job(k, crate::store::FinishReason::Fail);
        let new = NewJob {
            func,
            // Same unique, same workload: placeholders are not filled again, and an
            // overlap=skip entry still sees one run.
            body: JobBody::new(&unique, &data),
            reducer: None,
            priority,
            background: true,
            due_ms: Some(due),
            origin,
        };
        // A future job touches no connection: nothing goes to this outbox.
        let mut out = Outbox::default();
        let nk = self.create_job(new, indexed, None, now, &mut out);
        if let Some(g) = group {
            self.join_group(g, nk);
        }
        let r = self.extra_mut(nk).rare.get_or_insert_with(Default::default);
        r.failures = failures;
        r.first_fail_ms = first_fail_ms;
        if self.config.durable {
            // After the retry's JobAdded (create_job wrote it), in the same turn's write.
            let attempts = JobAttempts {
                id: self.jobs[nk].id,
                failures,
                first_ms: first_fail_ms,
                entry: entry.as_deref().map(crate::engine::durable::entry_bytes),
                manual: origin_marks.0,
                backfill: origin_marks.1,
            };
            self.durable.push(Record::JobAttempts(attempts));
        }
        log::warn!(
            "job {old} ({}{}) failed (attempt {failures}); retry {failures} of {} in {} ms as {}",
            shown(&self.functions[func].name),
            entry.map_or_else(String::new, |e| format!(", schedule {e}")),
            policy.retries,
            delay,
            self.by_handle.of(&self.jobs[nk])
        );
        true
    }

    /// Failed attempts before the current one and when the first failed (0: none).
    pub(in crate::engine) fn prior_failures(&self, k: JobKey) -> (u32, u64) {
        self.rare(k)
            .map_or((0, 0), |r| (r.failures, r.first_fail_ms))
    }

    /// `retry FUNCTION N BACKOFF[..MAX]`, kept in the journal; false when
    /// `--max-function-settings` functions have one already (a new function is refused, so
    /// admin lines cannot grow the table without bound).
    pub fn set_retry(&mut self, func: &[u8], policy: RetryPolicy) -> bool {
        let has = self
            .func_by_name
            .get(func)
            .is_some_and(|&f| self.functions[f].retry.is_some());
        let max = self.config.max_function_settings;
        if !has && self.retry_policy_count() >= max {
            log::warn!(
                "retry {}: refused, {max} functions have a retry policy already (--max-function-settings)",
                shown(func)
            );
            return false;
        }
        self.restore_retry(func, policy);
        if self.config.durable {
            self.durable.push(Record::FunctionRetry(FunctionRetry {
                func: bytes::Bytes::copy_from_slice(func),
                retries: policy.retries,
                base_ms: policy.backoff.base_ms,
                max_ms: policy.backoff.max_ms,
            }));
        }
        true
    }

    /// Functions with their own retry policy.
    pub fn retry_policy_count(&self) -> usize {
        self.functions
            .iter()
            .filter(|(_, f)| f.retry.is_some())
            .count()
    }

    /// A function's retry policy read back from the journal: every one it kept, past a
    /// `--max-function-settings` lowered since (it bounds what admin lines add).
    pub fn restore_retry(&mut self, func: &[u8], policy: RetryPolicy) {
        let f = self.func_id(&bytes::Bytes::copy_from_slice(func));
        self.functions[f].retry = Some(policy);
        self.functions[f].pinned = true;
    }

    /// `show retries`: `FUNCTION\tRETRIES\tBACKOFF\tPENDING`, first `*` for the server's
    /// default (PENDING `-`), then each function with its own policy or retries pending
    /// (future jobs that are retries).
    pub(in crate::engine) fn retries_listing(&self) -> Vec<u8> {
        let mut s = Vec::new();
        let d = self.config.retry;
        let _ = writeln!(s, "*\t{}\t{}\t-", d.retries, d.backoff.text());
        let mut pending: crate::engine::FastMap<crate::engine::FuncId, u32> = Default::default();
        for (k, j) in &self.jobs {
            if j.state() == crate::engine::JobState::Future && self.prior_failures(k).0 > 0 {
                *pending.entry(j.func()).or_default() += 1;
            }
        }
        for (f, func) in &self.functions {
            let n = pending.get(&f).copied().unwrap_or(0);
            if func.retry.is_none() && n == 0 {
                continue;
            }
            push_escaped(&mut s, &func.name);
            let p = func.retry.unwrap_or(d);
            let _ = writeln!(s, "\t{}\t{}\t{n}", p.retries, p.backoff.text());
        }
        s.extend_from_slice(b".\n");
        s
    }
}
