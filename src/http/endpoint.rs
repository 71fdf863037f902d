//! What a request asks for, typed: a read-only endpoint, a job submission, an operation on a
//! schedule entry or a failed job, a heartbeat's ping, a console action, or a reply to give at
//! once. `route` and its sub-routers (`failed_ops`, `schedule_ops`, `ping`) produce these; the
//! reactor acts on them.

use bytes::Bytes;

use super::console::Page;
use super::console::action::Action;
use super::response::Reply;
use crate::proto::request::Priority;

/// The read-only endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Status,
    Workers,
    Job(Bytes),
    /// `/jobs/HANDLE/output`: what the job printed, as text.
    JobOutput(Bytes),
    Schedules,
    /// The failed list (`super::failed_ops`).
    Failed,
    Metrics,
    Healthz,
    /// `/cluster`: the cluster's members, leader and lease (`--etcd`).
    Cluster,
    /// `/limits`: every function's limits (`super::limit_ops`).
    Limits,
    /// `/audit`: the newest operators' actions (the audit trail).
    Audit,
    /// `/webhooks`: each webhook target's alerts waiting and last try.
    Webhooks,
    /// The console's page, files and JSON (`super::console`).
    Console(Page),
}

/// A job to submit, as gearmand's plugin reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submit {
    pub func: Bytes,
    pub unique: Bytes,
    pub data: Bytes,
    pub priority: Priority,
    pub background: bool,
    /// `X-Gearman-Epoch`: a future job (SUBMIT_JOB_EPOCH), always background.
    pub epoch: Option<Bytes>,
    /// `X-Gearman-Timeout` in milliseconds, for a foreground job.
    pub timeout_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Read {
        endpoint: Endpoint,
        head_only: bool,
    },
    Submit(Submit),
    /// `POST /schedules/ID/OP`: run, skip, pause or resume a schedule entry.
    Schedule {
        op: crate::proto::admin::ScheduleOp,
        id: Bytes,
    },
    /// `POST /schedules/ID/backfill?from=FROM&to=TO[&dry_run=1]`: the entry's times in the
    /// range run as manual runs (FROM and TO as sent; the engine reads them).
    Backfill {
        id: Bytes,
        from: String,
        to: String,
        dry_run: bool,
    },
    /// `POST /failed/HANDLE/retry` or `DELETE /failed/HANDLE`.
    Failed {
        op: FailedOp,
        handle: Bytes,
    },
    /// `PUT /limits/FUNCTION` (the settings its body names) or `DELETE /limits/FUNCTION`
    /// (all of them off).
    Limits {
        func: Bytes,
        changes: Vec<crate::engine::LimitChange>,
    },
    /// `/ping/ID[/start|/fail|/CODE]`: a run of a heartbeat entry reported.
    Ping(super::ping::Ping),
    /// A console action (checked and done by the reactor: it needs the peer's address).
    Act(Action),
    /// Answer at once (404, 405, 400 for a bad header value).
    Reply(Reply),
}

/// What an operator does to one failed job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedOp {
    /// Queue it again as a new background job.
    Retry,
    /// Forget it.
    Drop,
}
