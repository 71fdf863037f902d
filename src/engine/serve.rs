//! The request match: one arm per Gearman request, each handing off to the module that owns
//! what the request is about (workers, jobs, admin, schedules).

use super::*;

impl Engine {
    pub(super) fn serve(&mut self, id: ConnId, req: Request, now: u64, out: &mut Outbox) {
        match req {
            Request::CanDo { func } => self.can_do(id, func, None, now, out),
            // A timeout of 0 means none (it would fail every job the moment it is assigned).
            Request::CanDoTimeout { func, timeout_ms } => {
                self.can_do(id, func, (timeout_ms > 0).then_some(timeout_ms), now, out)
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
            Request::PreSleep => self.pre_sleep(id, now, out),
            Request::SubmitJob {
                func,
                body,
                priority,
                background,
            } => {
                let new = NewJob::submitted(self.func_id(&func), body, priority, background);
                self.submit(id, new, now, out)
            }
            Request::SubmitReduceJob {
                func,
                body,
                reducer,
                background,
            } => {
                let new = NewJob {
                    reducer: Some(reducer),
                    ..NewJob::submitted(self.func_id(&func), body, Priority::Normal, background)
                };
                self.submit(id, new, now, out)
            }
            Request::SubmitJobEpoch { func, body, epoch } => match parse_epoch(&epoch) {
                Ok(secs) => {
                    let new = NewJob {
                        due_ms: Some(secs.saturating_mul(1000)),
                        ..NewJob::submitted(self.func_id(&func), body, Priority::Normal, true)
                    };
                    self.submit(id, new, now, out)
                }
                Err(e) => out.push(id, Response::error(e.code, e.text)),
            },
            Request::SubmitJobSched { func, body, fields } => match self.sched_due(&fields, now) {
                Ok(due) => {
                    let new = NewJob {
                        due_ms: Some(due),
                        ..NewJob::submitted(self.func_id(&func), body, Priority::Normal, true)
                    };
                    self.submit(id, new, now, out)
                }
                Err(text) => out.push(id, Response::error("INVALID_ARGUMENT", text)),
            },
            Request::GrabJob(kind) => self.grab(id, kind, now, out),
            Request::WorkStatus {
                handle,
                numerator,
                denominator,
            } => {
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, now, out) else {
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
                self.forward(id, PacketType::WorkData, handle, data, now, out)
            }
            Request::WorkWarning { handle, data } => {
                self.forward(id, PacketType::WorkWarning, handle, data, now, out)
            }
            Request::WorkComplete { handle, data } => {
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, now, out) else {
                    return;
                };
                self.record_result(key, &data);
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
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_RESULT, now, out) else {
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
                let Some(key) = self.running_job(id, &handle, NOT_FOUND_EXCEPTION, now, out) else {
                    return;
                };
                if let Some(c) = self.conn_mut(id) {
                    c.last_exception = Some(Bytes::copy_from_slice(&handle));
                }
                self.record_output(key, &data);
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
}
