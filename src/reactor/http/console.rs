//! The console's requests on the HTTP listener (`crate::http::console` makes the bodies):
//! the embedded files, the JSON only the console reads (a function's jobs a page at a time,
//! the failed jobs of a filter), its actions (cancel a job, operate a schedule entry, retry or
//! drop a failed job or every failed job of a filter: who may is the gate's rule, src/reactor/gate.rs;
//! the request's own headers are checked here, each refusal logged and counted), and the
//! job-rate ring the loop feeds once a turn.
//!
//! Two parts, each borrowing only what it uses (http/mod.rs lends them): `ConsoleView`, the
//! read-only pages, and `ConsoleAct`, the actions.

use log::info;

use super::HttpGlue;
use super::conn::Waited;
use super::ops::{self, Acted};
use crate::config::Config;
use bytes::Bytes;

use crate::engine::{Applied, CancelRefused, Engine, Outbox};
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
use crate::reactor::Time;
use crate::reactor::conn::Conns;
use crate::reactor::etcd_link::EtcdLink;
use crate::reactor::journal::JournalDriver;

/// Whether the console is served (not `--no-console`).
pub(in crate::reactor) fn on(config: &Config) -> bool {
    config.http.as_ref().is_some_and(|h| h.console)
}

/// What the console's read-only pages read.
pub(in crate::reactor) struct ConsoleView<'a> {
    pub(super) engine: &'a Engine,
    pub(super) conns: &'a Conns,
    pub(super) time: &'a Time,
    pub(super) journal: &'a JournalDriver,
    pub(super) cluster: Option<&'a EtcdLink>,
    pub(super) http: &'a HttpGlue,
    /// The console is served (`on`).
    pub(super) on: bool,
    /// The gate would let the request's connection act (what /ui/api/server tells its page).
    pub(super) may_act: bool,
}

impl ConsoleView<'_> {
    /// Answer a console request (404 under `--no-console`).
    pub(in crate::reactor) fn page(&self, page: Page) -> Reply {
        if !self.on {
            return console::off();
        }
        let now = self.time.now;
        match page {
            Page::Asset(i) => console::asset(i),
            Page::Server => {
                let process = crate::footprint::read_process();
                let journal = self.journal.metrics();
                let cluster = self.cluster.map(|l| l.status(self.time.mono));
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
                    role: cluster
                        .as_ref()
                        .map_or("standalone", crate::cluster::view::role),
                    rates: (&slots, open),
                    actions: self.may_act,
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
            Page::Jobs(q) => console::guarded(self.jobs(&q)),
            Page::Audit => console::guarded(Reply::json(
                200,
                json::audit(self.engine.audit_trail(), api::AUDIT_SHOWN),
            )),
        }
    }

    /// A page of one function's jobs, a running job's worker named as `/workers` names it.
    fn jobs(&self, q: &JobsQuery) -> Reply {
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
}

/// What the console's actions change: the engine (and its replies), and the count of
/// actions refused.
pub(in crate::reactor) struct ConsoleAct<'a> {
    pub(super) engine: &'a mut Engine,
    pub(super) outbox: &'a mut Outbox,
    pub(super) http: &'a mut HttpGlue,
    /// The console is served (`on`).
    pub(super) on: bool,
    /// The HTTP connection asking, and its peer's address, for the log.
    pub(super) idx: usize,
    pub(super) peer: String,
}

impl ConsoleAct<'_> {
    /// Do a console action, when the request may.
    pub(in crate::reactor) fn act(mut self, site: &SiteHeaders, act: Action, now: u64) -> Acted {
        if !self.on {
            return Acted::Now(console::off());
        }
        // Out of the part, so that its helpers can borrow it mutably.
        let peer = std::mem::take(&mut self.peer);
        // The gate has let the peer act already (`Need::ConsoleAct`): what is left is whether
        // the request comes from the console's page.
        if let Err(why) = action::may_act(site) {
            self.http.console_refused += 1;
            peer_log!(
                now,
                Cause::Console,
                Warn,
                "HTTP connection {} from {peer}: 403 (console action): {why:?}",
                self.idx
            );
            return Acted::Now(console::guarded(Reply::text(403, why.message())));
        }
        let reply = match act {
            Action::Cancel(handle) => self.cancel(&handle, &peer, now),
            Action::Schedule { op, id } => return self.schedule(op, &id, &peer, now),
            Action::Backfill {
                id,
                from,
                to,
                dry_run,
            } => {
                let done = self
                    .engine
                    .backfill_text(&id, (&from, &to), dry_run, now, self.outbox);
                if done.is_ok() && !dry_run {
                    info!(
                        "console: backfill schedule {} {} {}, asked by {peer}",
                        shown(&id),
                        shown(from.as_bytes()),
                        shown(to.as_bytes())
                    );
                }
                return match ops::backfilled(self.engine, &id, done) {
                    Acted::Now(r) => Acted::Now(console::guarded(r)),
                    asked => asked,
                };
            }
            Action::Retry(handle) => self.failed(FailedOp::Retry, &handle, &peer, now),
            Action::Drop(handle) => self.failed(FailedOp::Drop, &handle, &peer, now),
            Action::RetryAll(filter) => self.failed_all(FailedOp::Retry, &filter, &peer, now),
            Action::DropAll(filter) => self.failed_all(FailedOp::Drop, &filter, &peer, now),
            Action::Function { paused, func } => {
                let change = crate::engine::LimitChange::Paused(paused);
                let reply = ops::limits(self.engine, self.outbox, &func, &[change], now);
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
        Acted::Now(console::guarded(reply))
    }

    fn cancel(&mut self, handle: &[u8], peer: &str, now: u64) -> Reply {
        match self.engine.cancel_job(handle, now, self.outbox) {
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
    fn failed(&mut self, op: FailedOp, handle: &[u8], peer: &str, now: u64) -> Reply {
        let reply = ops::failed_op(self.engine, self.outbox, op, handle, now);
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
    fn failed_all(&mut self, op: FailedOp, filter: &FailedFilter, peer: &str, now: u64) -> Reply {
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
                let jobs = self.engine.retry_failed(sel, now, self.outbox);
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

    fn schedule(&mut self, op: ScheduleOp, id: &[u8], peer: &str, now: u64) -> Acted {
        let done = match self.engine.schedule_op(id, op, now, self.outbox) {
            Ok(Applied::Asked(ticket)) => {
                info!(
                    "console: {op:?} schedule {}, asked by {peer}: handed to the cluster",
                    shown(id)
                );
                return Acted::Asked(ticket, Waited::Op(op), Bytes::copy_from_slice(id));
            }
            Ok(Applied::Done(handles)) => {
                info!("console: {op:?} schedule {}, asked by {peer}", shown(id));
                Ok(handles)
            }
            Err(e) => Err(e),
        };
        Acted::Now(ops::schedule_answer(id, &done))
    }
}

impl HttpGlue {
    /// Feed the rate ring the engine's counters at the end of a turn.
    pub(in crate::reactor) fn sample_rates(&mut self, engine: &Engine, now: u64) {
        self.rates.observe(now, engine.counters());
    }
}
