//! What each request needs: the one table from Gearman packets, admin lines and HTTP routes to
//! an operation on a function (or nothing, or the own rule of `shutdown` and of the console's
//! actions). The reactor's gate
//! (src/reactor/gate.rs) asks here, then decides; a request that needs a different grant is
//! changed here and nowhere else.

use super::Operation;
use crate::http::console::Page;
use crate::http::endpoint::{Endpoint, Route};
use crate::http::ping::Ping;
use crate::proto::admin::AdminCommand;
use crate::proto::request::Request;

/// Which functions an operation touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// One function, named by the request.
    Function(&'a [u8]),
    /// The function of the job with this handle (the gate asks the engine which it is).
    Job(&'a [u8]),
    /// Every function: a view or a change not about one function (`status`, `maxqueue X N`).
    Every,
}

/// What a request must be granted before the engine acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need<'a> {
    /// Nothing: ECHO_REQ, SET_CLIENT_ID, OPTION_REQ, what a worker does around its granted
    /// functions (GRAB*, PRE_SLEEP, RESET_ABILITIES, CANT_DO), errors, /healthz, the console's
    /// static files.
    Free,
    Op(Operation, Scope<'a>),
    /// `shutdown`: `admin` under an ACL; without one, only from a loopback address.
    Shutdown,
    /// A console action (cancel, a schedule operation, retry or drop): `admin` under an ACL;
    /// without one, only from a loopback address (the listener authenticates no one, so
    /// nothing that changes a job is offered to the network).
    ConsoleAct,
}

/// Is a request with this need an operator's action, recorded in the audit trail once it is
/// granted? Everything that needs `admin` (or the rules of `shutdown` and of the console's
/// actions) changes the server's state; what a client or worker does with its jobs, and
/// every view, is not an action.
pub fn audited(need: &Need<'_>) -> bool {
    match need {
        Need::Op(Operation::Admin, _) | Need::Shutdown | Need::ConsoleAct => true,
        // A heartbeat's ping is what a watched job reports, as a worker's result is.
        Need::Op(Operation::Status | Operation::Submit | Operation::Work | Operation::Ping, _)
        | Need::Free => false,
    }
}

/// A Gearman packet's need.
pub fn packet(req: &Request) -> Need<'_> {
    use Operation::{Status, Submit, Work};
    match req {
        Request::SubmitJob { func, .. }
        | Request::SubmitReduceJob { func, .. }
        | Request::SubmitJobEpoch { func, .. }
        | Request::SubmitJobSched { func, .. } => Need::Op(Submit, Scope::Function(func)),
        Request::CanDo { func } | Request::CanDoTimeout { func, .. } => {
            Need::Op(Work, Scope::Function(func))
        }
        Request::WorkStatus { handle, .. }
        | Request::WorkComplete { handle, .. }
        | Request::WorkFail { handle, .. }
        | Request::WorkException { handle, .. }
        | Request::WorkData { handle, .. }
        | Request::WorkWarning { handle, .. } => Need::Op(Work, Scope::Job(handle)),
        Request::GetStatus { handle, .. } => Need::Op(Status, Scope::Job(handle)),
        // A unique key does not name its function: the answer may be any function's job.
        Request::GetStatusUnique { .. } => Need::Op(Status, Scope::Every),
        Request::CantDo { .. }
        | Request::ResetAbilities
        | Request::PreSleep
        | Request::GrabJob(_)
        | Request::EchoReq { .. }
        | Request::SetClientId { .. }
        | Request::OptionReq { .. }
        | Request::AllYours => Need::Free,
    }
}

/// An admin line's need: the read-only ones `status` on every function (they list every
/// function), the ones that change something `admin`.
pub fn admin(cmd: &AdminCommand) -> Need<'_> {
    use AdminCommand as A;
    let status = Need::Op(Operation::Status, Scope::Every);
    let admin = Need::Op(Operation::Admin, Scope::Every);
    match cmd {
        A::Status
        | A::PriorityStatus
        | A::Workers
        | A::ShowJobs
        | A::ShowUniqueJobs
        | A::ShowScheduled
        | A::ShowSchedules
        | A::ShowJournal
        | A::ShowCluster
        | A::ShowFailed(_)
        | A::ShowRetries
        | A::ShowWebhooks
        | A::ShowRuns(_)
        | A::ShowTimeouts
        | A::ShowLimits
        | A::ShowAudit(_)
        | A::GetPid
        | A::Verbose
        | A::Version
        | A::MaxQueue { limits: None, .. }
        | A::Timeout { set: None, .. } => status,
        A::ReloadSchedules
        | A::ReloadAcl
        | A::CancelJob(_)
        | A::CreateFunction(_)
        | A::DropFunction(_)
        | A::MaxQueue {
            limits: Some(_), ..
        }
        | A::Timeout { set: Some(_), .. }
        | A::SetLimit { .. }
        | A::PauseFunction { .. }
        | A::Schedule { .. }
        | A::Backfill { .. }
        | A::RetryFailed(_)
        | A::DropFailed(_)
        | A::SetRetry { .. } => admin,
        A::Shutdown { .. } => Need::Shutdown,
        // What a job printed is its function's to read, as its status is.
        A::ShowOutput(handle) => Need::Op(Operation::Status, Scope::Job(handle)),
        // Answered with an error whoever asks.
        A::Reply(_) | A::Unknown(_) => Need::Free,
    }
}

/// An HTTP request's need, from its route.
pub fn route(route: &Route) -> Need<'_> {
    let status = Need::Op(Operation::Status, Scope::Every);
    match route {
        Route::Read { endpoint, .. } => match endpoint {
            // Load balancers ask without credentials; it says only "ok" or "draining".
            Endpoint::Healthz => Need::Free,
            // The console's page and files hold no data; what they show comes from its API.
            Endpoint::Console(Page::Asset(_)) => Need::Free,
            Endpoint::Job(handle) | Endpoint::JobOutput(handle) => {
                Need::Op(Operation::Status, Scope::Job(handle))
            }
            // One function's jobs: `status` on that function, as its GET_STATUS would need.
            Endpoint::Console(Page::Jobs(q)) => {
                Need::Op(Operation::Status, Scope::Function(&q.function))
            }
            Endpoint::Status
            | Endpoint::Workers
            | Endpoint::Schedules
            | Endpoint::Failed
            | Endpoint::Metrics
            | Endpoint::Cluster
            | Endpoint::Limits
            | Endpoint::Audit
            | Endpoint::Webhooks
            | Endpoint::Console(Page::Server | Page::Future | Page::Failed(_) | Page::Audit) => {
                status
            }
        },
        Route::Submit(s) => Need::Op(Operation::Submit, Scope::Function(&s.func)),
        Route::Schedule { .. }
        | Route::Backfill { .. }
        | Route::Failed { .. }
        | Route::Limits { .. } => Need::Op(Operation::Admin, Scope::Every),
        Route::Ping(p) => ping(p),
        Route::Act(_) => Need::ConsoleAct,
        Route::Reply(_) => Need::Free,
    }
}

/// A ping's need: `ping` on the heartbeat entry's id, so that a machine's token may report its
/// own jobs and nothing else.
pub fn ping(p: &Ping) -> Need<'_> {
    Need::Op(Operation::Ping, Scope::Function(&p.id))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::proto::request::GrabKind;

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    #[test]
    fn packets_need_what_the_issue_says() {
        let sub = Request::SubmitJobEpoch {
            func: b("f"),
            body: crate::proto::request::JobBody::new(b"", b""),
            epoch: b("1"),
        };
        assert_eq!(
            packet(&sub),
            Need::Op(Operation::Submit, Scope::Function(b"f"))
        );
        let can = Request::CanDoTimeout {
            func: b("g"),
            timeout_ms: 5,
        };
        assert_eq!(
            packet(&can),
            Need::Op(Operation::Work, Scope::Function(b"g"))
        );
        let done = Request::WorkComplete {
            handle: b("H:1"),
            data: b(""),
        };
        assert_eq!(packet(&done), Need::Op(Operation::Work, Scope::Job(b"H:1")));
        for free in [
            Request::GrabJob(GrabKind::All),
            Request::PreSleep,
            Request::ResetAbilities,
            Request::CantDo { func: b("f") },
            Request::EchoReq { data: b("x") },
            Request::OptionReq {
                name: b("exceptions"),
            },
        ] {
            assert_eq!(packet(&free), Need::Free, "{free:?}");
        }
    }

    #[test]
    fn read_only_admin_lines_need_status_and_changes_admin() {
        let p = |line: &str| {
            admin(&AdminCommand::parse(&Bytes::copy_from_slice(
                line.as_bytes(),
            )))
            .to_owned_kind()
        };
        assert_eq!(p("status"), "status");
        assert_eq!(p("maxqueue f"), "status");
        assert_eq!(p("timeout f"), "status");
        assert_eq!(p("maxqueue f 3"), "admin");
        assert_eq!(p("timeout f 30s"), "admin");
        assert_eq!(p("cancel job H:1"), "admin");
        assert_eq!(p("reload acl"), "admin");
        assert_eq!(p("reload schedules"), "admin");
        assert_eq!(p("shutdown"), "shutdown");
        assert_eq!(p("nonsense"), "free");
        assert_eq!(p("show audit"), "status");
        let audited = |line: &str| {
            super::audited(&admin(&AdminCommand::parse(&Bytes::copy_from_slice(
                line.as_bytes(),
            ))))
        };
        for line in ["maxqueue f 3", "cancel job H:1", "shutdown", "reload acl"] {
            assert!(audited(line), "{line}");
        }
        for line in ["status", "maxqueue f", "show audit", "nonsense"] {
            assert!(!audited(line), "{line}");
        }
    }

    #[test]
    fn a_ping_needs_ping_on_its_entry() {
        let p = crate::http::ping::route(
            &crate::http::parse::Method::Post,
            b"ping/backup.remote/fail",
            &Bytes::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            ping(&p),
            Need::Op(Operation::Ping, Scope::Function(b"backup.remote"))
        );
    }

    impl Need<'_> {
        fn to_owned_kind(self) -> &'static str {
            match self {
                Need::Free => "free",
                Need::Shutdown => "shutdown",
                Need::ConsoleAct => "console_act",
                Need::Op(op, _) => op.name(),
            }
        }
    }
}
