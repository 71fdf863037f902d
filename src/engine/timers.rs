//! The engine's timer events and what fires them: job time-outs, future jobs coming due,
//! schedule runs, held GRABs, unanswered wake-ups, the drain deadline.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerEvent {
    /// A running job's CAN_DO_TIMEOUT ran out (`id` tells the job from a later one in its slot).
    JobTimeout { job: JobKey, id: u64 },
    /// A future job is due.
    JobDue { job: JobKey, id: u64 },
    /// A graceful shutdown waited long enough.
    DrainTimeout,
    /// A schedule entry's run is due (`generation` tells loads apart).
    ScheduleFire { slot: usize, generation: u64 },
    /// A heartbeat entry's run scheduled at `scheduled_ms` has had its grace (schedules/watch.rs).
    PingGrace {
        slot: usize,
        generation: u64,
        scheduled_ms: u64,
    },
    /// A heartbeat run that pinged its start at `started_ms` reached its `max_duration=`.
    PingTooLong {
        slot: usize,
        generation: u64,
        started_ms: u64,
    },
    /// A scheduled job taken at `started_ms` reached its entry's `max_duration=`.
    RunTooLong {
        job: JobKey,
        id: u64,
        started_ms: u64,
    },
    /// An `@after` entry's set reached its `within=` (schedules/after.rs).
    AfterWithin { slot: usize, generation: u64 },
    /// A held GRAB waited long enough: NO_JOB.
    GrabWait { conn: ConnId },
    /// Time to log the functions forgotten since the last summary (forget.rs).
    ForgetLog,
    /// A worker woken for a job of `func` has not asked for it (`--worker-wakeup-next`).
    WakeupNext { conn: ConnId, func: FuncId },
    /// The oldest kept output is past `--keep-results` (output/).
    OutputExpiry,
    /// A function's `rate` window has room again (limits/).
    GateOpens { func: FuncId },
    /// A webhook alert's backoff is over: the loop wakes, and the reactor's client asks for
    /// what is due (hooks.rs).
    HookDue,
}

impl Engine {
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
                TimerEvent::AfterWithin { slot, generation } => {
                    self.after_within(slot, generation, now, out)
                }
                TimerEvent::PingGrace {
                    slot,
                    generation,
                    scheduled_ms,
                } => self.ping_grace_over(slot, generation, scheduled_ms, now, out),
                TimerEvent::PingTooLong {
                    slot,
                    generation,
                    started_ms,
                } => self.ping_too_long(slot, generation, started_ms, now, out),
                TimerEvent::RunTooLong {
                    job,
                    id,
                    started_ms,
                } => self.job_too_long(job, id, started_ms, now, out),
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
                TimerEvent::ForgetLog => self.forget_log_due(now),
                TimerEvent::OutputExpiry => self.output_expiry_due(now),
                TimerEvent::WakeupNext { conn, func } => self.wakeup_overdue(conn, func, now, out),
                TimerEvent::GateOpens { func } => self.gate_due(func, now, out),
                TimerEvent::HookDue => {}
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
                    self.note_queued(job, f, now);
                    self.enqueue(job, false);
                    self.wake_workers(f, now, out);
                }
            }
        }
        self.serve_held_grabs(now, out);
        // Once per turn (the reactor calls this every turn): the idle functions' bound.
        self.trim_idle(now);
    }

    /// When a SUBMIT_JOB_SCHED job is due: the next minute after `now` that its fields match.
    pub(super) fn sched_due(&self, fields: &[Bytes; 5], now: u64) -> Result<u64, String> {
        let spec = SchedSpec::parse(fields)?;
        let after = chrono::DateTime::from_timestamp_millis(now as i64).unwrap_or_default();
        spec.next_after(after, &self.config.zone)
            .map(|t| t.timestamp_millis() as u64)
            .ok_or_else(|| "the fields never match a time in the next 29 years".to_string())
    }
}
