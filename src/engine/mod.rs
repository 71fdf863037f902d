//! The job engine: the only owner of jobs, queues, functions, workers and waiting clients.
//! It turns a request from a connection into replies in an outbox, and never sees a socket,
//! a buffer or the clock: `now` (milliseconds since the Unix epoch) is passed in.
//!
//! - `serve`: the request match, one arm per Gearman request; `admin`: the admin lines.
//! - `jobs`: a job's submission, creation, queues and end; `dispatch`: its way to a worker.
//! - `workers`: registrations, sleeping workers and their wake-ups; `forget`: idle functions
//!   forgotten past `--max-idle-functions`.
//! - `handles` and `uniques`: the handle index and the unique index.
//! - `types`: the engine's records (connections, functions, jobs); `outbox`: what the engine
//!   hands the reactor.
//! - `timers`: the timer events and what fires them; `leases`: time limits on running jobs;
//!   `horizon`: the far-future warning.
//! - `schedules/`: schedule entries: arming, runs and their ends, history, an operator's
//!   hand, cluster claims, alerts.
//! - `failures/`: retries with backoff, jobs failing for good, the failed list.
//! - `limits/`: `limit`, `rate`, `pause function` and `expire`, enforced at handout.
//! - `durable`: the store records the engine emits for the journal, and `Engine::restore`,
//!   which puts back what the journal replayed.
//! - `output/`: what jobs print, kept while they run and for `--keep-results` after.
//! - `audit`: the audit trail, operators' actions kept and journalled.
//! - `hooks`: alerts for webhooks, queued, journalled and retried until delivered.
//! - `query`: read-only views for HTTP and `/metrics`; `listing`: the console's paged job
//!   lists per function; `reactor_api`: engine calls the reactor needs beyond `handle`.
//! - `tests`: the engine's unit tests, one file per concern.

mod admin;
mod audit;
mod dispatch;
mod durable;
mod failures;
mod forget;
mod handles;
mod hooks;
mod horizon;
mod jobs;
mod leases;
mod limits;
mod listing;
mod outbox;
mod output;
mod query;
mod reactor_api;
mod schedules;
mod serve;
mod timers;
pub use hooks::{HookAttempt, HookLimits, HookSend, HookStatus, WebhookRow};
pub use schedules::LoadReport;
pub use schedules::backfill::{BackfillError, Backfilled};
pub use schedules::ops::{
    Applied, CLUSTER_UNREACHABLE, HEARTBEAT_NOT_RUN, OpTicket, ScheduleOpError,
};
pub use schedules::run_history::ScheduleMarks;
pub use schedules::run_history::{RunOutcome, RunRecord};
pub use schedules::watch::{PingError, PingKind};
mod types;
mod uniques;
mod workers;

use bytes::Bytes;
use slab::Slab;

use crate::log_budget::Cause;
use crate::peer_text::shown;
use crate::proto::packet::PacketType;
use crate::proto::request::{GrabKind, JobBody, Priority, Request, RequestError};
use crate::proto::response::Response;
use crate::schedule::{SchedSpec, Zone};
use crate::store::{FinishReason, Record};
use crate::timer::{TimerKey, Timers};

pub use admin::CancelRefused;
pub use audit::{Action, AuditTrail};
pub use failures::{FailedJob, FailedList, FailedSelector, MAX_DROP_LABELS};
use handles::KeyRef;
pub use limits::{
    LimitChange, LimitError, LimitStatus, Rate as LimitRate, Settings as LimitSettings,
};
pub use listing::{JobPage, ListedJob};
pub use outbox::{Outbox, RunClaim, Shutdown};
pub use output::{Ending, KeptJob, OutputView};
pub use query::{
    EngineTotals, FunctionStatus, FutureJob, JobDetail, JobPhase, JobStatus, RunningJob,
    ScheduleStatus, WorkerStatus,
};
use timers::TimerEvent;
pub use types::JobCounters;
pub use types::{
    Ability, Conn, ConnId, ConnInfo, FuncId, Function, Held, HeldGrab, Job, JobExtra, JobKey,
    JobList, JobState, NIL, Origin, Rare,
};
use types::{BACKGROUND, EXTRA, INDEXED};

/// Maps keyed by what peers send (handles, uniques, names), with a fast per-process-seeded
/// hash.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Engine settings, from the command line.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The part of every handle before `:<n>`, gearmand's `H:<hostname>`.
    pub handle_prefix: String,
    /// A job given back this many times is failed; 0 means unlimited (gearmand's `-j`).
    pub job_retries: u32,
    /// How many sleeping workers one new job wakes; 0 wakes all of them (gearmand's `-w`).
    pub worker_wakeup: u32,
    /// A woken worker that has not asked for a job this many ms after its NOOP passes the
    /// wake-up on to the next sleeping worker, while the job waits (0: never).
    pub wakeup_next_ms: u64,
    pub round_robin: bool,
    /// Every connection starts with the `exceptions` option on.
    pub exceptions: bool,
    /// Default per-function queue cap; 0 means unlimited.
    pub max_queue: u32,
    /// The log level `verbose` reports.
    pub verbose: String,
    pub pid: u32,
    /// The zone SUBMIT_JOB_SCHED fields are read in.
    pub zone: Zone,
    /// Report durable changes (background jobs, schedule runs) in `Outbox::durable`.
    pub durable: bool,
    /// How long a worker's GRAB right after it ended a job may wait for the next job before
    /// NO_JOB, in milliseconds (0: answer at once, as gearmand does).
    pub grab_wait_ms: u64,
    /// CAN_DOs one connection may make (`--max-functions-per-worker`); 0 means unlimited.
    pub max_functions_per_worker: u32,
    /// Idle functions kept (`--max-idle-functions`); past it the least recently used go.
    pub max_idle_functions: usize,
    /// A SCHED or EPOCH job due further ahead than this is logged at WARNING (0: never).
    pub future_horizon_ms: u64,
    /// Background jobs kept in the failed list (`--keep-failed`; 0 keeps none).
    pub keep_failed: usize,
    /// Bytes the failed list may hold (`--keep-failed-bytes`; 0: no byte bound).
    pub keep_failed_bytes: usize,
    /// Operators' actions kept in the audit trail (`--keep-audit`; 0 keeps none).
    pub keep_audit: usize,
    /// `--retry N --retry-backoff ...`: every function's retry policy unless `retry FUNCTION`
    /// set one (0 retries: as gearmand).
    pub retry: crate::schedule::backoff::RetryPolicy,
    /// The last bytes of each job's output kept (`--keep-output`).
    pub keep_output: usize,
    /// Bytes all kept outputs may hold (`--keep-output-total`); past it the oldest go.
    pub keep_output_total: usize,
    /// How long an ended job's output and result are kept (`--keep-results`), in ms.
    pub keep_results_ms: u64,
    /// Foreground jobs keep theirs too (`--keep-results-foreground`).
    pub keep_results_foreground: bool,
    /// Functions that may have each kind of operator's setting (`--max-function-settings`):
    /// a lease, a retry policy, limits; each table is bounded by it on its own.
    pub max_function_settings: usize,
    /// The largest N of `rate FUNCTION N/DURATION` (`--max-rate-count`): a rate keeps the time
    /// of each of its last N handouts.
    pub max_rate_count: u32,
    /// The most runs one backfill may ask for, with those of the entry still waiting
    /// (`--max-backfill`).
    pub max_backfill: usize,
    /// `--max-webhook-queue`, `--webhook-attempts`, `--webhook-max-age` (hooks.rs).
    pub webhooks: HookLimits,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            handle_prefix: "H:localhost".into(),
            job_retries: 0,
            worker_wakeup: 1,
            wakeup_next_ms: 5,
            round_robin: false,
            exceptions: false,
            max_queue: 0,
            verbose: "ERROR".into(),
            pid: std::process::id(),
            zone: Zone::Local,
            durable: false,
            grab_wait_ms: 0,
            max_functions_per_worker: 10_000,
            max_idle_functions: 10_000,
            future_horizon_ms: 0,
            keep_failed: 1000,
            keep_failed_bytes: 64 << 20,
            keep_audit: 10_000,
            retry: Default::default(),
            keep_output: 64 << 10,
            keep_output_total: 64 << 20,
            keep_results_ms: 24 * 3_600_000,
            max_backfill: 10_000,
            keep_results_foreground: false,
            max_function_settings: 10_000,
            max_rate_count: 10_000,
            webhooks: HookLimits::default(),
        }
    }
}

/// Below this many jobs tables are not shrunk: not worth the rehash.
const SHRINK_FLOOR: usize = 8192;

/// A job about to be made, before it has a handle.
struct NewJob {
    func: FuncId,
    body: JobBody,
    reducer: Option<Bytes>,
    priority: Priority,
    background: bool,
    due_ms: Option<u64>,
    origin: Option<Origin>,
}

impl NewJob {
    /// A job as a client submits it: due at once, no reducer, from no schedule entry (the
    /// REDUCE, EPOCH and SCHED kinds set theirs over this).
    fn submitted(func: FuncId, body: JobBody, priority: Priority, background: bool) -> NewJob {
        NewJob {
            func,
            body,
            reducer: None,
            priority,
            background,
            due_ms: None,
            origin: None,
        }
    }
}

/// Why a job left the engine without a result from a worker.
enum FailReason {
    Cancelled,
    /// Ran past its time (which limit).
    Timeout(leases::TimeLimit),
    RetriesSpent,
    /// Waited in its queue past its function's `expire` (limits/).
    Expired,
}

pub struct Engine {
    config: EngineConfig,
    conns: Vec<Option<Conn>>,
    functions: Slab<Function>,
    func_by_name: FastMap<Bytes, FuncId>,
    jobs: Slab<Job>,
    by_handle: handles::HandleIndex,
    by_unique: uniques::UniqueIndex,
    timers: Timers<TimerEvent>,
    /// What few jobs have (those flagged `EXTRA`), by job key.
    extras: FastMap<u32, JobExtra>,
    next_handle: u64,
    running: usize,
    /// During a graceful shutdown no new job is handed out.
    draining: bool,
    /// The graceful shutdown's time ran out.
    drain_expired: bool,
    schedules: schedules::Schedules,
    /// Changes the journal must make durable before this turn's replies go out.
    durable: Vec<Record>,
    /// The most jobs held since memory was last given back.
    jobs_peak: usize,
    /// Held GRABs that may find a job now (see `serve_held_grabs`).
    grab_retries: Vec<ConnId>,
    /// Held GRABs answered with a job, and with NO_JOB at their deadline (for `/metrics`).
    grab_waits_assigned: u64,
    grab_waits_expired: u64,
    /// Woken workers that had not asked for a job `--worker-wakeup-next` after their NOOP,
    /// while the job waited: the next sleeper was woken for it.
    wakeups_overdue: u64,
    /// Each priority's functions that have queued jobs (see `workers.rs`).
    nonempty: [Vec<FuncId>; 3],
    /// Workers waiting for a job: asleep and not woken, or holding a GRAB.
    waiting: Vec<ConnId>,
    /// CAN_DOs refused past `--max-functions-per-worker`.
    functions_refused: u64,
    /// Every function's `JobCounters` summed (see `counters`).
    counted: JobCounters,
    /// Background jobs that failed for good (failed.rs).
    failed: failures::FailedList,
    /// Job leases by function (`timeout FUNCTION DURATION`, leases.rs).
    leases: leases::Leases,
    /// Functions with nothing left, oldest first, bounded by `--max-idle-functions`.
    idle: forget::IdleFunctions,
    /// Ended jobs' outputs and results (output/).
    kept: output::KeptResults,
    /// The wheel's entry for the kept outputs' next expiry.
    kept_timer: output::ExpiryTimer,
    /// Bytes the running jobs' outputs hold (within `--keep-output-total` with the kept).
    live_output: usize,
    /// The WORK_COMPLETE payload of a job that printed nothing before it (job key and id),
    /// from `record_result` to the `keep_result` of the same request: kept without a buffer.
    result_only: Option<(JobKey, u64, Bytes)>,
    /// Functions with a limits setting (at most `--max-function-settings`, but for what the
    /// journal read back).
    limited: usize,
    /// Held functions whose running jobs ended this request: their gates are asked again.
    gates_to_check: Vec<FuncId>,
    /// When each job of a function with `expire` began its wait in the queue, by job key.
    queued_since: FastMap<u32, u64>,
    /// Operators' actions, newest last, bounded by `--keep-audit` (audit.rs).
    audit: AuditTrail,
    /// Alerts waiting for their webhook (hooks.rs).
    hooks: hooks::Hooks,
}

const NOT_FOUND_RESULT: &str = "Job given in work result not found";
const NOT_FOUND_DATA: &str = "Job does not exist on server";
const NOT_FOUND_EXCEPTION: &str = "An exception was received for a job that does not exist";

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        let by_handle = handles::HandleIndex::new(&config.handle_prefix);
        let failed = failures::FailedList::new(config.keep_failed, config.keep_failed_bytes);
        let kept = output::KeptResults::new(config.keep_output_total, config.keep_results_ms);
        let config_keep_audit = config.keep_audit;
        Engine {
            config,
            conns: Vec::new(),
            functions: Slab::new(),
            func_by_name: FastMap::default(),
            jobs: Slab::new(),
            by_handle,
            by_unique: uniques::UniqueIndex::default(),
            timers: Timers::new(),
            extras: FastMap::default(),
            next_handle: 1,
            running: 0,
            draining: false,
            drain_expired: false,
            schedules: schedules::Schedules::default(),
            durable: Vec::new(),
            jobs_peak: SHRINK_FLOOR,
            grab_retries: Vec::new(),
            grab_waits_assigned: 0,
            grab_waits_expired: 0,
            wakeups_overdue: 0,
            nonempty: Default::default(),
            waiting: Vec::new(),
            functions_refused: 0,
            counted: JobCounters::default(),
            failed,
            leases: leases::Leases::default(),
            idle: forget::IdleFunctions::default(),
            kept,
            kept_timer: None,
            live_output: 0,
            result_only: None,
            limited: 0,
            gates_to_check: Vec::new(),
            queued_since: FastMap::default(),
            audit: AuditTrail::new(config_keep_audit),
            hooks: Default::default(),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Jobs assigned to a worker right now (graceful shutdown waits for these).
    pub fn running_jobs(&self) -> usize {
        self.running
    }

    /// Graceful shutdown: hand out no more jobs, and give running ones until `now + timeout_ms`.
    pub fn begin_drain(&mut self, now: u64, timeout_ms: u64) {
        if !self.draining {
            self.draining = true;
            self.timers
                .insert(now.saturating_add(timeout_ms), TimerEvent::DrainTimeout);
        }
    }

    /// A graceful shutdown may end: nothing runs any more, or the time is up.
    pub fn drain_done(&self) -> bool {
        self.draining && (self.running == 0 || self.drain_expired)
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The earliest deadline the engine needs to be woken for.
    pub fn next_deadline(&self) -> Option<u64> {
        self.timers.next_deadline()
    }

    fn conn(&self, id: ConnId) -> Option<&Conn> {
        self.conns
            .get(id.index as usize)?
            .as_ref()
            .filter(|c| c.id == id)
    }

    fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn> {
        self.conns
            .get_mut(id.index as usize)?
            .as_mut()
            .filter(|c| c.id == id)
    }

    /// The extra fields of the job at `k`, if it has any.
    fn extra(&self, k: JobKey) -> Option<&JobExtra> {
        match self.jobs.get(k) {
            Some(j) if j.is(EXTRA) => self.extras.get(&(k as u32)),
            _ => None,
        }
    }

    fn extra_get_mut(&mut self, k: JobKey) -> Option<&mut JobExtra> {
        match self.jobs.get(k) {
            Some(j) if j.is(EXTRA) => self.extras.get_mut(&(k as u32)),
            _ => None,
        }
    }

    /// The extra fields of the job at `k`, made if it has none yet.
    fn extra_mut(&mut self, k: JobKey) -> &mut JobExtra {
        self.jobs[k].flags |= EXTRA;
        self.extras.entry(k as u32).or_default()
    }

    /// The foreground clients waiting for the job at `k`, in attach order.
    fn clients(&self, k: JobKey) -> &[ConnId] {
        self.extra(k).map_or(&[], |e| e.clients.as_slice())
    }

    /// A job's rare fields, if it has them.
    fn rare(&self, k: JobKey) -> Option<&Rare> {
        self.extra(k)?.rare.as_deref()
    }

    /// The key of a future job's entry in the wheel (the job keeps only its index).
    fn future_timer(&self, k: JobKey, job: &Job) -> Option<TimerKey> {
        let due = TimerEvent::JobDue { job: k, id: job.id };
        self.timers.key_at(job.future_timer()?, |ev| *ev == due)
    }

    /// A future job's due time (from its entry in the wheel).
    fn due_ms(&self, k: JobKey) -> Option<u64> {
        self.timers
            .deadline(self.future_timer(k, self.jobs.get(k)?)?)
    }

    pub fn connect(&mut self, id: ConnId, info: ConnInfo) {
        let idx = id.index as usize;
        if self.conns.len() <= idx {
            self.conns.resize_with(idx + 1, || None);
        }
        self.conns[idx] = Some(Conn::new(id, info, self.config.exceptions));
    }

    /// A connection is gone: give back the jobs it held, detach it from the jobs it waited on.
    pub fn disconnect(&mut self, id: ConnId, now: u64, out: &mut Outbox) {
        if self.conn(id).is_none() {
            return;
        }
        self.give_back_jobs(id, None, now, out);
        self.answered_wakeup(id);
        let (held, woken_for) = match self.conn_mut(id) {
            Some(c) => {
                c.sleeping = false;
                (c.held_grab.take(), c.woken_for.take())
            }
            None => (None, None),
        };
        self.sync_waiting(id);
        self.schedules.cluster.conn_gone(id);
        if let Some(h) = held {
            self.timers.cancel(h.timer);
        }
        self.drop_abilities(id, None);
        // A worker woken for a job that leaves without taking it passes the wake-up on.
        if let Some(f) = woken_for {
            if self
                .functions
                .get(f)
                .is_some_and(|func| func.queued_total() > 0)
            {
                self.wake_workers(f, now, out);
            }
        }
        let Some(conn) = self.conns[id.index as usize].take() else {
            return;
        };
        for key in conn.attached {
            let key = key as JobKey;
            let Some(e) = self.extra_get_mut(key) else {
                continue;
            };
            e.clients.retain(|c| *c != id);
            let waited_for = !e.clients.is_empty();
            let job = &self.jobs[key];
            // A foreground job nobody waits for any more is not worth running; a running one
            // finishes and its result is dropped. A background job always stays.
            if !waited_for && !job.background() && job.state() == JobState::Queued {
                log::info!(
                    "dropping queued job {} whose clients all left",
                    self.by_handle.of(job)
                );
                // Never journalled (a foreground job); the reason is a formality.
                self.remove_job(key, FinishReason::Fail);
            }
        }
        self.serve_held_grabs(now, out);
    }

    /// Serve one request.
    pub fn handle(&mut self, id: ConnId, req: Request, now: u64, out: &mut Outbox) {
        if self.conn(id).is_none() {
            return;
        }
        self.serve(id, req, now, out);
        self.serve_held_grabs(now, out);
    }

    /// Whether this connection's input waits: it has a GRAB held, or an admin line whose
    /// answer waits for the cluster's, and what it sent after must be answered after it.
    pub fn input_paused(&self, id: ConnId) -> bool {
        self.conn(id).is_some_and(|c| c.held_grab.is_some())
            || self.schedules.cluster.line_waits(id)
    }
}

/// A millisecond timestamp as RFC 3339 in UTC, for logs and `show scheduled`.
pub(crate) fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// gearmand's `atoi` for WORK_STATUS numbers: leading digits, anything else is 0.
fn atoi(b: &[u8]) -> u32 {
    let mut n: u32 = 0;
    for &c in b.iter().skip_while(|c| **c == b' ') {
        if !c.is_ascii_digit() {
            break;
        }
        n = n.saturating_mul(10).saturating_add((c - b'0') as u32);
    }
    n
}

/// SUBMIT_JOB_EPOCH's time: whole seconds since 1970, at most year 9999.
fn parse_epoch(b: &[u8]) -> Result<u64, RequestError> {
    const MAX_EPOCH: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let s = std::str::from_utf8(b).unwrap_or("");
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_EPOCH && !s.starts_with('+') => Ok(n),
        Ok(_) => Err(RequestError::new(
            "INVALID_ARGUMENT",
            "Epoch is after the year 9999",
        )),
        Err(_) => Err(RequestError::new(
            "INVALID_ARGUMENT",
            format!(
                "Epoch must be whole seconds since 1970, got {:?}",
                String::from_utf8_lossy(b)
            ),
        )),
    }
}

/// What a peer sent after a handle is not part of it, but may be a worker's failure message:
/// shown at DEBUG, never kept or passed on. (gearmand forwards a WORK_FAIL as it came; clients
/// here get the plain `WORK_FAIL handle` that every client library reads.)
fn debug_after_handle(packet: &str, handle: &[u8], after: &[u8]) {
    if !after.is_empty() {
        log::debug!(
            "{packet} {}: after the handle, {} bytes \"{}\"",
            shown(handle),
            after.len(),
            shown(after)
        );
    }
}

#[cfg(test)]
mod tests;
