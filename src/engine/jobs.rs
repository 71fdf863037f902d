//! A job's life in the engine: submission, creation, the queues, and its end (a result,
//! a failure, a cancel) with what the journal and the schedules learn of it.

use super::*;

impl Engine {
    // ---- clients -------------------------------------------------------------------------

    /// A client's SUBMIT_JOB, of any kind (`NewJob::submitted`): joined to a job with the
    /// same unique, refused when its queue is full, else made; JOB_CREATED either way.
    pub(super) fn submit(&mut self, id: ConnId, new: NewJob, now: u64, out: &mut Outbox) {
        let f = new.func;
        let background = new.background;
        let due_ms = new.due_ms;
        let key = KeyRef::of(new.body.unique_bytes(), new.body.data_bytes());
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
        if self.queue_full(f, new.priority) {
            out.push(id, Response::error("QUEUE_ERROR", "Job queue is full"));
            return;
        }
        // What a job keeps is copied out of the packet: a slice would keep the whole read
        // buffer it arrived in, whatever else that held, for as long as the job waits.
        let new = NewJob {
            body: JobBody::new(new.body.unique_bytes(), new.body.data_bytes()),
            reducer: new.reducer.as_deref().map(Bytes::copy_from_slice),
            ..new
        };
        let k = self.create_job(new, indexed, (!background).then_some(id), now, out);
        let handle = self.by_handle.of(&self.jobs[k]);
        if let Some(due) = due_ms.filter(|&d| d > now) {
            // Here, not in create_job: a job put back from the journal was logged when it came.
            let func = &self.functions[f].name;
            log::info!(
                "accepted future job {handle} ({}), due {}",
                shown(func),
                rfc3339(due)
            );
            let horizon = self.config.future_horizon_ms;
            if let Some(m) = horizon::message(&handle, func, due, now, horizon) {
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
    pub(super) fn queue_full(&self, f: FuncId, priority: Priority) -> bool {
        let fun = &self.functions[f];
        let limit = fun.max_queue[priority.index()];
        limit > 0 && fun.total() >= limit
    }

    /// A large queue has drained to an eighth of its peak: shrink the tables it grew and hand
    /// the freed heap back to the OS, so a burst does not pin its memory for good.
    pub(super) fn give_memory_back(&mut self) {
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
    pub(super) fn create_job(
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
        // A retry's job reuses the id of a function its failed attempt may have left idle.
        self.touch(f);
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
            .insert(Job::new(new.body, job_id, now, f, new.priority, flags));
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
                self.note_queued(k, f, now);
                self.enqueue(k, false);
                self.wake_workers(f, now, out);
            }
        }
        k
    }

    /// Put a job in its function's queue, at the tail (new) or the head (given back).
    pub(super) fn enqueue(&mut self, k: JobKey, front: bool) {
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
        // A held function's queues stay off the lists a handout searches (limits/).
        if filled && !func.held {
            self.queue_filled(f, priority);
        }
    }

    /// Take a queued job out of its function's queue (its state is the caller's to set).
    pub(super) fn unlink(&mut self, k: JobKey) {
        let job = &self.jobs[k];
        let (prev, next, p) = (job.prev(), job.next(), job.priority.index());
        let (f, priority) = (job.func as usize, job.priority);
        let func = &mut self.functions[f];
        func.queued[p] -= 1;
        let emptied = func.queued[p] == 0 && !func.held;
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
    pub(super) fn check_queues(&self) {
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
        self.check_idle();
    }

    /// Remove a job from its queue, every index and counter.
    pub(super) fn remove_job(&mut self, k: JobKey, how: FinishReason) {
        self.remove_job_as(k, how, None);
    }

    /// ... journalled as `record` instead of a JobFinished (a failed job kept in the list).
    pub(super) fn remove_job_as(&mut self, k: JobKey, how: FinishReason, record: Option<Record>) {
        if self.jobs[k].state() == JobState::Queued {
            self.unlink(k);
        }
        let extra = if self.jobs[k].is(EXTRA) {
            self.extras.remove(&(k as u32))
        } else {
            None
        };
        if let Some(buf) = extra.as_ref().and_then(|e| e.output.as_ref()) {
            self.output_released(buf);
        }
        let job = self.jobs.remove(k);
        self.forget_queued(k);
        self.group_job_gone(k);
        self.schedules.pending.may_release();
        if self.config.durable && job.background() {
            self.durable.push(record.unwrap_or(Record::JobFinished {
                id: job.id,
                reason: how,
            }));
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
                    if func.held {
                        self.gates_to_check.push(job.func());
                    }
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
        self.settle(job.func());
        // Last, once the job is out of the slab and every index: what is left is shrunk.
        let drained = self.jobs_peak > SHRINK_FLOOR && self.jobs.len() < self.jobs_peak / 8;
        let emptied = self.jobs.is_empty() && self.jobs.capacity() > SHRINK_FLOOR;
        if drained || emptied {
            self.give_memory_back();
        }
    }

    /// A job ends without a worker's result: its clients get WORK_FAIL.
    pub(super) fn fail_job(&mut self, k: JobKey, reason: FailReason, now: u64, out: &mut Outbox) {
        let job = &self.jobs[k];
        match reason {
            FailReason::Cancelled => {
                log::info!("job {} cancelled by admin", self.by_handle.of(job))
            }
            FailReason::Timeout(_) | FailReason::RetriesSpent | FailReason::Expired => {}
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
            FailReason::Expired => schedules::Outcome::Expired,
        };
        self.end_job(k, outcome, now, out);
    }

    /// A job ended for good: count it, tell its schedule entry, and remove it (which the
    /// journal records). One place, so the three always agree.
    pub(super) fn end_job(
        &mut self,
        k: JobKey,
        outcome: schedules::Outcome<'_>,
        now: u64,
        out: &mut Outbox,
    ) {
        use schedules::Outcome as O;
        let counted = match outcome {
            O::Complete => Some(query::Counted::Completed),
            O::Exception(_) => Some(query::Counted::Exception),
            O::Fail | O::Timeout(_) | O::RetriesSpent | O::Expired => Some(query::Counted::Failed),
            O::Cancelled | O::Requeued => None,
        };
        let how = match outcome {
            O::Complete => FinishReason::Complete,
            O::Exception(_) => FinishReason::Exception,
            O::Fail | O::Requeued | O::Expired => FinishReason::Fail,
            O::Timeout(_) => FinishReason::Timeout,
            O::RetriesSpent => FinishReason::RetriesSpent,
            O::Cancelled => FinishReason::Cancel,
        };
        // A job counts once, as it ends for good; an attempt that its retry policy runs again
        // counts as retried (one definition, for status views, /metrics and the console).
        let f = self.jobs[k].func();
        // Every attempt a worker ran keeps what it printed, a retried one too.
        self.keep_result(k, &outcome, now);
        if self.retry_later(k, &outcome, now) {
            self.count(f, query::Counted::Retried);
            return;
        }
        if let Some(c) = counted {
            self.count(f, c);
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
    pub(super) fn find_by_unique(&self, unique: &Bytes) -> Option<JobKey> {
        self.by_unique.get_any(KeyRef::Unique(unique), &self.jobs)
    }
}
