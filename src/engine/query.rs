//! Read-only views of the engine's state as plain structs, for the HTTP endpoints and
//! `/metrics`, plus the per-function job counters. Nothing here changes a job; the counters
//! are bumped from the engine's event sites through `count`.

use bytes::Bytes;

use super::types::JobCounters;
use super::{Engine, FuncId, JobKey, JobState};
use crate::proto::request::Priority;

/// One function as `status` and `prioritystatus` see it, with its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionStatus {
    pub name: Bytes,
    /// Queued (runnable) jobs per priority: high, normal, low.
    pub queued: [u32; 3],
    pub running: u32,
    /// Future jobs waiting for their time (SUBMIT_JOB_EPOCH / SCHED).
    pub future: u32,
    /// Worker registrations (one per CAN_DO, as `status` counts them).
    pub workers: u32,
    pub counters: JobCounters,
    /// `pause function`: no job of it is handed out (limits/).
    pub paused: bool,
}

impl FunctionStatus {
    pub fn queued_total(&self) -> u32 {
        self.queued.iter().sum()
    }

    /// `status`'s TOTAL: queued, running and future jobs.
    pub fn total(&self) -> u32 {
        self.queued_total() + self.running + self.future
    }
}

/// One connection that registered at least one function (`workers`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerStatus {
    pub id: super::ConnId,
    pub fd: i32,
    pub ip: String,
    pub client_id: Bytes,
    /// Registered functions, newest first, as `workers` lists them.
    pub functions: Vec<Bytes>,
    /// The jobs it is running, in the order it took them.
    pub running: Vec<RunningJob>,
    /// Who the gate knows it as (`addr:IP`, `cn:NAME`): the reactor fills it in, the engine
    /// never sees identities.
    pub identity: Option<String>,
}

/// A job a worker runs, and since when (the JOB_ASSIGN's time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningJob {
    pub handle: Bytes,
    pub function: Bytes,
    pub since_ms: u64,
}

/// A future job waiting for its due time (the console's Jobs view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FutureJob {
    pub handle: Bytes,
    pub function: Bytes,
    pub unique: Bytes,
    pub due_ms: u64,
}

/// Where a known job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPhase {
    Queued,
    Running,
    /// Waiting for its due time.
    Future,
}

impl JobPhase {
    pub fn name(self) -> &'static str {
        match self {
            JobPhase::Queued => "queued",
            JobPhase::Running => "running",
            JobPhase::Future => "future",
        }
    }
}

/// A known job's details beyond GET_STATUS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobDetail {
    pub function: Bytes,
    pub unique: Bytes,
    pub phase: JobPhase,
    pub priority: Priority,
    pub background: bool,
    pub retries: u32,
    /// Foreground clients waiting for the result.
    pub clients: u32,
    /// When it was submitted (restored, for a job read back from the journal).
    pub added_ms: u64,
    /// Due time (ms since the epoch) of a future job.
    pub due_ms: Option<u64>,
    /// A running job: when its worker took it, and who that is.
    pub started_ms: Option<u64>,
    pub worker: Option<std::rc::Rc<str>>,
    /// A running job that keeps its output: the bytes it printed so far.
    pub output_bytes: Option<u64>,
}

/// GET_STATUS of one handle, with details when the job is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStatus {
    pub handle: Bytes,
    pub known: bool,
    pub running: bool,
    pub numerator: u32,
    pub denominator: u32,
    pub detail: Option<JobDetail>,
}

/// One schedule entry with its history (`show schedules`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleStatus {
    pub id: String,
    pub spec: String,
    /// The spec and its zone in words (`crate::schedule::words`).
    pub says: String,
    pub function: String,
    /// Scheduled time of the next run (ms since the epoch).
    pub next_ms: Option<u64>,
    pub last_run_ms: Option<u64>,
    pub last_outcome: Option<String>,
    pub last_duration_ms: Option<u64>,
    pub runs: u64,
    pub failures: u64,
    pub skips: u64,
    /// `too_long` and `too_short` alerts since start (`max_duration=`, `min_duration=`).
    pub too_long: u64,
    pub too_short: u64,
    /// `pause schedule`: fires nothing until resumed.
    pub paused: bool,
    /// `skip schedule`: the next run of its timing is skipped.
    pub skip_next: bool,
    /// The last run was a `run schedule`.
    pub last_run_manual: bool,
    /// Why the last failed, missed or skipped run went wrong.
    pub last_error: Option<String>,
    /// The last runs (at most `RUNS_KEPT`), oldest first.
    pub recent_runs: Vec<super::RunRecord>,
    /// One per recent run, in its order: the run's job handle and the bytes it printed,
    /// while its output is kept.
    pub recent_outputs: Vec<Option<(Bytes, u64)>>,
    /// Retries of its runs waiting for their backoff.
    pub retries_pending: u32,
    /// One per recent run, in its order: an `@after` run's parents' runs (JSON, as
    /// `{after}`).
    pub recent_after: Vec<Option<String>>,
    /// An `@after` entry's parents' runs since it last ran (JSON), else `None`.
    pub after_pending: Option<String>,
    /// Runs waiting to be made: a backfill's, `catchup=all`'s, `overlap=queue`'s.
    pub runs_waiting: u64,
}

/// Engine-wide numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineTotals {
    /// Jobs the engine holds (queued, running and future).
    pub jobs: usize,
    pub running: usize,
    pub functions: usize,
    /// Connections the engine knows (clients, workers, admin sessions, HTTP).
    pub connections: usize,
    /// Connections with at least one registered function.
    pub workers: usize,
    pub schedules: usize,
    /// A graceful shutdown is under way.
    pub draining: bool,
    /// Held GRABs (`--grab-wait`) answered with a job, and with NO_JOB at their deadline.
    pub grab_waits_assigned: u64,
    pub grab_waits_expired: u64,
    /// CAN_DOs refused past `--max-functions-per-worker`.
    pub functions_refused: u64,
    /// Idle functions kept now, and those forgotten past `--max-idle-functions` since start.
    pub functions_idle: usize,
    pub functions_forgotten: u64,
    /// Every function's job counters summed, forgotten functions' included.
    pub counters: JobCounters,
    /// Woken workers that had not asked for a job `--worker-wakeup-next` after their NOOP.
    pub wakeups_overdue: u64,
    /// Ended jobs' outputs kept, the bytes they count against `--keep-output-total`, and
    /// those that bound dropped before their time (output/).
    pub outputs_kept: usize,
    pub outputs_kept_bytes: usize,
    pub outputs_dropped: u64,
}

/// A counted job event (see `JobCounters`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    Submitted,
    Completed,
    Failed,
    Exception,
    Retried,
}

impl Engine {
    /// Count one job event of function `f` (a no-op if the function is gone).
    pub(crate) fn count(&mut self, f: FuncId, ev: Counted) {
        let Some(func) = self.functions.get_mut(f) else {
            return;
        };
        for c in [&mut func.counters, &mut self.counted] {
            match ev {
                Counted::Submitted => c.submitted += 1,
                Counted::Completed => c.completed += 1,
                Counted::Failed => c.failed += 1,
                Counted::Exception => c.exceptions += 1,
                Counted::Retried => c.retried += 1,
            }
        }
    }

    /// Every function's counters summed (kept as they are bumped: reading it is O(1), so the
    /// loop can sample it every turn for the console's rate chart).
    pub fn counters(&self) -> JobCounters {
        self.counted
    }

    /// The `limit` future jobs due first, and how many there are in all.
    pub fn future_jobs(&self, limit: usize) -> (usize, Vec<FutureJob>) {
        // The functions count their future jobs: with none, no walk over every job (a
        // console polls this while a busy queue holds many).
        if self.functions.iter().all(|(_, f)| f.future == 0) {
            return (0, Vec::new());
        }
        let mut rows: Vec<(u64, u64, JobKey)> = self
            .jobs
            .iter()
            .filter(|(_, j)| matches!(j.state(), JobState::Future))
            .map(|(k, j)| (self.due_ms(k).unwrap_or(0), j.id, k))
            .collect();
        let total = rows.len();
        rows.sort_unstable();
        rows.truncate(limit);
        let list = rows
            .into_iter()
            .filter_map(|(due_ms, _, k)| {
                let j = self.jobs.get(k)?;
                Some(FutureJob {
                    handle: Bytes::from(self.by_handle.of(j).to_string()),
                    function: self.functions.get(j.func())?.name.clone(),
                    unique: j.unique(),
                    due_ms,
                })
            })
            .collect();
        (total, list)
    }

    /// Every function, in the order `status` lists them.
    pub fn function_statuses(&self) -> Vec<FunctionStatus> {
        self.functions
            .iter()
            .map(|(_, f)| FunctionStatus {
                name: f.name.clone(),
                queued: f.queued,
                running: f.running,
                future: f.future,
                workers: f.registrations,
                counters: f.counters,
                paused: f.gate.as_ref().is_some_and(|g| g.settings.paused),
            })
            .collect()
    }

    /// Connections that registered at least one function, as `workers` lists them.
    pub fn worker_statuses(&self) -> Vec<WorkerStatus> {
        self.conns
            .iter()
            .flatten()
            .filter(|c| !c.abilities.is_empty())
            .map(|c| WorkerStatus {
                id: c.id,
                fd: c.info.fd,
                ip: c.info.ip.to_string(),
                client_id: c.client_id.clone(),
                functions: c
                    .functions_newest_first()
                    .into_iter()
                    .filter_map(|f| self.functions.get(f).map(|f| f.name.clone()))
                    .collect(),
                running: {
                    let mut held: Vec<(u64, u64, usize)> = c
                        .holding
                        .iter()
                        .map(|(k, h)| (h.order, h.since_ms, *k as usize))
                        .collect();
                    held.sort_unstable();
                    held.into_iter()
                        .filter_map(|(_, since_ms, k)| {
                            let j = self.jobs.get(k)?;
                            Some(RunningJob {
                                handle: Bytes::from(self.by_handle.of(j).to_string()),
                                function: self.functions.get(j.func())?.name.clone(),
                                since_ms,
                            })
                        })
                        .collect()
                },
                identity: None,
            })
            .collect()
    }

    /// The functions connection `conn` registered (what a reload of the ACL checks again).
    pub fn functions_of(&self, conn: super::ConnId) -> Vec<Bytes> {
        self.conn(conn).map_or_else(Vec::new, |c| {
            c.functions_newest_first()
                .into_iter()
                .filter_map(|f| self.functions.get(f).map(|f| f.name.clone()))
                .collect()
        })
    }

    /// The function of the job `handle`, when the job is known (what the reactor's gate checks
    /// a WORK_* or GET_STATUS against).
    pub fn job_function(&self, handle: &[u8]) -> Option<&Bytes> {
        let live = self
            .by_handle
            .get(handle, &self.jobs)
            .and_then(|k| Some(&self.functions.get(self.jobs.get(k)?.func())?.name));
        // An ended job whose output is kept is still its function's.
        live.or_else(|| self.kept_job(handle).map(|j| &j.func))
    }

    /// GET_STATUS of `handle`, with the job's details when it is known.
    pub fn job_status(&self, handle: &[u8]) -> JobStatus {
        let handle_b = Bytes::copy_from_slice(handle);
        let Some((k, job)) = self
            .by_handle
            .get(handle, &self.jobs)
            .and_then(|k| Some((k, self.jobs.get(k)?)))
        else {
            return JobStatus {
                handle: handle_b,
                known: false,
                running: false,
                numerator: 0,
                denominator: 0,
                detail: None,
            };
        };
        let phase = match job.state() {
            JobState::Queued => JobPhase::Queued,
            JobState::Running(_) => JobPhase::Running,
            JobState::Future => JobPhase::Future,
        };
        let extra = self.extra(k);
        JobStatus {
            handle: handle_b,
            known: true,
            running: phase == JobPhase::Running,
            numerator: extra.map_or(0, |e| e.numerator),
            denominator: extra.map_or(0, |e| e.denominator),
            detail: Some(JobDetail {
                function: self
                    .functions
                    .get(job.func())
                    .map(|f| f.name.clone())
                    .unwrap_or_default(),
                unique: job.unique(),
                phase,
                priority: job.priority,
                background: job.background(),
                retries: extra.map_or(0, |e| e.retries),
                clients: self.clients(k).len() as u32,
                added_ms: job.added_ms,
                due_ms: self.due_ms(k),
                started_ms: match job.state() {
                    JobState::Running(w) => self
                        .conn(w)
                        .and_then(|c| c.holding.get(&(k as u32)))
                        .map(|h| h.since_ms),
                    _ => None,
                },
                worker: match job.state() {
                    JobState::Running(w) => Some(self.worker_identity(w)),
                    _ => None,
                },
                output_bytes: match job.state() {
                    JobState::Running(_) => self.live_output_bytes(k),
                    _ => None,
                },
            }),
        }
    }

    /// The schedule entries with their next and last runs and outcomes, in file order.
    pub fn schedule_statuses(&self) -> Vec<ScheduleStatus> {
        let pending = self.retries_pending_by_entry();
        self.schedules
            .entries
            .iter()
            .map(|st| {
                let h = &st.history;
                ScheduleStatus {
                    id: st.id.to_string(),
                    spec: st.entry.spec.clone(),
                    says: st.says(),
                    function: st.entry.function.clone(),
                    next_ms: st.next_ms,
                    last_run_ms: h.last_run_ms,
                    last_outcome: h.last_outcome.clone(),
                    last_duration_ms: h.last_duration_ms,
                    runs: h.runs,
                    failures: h.failures,
                    skips: h.skips,
                    too_long: h.too_long,
                    too_short: h.too_short,
                    paused: h.marks.paused,
                    skip_next: h.marks.skip_next,
                    last_run_manual: h.last_run_ms.is_some() && h.marks.last_manual,
                    last_error: h.last_error.clone(),
                    recent_runs: h.recent.iter().cloned().collect(),
                    recent_outputs: h
                        .recent
                        .iter()
                        .map(|r| {
                            self.kept_run(&st.id, r)
                                .map(|j| (j.handle.clone(), j.output_bytes))
                        })
                        .collect(),
                    retries_pending: pending.get(&st.id).copied().unwrap_or(0),
                    recent_after: h
                        .recent
                        .iter()
                        .map(|r| {
                            let link = self.schedules.after.link(&st.id, r.scheduled_ms);
                            link.filter(|_| !r.manual)
                                .map(|l| super::schedules::after::after_json(&l.parents))
                        })
                        .collect(),
                    after_pending: matches!(
                        st.entry.timing,
                        crate::schedule::cron::Timing::After(_)
                    )
                    .then(|| {
                        super::schedules::after::after_json(self.schedules.after.pending(&st.id))
                    }),
                    runs_waiting: self.pending_runs(&st.id),
                }
            })
            .collect()
    }

    pub fn totals(&self) -> EngineTotals {
        let conns = self.conns.iter().flatten();
        EngineTotals {
            jobs: self.jobs.len(),
            running: self.running,
            functions: self.functions.len(),
            connections: conns.clone().count(),
            workers: conns.filter(|c| !c.abilities.is_empty()).count(),
            schedules: self.schedules.entries.len(),
            draining: self.draining,
            grab_waits_assigned: self.grab_waits_assigned,
            grab_waits_expired: self.grab_waits_expired,
            functions_refused: self.functions_refused,
            functions_idle: self.idle.len(),
            functions_forgotten: self.idle.forgotten,
            counters: self.counted,
            wakeups_overdue: self.wakeups_overdue,
            outputs_kept: self.kept_totals().0,
            outputs_kept_bytes: self.kept_totals().1,
            outputs_dropped: self.kept_totals().2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ConnId, ConnInfo, EngineConfig, Outbox};
    use crate::proto::request::{JobBody, Request};

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn conn(e: &mut Engine, i: u32) -> ConnId {
        let id = ConnId {
            index: i,
            generation: 1,
        };
        e.connect(
            id,
            ConnInfo {
                fd: 20 + i as i32,
                ip: [127, 0, 0, 1].into(),
            },
        );
        id
    }

    fn submit(e: &mut Engine, id: ConnId, f: &str, p: Priority, bg: bool, out: &mut Outbox) {
        e.handle(
            id,
            Request::SubmitJob {
                func: b(f),
                body: JobBody::new(b"", b"x"),
                priority: p,
                background: bg,
            },
            1000,
            out,
        );
    }

    #[test]
    fn statuses_and_counters_follow_the_jobs() {
        let mut e = Engine::new(EngineConfig {
            handle_prefix: "H:q".into(),
            ..EngineConfig::default()
        });
        let mut out = Outbox::default();
        let client = conn(&mut e, 0);
        let worker = conn(&mut e, 1);
        submit(&mut e, client, "f", Priority::High, true, &mut out);
        submit(&mut e, client, "f", Priority::Low, true, &mut out);
        submit(&mut e, client, "f", Priority::Low, false, &mut out);
        e.handle(worker, Request::CanDo { func: b("f") }, 1000, &mut out);
        e.handle(worker, Request::SetClientId { id: b("w1") }, 1000, &mut out);
        e.handle(
            worker,
            Request::GrabJob(crate::proto::request::GrabKind::Plain),
            1000,
            &mut out,
        );
        let fs = e.function_statuses();
        assert_eq!(fs.len(), 1);
        assert_eq!(fs[0].queued, [0, 0, 2]);
        assert_eq!((fs[0].running, fs[0].workers, fs[0].total()), (1, 1, 3));
        assert_eq!(fs[0].counters.submitted, 3);

        let ws = e.worker_statuses();
        assert_eq!(ws.len(), 1);
        assert_eq!((ws[0].fd, &ws[0].client_id[..]), (21, &b"w1"[..]));
        assert_eq!(ws[0].functions, vec![b("f")]);
        // The worker took H:q:1 at the GRAB's time: its "since" is the engine's `now` then.
        assert_eq!(
            ws[0].running,
            vec![RunningJob {
                handle: b("H:q:1"),
                function: b("f"),
                since_ms: 1000,
            }]
        );

        let st = e.job_status(b"H:q:1");
        assert!(st.known && st.running);
        let d = st.detail.unwrap();
        assert_eq!(
            (d.phase, d.priority, d.background),
            (JobPhase::Running, Priority::High, true)
        );
        assert!(!e.job_status(b"H:q:99").known);

        e.handle(
            worker,
            Request::WorkComplete {
                handle: b("H:q:1"),
                data: b("ok"),
            },
            1000,
            &mut out,
        );
        e.handle(
            worker,
            Request::GrabJob(crate::proto::request::GrabKind::Plain),
            1000,
            &mut out,
        );
        e.handle(
            worker,
            Request::WorkException {
                handle: b("H:q:2"),
                data: b("boom"),
            },
            1000,
            &mut out,
        );
        e.handle(
            worker,
            Request::GrabJob(crate::proto::request::GrabKind::Plain),
            1000,
            &mut out,
        );
        // The worker dies holding job 3: it is given back (retried).
        e.disconnect(worker, 1000, &mut out);
        let c = e.function_statuses()[0].counters;
        assert_eq!(
            c,
            JobCounters {
                submitted: 3,
                completed: 1,
                failed: 0,
                exceptions: 1,
                retried: 1,
            }
        );
        let w2 = conn(&mut e, 2);
        e.handle(w2, Request::CanDo { func: b("f") }, 1000, &mut out);
        e.handle(
            w2,
            Request::GrabJob(crate::proto::request::GrabKind::Plain),
            1000,
            &mut out,
        );
        e.handle(
            w2,
            Request::WorkFail {
                handle: b("H:q:3"),
                after_handle: b(""),
            },
            1000,
            &mut out,
        );
        assert_eq!(e.function_statuses()[0].counters.failed, 1);
        let t = e.totals();
        assert_eq!((t.jobs, t.running, t.functions, t.workers), (0, 0, 1, 1));
        assert_eq!(t.connections, 2);
    }
}
