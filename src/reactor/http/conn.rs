//! One HTTP connection's state, kept in its `Connection` (`conn::Kind::Http`): the request
//! parser's session, the request a job (or the cluster) is answering, and the connection's
//! deadlines. A leaf:
//! it knows the pure HTTP code and the timer keys, not the reactor.

use bytes::Bytes;

use crate::engine::Backfilled;
use crate::http::HttpLimits;
use crate::http::job::JobWait;
use crate::http::parse::Version;
use crate::http::session::Session;
use crate::proto::admin::ScheduleOp;
use crate::reactor::deadlines::Deadline;
use crate::timer::TimerKey;

pub struct HttpConn {
    pub(in crate::reactor) session: Session,
    /// The request being answered by a job.
    pub(in crate::reactor) job: Option<InFlight>,
    /// The request being answered when the cluster answers an operator's ask.
    pub(in crate::reactor) op: Option<OpWait>,
    /// The deadline for the next request: idle, or its head and body arriving (or the end
    /// of lingering).
    pub(in crate::reactor) timer: Option<(TimerKey, Deadline)>,
    /// Refused with an error: our side is shut, the client's bytes are read and dropped
    /// until it closes or the lingering time passes.
    pub(in crate::reactor) lingering: bool,
}

impl HttpConn {
    pub(in crate::reactor) fn new(limits: HttpLimits) -> HttpConn {
        HttpConn {
            session: Session::new(limits),
            job: None,
            op: None,
            timer: None,
            lingering: false,
        }
    }

    /// Its request waits for a foreground job's result, or for the cluster's answer.
    pub(in crate::reactor) fn waits_for_a_result(&self) -> bool {
        self.job.as_ref().is_some_and(|f| f.wait.foreground()) || self.op.is_some()
    }

    /// Its request is not answered yet (a job's, or the cluster's answer): the requests
    /// pipelined behind it wait.
    pub(in crate::reactor) fn answering(&self) -> bool {
        self.job.is_some() || self.op.is_some()
    }
}

/// A request answered when the cluster answers an operator's ask (`POST /schedules/ID/OP`
/// or `/backfill`, or the console's action): its ticket, and how to answer.
pub(in crate::reactor) struct OpWait {
    pub(in crate::reactor) ticket: u64,
    pub(in crate::reactor) what: Waited,
    pub(in crate::reactor) id: Bytes,
    /// Asked by the console (its own answer's shape), else by the API.
    pub(in crate::reactor) console: bool,
    pub(in crate::reactor) version: Version,
    pub(in crate::reactor) keep_alive: bool,
    pub(in crate::reactor) head_only: bool,
}

impl OpWait {
    /// `how`: the request's version, keep-alive and HEAD.
    pub(in crate::reactor) fn new(
        ticket: u64,
        what: Waited,
        id: Bytes,
        console: bool,
        (version, keep_alive, head_only): (Version, bool, bool),
    ) -> OpWait {
        OpWait {
            ticket,
            what,
            id,
            console,
            version,
            keep_alive,
            head_only,
        }
    }
}

/// What a held request asked of the cluster, for its answer's shape: an operation, or a
/// backfill (its times, answered once etcd took them).
pub(in crate::reactor) enum Waited {
    Op(ScheduleOp),
    Backfill(Backfilled),
}

/// A request answered by a job: how to answer, and its `X-Gearman-Timeout`.
pub(in crate::reactor) struct InFlight {
    pub(in crate::reactor) wait: JobWait,
    pub(in crate::reactor) version: Version,
    pub(in crate::reactor) keep_alive: bool,
    pub(in crate::reactor) timeout_ms: u64,
    pub(in crate::reactor) timer: Option<TimerKey>,
}
