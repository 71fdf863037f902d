//! One HTTP connection's state, kept in its `Connection` (`conn::Kind::Http`): the request
//! parser's session, the request a job is answering, and the connection's deadlines. A leaf:
//! it knows the pure HTTP code and the timer keys, not the reactor.

use super::deadlines::Deadline;
use crate::http::HttpLimits;
use crate::http::job::JobWait;
use crate::http::parse::Version;
use crate::http::session::Session;
use crate::timer::TimerKey;

pub struct HttpConn {
    pub(super) session: Session,
    /// The request being answered by a job.
    pub(super) job: Option<InFlight>,
    /// The deadline for the next request: idle, or its head and body arriving (or the end
    /// of lingering).
    pub(super) timer: Option<(TimerKey, Deadline)>,
    /// Refused with an error: our side is shut, the client's bytes are read and dropped
    /// until it closes or the lingering time passes.
    pub(super) lingering: bool,
}

impl HttpConn {
    pub(super) fn new(limits: HttpLimits) -> HttpConn {
        HttpConn {
            session: Session::new(limits),
            job: None,
            timer: None,
            lingering: false,
        }
    }

    /// Its request waits for a foreground job's result.
    pub(super) fn waits_for_a_result(&self) -> bool {
        self.job.as_ref().is_some_and(|f| f.wait.foreground())
    }
}

/// A request answered by a job: how to answer, and its `X-Gearman-Timeout`.
pub(super) struct InFlight {
    pub(super) wait: JobWait,
    pub(super) version: Version,
    pub(super) keep_alive: bool,
    pub(super) timeout_ms: u64,
    pub(super) timer: Option<TimerKey>,
}
