//! The console's requests on the HTTP listener (`crate::http::console` makes the bodies):
//! the embedded files, the JSON only the console reads (a function's jobs a page at a time,
//! the failed jobs of a filter), its actions (cancel a job, operate a schedule entry, retry or
//! drop a failed job or every failed job of a filter: who may is the gate's rule, src/reactor/gate.rs;
//! the request's own headers are checked here, each refusal logged and counted), and the
//! job-rate ring the loop feeds once a turn.

use log::info;

use crate::engine::{CancelRefused, ScheduleOpError};
use crate::http::console::action::{self, Action};
use crate::http::console::lists::{self, FailedFilter, JobsQuery};
use crate::http::console::{self, Page, api};
use crate::http::endpoint::FailedOp;
use crate::http::json;
use crate::http::parse::SiteHeaders;
use crate::http::response::Reply;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::peer_text::shown;
use crate::proto::admin::ScheduleOp;
use crate::reactor::Server;

impl Server {
    fn console_on(&self) -> bool {
        self.config.http.as_ref().is_some_and(|h| h.console)
    }

    /// The peer's address of connection `idx`, for the log.
    fn http_peer(&self, idx: usize) -> String {
        match self.conns.slab.get(idx).map(|c| c.peer()) {
            Some(a) => a.ip().to_string(),
            None => "?".into(),
        }
    }

    /// Answer a console request (404 under `--no-console`).
    pub(in crate::reactor) fn http_console(&self, idx: usize, page: Page) -> Reply {
        if !self.console_on() {
            return console::off();
        }
        let now = self.time.now;
        match page {
            Page::Asset(i) => console::asset(i),
            Page::Server => {
                let process = crate::footprint::read_process();
                let journal = self.journal.metrics();
                let cluster = self.cluster.as_ref().map(|l| l.status(self.time.mono));
                let (slots, open) = self.http.rates.slots();
                let body = api::server(&api::Facts {
                    version: env!("CARGO_PKG_VERSION"),
                    now_ms: now,
                    started_ms: process
                        .as_ref()
                        .map(|p| (p.start_time_seconds * 1000.0) as u64),
                    totals: self.engine.totals(),
                    connections: self.conns.slab.len(),
                    rss_bytes: process.as_ref().map(|p| p.resident_bytes),
                    journal: journal.as_ref(),
                    failed: self.engine.failed_list(),
                    // Not clustered, or no leader known: no leader line.
                    leader: cluster.as_ref().and_then(|c| c.leader.as_deref()),
                    rates: (&slots, open),
                    actions: self.console_may_act(idx),
                });
                console::guarded(Reply::json(200, body))
            }
            Page::Future => {
                let (total, jobs) = self.engine.future_jobs(api::FUTURE_SHOWN);
                console::guarded(Reply::json(200, api::future(total, &jobs)))
            }
            Page::Failed(filter) => console::guarded(Reply::json(
                200,
                lists::failed_matching(self.engine.failed_list(), &filter),
            )),
            Page::Jobs(q) => console::guarded(self.console_jobs(&q)),
            Page::Audit => console::guarded(Reply::json(
                200,
                json::audit(self.engine.audit_trail(), api::AUDIT_SHOWN),
            )),
        }
    }

    /// A page of one function's jobs, a running job's worker named as `/workers` names it.
    fn console_jobs(&self, q: &JobsQuery) -> Reply {
        let Some(page) = self.engine.jobs_of(&q.function, q.phase, q.offset, q.limit) else {
            return Reply::text(404, "the server knows no function of this name");
        };
        let body = lists::jobs(q, &page, self.time.now, |id| {
            self.conns
                .slab
                .get(id.index as usize)
                .filter(|c| c.id == *id)
                .map(|c| c.identity().to_string())
        });
        Reply::json(200, body)
    }

    /// Do a console action, when the request may.
    pub(in crate::reactor) fn http_console_act(
        &mut self,
        idx: usize,
        site: &SiteHeaders,
        act: Action,
        now: u64,
    ) -> Reply {
        if !self.console_on() {
            return console::off();
        }
        let peer = self.http_peer(idx);
        // The gate has let the peer act already (`Need::ConsoleAct`): what is left is whether
        // the request comes from the console's page.
        if let Err(why) = action::may_act(site) {
            self.http.console_refused += 1;
            peer_log!(
                now,
                Cause::Console,
                Warn,
                "HTTP connection {idx} from {peer}: 403 (console action): {why:?}"
            );
            return console::guarded(Reply::text(403, why.message()));
        }
        let reply = match act {
            Action::Cancel(handle) => self.console_cancel(&handle, &peer, now),
            Action::Schedule { op, id } => self.console_schedule(op, &id, &peer, now),
            Action::Retry(handle) => self.console_failed(FailedOp::Retry, &handle, &peer, now),
            Action::Drop(handle) => self.console_failed(FailedOp::Drop, &handle, &peer, now),
            Action::RetryAll(filter) => {
                self.console_failed_all(FailedOp::Retry, &filter, &peer, now)
            }
            Action::DropAll(filter) => self.console_failed_all(FailedOp::Drop, &filter, &peer, now),
            Action::Function { paused, func } => {
                let change = crate::engine::LimitChange::Paused(paused);
                let reply = self.http_limits(&func, &[change], now);
                if reply.status == 200 {
                    info!(
                        "console: {} function {}, asked by {peer}",
                        if paused { "pause" } else { "resume" },
                        shown(&func)
                    );
                }
                reply
            }
        };
        console::guarded(reply)
    }

    fn console_cancel(&mut self, handle: &[u8], peer: &str, now: u64) -> Reply {
        match self.engine.cancel_job(handle, now, &mut self.outbox) {
            Ok(()) => {
                info!("console: job {} cancelled by {peer}", shown(handle));
                let mut body = String::from("{\"cancelled\":");
                json::string(&mut body, &String::from_utf8_lossy(handle));
                body.push_str("}\n");
                Reply::json(200, body)
            }
            Err(CancelRefused::Unknown) => Reply::text(404, "no such job"),
            Err(CancelRefused::Running) => Reply::text(
                409,
                "the job is running on a worker; only the worker can end it",
            ),
        }
    }

    /// Retry or drop a failed job: the operation `POST /failed/HANDLE/retry` and `DELETE
    /// /failed/HANDLE` do, with its answer.
    fn console_failed(&mut self, op: FailedOp, handle: &[u8], peer: &str, now: u64) -> Reply {
        let reply = self.http_failed_op(op, handle, now);
        if reply.status == 200 {
            info!(
                "console: {op:?} failed job {}, asked by {peer}",
                shown(handle)
            );
        }
        reply
    }

    /// Retry or drop every failed job a filter names: `retry failed` / `drop failed` of a
    /// function, a schedule entry or both (the failed list is bounded, so is the work).
    fn console_failed_all(
        &mut self,
        op: FailedOp,
        filter: &FailedFilter,
        peer: &str,
        now: u64,
    ) -> Reply {
        let sel = filter.selector();
        let mut body = String::new();
        let mut o = json::Obj::new(&mut body);
        let n = match op {
            FailedOp::Retry => {
                let matched = self
                    .engine
                    .failed_list()
                    .iter()
                    .filter(|j| sel.matches(j))
                    .count();
                let jobs = self.engine.retry_failed(sel, now, &mut self.outbox);
                o.str("op", "retry").num("matched", matched);
                json::array(o.key("jobs"), &jobs, |out, h| json::string(out, h));
                o.num("full", matched.saturating_sub(jobs.len()));
                matched
            }
            FailedOp::Drop => {
                let dropped = self.engine.drop_failed(sel);
                o.str("op", "drop").num("dropped", dropped);
                dropped
            }
        };
        o.end();
        body.push('\n');
        info!(
            "console: {op:?} {n} failed jobs (function {}, entry {}), asked by {peer}",
            filter
                .function
                .as_ref()
                .map_or("any".into(), |f| shown(f).to_string()),
            filter
                .entry
                .as_ref()
                .map_or("any".into(), |e| shown(e).to_string())
        );
        Reply::json(200, body)
    }

    fn console_schedule(&mut self, op: ScheduleOp, id: &[u8], peer: &str, now: u64) -> Reply {
        match self.engine.schedule_op(id, op, now, &mut self.outbox) {
            Ok(handles) => {
                info!("console: {op:?} schedule {}, asked by {peer}", shown(id));
                let mut body = String::new();
                let mut o = json::Obj::new(&mut body);
                o.str("schedule", &String::from_utf8_lossy(id));
                json::array(o.key("jobs"), &handles, |out, h| json::string(out, h));
                o.end();
                body.push('\n');
                Reply::json(200, body)
            }
            Err(ScheduleOpError::UnknownEntry) => Reply::text(404, "no schedule entry has this id"),
            Err(ScheduleOpError::RunInProgress(h)) => Reply::text(
                409,
                &format!("the previous run {h} is still queued or running (overlap=skip)"),
            ),
            Err(ScheduleOpError::QueueFull) => {
                Reply::text(503, "the queue of the entry's function is full")
            }
            Err(ScheduleOpError::Heartbeat) => Reply::text(409, crate::engine::HEARTBEAT_NOT_RUN),
        }
    }

    /// Feed the rate ring the engine's counters at the end of a turn.
    pub(in crate::reactor) fn http_sample_rates(&mut self, now: u64) {
        let counters = self.engine.counters();
        self.http.rates.observe(now, counters);
    }
}
