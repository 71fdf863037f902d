//! The engine's records: connections as the engine sees them, functions with their queues,
//! and jobs. Plain data with small helpers; the rules live in the engine proper.

use std::net::IpAddr;

use bytes::Bytes;

use crate::proto::request::{JobBody, Priority};
use crate::timer::TimerKey;

/// A connection's identity: the reactor's slab index plus a generation, so that a reply meant
/// for a closed connection never reaches the next one to take its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    pub index: u32,
    pub generation: u32,
}

/// What the reactor tells the engine about a new connection (for `workers`).
#[derive(Clone, Debug)]
pub struct ConnInfo {
    pub fd: i32,
    /// The peer's address, canonical; written out only when listed (a `String` here was an
    /// allocation for every connection).
    pub ip: IpAddr,
}

pub type FuncId = usize;
pub type JobKey = usize;

/// One function a worker registered (CAN_DO twice counts twice, as gearmand).
#[derive(Clone, Copy, Debug)]
pub struct Ability {
    pub count: u32,
    /// CAN_DO_TIMEOUT in milliseconds (of the newest registration).
    pub timeout_ms: Option<u64>,
    /// Higher is newer (gearmand lists a worker's functions newest first); with
    /// `--round-robin`, a function just served drops below all the others.
    pub order: i64,
    /// This worker's place in the function's `workers`.
    pub pos: u32,
    /// Jobs of this function the worker is running (in its `holding`).
    pub held: u32,
}

/// A job a worker runs: the order it took it in (its jobs go back in that order) and when it
/// was handed over (the `now` of the JOB_ASSIGN, for the console's "running for"). One u64
/// more per running job; the engine reads no clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    pub order: u64,
    pub since_ms: u64,
}

/// The engine's view of one connection.
#[derive(Debug)]
pub struct Conn {
    pub id: ConnId,
    pub info: ConnInfo,
    pub client_id: Bytes,
    /// Registrations by function (see `functions_newest_first` for gearmand's order).
    pub abilities: super::FastMap<FuncId, Ability>,
    /// CAN_DOs counted in `abilities` (duplicates too): bounded by
    /// `--max-functions-per-worker`.
    pub registrations: u32,
    /// CAN_DOs refused past that bound (the first is logged).
    pub refused_functions: u32,
    /// The highest and lowest `Ability::order` handed out.
    pub order_hi: i64,
    pub order_lo: i64,
    pub sleeping: bool,
    pub noop_sent: bool,
    pub exceptions: bool,
    /// Jobs this worker is running, with the order it took them in (`taken`) and when.
    pub holding: super::FastMap<u32, Held>,
    pub taken: u64,
    /// Foreground jobs this client waits for.
    pub attached: super::FastSet<u32>,
    /// The handle of the last job this worker ended with WORK_EXCEPTION.
    pub last_exception: Option<Bytes>,
    /// The worker ended a job since its last GRAB: its next GRAB may wait (`--grab-wait`).
    pub just_ended: bool,
    /// A GRAB that found nothing and waits for a job (or its deadline, then NO_JOB). Nothing
    /// else this connection sent is served meanwhile, so replies keep their order.
    pub held_grab: Option<HeldGrab>,
    /// On the engine's list of held GRABs to try again.
    pub grab_retry_queued: bool,
    /// The function whose job this worker was woken for (NOOP or a held GRAB tried again):
    /// if it takes another job or leaves, the wake-up is passed on for that function.
    pub woken_for: Option<FuncId>,
    /// While a NOOP is unanswered: the `--worker-wakeup-next` deadline after which the next
    /// sleeper is woken for `woken_for`'s job.
    pub wake_timer: Option<TimerKey>,
    /// Its place in the engine's list of waiting workers (`NIL`: not on it).
    pub waiting_pos: u32,
    /// Who the reactor knows it as, when not by its address (`cn:NAME`).
    pub identity: Option<std::rc::Rc<str>>,
}

/// A waiting GRAB: what to answer with, and the deadline's timer.
#[derive(Clone, Copy, Debug)]
pub struct HeldGrab {
    pub kind: crate::proto::request::GrabKind,
    pub timer: TimerKey,
}

impl Conn {
    pub fn new(id: ConnId, info: ConnInfo, exceptions: bool) -> Conn {
        Conn {
            id,
            info,
            client_id: Bytes::from_static(b"-"),
            abilities: Default::default(),
            registrations: 0,
            refused_functions: 0,
            order_hi: 0,
            order_lo: 0,
            sleeping: false,
            noop_sent: false,
            exceptions,
            holding: Default::default(),
            taken: 0,
            attached: Default::default(),
            last_exception: None,
            just_ended: false,
            held_grab: None,
            grab_retry_queued: false,
            woken_for: None,
            wake_timer: None,
            waiting_pos: NIL,
            identity: None,
        }
    }

    pub fn can_do(&self, func: FuncId) -> bool {
        self.abilities.contains_key(&func)
    }

    pub fn timeout_for(&self, func: FuncId) -> Option<u64> {
        self.abilities.get(&func).and_then(|a| a.timeout_ms)
    }

    /// Waits for a job: asleep and not yet woken, or holding a GRAB not yet tried again.
    pub fn waits(&self) -> bool {
        (self.sleeping && !self.noop_sent) || (self.held_grab.is_some() && !self.grab_retry_queued)
    }

    /// Registered functions newest first, a function registered twice listed twice (the
    /// order of gearmand's `workers`). For admin replies: it sorts.
    pub fn functions_newest_first(&self) -> Vec<FuncId> {
        let mut v: Vec<(&FuncId, &Ability)> = self.abilities.iter().collect();
        v.sort_by_key(|(_, a)| std::cmp::Reverse(a.order));
        v.into_iter()
            .flat_map(|(&f, a)| std::iter::repeat_n(f, a.count as usize))
            .collect()
    }
}

/// No job: the end of a queue.
pub const NIL: u32 = u32::MAX;

/// One priority's FIFO of queued jobs: a doubly linked list through the jobs' `prev` and
/// `next`, so a job leaves it from anywhere in O(1) and the queue itself owns no memory.
#[derive(Clone, Copy, Debug)]
pub struct JobList {
    pub head: u32,
    pub tail: u32,
}

impl Default for JobList {
    fn default() -> Self {
        JobList {
            head: NIL,
            tail: NIL,
        }
    }
}

/// A function name with its three priority queues and counters.
#[derive(Debug)]
pub struct Function {
    pub name: Bytes,
    pub queues: [JobList; 3],
    /// Jobs in each queue.
    pub queued: [u32; 3],
    pub running: u32,
    /// Future jobs waiting in the timer for their time.
    pub future: u32,
    /// Workers that registered the function, each once (its `Ability::pos` is its place).
    pub workers: Vec<ConnId>,
    /// CAN_DOs of those workers (duplicates count, as gearmand's `status`).
    pub registrations: u32,
    /// Its place in the engine's list of non-empty queues of each priority (`NIL`: empty).
    pub nonempty_pos: [u32; 3],
    /// Where the next wake-up starts, so that wake-ups rotate over the sleepers.
    pub wake_cursor: usize,
    /// Per-priority cap on the function's total jobs; 0 means unlimited.
    pub max_queue: [u32; 3],
    /// An admin named it (`create function`, `maxqueue` with limits): kept while unused.
    pub pinned: bool,
    /// Jobs of this function since start, for `/metrics` (kept here: no hashing per event).
    pub counters: JobCounters,
    /// `retry FUNCTION N BACKOFF`: this function's retry policy, over `--retry`.
    pub retry: Option<crate::schedule::backoff::RetryPolicy>,
    /// On the engine's list of idle functions (forget.rs), and its neighbours there.
    pub idle_listed: bool,
    pub idle_prev: u32,
    pub idle_next: u32,
    /// `limit`, `rate`, `pause function`, `expire`: the function's settings, if any
    /// (limits/).
    pub gate: Option<Box<super::limits::Gate>>,
    /// The gate holds its jobs back: its queues are off the engine's non-empty lists.
    pub held: bool,
}

/// Cumulative job events of one function since the server started. A job ends once, in one of
/// completed, failed, exceptions (or cancelled, not counted); an attempt run again is retried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobCounters {
    /// Jobs created (coalesced submits join an existing job and are not counted); a retry
    /// after its backoff is a new job, with its own handle, and counts.
    pub submitted: u64,
    /// Ended with WORK_COMPLETE.
    pub completed: u64,
    /// Failed for good: WORK_FAIL from the worker, or failed by the server (CAN_DO_TIMEOUT,
    /// `--job-retries` spent), with no retry left; cancelled jobs are not counted.
    pub failed: u64,
    /// Ended for good with WORK_EXCEPTION (no retry left).
    pub exceptions: u64,
    /// Attempts run again: given back by a worker that died or stopped doing the function, or
    /// failed with a retry of its policy left (retries.rs).
    pub retried: u64,
}

impl Function {
    pub fn new(name: Bytes, max_queue: u32) -> Self {
        Function {
            name,
            queues: Default::default(),
            queued: [0; 3],
            running: 0,
            future: 0,
            workers: Vec::new(),
            registrations: 0,
            nonempty_pos: [NIL; 3],
            wake_cursor: 0,
            max_queue: [max_queue; 3],
            pinned: false,
            counters: JobCounters::default(),
            retry: None,
            idle_listed: false,
            idle_prev: NIL,
            idle_next: NIL,
            gate: None,
            held: false,
        }
    }

    pub fn queued_total(&self) -> u32 {
        self.queued.iter().sum()
    }

    /// `status`'s TOTAL: queued, running and future jobs, as gearmand counts them.
    pub fn total(&self) -> u32 {
        self.queued_total() + self.running + self.future
    }
}

/// What a job is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running(ConnId),
    /// Waiting in the timer until its due time (see `Job::future_timer`); not in any queue.
    Future,
}

/// `Job::flags`: a background job (it runs whether or not a client waits).
pub const BACKGROUND: u8 = 1;
/// `Job::flags`: the job is in the unique index (under `Job::key_ref`).
pub const INDEXED: u8 = 2;
/// `Job::flags`: the job has an entry in the engine's `extras` (clients, status, retries, a
/// timer, a reducer, a schedule origin).
pub const EXTRA: u8 = 4;
/// `Job::flags`: the handle is not this run's `<prefix>:<id>` (a job read back from a
/// journal written under another prefix); the handle index keeps it.
pub const FOREIGN: u8 = 8;

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const FUTURE: u8 = 2;

/// A job: 72 bytes, which every queued job pays (plus a few in each index). What few jobs
/// have lives in the engine's `extras`, flagged by `EXTRA`.
#[derive(Debug)]
pub struct Job {
    /// The unique and the data: one slice of the packet they came in.
    pub body: JobBody,
    /// The handle's counter `n` (the handle is `<prefix>:<id>`), the job's id in the journal.
    /// Unique among live jobs, and increasing in order of submission (jobs read back from a
    /// journal keep theirs, all below the next new one): the queues' "oldest first" order.
    pub id: u64,
    /// When it was submitted (ms since the epoch; a job read back from the journal: when it
    /// was restored), for its age in the job lists. A u32 of seconds would cost the same 8
    /// bytes: the struct is 8-aligned and had one byte to spare.
    pub added_ms: u64,
    /// Queued: the neighbours in the function's queue (`NIL` at an end). Running: the
    /// worker's `ConnId` (index, generation). Future: the index of its `JobDue` entry in the
    /// timer wheel. Read through `state()`.
    link: [u32; 2],
    pub func: u32,
    place: u8,
    pub priority: Priority,
    /// `BACKGROUND`, `INDEXED`, `EXTRA`, `FOREIGN`.
    pub flags: u8,
}

impl Job {
    pub fn new(
        body: JobBody,
        id: u64,
        added_ms: u64,
        func: FuncId,
        priority: Priority,
        flags: u8,
    ) -> Job {
        Job {
            body,
            id,
            added_ms,
            link: [NIL, NIL],
            func: func as u32,
            place: QUEUED,
            priority,
            flags,
        }
    }

    pub fn func(&self) -> FuncId {
        self.func as FuncId
    }

    pub fn state(&self) -> JobState {
        match self.place {
            RUNNING => JobState::Running(ConnId {
                index: self.link[0],
                generation: self.link[1],
            }),
            FUTURE => JobState::Future,
            _ => JobState::Queued,
        }
    }

    /// Set the state; a queued job's links are the queue's to set (see `Engine::enqueue`).
    pub fn set_state(&mut self, s: JobState) {
        (self.place, self.link) = match s {
            JobState::Queued => (QUEUED, [NIL, NIL]),
            JobState::Running(c) => (RUNNING, [c.index, c.generation]),
            JobState::Future => (FUTURE, [NIL, NIL]),
        };
    }

    /// Wait in the wheel, in the entry at `timer_index` (the `JobDue` event of this job).
    pub fn set_future(&mut self, timer_index: u32) {
        (self.place, self.link) = (FUTURE, [timer_index, NIL]);
    }

    /// A future job's entry in the timer wheel (an index for `Timers::key_at`).
    pub fn future_timer(&self) -> Option<u32> {
        (self.place == FUTURE).then_some(self.link[0])
    }

    /// The neighbours in the queue (meaningful while queued).
    pub fn prev(&self) -> u32 {
        self.link[0]
    }

    pub fn next(&self) -> u32 {
        self.link[1]
    }

    pub fn set_prev(&mut self, k: u32) {
        self.link[0] = k;
    }

    pub fn set_next(&mut self, k: u32) {
        self.link[1] = k;
    }

    pub fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    pub fn background(&self) -> bool {
        self.is(BACKGROUND)
    }

    pub fn unique(&self) -> Bytes {
        self.body.unique()
    }

    pub fn data(&self) -> Bytes {
        self.body.data()
    }
}

/// What few jobs have, kept beside the job (in the engine's `extras`) rather than in every
/// job: foreground clients, WORK_STATUS numbers, retries, an armed timer, rare fields.
#[derive(Debug, Default)]
pub struct JobExtra {
    /// Foreground clients in attach order.
    pub clients: Clients,
    pub numerator: u32,
    pub denominator: u32,
    pub retries: u32,
    /// A running job's CAN_DO_TIMEOUT deadline.
    pub timer: Option<TimerKey>,
    pub rare: Option<Box<Rare>>,
    /// What the job printed so far (a job that keeps its output, once it printed).
    pub output: Option<Box<super::output::OutputBuf>>,
}

/// Fields only a few jobs of a few kinds have.
#[derive(Debug, Default)]
pub struct Rare {
    /// SUBMIT_REDUCE_JOB's reducer.
    pub reducer: Option<Bytes>,
    /// The schedule entry that injected the job (and when a worker last took it).
    pub origin: Option<Origin>,
    /// Failed attempts before this one, when it is a retry (src/engine/failures/retries.rs).
    pub failures: u32,
    /// When its first attempt failed (0: it is not a retry).
    pub first_fail_ms: u64,
}

/// Where a scheduled job came from, so its outcome reaches the entry's history.
#[derive(Clone, Debug)]
pub struct Origin {
    pub entry: std::rc::Rc<str>,
    /// The run's scheduled (nominal) time.
    pub scheduled_ms: u64,
    /// When a worker last took the job (only scheduled jobs need it: the outcome's duration).
    pub started_ms: Option<u64>,
    /// Started by `run schedule` (or a backfill), not by the entry's timing.
    pub manual: bool,
    /// A backfill's run: `scheduled_ms` is the past time it stands for.
    pub backfill: bool,
    /// The entry's `max_duration=` deadline for the attempt running, cancelled at its end.
    pub too_long: Option<crate::timer::TimerKey>,
}

/// A job's foreground clients in attach order: none (background jobs), one inline (the usual
/// foreground job), or a boxed list when several submits coalesced. 16 bytes, not a `Vec`'s 24.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Clients {
    #[default]
    None,
    One(ConnId),
    // Boxed on purpose: a `Vec` inline would make every job 8 bytes larger.
    #[allow(clippy::box_collection)]
    Many(Box<Vec<ConnId>>),
}

impl Clients {
    pub fn as_slice(&self) -> &[ConnId] {
        match self {
            Clients::None => &[],
            Clients::One(c) => std::slice::from_ref(c),
            Clients::Many(v) => v,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ConnId> {
        self.as_slice().iter()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    pub fn contains(&self, c: &ConnId) -> bool {
        self.as_slice().contains(c)
    }

    pub fn push(&mut self, c: ConnId) {
        match self {
            Clients::None => *self = Clients::One(c),
            Clients::One(first) => *self = Clients::Many(Box::new(vec![*first, c])),
            Clients::Many(v) => v.push(c),
        }
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&ConnId) -> bool) {
        match self {
            Clients::None => {}
            Clients::One(c) => {
                if !keep(c) {
                    *self = Clients::None;
                }
            }
            Clients::Many(v) => {
                v.retain(|c| keep(c));
                if v.is_empty() {
                    *self = Clients::None;
                }
            }
        }
    }
}

impl<'a> IntoIterator for &'a Clients {
    type Item = &'a ConnId;
    type IntoIter = std::slice::Iter<'a, ConnId>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<ConnId> for Clients {
    fn from_iter<I: IntoIterator<Item = ConnId>>(iter: I) -> Self {
        let mut c = Clients::None;
        for id in iter {
            c.push(id);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every queued job pays for this struct (plus the slab's slack): keep it small.
    #[test]
    fn job_stays_small() {
        let size = std::mem::size_of::<Job>();
        assert!(size <= 72, "Job grew to {size} bytes");
        // The slab's vacant entry fits around the job's niches: no tag of its own.
        enum Entry {
            _Vacant(usize),
            _Occupied(Job),
        }
        assert_eq!(std::mem::size_of::<Entry>(), size);
        assert_eq!(std::mem::size_of::<Clients>(), 16);
    }
}
