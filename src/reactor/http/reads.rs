//! The read-only endpoints' answers (`/status`, `/workers`, `/jobs/...`, `/schedules`,
//! `/failed`, `/limits`, `/cluster`, `/audit`, `/webhooks`, `/healthz`), each from the parts
//! of the server it reads, lent for the request. `/metrics` and the console's pages are the
//! server's own (mod.rs, console.rs).

use super::super::conn::Conns;
use super::super::etcd_link::EtcdLink;
use crate::engine::Engine;
use crate::http::endpoint::Endpoint;
use crate::http::response::{self, Reply};
use crate::http::{failed_ops, json};

/// What the read-only endpoints read.
pub(super) struct ReadView<'a> {
    pub engine: &'a Engine,
    pub conns: &'a Conns,
    pub cluster: Option<&'a EtcdLink>,
    pub draining: bool,
    /// The turn's wall and monotonic readings of the clock.
    pub now: u64,
    pub mono: u64,
}

impl ReadView<'_> {
    /// The answer of `endpoint`; `None` for `/metrics` and the console's pages.
    pub(super) fn read(&self, endpoint: &Endpoint) -> Option<Reply> {
        Some(match endpoint {
            Endpoint::Status => {
                let t = self.engine.totals();
                let server = [
                    ("jobs", t.jobs as u64),
                    ("running", t.running as u64),
                    ("workers", t.workers as u64),
                    ("connections", self.conns.slab.len() as u64),
                ];
                Reply::json(200, json::status(&self.engine.function_statuses(), &server))
            }
            Endpoint::Workers => {
                let mut list = self.engine.worker_statuses();
                for w in &mut list {
                    w.identity = self
                        .conns
                        .slab
                        .get(w.id.index as usize)
                        .filter(|c| c.id == w.id)
                        .map(|c| c.identity().to_string());
                }
                Reply::json(200, json::workers(&list, self.now))
            }
            Endpoint::Job(handle) => {
                let s = self.engine.job_status(handle);
                // An ended job whose result is kept is found, though GET_STATUS knows it not.
                let kept = self.engine.kept_job(handle).filter(|_| !s.known);
                let status = if s.known || kept.is_some() { 200 } else { 404 };
                let after = self.engine.run_parents(handle);
                Reply::json(status, json::job(&s, kept, after.as_deref()))
            }
            Endpoint::JobOutput(handle) => match self.engine.job_output(handle) {
                Some(v) => Reply::new(200, Some(response::TEXT), v.kept),
                None => Reply::text(404, "nothing of this job's output is kept"),
            },
            Endpoint::Schedules => {
                Reply::json(200, json::schedules(&self.engine.schedule_statuses()))
            }
            Endpoint::Failed => Reply::json(200, failed_ops::list(self.engine.failed_list())),
            Endpoint::Limits => Reply::json(
                200,
                crate::http::limit_ops::list(&self.engine.limit_statuses(self.now)),
            ),
            Endpoint::Cluster => match self.cluster {
                Some(l) => Reply::json(200, crate::cluster::view::json(&l.status(self.mono))),
                None => Reply::text(404, "this server runs without --etcd"),
            },
            Endpoint::Audit => Reply::json(
                200,
                json::audit(self.engine.audit_trail(), crate::proto::admin::AUDIT_SHOWN),
            ),
            Endpoint::Webhooks => Reply::json(
                200,
                json::webhooks(&self.engine.webhook_rows(), &self.engine.hook_status()),
            ),
            Endpoint::Healthz if self.draining => Reply::text(503, "draining"),
            Endpoint::Healthz => Reply::text(200, "ok"),
            Endpoint::Metrics | Endpoint::Console(_) => return None,
        })
    }
}
