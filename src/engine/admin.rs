//! The admin text commands, answered from the engine's state in gearmand's formats and line
//! endings: lists end with `.\n`, `OK <x>` with `\n`, bare `OK` and errors with `\r\n`.

use std::io::Write as _;

use bytes::Bytes;

use super::{
    Applied, Backfilled, ConnId, Engine, FailReason, FailedSelector, JobState, Outbox, Shutdown,
};
use crate::proto::admin::{AdminCommand, unknown_command_reply};
use crate::proto::names::{is_bad_name, push_escaped, push_name};
use crate::proto::response::Response;

/// The version `version` reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The reply to `create function`, `maxqueue` or `retry` with a name no client could send
/// (see proto/names.rs).
const BAD_NAME: &[u8] =
    b"ERR INVALID_FUNCTION_NAME A+function+name+cannot+contain+CR,+LF+or+NUL\r\n";

/// Why `cancel_job` did nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelRefused {
    Unknown,
    /// A worker has it; only the worker can end it.
    Running,
}

impl Engine {
    /// Cancel a queued or future job (`cancel job`, and the console's cancel button): it ends
    /// as failed for whoever waits, and leaves the journal.
    pub fn cancel_job(
        &mut self,
        handle: &[u8],
        now: u64,
        out: &mut Outbox,
    ) -> Result<(), CancelRefused> {
        let k = self
            .by_handle
            .get(handle, &self.jobs)
            .ok_or(CancelRefused::Unknown)?;
        if matches!(self.jobs[k].state(), JobState::Running(_)) {
            return Err(CancelRefused::Running);
        }
        self.fail_job(k, FailReason::Cancelled, now, out);
        Ok(())
    }

    /// Serve one admin line.
    pub fn admin(&mut self, id: ConnId, cmd: AdminCommand, now: u64, out: &mut Outbox) {
        let reply: Bytes = match cmd {
            // Function names are written as their bytes, as gearmand (a name shown can be typed
            // back); uniques and client ids with control characters escaped: proto/names.rs.
            AdminCommand::Status => {
                let mut s = Vec::new();
                for (_, f) in &self.functions {
                    push_name(&mut s, &f.name);
                    let _ = writeln!(s, "\t{}\t{}\t{}", f.total(), f.running, f.registrations);
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::PriorityStatus => {
                let mut s = Vec::new();
                for (_, f) in &self.functions {
                    let [h, n, l] = f.queued;
                    push_name(&mut s, &f.name);
                    let _ = writeln!(s, "\t{h}\t{n}\t{l}\t{}", f.registrations);
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::Workers => {
                let mut s = Vec::new();
                for c in self
                    .conns
                    .iter()
                    .flatten()
                    .filter(|c| !c.abilities.is_empty())
                {
                    let _ = write!(s, "{} {} ", c.info.fd, c.info.ip);
                    push_escaped(&mut s, &c.client_id);
                    s.extend_from_slice(b" :");
                    for f in c.functions_newest_first() {
                        s.push(b' ');
                        push_name(&mut s, &self.functions[f].name);
                    }
                    s.push(b'\n');
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::ShowJobs => {
                let mut s = Vec::new();
                for (k, j) in &self.jobs {
                    let _ = writeln!(
                        s,
                        "{}\t{}\t0\t{}",
                        self.by_handle.of(j),
                        self.extra(k).map_or(0, |e| e.retries),
                        u8::from(j.background())
                    );
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::ShowUniqueJobs => {
                let mut s = Vec::new();
                for (_, j) in &self.jobs {
                    push_escaped(&mut s, j.body.unique_bytes());
                    s.push(b'\n');
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::ShowScheduled => {
                let mut rows: Vec<_> = self
                    .jobs
                    .iter()
                    .filter_map(|(k, j)| match j.state() {
                        JobState::Future => Some((self.due_ms(k).unwrap_or(0), j)),
                        JobState::Queued | JobState::Running(_) => None,
                    })
                    .collect();
                rows.sort_by_key(|(due, j)| (*due, j.id));
                let mut s = Vec::new();
                for (due, j) in rows {
                    let _ = write!(s, "{}\t", self.by_handle.of(j));
                    push_escaped(&mut s, &self.functions[j.func()].name);
                    s.push(b'\t');
                    push_escaped(&mut s, j.body.unique_bytes());
                    let _ = writeln!(
                        s,
                        "\t{}\t{}",
                        super::rfc3339(due),
                        priority_name(j.priority)
                    );
                }
                s.extend_from_slice(b".\n");
                s.into()
            }
            AdminCommand::ShowSchedules => self.schedules_listing().into(),
            AdminCommand::ShowFailed(func) => self.failed_listing(func.as_deref()).into(),
            AdminCommand::ShowTimeouts => self.timeouts_listing().into(),
            AdminCommand::ShowLimits => self.limits_listing(now).into(),
            AdminCommand::SetLimit {
                setting,
                func,
                value,
            } => {
                let value = String::from_utf8_lossy(&value);
                match super::LimitChange::parse(setting.word(), &value) {
                    Ok(change) => self.limit_reply(&func, change, now, out),
                    Err(e) => format!("ERR INVALID_ARGUMENTS {}\r\n", e.replace(' ', "+")).into(),
                }
            }
            AdminCommand::PauseFunction { func, paused } => {
                self.limit_reply(&func, super::LimitChange::Paused(paused), now, out)
            }
            AdminCommand::Timeout { func, set } => self.admin_timeout(func, set),
            AdminCommand::RetryFailed(sel) => {
                let handles = self.retry_failed(FailedSelector::parse(&sel), now, out);
                format!("OK {}\n", handles.len()).into()
            }
            AdminCommand::ShowRetries => self.retries_listing().into(),
            AdminCommand::ShowWebhooks => self.webhooks_listing().into(),
            AdminCommand::ShowOutput(handle) => self.output_reply(&handle),
            AdminCommand::ShowRuns(entry) => self.runs_listing(&entry),
            AdminCommand::ShowAudit(n) => super::audit::listing(self.audit.newest(n)).into(),
            AdminCommand::SetRetry { func, .. } if is_bad_name(&func) => {
                Bytes::from_static(BAD_NAME)
            }
            AdminCommand::SetRetry {
                func,
                retries,
                backoff,
            } => {
                use crate::schedule::backoff::{Backoff, RetryPolicy, parse_retries};
                let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
                match (
                    parse_retries(&text(&retries)),
                    Backoff::parse(&text(&backoff)),
                ) {
                    (Ok(retries), Ok(backoff)) => {
                        if self.set_retry(&func, RetryPolicy { retries, backoff }) {
                            Bytes::from_static(b"OK\r\n")
                        } else {
                            format!(
                                "ERR TOO_MANY_RETRY_POLICIES {}+functions+have+one+already+(--max-function-settings)\r\n",
                                self.config.max_function_settings
                            )
                            .into()
                        }
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        format!("ERR INVALID_ARGUMENTS {}\r\n", e.replace(' ', "+")).into()
                    }
                }
            }
            AdminCommand::DropFailed(sel) => {
                format!("OK {}\n", self.drop_failed(FailedSelector::parse(&sel))).into()
            }
            AdminCommand::Schedule { op, id: entry } => {
                match self.schedule_op(&entry, op, now, out) {
                    Ok(Applied::Done(handles)) if handles.is_empty() => {
                        Bytes::from_static(b"OK\r\n")
                    }
                    Ok(Applied::Done(handles)) => format!("OK {}\n", handles.join(" ")).into(),
                    // Answered when the cluster has answered; the line's later ones wait.
                    Ok(Applied::Asked(ticket)) => return self.cluster_op_wait(ticket, id, true),
                    Err(e) => e.admin_reply(),
                }
            }
            AdminCommand::Backfill {
                id: entry,
                from,
                to,
                dry_run,
            } => {
                let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
                let range = (text(&from), text(&to));
                let range = (range.0.as_str(), range.1.as_str());
                match self.backfill_text(&entry, range, dry_run, now, out) {
                    // Answered when the cluster has answered; the line's later ones wait.
                    Ok(Backfilled {
                        asked: Some(ticket),
                        ..
                    }) => return self.cluster_op_wait(ticket, id, true),
                    Ok(done) => done.admin_reply(),
                    Err(e) => e.admin_reply(),
                }
            }
            // The journal, the schedules file, the ACL and the cluster belong to the loop, which
            // answers these lines itself (reactor/gearman.rs); an engine on its own has none.
            AdminCommand::ShowJournal
            | AdminCommand::ShowCluster
            | AdminCommand::ReloadSchedules
            | AdminCommand::ReloadAcl => {
                Bytes::from_static(b"ERR NOT_SUPPORTED Answered+by+the+server+loop\r\n")
            }
            AdminCommand::CancelJob(handle) => match self.cancel_job(&handle, now, out) {
                Err(CancelRefused::Unknown) => Bytes::from_static(b"ERR UNKNOWN_JOB\r\n"),
                Err(CancelRefused::Running) => {
                    Bytes::from_static(b"ERR JOB_RUNNING The+job+is+running+on+a+worker\r\n")
                }
                Ok(()) => Bytes::from_static(b"OK\r\n"),
            },
            AdminCommand::CreateFunction(name) if is_bad_name(&name) => {
                Bytes::from_static(BAD_NAME)
            }
            AdminCommand::CreateFunction(name) => {
                let f = self.func_id(&name);
                self.functions[f].pinned = true;
                Bytes::from_static(b"OK\r\n")
            }
            AdminCommand::DropFunction(name) => {
                let found = self
                    .functions
                    .iter()
                    .find(|(_, f)| f.name.eq_ignore_ascii_case(&name))
                    .map(|(i, _)| i);
                match found {
                    None => Bytes::from_static(b"ERR function not found\r\n"),
                    Some(f)
                        if !self.functions[f].workers.is_empty()
                            || self.functions[f].total() > 0 =>
                    {
                        Bytes::from_static(
                            b"ERR there are still connected workers or executing clients\r\n",
                        )
                    }
                    Some(f) => {
                        self.unlink_idle(f);
                        self.drop_gate(f);
                        let func = self.functions.remove(f);
                        self.func_by_name.remove(&func.name);
                        Bytes::from_static(b"OK\r\n")
                    }
                }
            }
            AdminCommand::MaxQueue { func, limits: None } => match self.func_by_name.get(&func) {
                Some(&f) => {
                    let [h, n, l] = self.functions[f].max_queue;
                    format!("OK {h} {n} {l}\n").into()
                }
                None => Bytes::from_static(b"ERR function not found\r\n"),
            },
            AdminCommand::MaxQueue {
                func,
                limits: Some(_),
            } if is_bad_name(&func) => Bytes::from_static(BAD_NAME),
            AdminCommand::MaxQueue {
                func,
                limits: Some(limits),
            } => {
                // Unlike gearmand, a limit for a function not seen yet is kept for when it comes.
                let f = self.func_id(&func);
                self.functions[f].max_queue = limits;
                self.functions[f].pinned = true;
                Bytes::from_static(b"OK\r\n")
            }
            AdminCommand::GetPid => format!("OK {}\n", self.config.pid).into(),
            AdminCommand::Verbose => format!("OK {}\n", self.config.verbose).into(),
            AdminCommand::Version => format!("OK {VERSION}\n").into(),
            // Who may shut the server down is the reactor's gate's to say (src/reactor/gate.rs).
            AdminCommand::Shutdown { graceful } => {
                out.shutdown = Some(if graceful {
                    Shutdown::Graceful
                } else {
                    Shutdown::Immediate
                });
                Bytes::from_static(b"OK\r\n")
            }
            AdminCommand::Reply(text) => Bytes::from_static(text.as_bytes()),
            AdminCommand::Unknown(word) => unknown_command_reply(&word),
        };
        out.push(id, Response::Text(reply));
    }
}

pub fn priority_name(p: crate::proto::request::Priority) -> &'static str {
    match p {
        crate::proto::request::Priority::High => "high",
        crate::proto::request::Priority::Normal => "normal",
        crate::proto::request::Priority::Low => "low",
    }
}
