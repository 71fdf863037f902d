//! What a worker sends about a job is its output: the engine keeps the tail of it while the
//! job runs and, once it ended, keeps it with how it ended for `--keep-results`, so that an
//! operator can read what a run printed and a client can fetch a background job's result by
//! its handle.
//!
//! - `buffer`: one running job's output, its last `--keep-output` bytes; pure.
//! - `kept`: the ended jobs' outputs and results within `--keep-output-total` and
//!   `--keep-results`, an entry's last runs held past both; pure.
//! - this file: the engine's side: which jobs keep theirs, what the admin lines and the
//!   read-only views show, and the journal's records of it.

mod buffer;
mod kept;

use std::fmt::Write as _;
use std::rc::Rc;

use bytes::Bytes;

pub use buffer::OutputBuf;
#[cfg(test)]
pub(in crate::engine) use kept::OVERHEAD;
pub use kept::{Ending, KeptJob, KeptResults};

use super::schedules::Outcome;
use super::schedules::run_history::RunRecord;
use super::timers::TimerEvent;
use super::{ConnId, Engine, JobKey, JobState, rfc3339};
use crate::store::{OutputKept, Record};
use crate::timer::TimerKey;

/// The worker a pinged run's kept output names: it ran elsewhere and reported by ping.
const PINGER: &str = "ping";

/// A heartbeat run that pinged its end, as `keep_ping_output` keeps it.
pub(in crate::engine) struct PingedRun<'a> {
    pub entry: &'a str,
    pub function: &'a str,
    pub scheduled_ms: u64,
    pub started_ms: Option<u64>,
    pub failed: bool,
    pub error: Option<&'a str>,
    /// What the pinger sent.
    pub body: &'a [u8],
}

/// When the kept results are next swept for expiry, and the wheel's entry for it.
pub(super) type ExpiryTimer = Option<(u64, TimerKey)>;

impl From<KeptJob> for OutputKept {
    fn from(j: KeptJob) -> OutputKept {
        let text = |s: Rc<str>| Bytes::copy_from_slice(s.as_bytes());
        OutputKept {
            handle: j.handle,
            func: j.func,
            ending: j.ending.code(),
            started_ms: j.started_ms,
            ended_ms: j.ended_ms,
            worker: text(j.worker),
            attempts: j.attempts,
            error: j.error,
            entry: j.entry.map(text),
            scheduled_ms: j.scheduled_ms,
            manual: j.manual,
            backfill: j.backfill,
            output_bytes: j.output_bytes,
            result_len: j.result_len,
            output: j.output,
        }
    }
}

/// A job's output as it is now: the bytes kept and how many it printed in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputView {
    pub kept: Bytes,
    pub printed: u64,
}

impl Engine {
    /// The job at `k` keeps its output: a background job (every schedule run is one), or
    /// any job under `--keep-results-foreground` (a foreground client got its result).
    /// With `--keep-output-total 0` only a schedule run keeps anything (an entry's last runs
    /// stay past the bound): any other job then pays nothing for it (no buffer, no kept
    /// record), as before outputs were kept.
    fn keeps_output(&self, k: JobKey) -> bool {
        self.jobs
            .get(k)
            .is_some_and(|j| j.background() || self.config.keep_results_foreground)
            && (self.config.keep_output_total > 0
                || self.rare(k).is_some_and(|r| r.origin.is_some()))
    }

    /// Add to the output of running job `k` (a WORK_DATA, WORK_WARNING or WORK_EXCEPTION
    /// payload). The one entry point for what becomes a run's output while it runs.
    pub(in crate::engine) fn record_output(&mut self, k: JobKey, chunk: &[u8]) {
        self.grow_output(k, |buf| buf.push(chunk));
    }

    /// The WORK_COMPLETE payload: the end of the output and the job's result. A job that
    /// printed nothing before it (most background jobs) gets no buffer: its result goes to
    /// the kept ones as it ends, a few lines on (`keep_result`).
    pub(in crate::engine) fn record_result(&mut self, k: JobKey, result: &Bytes) {
        let buffered = self.extra(k).is_some_and(|e| e.output.is_some());
        if !buffered && self.keeps_output(k) {
            self.result_only = Some((k, self.jobs[k].id, result.clone()));
            return;
        }
        self.grow_output(k, |buf| buf.push_result(result));
    }

    /// The result `record_result` set aside for job `k`: its last `--keep-output` bytes (fewer
    /// when the running jobs' outputs fill `--keep-output-total`, the oldest kept ones making
    /// room first, as for a buffer), how many bytes it had, and its length as the result.
    fn take_result_only(&mut self, k: JobKey) -> Option<(Bytes, u64, u32)> {
        let (rk, id, r) = self.result_only.take()?;
        if rk != k || self.jobs.get(k).is_none_or(|j| j.id != id) {
            return None;
        }
        let total = self.config.keep_output_total;
        let room = self
            .config
            .keep_output
            .min(total.saturating_sub(self.live_output));
        let tail = &r[r.len().saturating_sub(room)..];
        let live = self.live_output + tail.len();
        if live + self.kept.bytes() > total {
            for h in self.kept.make_room(total.saturating_sub(live)) {
                self.journal_output_gone(h);
            }
        }
        let len = u32::try_from(r.len()).unwrap_or(u32::MAX);
        Some((Bytes::copy_from_slice(tail), r.len() as u64, len))
    }

    /// Add to job `k`'s output, within `--keep-output-total` for the running jobs' outputs
    /// and the kept ones together: the oldest kept go first, and past that (the running
    /// jobs' outputs alone fill the bound) this job keeps less of its own.
    fn grow_output(&mut self, k: JobKey, add: impl FnOnce(&mut OutputBuf)) {
        let total = self.config.keep_output_total;
        let live = self.live_output;
        let Some(buf) = self.output_buf(k) else {
            return;
        };
        let before = buf.kept_len();
        add(buf);
        let mut live = live - before + buf.kept_len();
        if live > total {
            live -= buf.drop_front(live - total);
        }
        self.live_output = live;
        if live + self.kept.bytes() > total {
            for h in self.kept.make_room(total - live) {
                self.journal_output_gone(h);
            }
            self.arm_output_expiry();
        }
    }

    /// Job `k`'s live output leaves the engine's count (kept, restarted or dropped).
    pub(in crate::engine) fn output_released(&mut self, buf: &OutputBuf) {
        self.live_output -= buf.kept_len();
    }

    fn output_buf(&mut self, k: JobKey) -> Option<&mut OutputBuf> {
        if !self.keeps_output(k) {
            return None;
        }
        let cap = self.config.keep_output;
        let buf = self
            .extra_mut(k)
            .output
            .get_or_insert_with(|| Box::new(OutputBuf::new(cap)));
        Some(buf)
    }

    /// A worker takes job `k`: this attempt's output starts from nothing.
    pub(in crate::engine) fn output_restarts(&mut self, k: JobKey) {
        if let Some(buf) = self.extra_get_mut(k).and_then(|e| e.output.take()) {
            self.output_released(&buf);
        }
    }

    /// Running job `k` ended with `outcome` (for good or before a retry): keep what it
    /// printed and how it ended. A job that never ran has nothing to keep.
    pub(in crate::engine) fn keep_result(&mut self, k: JobKey, outcome: &Outcome<'_>, now: u64) {
        let result_only = self.take_result_only(k);
        let ending = match outcome {
            Outcome::Complete => Ending::Complete,
            Outcome::Exception(_) => Ending::Exception,
            Outcome::Fail | Outcome::Cancelled | Outcome::RetriesSpent => Ending::Failed,
            Outcome::Timeout(_) => Ending::Expired,
            // Given back, or never run (waited in its queue past its function's `expire`).
            Outcome::Requeued | Outcome::Expired => return,
        };
        let JobState::Running(worker) = self.jobs[k].state() else {
            return;
        };
        if !self.keeps_output(k) {
            return;
        }
        let started_ms = self
            .conn(worker)
            .and_then(|c| c.holding.get(&(k as u32)))
            .map_or(now, |h| h.since_ms);
        let retries = self.extra(k).map_or(0, |e| e.retries);
        let (before, _) = self.prior_failures(k);
        let error = outcome.failure(retries + before).map(|(e, _)| e);
        let origin = self.rare(k).and_then(|r| r.origin.as_ref());
        let (entry, scheduled_ms, manual, backfill) = match origin {
            Some(o) => (
                Some(Rc::clone(&o.entry)),
                Some(o.scheduled_ms),
                o.manual,
                o.backfill,
            ),
            None => (None, None, false, false),
        };
        let buf = self.extra_get_mut(k).and_then(|e| e.output.take());
        if let Some(b) = &buf {
            self.output_released(b);
        }
        let (output, output_bytes, result_len) = match (&buf, result_only) {
            (Some(b), _) => (b.kept().into(), b.seen(), b.result_len()),
            (None, Some((tail, seen, len))) => (tail, seen, Some(len)),
            (None, None) => (Bytes::new(), 0, None),
        };
        let job = &self.jobs[k];
        let kept = KeptJob {
            handle: self.by_handle.of(job).to_bytes(),
            func: self.functions[job.func()].name.clone(),
            ending,
            started_ms,
            ended_ms: now,
            worker: self.worker_name(worker),
            attempts: retries + before + 1,
            error,
            entry,
            scheduled_ms,
            manual,
            backfill,
            output,
            output_bytes,
            result_len: result_len
                .filter(|_| ending == Ending::Complete)
                .or((ending == Ending::Complete).then_some(0)),
        };
        self.keep_output(kept);
    }

    /// Keep an ended job's output, journalled, dropping the oldest past the bounds. Also the
    /// way in for a run's output that came without a job of this server.
    pub(in crate::engine) fn keep_output(&mut self, job: KeptJob) {
        if !self.config.durable {
            self.kept.push(job);
            self.arm_output_expiry();
            return;
        }
        let record = job.clone();
        for h in self.kept.push(job) {
            if h != record.handle {
                self.journal_output_gone(h);
            }
        }
        if self.kept.get(&record.handle).is_some() {
            // A handle kept again (a job given back and run again) replaces its record in
            // the journal too: the newest per handle counts.
            self.journal_output_kept(record);
        } else {
            // Past the bounds at once; it may have replaced a journalled one of its handle.
            self.journal_output_gone(record.handle);
        }
        self.arm_output_expiry();
    }

    fn journal_output_kept(&mut self, job: KeptJob) {
        self.durable.push(Record::OutputKept(job.into()));
    }

    fn journal_output_gone(&mut self, handle: Bytes) {
        if self.config.durable {
            self.durable.push(Record::OutputGone { handle });
        }
    }

    /// A kept output read back from the journal (past its time, it goes at the next sweep;
    /// past the bounds of this run's flags, at once, and the journal hears of it).
    pub(in crate::engine) fn restore_output(&mut self, o: OutputKept) {
        let Some(ending) = Ending::from_code(o.ending) else {
            // Written by a newer version: nothing this one can show.
            return;
        };
        let text = |b: Bytes| -> Rc<str> { Rc::from(String::from_utf8_lossy(&b).as_ref()) };
        let job = KeptJob {
            handle: o.handle,
            func: o.func,
            ending,
            started_ms: o.started_ms,
            ended_ms: o.ended_ms,
            worker: text(o.worker),
            attempts: o.attempts,
            error: o.error,
            entry: o.entry.map(text),
            scheduled_ms: o.scheduled_ms,
            manual: o.manual,
            backfill: o.backfill,
            output: o.output,
            output_bytes: o.output_bytes,
            result_len: o.result_len,
        };
        let handle = job.handle.clone();
        for h in self.kept.push(job) {
            if h != handle || self.kept.get(&h).is_none() {
                self.journal_output_gone(h);
            }
        }
        self.arm_output_expiry();
    }

    /// The expiry sweep's time came: drop what is past `--keep-results`.
    pub(in crate::engine) fn output_expiry_due(&mut self, now: u64) {
        self.kept_timer = None;
        for h in self.kept.expire(now) {
            self.journal_output_gone(h);
        }
        self.arm_output_expiry();
    }

    /// One entry in the wheel, at the time the oldest kept job not held by its entry goes.
    fn arm_output_expiry(&mut self) {
        let next = self.kept.next_expiry();
        if self.kept_timer.map(|(due, _)| due) == next {
            return;
        }
        if let Some((_, key)) = self.kept_timer.take() {
            self.timers.cancel(key);
        }
        if let Some(due) = next {
            let key = self.timers.insert(due, TimerEvent::OutputExpiry);
            self.kept_timer = Some((due, key));
        }
    }

    /// Who a worker is, as `/workers` names it: the identity the reactor gave the connection
    /// (a certificate's name), else its address.
    pub(in crate::engine) fn worker_identity(&self, worker: ConnId) -> Rc<str> {
        match self.conn(worker) {
            Some(c) => c.identity.clone().unwrap_or_else(|| addr_name(c.info.ip)),
            None => Rc::from("-"),
        }
    }

    /// As `worker_identity`, and the name is kept on the connection: every job a worker ends
    /// shares one, instead of a string made per kept job.
    fn worker_name(&mut self, worker: ConnId) -> Rc<str> {
        match self.conn_mut(worker) {
            Some(c) => Rc::clone(c.identity.get_or_insert_with(|| addr_name(c.info.ip))),
            None => Rc::from("-"),
        }
    }

    /// The reactor names a connection (a TLS client certificate's name, `cn:NAME`): what a
    /// kept job says ran it.
    pub fn set_identity(&mut self, id: ConnId, identity: &str) {
        if let Some(c) = self.conn_mut(id) {
            c.identity = Some(Rc::from(identity));
        }
    }

    // ---- views ---------------------------------------------------------------------------

    /// The kept job `handle`, once it ended.
    pub fn kept_job(&self, handle: &[u8]) -> Option<&KeptJob> {
        self.kept.get(handle)
    }

    /// What job `handle` printed: live while it runs, kept once it ended; `None` when
    /// nothing is kept of it.
    pub fn job_output(&self, handle: &[u8]) -> Option<OutputView> {
        if let Some(k) = self.by_handle.get(handle, &self.jobs) {
            let buf = self.extra(k).and_then(|e| e.output.as_ref());
            if let (JobState::Running(_), true) = (self.jobs[k].state(), self.keeps_output(k)) {
                return Some(OutputView {
                    kept: buf.map_or_else(Bytes::new, |b| b.kept().into()),
                    printed: buf.map_or(0, |b| b.seen()),
                });
            }
        }
        let j = self.kept.get(handle)?;
        Some(OutputView {
            kept: j.output.clone(),
            printed: j.output_bytes,
        })
    }

    /// How many bytes running job `k` printed so far.
    pub(in crate::engine) fn live_output_bytes(&self, k: JobKey) -> Option<u64> {
        if !self.keeps_output(k) {
            return None;
        }
        Some(
            self.extra(k)
                .and_then(|e| e.output.as_ref())
                .map_or(0, |b| b.seen()),
        )
    }

    /// The kept job of entry `entry`'s run `run`, if still kept: by the run's handle (two
    /// runs may start in the same millisecond); a heartbeat run had no job here, so its end
    /// ping's body is the one kept for its scheduled time.
    pub fn kept_run(&self, entry: &str, run: &RunRecord) -> Option<&KeptJob> {
        match run.handle.as_deref() {
            Some(h) => self
                .kept
                .get(h)
                .filter(|j| j.entry.as_deref() == Some(entry)),
            None => self
                .kept
                .newest_runs(entry)
                .find(|j| j.worker.as_ref() == PINGER && j.scheduled_ms == Some(run.scheduled_ms)),
        }
    }

    /// A heartbeat run's end ping: its body is the run's output, kept as a job's is (`show
    /// output`, `show runs`, the console), under a handle of its own since no job ran here.
    pub(in crate::engine) fn keep_ping_output(&mut self, run: PingedRun<'_>, now: u64) {
        let limit = self.config.keep_output;
        let body = run.body;
        let output = Bytes::copy_from_slice(&body[body.len().saturating_sub(limit)..]);
        let started_ms = run.started_ms.unwrap_or(now);
        let kept = KeptJob {
            handle: format!(
                "{}:ping:{}:{}",
                self.config.handle_prefix, run.entry, started_ms
            )
            .into(),
            func: Bytes::copy_from_slice(run.function.as_bytes()),
            ending: if run.failed {
                Ending::Failed
            } else {
                Ending::Complete
            },
            started_ms,
            ended_ms: now,
            worker: Rc::from(PINGER),
            attempts: 1,
            error: run.error.map(|e| Bytes::copy_from_slice(e.as_bytes())),
            entry: Some(Rc::from(run.entry)),
            scheduled_ms: Some(run.scheduled_ms),
            output,
            output_bytes: body.len() as u64,
            result_len: (!run.failed).then_some(0),
            manual: false,
            backfill: false,
        };
        self.keep_output(kept);
    }

    /// The kept outputs: how many, the bytes they count against `--keep-output-total`, and
    /// how many that bound dropped before their time since start.
    pub fn kept_totals(&self) -> (usize, usize, u64) {
        (self.kept.len(), self.kept.bytes(), self.kept.dropped())
    }

    /// `show output HANDLE`: `OK KEPT PRINTED`, then exactly KEPT bytes (what the job
    /// printed, its last `--keep-output` bytes when PRINTED is larger).
    pub(in crate::engine) fn output_reply(&self, handle: &[u8]) -> Bytes {
        match self.job_output(handle) {
            Some(v) => {
                let mut s = format!("OK {} {}\n", v.kept.len(), v.printed).into_bytes();
                s.extend_from_slice(&v.kept);
                s.into()
            }
            None => Bytes::from_static(b"ERR NOT_FOUND No+output+kept+for+this+job\r\n"),
        }
    }

    /// `show runs ENTRY`: the entry's last runs, oldest first, one a line:
    /// `SCHEDULED HANDLE STARTED ENDED OUTCOME OUTPUT_BYTES AFTER` (tabs; `-` for what a run
    /// that never started, or whose output is no longer kept, does not have; AFTER: an
    /// `@after` run's parents' runs, `ID HANDLE SCHEDULED OUTCOME` joined by `, `).
    pub(in crate::engine) fn runs_listing(&self, entry: &[u8]) -> Bytes {
        let entry = String::from_utf8_lossy(entry);
        let Some(&slot) = self.schedules.by_id.get(entry.as_ref()) else {
            return Bytes::from_static(b"ERR UNKNOWN_SCHEDULE No+such+schedule+entry\r\n");
        };
        let mut s = String::new();
        for r in self.schedules.entries[slot].history.recent.iter() {
            let kept = self.kept_run(&entry, r);
            let _ = writeln!(
                s,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                rfc3339(r.scheduled_ms),
                kept.map_or("-".into(), |j| String::from_utf8_lossy(&j.handle)
                    .into_owned()),
                r.started_ms.map_or("-".into(), rfc3339),
                match (r.started_ms, r.duration_ms) {
                    (Some(st), Some(d)) => rfc3339(st.saturating_add(d)),
                    _ => "-".into(),
                },
                r.outcome.name(),
                kept.map_or("-".into(), |j| j.output_bytes.to_string()),
                self.schedules
                    .after
                    .link(&entry, r.scheduled_ms)
                    .filter(|_| !r.manual)
                    .map_or("-".into(), |l| super::schedules::after::link_text(
                        &l.parents
                    )),
            );
        }
        s.push_str(".\n");
        s.into()
    }

    /// An entry's history after a restart: its runs whose outputs are still kept.
    pub(in crate::engine) fn kept_runs_of(&self, entry: &str) -> Vec<RunRecord> {
        use super::schedules::run_history::RunOutcome;
        self.kept
            .newest_runs(entry)
            .map(|j| RunRecord {
                scheduled_ms: j.scheduled_ms.unwrap_or(j.started_ms),
                started_ms: Some(j.started_ms),
                duration_ms: Some(j.ended_ms.saturating_sub(j.started_ms)),
                outcome: match j.ending {
                    Ending::Complete => RunOutcome::Complete,
                    _ => RunOutcome::Failed,
                },
                manual: j.manual,
                backfill: j.backfill,
                handle: Some(j.handle.clone()),
            })
            .collect()
    }
}

/// A connection without a certificate's name is named by its address, as the gate names it.
fn addr_name(ip: std::net::IpAddr) -> Rc<str> {
    Rc::from(format!("addr:{ip}"))
}
