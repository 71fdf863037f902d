//! The admin text commands, answered from the engine's state in gearmand's formats and line
//! endings: lists end with `.\n`, `OK <x>` with `\n`, bare `OK` and errors with `\r\n`.

use std::fmt::Write as _;

use bytes::Bytes;

use super::{ConnId, Engine, FailReason, JobState, Outbox, Shutdown};
use crate::proto::admin::{AdminCommand, unknown_command_reply};
use crate::proto::response::Response;

/// The version `version` reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

impl Engine {
    /// Serve one admin line.
    pub fn admin(&mut self, id: ConnId, cmd: AdminCommand, now: u64, out: &mut Outbox) {
        let reply: Bytes = match cmd {
            AdminCommand::Status => {
                let mut s = String::new();
                for (_, f) in &self.functions {
                    let _ = writeln!(
                        s,
                        "{}\t{}\t{}\t{}",
                        lossy(&f.name),
                        f.total(),
                        f.running,
                        f.registrations
                    );
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::PriorityStatus => {
                let mut s = String::new();
                for (_, f) in &self.functions {
                    let [h, n, l] = f.queued;
                    let _ = writeln!(s, "{}\t{h}\t{n}\t{l}\t{}", lossy(&f.name), f.registrations);
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::Workers => {
                let mut s = String::new();
                for c in self
                    .conns
                    .iter()
                    .flatten()
                    .filter(|c| !c.abilities.is_empty())
                {
                    let _ = write!(s, "{} {} {} :", c.info.fd, c.info.ip, lossy(&c.client_id));
                    for f in c.functions_newest_first() {
                        let _ = write!(s, " {}", lossy(&self.functions[f].name));
                    }
                    s.push('\n');
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::ShowJobs => {
                let mut s = String::new();
                for (k, j) in &self.jobs {
                    let _ = writeln!(
                        s,
                        "{}\t{}\t0\t{}",
                        self.by_handle.of(j),
                        self.extra(k).map_or(0, |e| e.retries),
                        u8::from(j.background())
                    );
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::ShowUniqueJobs => {
                let mut s = String::new();
                for (_, j) in &self.jobs {
                    let _ = writeln!(s, "{}", lossy(j.body.unique_bytes()));
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::ShowScheduled => {
                let mut rows: Vec<_> = self
                    .jobs
                    .iter()
                    .filter_map(|(k, j)| match j.state() {
                        JobState::Future => Some((self.due_ms(k).unwrap_or(0), j)),
                        _ => None,
                    })
                    .collect();
                rows.sort_by_key(|(due, j)| (*due, j.id));
                let mut s = String::new();
                for (due, j) in rows {
                    let when = super::rfc3339(due);
                    let _ = writeln!(
                        s,
                        "{}\t{}\t{}\t{}\t{}",
                        self.by_handle.of(j),
                        lossy(&self.functions[j.func()].name),
                        lossy(j.body.unique_bytes()),
                        when,
                        priority_name(j.priority)
                    );
                }
                s.push_str(".\n");
                s.into()
            }
            AdminCommand::ShowSchedules => self.schedules_listing().into(),
            // The journal and the schedules file belong to the loop, which answers these lines
            // itself (reactor/admin.rs); an engine on its own has neither.
            AdminCommand::ShowJournal | AdminCommand::ReloadSchedules => {
                Bytes::from_static(b"ERR NOT_SUPPORTED Answered+by+the+server+loop\r\n")
            }
            AdminCommand::CancelJob(handle) => match self.by_handle.get(&handle, &self.jobs) {
                None => Bytes::from_static(b"ERR UNKNOWN_JOB\r\n"),
                Some(k) if matches!(self.jobs[k].state(), JobState::Running(_)) => {
                    Bytes::from_static(b"ERR JOB_RUNNING The+job+is+running+on+a+worker\r\n")
                }
                Some(k) => {
                    self.fail_job(k, FailReason::Cancelled, now, out);
                    Bytes::from_static(b"OK\r\n")
                }
            },
            AdminCommand::CreateFunction(name) => {
                self.func_id(&name);
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
                limits: Some(limits),
            } => {
                // Unlike gearmand, a limit for a function not seen yet is kept for when it comes.
                let f = self.func_id(&func);
                self.functions[f].max_queue = limits;
                Bytes::from_static(b"OK\r\n")
            }
            AdminCommand::GetPid => format!("OK {}\n", self.config.pid).into(),
            AdminCommand::Verbose => format!("OK {}\n", self.config.verbose).into(),
            AdminCommand::Version => format!("OK {VERSION}\n").into(),
            AdminCommand::Shutdown { graceful } => {
                if self.conn(id).is_some_and(|c| c.info.loopback) {
                    out.shutdown = Some(if graceful {
                        Shutdown::Graceful
                    } else {
                        Shutdown::Immediate
                    });
                    Bytes::from_static(b"OK\r\n")
                } else {
                    Bytes::from_static(b"ERR SHUTDOWN_REFUSED shutdown+is+only+accepted+from+a+loopback+address\r\n")
                }
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
