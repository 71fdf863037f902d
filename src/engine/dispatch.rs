//! A job's way to a worker: GRAB and PRE_SLEEP, held grabs, assignment, the forwarding of
//! a worker's updates to the job's clients, and jobs given back by a worker that leaves.

use super::*;

impl Engine {
    // ---- workers -------------------------------------------------------------------------

    pub(super) fn func_id(&mut self, name: &Bytes) -> FuncId {
        if let Some(&f) = self.func_by_name.get(name) {
            self.touch(f);
            return f;
        }
        // Copied out of the packet, which may sit in a large read buffer.
        let name = Bytes::copy_from_slice(name);
        let f = self
            .functions
            .insert(Function::new(name.clone(), self.config.max_queue));
        self.func_by_name.insert(name, f);
        self.made(f);
        f
    }

    /// Jobs held by a worker that stops doing them go back to the head of their queue,
    /// counted against `--job-retries`; when those are spent the clients get WORK_FAIL.
    pub(super) fn give_back_jobs(
        &mut self,
        id: ConnId,
        only: Option<FuncId>,
        now: u64,
        out: &mut Outbox,
    ) {
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
            .map(|(&k, held)| (held.order, k as JobKey))
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
                self.durable.push(Record::JobRetried {
                    id: job.id,
                    retries,
                });
            }
            let limit = self.config.job_retries;
            if limit > 0 && retries >= limit {
                log::warn!(
                    "Dropped job due to max retry count: {} {}",
                    self.by_handle.of(job),
                    shown(job.body.unique_bytes())
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
            self.gate_job_ended(f);
            self.count(f, query::Counted::Retried);
            self.schedule_outcome(k, schedules::Outcome::Requeued, now, out);
            self.enqueue(k, true);
            self.wake_workers(f, now, out);
        }
    }

    pub(super) fn pre_sleep(&mut self, id: ConnId, now: u64, out: &mut Outbox) {
        // It came: an earlier NOOP is answered.
        self.answered_wakeup(id);
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
                self.expect_grab(id, f, now);
            }
            None => {
                c.sleeping = true;
                c.noop_sent = false;
            }
        }
        self.sync_waiting(id);
    }

    pub(super) fn grab(&mut self, id: ConnId, kind: GrabKind, now: u64, out: &mut Outbox) {
        self.answered_wakeup(id);
        let Some(c) = self.conn_mut(id) else { return };
        c.sleeping = false;
        c.noop_sent = false;
        let just_ended = std::mem::take(&mut c.just_ended);
        self.sync_waiting(id);
        match self.next_job_for(id, now, out) {
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

    /// The job worker `id` gets next, as `find_job_for` says, once the heads that waited past
    /// their function's `expire` have failed (each one looked at leaves, so this ends).
    fn next_job_for(
        &mut self,
        id: ConnId,
        now: u64,
        out: &mut Outbox,
    ) -> Option<(FuncId, Priority)> {
        loop {
            let found = self.find_job_for(id)?;
            if !self.expire_head(found, now, out) {
                return Some(found);
            }
        }
    }

    /// A worker ended a job it ran.
    pub(super) fn ended_by(&mut self, id: ConnId) {
        if let Some(c) = self.conn_mut(id) {
            c.just_ended = true;
        }
    }

    /// Answer the held GRABs that new work may satisfy (queued by `wake_workers`); the others
    /// keep waiting. A loop rather than recursion: an answer may queue more of them.
    pub(super) fn serve_held_grabs(&mut self, now: u64, out: &mut Outbox) {
        // Gates that opened as jobs ended wake workers first (into `grab_retries`), and
        // runs waiting for their group start.
        self.check_gates(now, out);
        self.release_groups(now, out);
        self.release_pending(now, out);
        let mut i = 0;
        while i < self.grab_retries.len() {
            let id = self.grab_retries[i];
            i += 1;
            let Some(c) = self.conn_mut(id) else { continue };
            c.grab_retry_queued = false;
            let Some(held) = c.held_grab else { continue };
            let Some(found) = self.next_job_for(id, now, out) else {
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
    pub(super) fn assign(
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
        self.gate_handed_out(f, now, out);
        let func = &self.functions[f];
        let more_work = func.queued_total() > 0;
        let timeout = self.run_limit(key, f, self.conn(id).and_then(|c| c.timeout_for(f)));
        self.rotate(id, f);
        let job = &mut self.jobs[key];
        job.set_state(JobState::Running(id));
        let job_id = job.id;
        self.output_restarts(key);
        if let Some(origin) = self
            .extra_get_mut(key)
            .and_then(|e| e.rare.as_mut())
            .and_then(|r| r.origin.as_mut())
        {
            origin.started_ms = Some(now);
            self.run_started(key, job_id, now);
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
            let held = Held {
                order: c.taken,
                since_ms: now,
            };
            c.holding.insert(key as u32, held);
            if let Some(a) = c.abilities.get_mut(&f) {
                a.held += 1;
            }
        }
        // Pass the baton: work is left, so wake the next sleeper rather than all of them at
        // submit time. This bounds the herd without leaving a job behind a busy worker.
        if more_work {
            self.wake_workers(f, now, out);
        }
        // The worker may have been woken for another function's job and taken this one
        // instead: whoever else can do that job hears of it now.
        self.pass_wakeups_on(id, Some(f), now, out);
    }

    /// The job named by a worker's WORK_* packet, if this worker runs it; else an ERROR.
    pub(super) fn running_job(
        &self,
        id: ConnId,
        handle: &Bytes,
        text: &'static str,
        now: u64,
        out: &mut Outbox,
    ) -> Option<JobKey> {
        let key = self.by_handle.get(handle, &self.jobs);
        match key {
            Some(k) if self.jobs[k].state() == JobState::Running(id) => Some(k),
            _ => {
                // Most often a late result of a job that timed out (CAN_DO_TIMEOUT or an
                // entry's timeout=) or was cancelled: dropped, and said so.
                crate::peer_log!(
                    now,
                    Cause::Worker,
                    Info,
                    "worker {}: result for \"{}\", not a job it runs (ended: timed out or cancelled, or never its own); dropped",
                    id.index,
                    shown(handle)
                );
                out.push(id, Response::error("JOB_NOT_FOUND", text));
                None
            }
        }
    }

    /// WORK_DATA and WORK_WARNING: passed on to the job's clients.
    pub(super) fn forward(
        &mut self,
        id: ConnId,
        ptype: PacketType,
        handle: Bytes,
        data: Bytes,
        now: u64,
        out: &mut Outbox,
    ) {
        let Some(key) = self.running_job(id, &handle, NOT_FOUND_DATA, now, out) else {
            return;
        };
        self.record_output(key, &data);
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
}
