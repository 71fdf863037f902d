//! The job engine: the only owner of jobs, queues, functions, workers and waiting clients.
//! It turns a request from a connection into replies in an outbox, and never sees a socket,
//! a buffer or the clock: `now` (milliseconds since the Unix epoch) is passed in.

mod admin;
mod alerts;
mod durable;
mod failed;
mod failed_ops;
mod forget;
mod handles;
mod horizon;
mod leases;
mod query;
mod reactor_api;
mod retries;
mod run_end;
mod run_history;
mod schedule_ops;
mod schedules;
pub use run_history::{RunOutcome, RunRecord};
pub use schedule_ops::{ScheduleMarks, ScheduleOpError};
pub use schedules::LoadReport;
mod types;
mod uniques;
mod workers;

use bytes::Bytes;
use slab::Slab;

use crate::proto::packet::PacketType;
use crate::proto::request::{
    GrabKind, JobBody, Priority, Request, RequestError, show_after_handle,
};
use crate::proto::response::Response;
use crate::schedule::{SchedSpec, Zone};
use crate::timer::{TimerKey, Timers};

pub use admin::CancelRefused;
pub use durable::{Durable, FinishKind, RestoredJob};
pub use failed::{FailedJob, FailedList, FailedSelector, MAX_DROP_LABELS};
use handles::KeyRef;
pub use query::{
    EngineTotals, FunctionStatus, FutureJob, JobDetail, JobPhase, JobStatus, ScheduleStatus,
    WorkerStatus,
};
pub use types::JobCounters;
pub use types::{
    Ability, Conn, ConnId, ConnInfo, FuncId, Function, HeldGrab, Job, JobExtra, JobKey, JobList,
    JobState, NIL, Origin, Rare,
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
    /// A SCHED or EPOCH job due further ahead than this is logged at WARNING (0: never).
    pub future_horizon_ms: u64,
    /// Background jobs kept in the failed list (`--keep-failed`; 0 keeps none).
    pub keep_failed: usize,
    /// Bytes the failed list may hold (`--keep-failed-bytes`; 0: no byte bound).
    pub keep_failed_bytes: usize,
    /// `--retry N --retry-backoff ...`: every function's retry policy unless `retry FUNCTION`
    /// set one (0 retries: as gearmand).
    pub retry: crate::schedule::backoff::RetryPolicy,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            handle_prefix: "H:localhost".into(),
            job_retries: 0,
            worker_wakeup: 1,
            round_robin: false,
            exceptions: false,
            max_queue: 0,
            verbose: "ERROR".into(),
            pid: std::process::id(),
            zone: Zone::Local,
            durable: false,
            grab_wait_ms: 0,
            max_functions_per_worker: 10_000,
            future_horizon_ms: 0,
            keep_failed: 1000,
            keep_failed_bytes: 64 << 20,
            retry: Default::default(),
        }
    }
}

/// What the engine asks of the reactor after a request: replies in order, and at most one
/// shutdown.
#[derive(Debug, Default)]
pub struct Outbox {
    pub replies: Vec<(ConnId, Response)>,
    pub shutdown: Option<Shutdown>,
    /// Connection deadlines from `arm_conn_timer` that passed: (connection, its tag).
    pub conn_timeouts: Vec<(ConnId, u64)>,
    /// Connections whose held GRAB was answered: the reactor serves what they sent after it.
    pub resumed: Vec<ConnId>,
    /// Indexes in `replies` of the replies that may wait for the next reply to the same
    /// connection (see `push_lazy`), ascending.
    pub lazy: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    Immediate,
    Graceful,
}

impl Outbox {
    pub fn push(&mut self, to: ConnId, r: Response) {
        self.replies.push((to, r));
    }

    /// Queue a reply that need not leave at once: a JOB_CREATED whose foreground job went to a
    /// waiting worker, so that its result follows within microseconds and both can share one
    /// write (one send and one wake-up of the client fewer). The reactor bounds the wait.
    pub fn push_lazy(&mut self, to: ConnId, r: Response) {
        self.lazy.push(self.replies.len());
        self.replies.push((to, r));
    }

    /// Forget every queued reply.
    pub fn clear_replies(&mut self) {
        self.replies.clear();
        self.lazy.clear();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerEvent {
    /// A running job's CAN_DO_TIMEOUT ran out (`id` tells the job from a later one in its slot).
    JobTimeout { job: JobKey, id: u64 },
    /// A future job is due.
    JobDue { job: JobKey, id: u64 },
    /// A graceful shutdown waited long enough.
    DrainTimeout,
    /// A schedule entry's run is due (`generation` tells loads apart).
    ScheduleFire { slot: usize, generation: u64 },
    /// A reactor deadline for one connection (see reactor_api.rs).
    ConnTimer { conn: ConnId, tag: u64 },
    /// A held GRAB waited long enough: NO_JOB.
    GrabWait { conn: ConnId },
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

/// Why a job left the engine without a result from a worker.
enum FailReason {
    Cancelled,
    /// Ran past its time (which limit).
    Timeout(leases::TimeLimit),
    RetriesSpent,
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
    durable: Vec<Durable>,
    /// The most jobs held since memory was last given back.
    jobs_peak: usize,
    /// Held GRABs that may find a job now (see `serve_held_grabs`).
    grab_retries: Vec<ConnId>,
    /// Held GRABs answered with a job, and with NO_JOB at their deadline (for `/metrics`).
    grab_waits_assigned: u64,
    grab_waits_expired: u64,
    /// Each priority's functions that have queued jobs (see `workers.rs`).
    nonempty: [Vec<FuncId>; 3],
    /// Workers waiting for a job: asleep and not woken, or holding a GRAB.
    waiting: Vec<ConnId>,
    /// CAN_DOs refused past `--max-functions-per-worker`.
    functions_refused: u64,
    /// Every function's `JobCounters` summed (see `counters`).
    counted: JobCounters,
    /// Background jobs that failed for good (failed.rs).
    failed: failed::FailedList,
    /// Job leases by function (`timeout FUNCTION DURATION`, leases.rs).
    leases: leases::Leases,
}

const NOT_FOUND_RESULT: &str = "Job given in work result not found";
const NOT_FOUND_DATA: &str = "Job does not exist on server";
const NOT_FOUND_EXCEPTION: &str = "An exception was received for a job that does not exist";

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        let by_handle = handles::HandleIndex::new(&config.handle_prefix);
        let failed = failed::FailedList::new(config.keep_failed, config.keep_failed_bytes);
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
            nonempty: Default::default(),
            waiting: Vec::new(),
            functions_refused: 0,
            counted: JobCounters::default(),
            failed,
            leases: leases::Leases::default(),
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
        let (held, woken_for) = match self.conn_mut(id) {
            Some(c) => {
                c.sleeping = false;
                (c.held_grab.take(), c.woken_for.take())
            }
            None => (None, None),
        };
        self.sync_waiting(id);
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
                self.wake_workers(f, out);
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
                self.remove_job(key, FinishKind::Abandoned);
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

    /// Whether this connection's input waits: it has a GRAB held, and what it sent after the
    /// GRAB must be answered after it.
    pub fn input_paused(&self, id: ConnId) -> bool {
        self.conn(id).is_some_and(|c| c.held_grab.is_some())
    }

    fn serve(&mut self, id: ConnId, req: Request, now: u64, out: &mut Outbox) {
        match req {
            Request::CanDo { func } => self.can_do(id, func, None, out),
            // A timeout of 0 means none (it would fail every job the moment it is assigned).
            Request::CanDoTimeout { func, timeout_ms } => {
                self.can_do(id, func, (timeout_ms > 0).then_some(timeout_ms), out)
            }
            Request::CantDo { func } => {
                // Only a function this worker registered: a CANT_DO of another costs nothing.
                let f = self.func_by_name.get(&func).copied();
                if let Some(f) = f.filter(|&f| self.conn(id).is_some_and(|c| c.can_do(f))) {
                    self.give_back_jobs(id, Some(f), now, out);
                    self.drop_abilities(id, Some(f));
                }
            }
            Request::ResetAbilities => {
                self.give_back_jobs(id, None, now, out);
                self.drop_abilities(id, None);
            }
            Request::PreSleep => self.pre_sleep(id, out),
            Request::SubmitJob {
                func,
                body,
                priority,
                background,
            } => self.submit(id, func, body, None, priority, background, None, now, out),
            Request::SubmitReduceJob {
                func,
                body,
                reducer,
                background,
            } => self.submit(
                id,
                func,
                body,
                Some(reducer),
                Priority::Normal,
                background,
                None,
                now,
                out,
            ),
            Request::SubmitJobEpoch { func, body, epoch } => match parse_epoch(&epoch) {
                Ok(secs) => {
                    let due = secs.saturating_mul(1000);
                    self.submit(
                        id,
                        func,
                        body,
                        None,
                        Priority::Normal,
                        true,
                        Some(due),
                        now,
                        out,
                    )
                }
                Err(e) => out.push(id, Response::error(e.code, e.text)),
            },
            Request::SubmitJobSched { func, body, fields } => match self.sched_due(&fields, now) {
                Ok(due) => self.submit(
                    id,
                    func,
                    body,
                    None,
                    Priority::Normal,
                    true,
                    Some(due),
                    now,
                    out,
                ),
                Err(text) => out.push(id, Response::error("INVALID_ARGUMENT", text)),
            },
            Request::GrabJob(kind) => self.grab(id, kind, now, out),
            Request::WorkStatus {
                handle,
                numerator,
                denominator,
            } => {
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, out) else {
                    return;
                };
                let e = self.extra_mut(key);
                e.numerator = atoi(&numerator);
                e.denominator = atoi(&denominator);
                for &c in self.clients(key) {
                    out.push(
                        c,
                        Response::WorkStatus {
                            handle: self.by_handle.of(&self.jobs[key]),
                            numerator: numerator.clone(),
                            denominator: denominator.clone(),
                        },
                    );
                }
            }
            Request::WorkData { handle, data } => {
                self.forward(id, PacketType::WorkData, handle, data, NOT_FOUND_DATA, out)
            }
            Request::WorkWarning { handle, data } => self.forward(
                id,
                PacketType::WorkWarning,
                handle,
                data,
                NOT_FOUND_DATA,
                out,
            ),
            Request::WorkComplete { handle, data } => {
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, out) else {
                    return;
                };
                for &c in self.clients(key) {
                    out.push(
                        c,
                        Response::WorkWithData {
                            ptype: PacketType::WorkComplete,
                            handle: self.by_handle.of(&self.jobs[key]),
                            data: data.clone(),
                        },
                    );
                }
                self.end_job(key, schedules::Outcome::Complete, now, out);
                self.ended_by(id);
            }
            Request::WorkFail {
                handle,
                after_handle,
            } => {
                debug_after_handle("WORK_FAIL", &handle, &after_handle);
                // Perl's Gearman::Worker follows a WORK_EXCEPTION with a WORK_FAIL for the
                // same job; an ERROR there would be read as the reply to its next GRAB and
                // end the worker. The job already ended, so the echo is dropped.
                if self
                    .conn(id)
                    .is_some_and(|c| c.last_exception.as_ref() == Some(&handle))
                    && !self.by_handle.contains(&handle, &self.jobs)
                {
                    if let Some(c) = self.conn_mut(id) {
                        c.last_exception = None;
                    }
                    return;
                }
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, out) else {
                    return;
                };
                for &c in self.clients(key) {
                    out.push(
                        c,
                        Response::WorkFail {
                            handle: self.by_handle.of(&self.jobs[key]),
                        },
                    );
                }
                self.end_job(key, schedules::Outcome::Fail, now, out);
                self.ended_by(id);
            }
            Request::WorkException { handle, data } => {
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_EXCEPTION, out) else {
                    return;
                };
                if let Some(c) = self.conn_mut(id) {
                    c.last_exception = Some(Bytes::copy_from_slice(&handle));
                }
                let job = &self.jobs[key];
                for &c in self.clients(key) {
                    let wants = self.conn(c).is_some_and(|c| c.exceptions);
                    let r = if wants {
                        Response::WorkWithData {
                            ptype: PacketType::WorkException,
                            handle: self.by_handle.of(job),
                            data: data.clone(),
                        }
                    } else {
                        Response::WorkFail {
                            handle: self.by_handle.of(job),
                        }
                    };
                    out.push(c, r);
                }
                self.end_job(key, schedules::Outcome::Exception(&data), now, out);
                self.ended_by(id);
            }
            Request::GetStatus {
                handle,
                after_handle,
            } => {
                debug_after_handle("GET_STATUS", &handle, &after_handle);
                let r = match self.by_handle.get(&handle, &self.jobs) {
                    Some(k) => Response::StatusRes {
                        handle: handle.into(),
                        known: true,
                        running: matches!(self.jobs[k].state(), JobState::Running(_)),
                        numerator: self.extra(k).map_or(0, |e| e.numerator),
                        denominator: self.extra(k).map_or(0, |e| e.denominator),
                    },
                    None => Response::StatusRes {
                        handle: handle.into(),
                        known: false,
                        running: false,
                        numerator: 0,
                        denominator: 0,
                    },
                };
                out.push(id, r);
            }
            Request::GetStatusUnique { unique } => {
                let r = match self.find_by_unique(&unique) {
                    Some(k) => Response::StatusResUnique {
                        unique,
                        known: true,
                        running: matches!(self.jobs[k].state(), JobState::Running(_)),
                        numerator: self.extra(k).map_or(0, |e| e.numerator),
                        denominator: self.extra(k).map_or(0, |e| e.denominator),
                        clients: self.clients(k).len() as u32,
                    },
                    None => Response::StatusResUnique {
                        unique,
                        known: false,
                        running: false,
                        numerator: 0,
                        denominator: 0,
                        clients: 0,
                    },
                };
                out.push(id, r);
            }
            Request::EchoReq { data } => out.push(id, Response::EchoRes { data }),
            Request::SetClientId { id: client_id } => {
                if let Some(c) = self.conn_mut(id) {
                    // Copied: a slice would keep the packet's read buffer for the connection's life.
                    c.client_id = Bytes::copy_from_slice(&client_id[..client_id.len().min(127)]);
                }
            }
            Request::OptionReq { name } => {
                if name.eq_ignore_ascii_case(b"exceptions") {
                    if let Some(c) = self.conn_mut(id) {
                        c.exceptions = true;
                    }
                    out.push(id, Response::OptionRes { name });
                } else {
                    out.push(
                        id,
                        Response::error("UNKNOWN_OPTION", "Server does not recognize given option"),
                    );
                }
            }
            Request::AllYours => {}
        }
    }

    /// Reply to a request the reactor could not parse.
    pub fn reject(&mut self, id: ConnId, err: RequestError, out: &mut Outbox) {
        out.push(id, Response::error(err.code, err.text));
    }

    /// Fire every timer due at `now`.
    /// At most this many timers fire per call, so that 100,000 jobs due in the same second
    /// do not hold back every reply of the turn; the rest fire on the next turn, at once.
    const TIMERS_PER_TURN: usize = 1024;

    /// Fire the timers due at `now` (up to `TIMERS_PER_TURN`; `next_deadline()` then says
    /// the rest are due).
    pub fn on_time(&mut self, now: u64, out: &mut Outbox) {
        let mut fired = 0;
        while fired < Self::TIMERS_PER_TURN {
            let Some((_, ev)) = self.timers.poll(now) else {
                break;
            };
            fired += 1;
            match ev {
                TimerEvent::JobTimeout { job, id } => {
                    if self.jobs.get(job).is_none_or(|j| j.id != id) {
                        continue;
                    }
                    // Fired: the key is spent.
                    if let Some(e) = self.extra_get_mut(job) {
                        e.timer = None;
                    }
                    let j = &self.jobs[job];
                    if let JobState::Running(worker) = j.state() {
                        let f = j.func();
                        let own = self.conn(worker).and_then(|c| c.timeout_for(f));
                        let limit = self.limit_passed(job, f, own, now);
                        log::warn!(
                            "job {} on worker {}: {}; failing it (a late result is dropped)",
                            self.by_handle.of(&self.jobs[job]),
                            worker.index,
                            limit.error_text()
                        );
                        self.fail_job(job, FailReason::Timeout(limit), now, out);
                    }
                }
                TimerEvent::ScheduleFire { slot, generation } => {
                    self.fire_schedule(slot, generation, now, out)
                }
                TimerEvent::ConnTimer { conn, tag } => out.conn_timeouts.push((conn, tag)),
                TimerEvent::GrabWait { conn } => {
                    if let Some(c) = self.conn_mut(conn) {
                        if c.held_grab.take().is_some() {
                            c.woken_for = None;
                            out.push(conn, Response::NoJob);
                            out.resumed.push(conn);
                            self.grab_waits_expired += 1;
                            self.sync_waiting(conn);
                        }
                    }
                }
                TimerEvent::DrainTimeout => {
                    log::warn!(
                        "graceful shutdown: {} still running after the timeout",
                        crate::plural::count(self.running as u64, "job", "jobs")
                    );
                    self.drain_expired = true;
                }
                TimerEvent::JobDue { job, id } => {
                    let Some(j) = self.jobs.get(job).filter(|j| j.id == id) else {
                        continue;
                    };
                    if j.state() != JobState::Future {
                        continue;
                    }
                    log::info!("future job {} is due", self.by_handle.of(j));
                    let f = j.func();
                    self.functions[f].future -= 1;
                    self.enqueue(job, false);
                    self.wake_workers(f, out);
                }
            }
        }
        self.serve_held_grabs(now, out);
    }

    /// When a SUBMIT_JOB_SCHED job is due: the next minute after `now` that its fields match.
    fn sched_due(&self, fields: &[Bytes; 5], now: u64) -> Result<u64, String> {
        let spec = SchedSpec::parse(fields)?;
        let after = chrono::DateTime::from_timestamp_millis(now as i64).unwrap_or_default();
        spec.next_after(after, &self.config.zone)
            .map(|t| t.timestamp_millis() as u64)
            .ok_or_else(|| "the fields never match a time in the next 29 years".to_string())
    }

    // ---- workers -------------------------------------------------------------------------

    fn func_id(&mut self, name: &Bytes) -> FuncId {
        if let Some(&f) = self.func_by_name.get(name) {
            return f;
        }
        // Copied out of the packet, which may sit in a large read buffer.
        let name = Bytes::copy_from_slice(name);
        let f = self
            .functions
            .insert(Function::new(name.clone(), self.config.max_queue));
        self.func_by_name.insert(name, f);
        f
    }

    /// Jobs held by a worker that stops doing them go back to the head of their queue,
    /// counted against `--job-retries`; when those are spent the clients get WORK_FAIL.
    fn give_back_jobs(&mut self, id: ConnId, only: Option<FuncId>, now: u64, out: &mut Outbox) {
        let jobs = &self.jobs;
        let Some(c) = self
            .conns
            .get_mut(id.index as usize)
            .and_then(|c| c.as_mut())
        else {
            return;
        };
        if c.id != id || c.holding.is_empty() {
            return;
        }
        // CANT_DO of a function it holds no job of costs nothing (not a walk of its jobs).
        if let Some(f) = only {
            if c.abilities.get(&f).is_none_or(|a| a.held == 0) {
                return;
            }
        }
        let mut back: Vec<(u64, JobKey)> = c
            .holding
            .iter()
            .map(|(&k, &taken)| (taken, k as JobKey))
            .filter(|&(_, k)| only.is_none() || jobs.get(k).map(|j| j.func()) == only)
            .collect();
        for (_, k) in &back {
            c.holding.remove(&(*k as u32));
            if let Some(a) = jobs.get(*k).and_then(|j| c.abilities.get_mut(&j.func())) {
                a.held -= 1;
            }
        }
        if c.holding.len() < c.holding.capacity() / 4 {
            c.holding.shrink_to_fit();
        }
        back.sort_unstable();
        // Each goes to the front, so the last taken goes back first: order is kept.
        for (_, k) in back.into_iter().rev() {
            if !self.jobs.contains(k) {
                continue;
            }
            let e = self.extra_mut(k);
            e.retries += 1;
            e.numerator = 0;
            e.denominator = 0;
            let (retries, timer) = (e.retries, e.timer.take());
            if let Some(t) = timer {
                self.timers.cancel(t);
            }
            let job = &self.jobs[k];
            if self.config.durable && job.background() {
                self.durable.push(Durable::JobRetried {
                    id: job.id,
                    retries,
                });
            }
            let limit = self.config.job_retries;
            if limit > 0 && retries >= limit {
                log::warn!(
                    "Dropped job due to max retry count: {} {}",
                    self.by_handle.of(job),
                    String::from_utf8_lossy(job.body.unique_bytes())
                );
                self.fail_job(k, FailReason::RetriesSpent, now, out);
                continue;
            }
            log::info!(
                "worker left job {} (retry {}); it goes back to the head of its queue",
                self.by_handle.of(job),
                retries
            );
            let f = job.func();
            self.functions[f].running -= 1;
            self.running -= 1;
            self.count(f, query::Counted::Retried);
            self.schedule_outcome(k, schedules::Outcome::Requeued, now, out);
            self.enqueue(k, true);
            self.wake_workers(f, out);
        }
    }

    fn pre_sleep(&mut self, id: ConnId, out: &mut Outbox) {
        let found = self.find_job_for(id);
        let Some(c) = self.conn_mut(id) else { return };
        // Its next GRAB follows a NOOP, not a job end: it does not wait.
        c.just_ended = false;
        match found {
            Some((f, _)) => {
                c.sleeping = false;
                c.noop_sent = true;
                c.woken_for = Some(f);
                out.push(id, Response::Noop);
            }
            None => {
                c.sleeping = true;
                c.noop_sent = false;
            }
        }
        self.sync_waiting(id);
    }

    fn grab(&mut self, id: ConnId, kind: GrabKind, now: u64, out: &mut Outbox) {
        let Some(c) = self.conn_mut(id) else { return };
        c.sleeping = false;
        c.noop_sent = false;
        let just_ended = std::mem::take(&mut c.just_ended);
        self.sync_waiting(id);
        match self.find_job_for(id) {
            Some(found) => self.assign(id, kind, found, now, out),
            // A worker that just ended a job is in its loop: its next job is often about to be
            // submitted (a synchronous client answers a result with the next request). Holding
            // the GRAB a moment saves NO_JOB, PRE_SLEEP, NOOP and the next GRAB.
            None if just_ended && self.config.grab_wait_ms > 0 && !self.draining => {
                let deadline = now.saturating_add(self.config.grab_wait_ms + 1);
                let timer = self
                    .timers
                    .insert(deadline, TimerEvent::GrabWait { conn: id });
                if let Some(c) = self.conn_mut(id) {
                    c.held_grab = Some(HeldGrab { kind, timer });
                    c.woken_for = None;
                }
                self.sync_waiting(id);
            }
            None => {
                if let Some(c) = self.conn_mut(id) {
                    c.woken_for = None;
                }
                out.push(id, Response::NoJob);
            }
        }
    }

    /// A worker ended a job it ran.
    fn ended_by(&mut self, id: ConnId) {
        if let Some(c) = self.conn_mut(id) {
            c.just_ended = true;
        }
    }

    /// Answer the held GRABs that new work may satisfy (queued by `wake_workers`); the others
    /// keep waiting. A loop rather than recursion: an answer may queue more of them.
    fn serve_held_grabs(&mut self, now: u64, out: &mut Outbox) {
        let mut i = 0;
        while i < self.grab_retries.len() {
            let id = self.grab_retries[i];
            i += 1;
            let Some(c) = self.conn_mut(id) else { continue };
            c.grab_retry_queued = false;
            let Some(held) = c.held_grab else { continue };
            let Some(found) = self.find_job_for(id) else {
                self.sync_waiting(id);
                continue;
            };
            if let Some(c) = self.conn_mut(id) {
                c.held_grab = None;
            }
            self.sync_waiting(id);
            self.timers.cancel(held.timer);
            self.grab_waits_assigned += 1;
            out.resumed.push(id);
            self.assign(id, held.kind, found, now, out);
        }
        self.grab_retries.clear();
    }

    /// Give worker `id` the job at the head of queue (f, p).
    fn assign(
        &mut self,
        id: ConnId,
        kind: GrabKind,
        (f, p): (FuncId, Priority),
        now: u64,
        out: &mut Outbox,
    ) {
        let key = self.functions[f].queues[p.index()].head as JobKey;
        self.unlink(key);
        let func = &mut self.functions[f];
        func.running += 1;
        self.running += 1;
        let more_work = func.queued_total() > 0;
        let timeout = self.run_limit(key, f, self.conn(id).and_then(|c| c.timeout_for(f)));
        self.rotate(id, f);
        let job = &mut self.jobs[key];
        job.set_state(JobState::Running(id));
        let job_id = job.id;
        if let Some(origin) = self
            .extra_get_mut(key)
            .and_then(|e| e.rare.as_mut())
            .and_then(|r| r.origin.as_mut())
        {
            origin.started_ms = Some(now);
        }
        if let Some(ms) = timeout {
            let t = self.timers.insert(
                now.saturating_add(ms),
                TimerEvent::JobTimeout {
                    job: key,
                    id: job_id,
                },
            );
            self.extra_mut(key).timer = Some(t);
        }
        let func_name = self.functions[f].name.clone();
        let job = &self.jobs[key];
        let reducer = self.rare(key).and_then(|r| r.reducer.as_ref());
        let r = match (kind, reducer) {
            (GrabKind::Plain, _) => Response::JobAssign {
                handle: self.by_handle.of(job),
                func: func_name,
                data: job.data(),
            },
            (GrabKind::All, Some(reducer)) => Response::JobAssignAll {
                handle: self.by_handle.of(job),
                func: func_name,
                unique: job.unique(),
                reducer: reducer.clone(),
                data: job.data(),
            },
            (GrabKind::Uniq | GrabKind::All, _) => Response::JobAssignUniq {
                handle: self.by_handle.of(job),
                func: func_name,
                unique: job.unique(),
                data: job.data(),
            },
        };
        out.push(id, r);
        if let Some(c) = self.conn_mut(id) {
            c.taken += 1;
            c.holding.insert(key as u32, c.taken);
            if let Some(a) = c.abilities.get_mut(&f) {
                a.held += 1;
            }
        }
        // Pass the baton: work is left, so wake the next sleeper rather than all of them at
        // submit time. This bounds the herd without leaving a job behind a busy worker.
        if more_work {
            self.wake_workers(f, out);
        }
        // The worker may have been woken for another function's job and taken this one
        // instead: whoever else can do that job hears of it now.
        self.pass_wakeups_on(id, Some(f), out);
    }

    /// The job named by a worker's WORK_* packet, if this worker runs it; else an ERROR.
    fn running_job(
        &self,
        id: ConnId,
        handle: &Bytes,
        text: &'static str,
        out: &mut Outbox,
    ) -> Option<JobKey> {
        let key = self.by_handle.get(handle, &self.jobs);
        match key {
            Some(k) if self.jobs[k].state() == JobState::Running(id) => Some(k),
            _ => {
                // Most often a late result of a job that timed out (CAN_DO_TIMEOUT or an
                // entry's timeout=) or was cancelled: dropped, and said so.
                log::info!(
                    "worker {}: result for {:?}, not a job it runs (ended: timed out or cancelled, or never its own); dropped",
                    id.index,
                    String::from_utf8_lossy(&handle[..handle.len().min(64)])
                );
                out.push(id, Response::error("JOB_NOT_FOUND", text));
                None
            }
        }
    }

    fn forward(
        &mut self,
        id: ConnId,
        ptype: PacketType,
        handle: Bytes,
        data: Bytes,
        text: &'static str,
        out: &mut Outbox,
    ) {
        let Some(key) = self.running_job(id, &handle, text, out) else {
            return;
        };
        let job = &self.jobs[key];
        for &c in self.clients(key) {
            out.push(
                c,
                Response::WorkWithData {
                    ptype,
                    handle: self.by_handle.of(job),
                    data: data.clone(),
                },
            );
        }
    }

    // ---- clients -------------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn submit(
        &mut self,
        id: ConnId,
        func: Bytes,
        body: JobBody,
        reducer: Option<Bytes>,
        priority: Priority,
        background: bool,
        due_ms: Option<u64>,
        now: u64,
        out: &mut Outbox,
    ) {
        let f = self.func_id(&func);
        let key = KeyRef::of(body.unique_bytes(), body.data_bytes());
        let indexed = key.is_some();
        if let Some(existing) = key.and_then(|k| self.by_unique.get(f, k, &self.jobs)) {
            if background {
                // A background submit must run even if the foreground clients it joined leave.
                let job = &mut self.jobs[existing];
                let was_background = job.background();
                job.flags |= BACKGROUND;
                if !was_background {
                    self.journal_added(existing);
                }
            } else if !self.clients(existing).contains(&id) {
                self.extra_mut(existing).clients.push(id);
                if let Some(c) = self.conn_mut(id) {
                    c.attached.insert(existing as u32);
                }
            }
            out.push(
                id,
                Response::JobCreated {
                    handle: self.by_handle.of(&self.jobs[existing]),
                },
            );
            return;
        }
        if self.queue_full(f, priority) {
            out.push(id, Response::error("QUEUE_ERROR", "Job queue is full"));
            return;
        }
        // What a job keeps is copied out of the packet: a slice would keep the whole read
        // buffer it arrived in, whatever else that held (issue 14 item 3).
        let new = NewJob {
            func: f,
            body: JobBody::new(body.unique_bytes(), body.data_bytes()),
            reducer: reducer.as_deref().map(Bytes::copy_from_slice),
            priority,
            background,
            due_ms,
            origin: None,
        };
        let k = self.create_job(new, indexed, (!background).then_some(id), now, out);
        let handle = self.by_handle.of(&self.jobs[k]);
        if let Some(due) = due_ms.filter(|&d| d > now) {
            // Here, not in create_job: a job put back from the journal was logged when it came.
            log::info!(
                "accepted future job {handle} ({}), due {}",
                String::from_utf8_lossy(&func),
                rfc3339(due)
            );
            let horizon = self.config.future_horizon_ms;
            if let Some(m) = horizon::message(&handle, &func, due, now, horizon) {
                log::warn!("{m}");
            }
        }
        // A held GRAB queued for this job takes it before `handle` returns: the client's
        // JOB_CREATED may then wait for the result (grab_retries holds only this request's).
        let to_held_grab =
            self.jobs[k].state() == JobState::Queued && !self.grab_retries.is_empty();
        if !background && to_held_grab {
            out.push_lazy(id, Response::JobCreated { handle });
        } else {
            out.push(id, Response::JobCreated { handle });
        }
    }

    /// The function's cap for this priority is reached, counted over all its jobs (as gearmand).
    fn queue_full(&self, f: FuncId, priority: Priority) -> bool {
        let fun = &self.functions[f];
        let limit = fun.max_queue[priority.index()];
        limit > 0 && fun.total() >= limit
    }

    /// A large queue has drained to an eighth of its peak: shrink the tables it grew and hand
    /// the freed heap back to the OS, so a burst does not pin its memory for good.
    fn give_memory_back(&mut self) {
        let before = self.jobs_peak;
        if self.jobs.is_empty() {
            // Keys are free to change only when none is in use.
            self.jobs = Slab::new();
        } else {
            self.jobs.shrink_to_fit();
        }
        self.by_handle.shrink_to_fit();
        self.by_unique.shrink_to_fit();
        self.extras.shrink_to_fit();
        self.timers.shrink_to_fit();
        crate::footprint::trim_heap();
        self.jobs_peak = self.jobs.len().max(SHRINK_FLOOR);
        log::debug!(
            "queue drained from {before} to {} jobs: memory given back",
            self.jobs.len()
        );
    }

    /// Make a job: index it, then queue it, or park it in the wheel until it is due.
    fn create_job(
        &mut self,
        new: NewJob,
        indexed: bool,
        client: Option<ConnId>,
        now: u64,
        out: &mut Outbox,
    ) -> JobKey {
        let job_id = self.next_handle;
        self.next_handle += 1;
        let f = new.func;
        self.count(f, query::Counted::Submitted);
        let mut flags = 0;
        if new.background {
            flags |= BACKGROUND;
        }
        if indexed {
            flags |= INDEXED;
        }
        let k = self
            .jobs
            .insert(Job::new(new.body, job_id, f, new.priority, flags));
        self.jobs_peak = self.jobs_peak.max(self.jobs.len());
        if client.is_some() || new.reducer.is_some() || new.origin.is_some() {
            let e = self.extra_mut(k);
            e.clients = client.into_iter().collect();
            if new.reducer.is_some() || new.origin.is_some() {
                e.rare = Some(Box::new(Rare {
                    reducer: new.reducer,
                    origin: new.origin,
                    failures: 0,
                    first_fail_ms: 0,
                }));
            }
        }
        self.by_handle.insert_job(k, &self.jobs[k]);
        if indexed {
            self.by_unique.insert(k, &self.jobs);
        }
        if let Some(c) = client.and_then(|c| self.conn_mut(c)) {
            c.attached.insert(k as u32);
        }
        match new.due_ms {
            Some(due) if due > now => {
                let t = self
                    .timers
                    .insert(due, TimerEvent::JobDue { job: k, id: job_id });
                self.jobs[k].set_future(t.index());
                self.functions[f].future += 1;
                self.journal_added(k);
            }
            _ => {
                self.journal_added(k);
                self.enqueue(k, false);
                self.wake_workers(f, out);
            }
        }
        k
    }

    /// Put a job in its function's queue, at the tail (new) or the head (given back).
    fn enqueue(&mut self, k: JobKey, front: bool) {
        let job = &mut self.jobs[k];
        job.set_state(JobState::Queued);
        let p = job.priority.index();
        let (f, priority) = (job.func as usize, job.priority);
        let func = &mut self.functions[f];
        let q = &mut func.queues[p];
        func.queued[p] += 1;
        let filled = func.queued[p] == 1;
        let key = k as u32;
        if front {
            // Keep global FIFO order meaningful: a given-back job is older than anything queued.
            job.set_next(q.head);
            match q.head {
                NIL => q.tail = key,
                h => self.jobs[h as usize].set_prev(key),
            }
            q.head = key;
        } else {
            job.set_prev(q.tail);
            match q.tail {
                NIL => q.head = key,
                t => self.jobs[t as usize].set_next(key),
            }
            q.tail = key;
        }
        if filled {
            self.queue_filled(f, priority);
        }
    }

    /// Take a queued job out of its function's queue (its state is the caller's to set).
    fn unlink(&mut self, k: JobKey) {
        let job = &self.jobs[k];
        let (prev, next, p) = (job.prev(), job.next(), job.priority.index());
        let (f, priority) = (job.func as usize, job.priority);
        let func = &mut self.functions[f];
        func.queued[p] -= 1;
        let emptied = func.queued[p] == 0;
        let q = &mut func.queues[p];
        match prev {
            NIL => q.head = next,
            pr => self.jobs[pr as usize].set_next(next),
        }
        match next {
            NIL => q.tail = prev,
            nx => self.jobs[nx as usize].set_prev(prev),
        }
        let job = &mut self.jobs[k];
        job.set_prev(NIL);
        job.set_next(NIL);
        if emptied {
            self.queue_emptied(f, priority);
        }
    }

    /// Every queue is a well-formed list of exactly the queued jobs of its function and
    /// priority, as many as its count says.
    #[cfg(test)]
    fn check_queues(&self) {
        let mut listed = 0;
        for (f, func) in self.functions.iter() {
            for p in Priority::ALL {
                let q = func.queues[p.index()];
                let (mut prev, mut k, mut n) = (NIL, q.head, 0);
                while k != NIL {
                    let job = &self.jobs[k as usize];
                    assert_eq!(job.prev(), prev);
                    assert_eq!(
                        (job.func(), job.priority, job.state()),
                        (f, p, JobState::Queued)
                    );
                    (prev, k, n) = (k, job.next(), n + 1);
                }
                assert_eq!(q.tail, prev);
                assert_eq!(func.queued[p.index()], n);
                listed += n;
            }
        }
        let queued = self
            .jobs
            .iter()
            .filter(|(_, j)| j.state() == JobState::Queued);
        assert_eq!(queued.count(), listed as usize);
        self.check_workers();
        self.by_unique.check(&self.jobs);
    }

    /// Remove a job from its queue, every index and counter.
    fn remove_job(&mut self, k: JobKey, how: FinishKind) {
        self.remove_job_as(k, how, None);
    }

    /// ... journalled as `record` instead of a JobFinished (a failed job kept in the list).
    fn remove_job_as(&mut self, k: JobKey, how: FinishKind, record: Option<Durable>) {
        if self.jobs[k].state() == JobState::Queued {
            self.unlink(k);
        }
        let extra = if self.jobs[k].is(EXTRA) {
            self.extras.remove(&(k as u32))
        } else {
            None
        };
        let job = self.jobs.remove(k);
        if self.config.durable && job.background() {
            self.durable
                .push(record.unwrap_or(Durable::JobFinished { id: job.id, how }));
        }
        self.by_handle.remove_job(&job, k);
        if job.is(INDEXED) {
            self.by_unique.remove(&job, k);
        }
        let (clients, timer) = match extra {
            Some(e) => (e.clients, e.timer),
            None => (Default::default(), None),
        };
        // A running job's CAN_DO_TIMEOUT.
        if let Some(t) = timer {
            self.timers.cancel(t);
        }
        if let Some(func) = self.functions.get_mut(job.func()) {
            match job.state() {
                JobState::Queued => {}
                JobState::Running(w) => {
                    func.running -= 1;
                    self.running -= 1;
                    if let Some(c) = self
                        .conns
                        .get_mut(w.index as usize)
                        .and_then(|c| c.as_mut())
                        .filter(|c| c.id == w)
                    {
                        // A job given back already left `holding` (and its count).
                        if c.holding.remove(&(k as u32)).is_some() {
                            if let Some(a) = c.abilities.get_mut(&job.func()) {
                                a.held -= 1;
                            }
                        }
                    }
                }
                JobState::Future => {
                    func.future -= 1;
                    if let Some(t) = self.future_timer(k, &job) {
                        self.timers.cancel(t);
                    }
                }
            }
        }
        // Borrowed: an owned iteration of `Clients::One` would allocate a one-element Vec.
        for &c in clients.iter() {
            if let Some(conn) = self
                .conns
                .get_mut(c.index as usize)
                .and_then(|x| x.as_mut())
                .filter(|x| x.id == c)
            {
                conn.attached.remove(&(k as u32));
            }
        }
        self.forget_if_unused(job.func());
        // Last, once the job is out of the slab and every index: what is left is shrunk.
        let drained = self.jobs_peak > SHRINK_FLOOR && self.jobs.len() < self.jobs_peak / 8;
        let emptied = self.jobs.is_empty() && self.jobs.capacity() > SHRINK_FLOOR;
        if drained || emptied {
            self.give_memory_back();
        }
    }

    /// A job ends without a worker's result: its clients get WORK_FAIL.
    fn fail_job(&mut self, k: JobKey, reason: FailReason, now: u64, out: &mut Outbox) {
        let job = &self.jobs[k];
        match reason {
            FailReason::Cancelled => {
                log::info!("job {} cancelled by admin", self.by_handle.of(job))
            }
            FailReason::Timeout(_) | FailReason::RetriesSpent => {}
        }
        for &c in self.clients(k) {
            out.push(
                c,
                Response::WorkFail {
                    handle: self.by_handle.of(job),
                },
            );
        }
        let outcome = match reason {
            FailReason::Cancelled => schedules::Outcome::Cancelled,
            FailReason::Timeout(limit) => schedules::Outcome::Timeout(limit),
            FailReason::RetriesSpent => schedules::Outcome::RetriesSpent,
        };
        self.end_job(k, outcome, now, out);
    }

    /// A job ended for good: count it, tell its schedule entry, and remove it (which the
    /// journal records). One place, so the three always agree.
    fn end_job(&mut self, k: JobKey, outcome: schedules::Outcome<'_>, now: u64, out: &mut Outbox) {
        use schedules::Outcome as O;
        let counted = match outcome {
            O::Complete => Some(query::Counted::Completed),
            O::Exception(_) => Some(query::Counted::Exception),
            O::Fail | O::Timeout(_) | O::RetriesSpent => Some(query::Counted::Failed),
            O::Cancelled | O::Requeued => None,
        };
        let how = match outcome {
            O::Complete => FinishKind::Complete,
            O::Exception(_) => FinishKind::Exception,
            O::Fail | O::Requeued => FinishKind::Fail,
            O::Timeout(_) => FinishKind::Timeout,
            O::RetriesSpent => FinishKind::RetriesSpent,
            O::Cancelled => FinishKind::Cancel,
        };
        if let Some(c) = counted {
            self.count(self.jobs[k].func(), c);
        }
        if self.retry_later(k, &outcome, now) {
            return;
        }
        let kept = if self.jobs[k].background() {
            self.failed_for_good(k, &outcome, now)
        } else {
            None
        };
        self.schedule_outcome(k, outcome, now, out);
        self.remove_job_as(k, how, kept);
    }

    /// GET_STATUS_UNIQUE looks a unique up across all functions, as gearmand (the newest
    /// job when several functions have one), in O(1).
    fn find_by_unique(&self, unique: &Bytes) -> Option<JobKey> {
        self.by_unique.get_any(KeyRef::Unique(unique), &self.jobs)
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
            "{packet} {}: after the handle, {}",
            handle.escape_ascii(),
            show_after_handle(after)
        );
    }
}

#[cfg(test)]
mod tests;
