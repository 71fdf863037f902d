//! One HTTP connection's state, kept in its `Connection` (`conn::Kind::Http`): the request
//! parser's session, the request a job is answering, and the connection's deadlines. A leaf:
//! it knows the pure HTTP code and the timer keys, not the reactor.

use crate::http::HttpLimits;
use crate::http::job::JobWait;
use crate::http::parse::Version;
use crate::http::session::Session;
use crate::reactor::deadlines::Deadline;
use crate::timer::TimerKey;

pub struct HttpConn {
    pub(in crate::reactor) session: Session,
    /// The request being answered by a job.
    pub(in crate::reactor) job: Option<InFlight>,
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
            timer: None,
            lingering: false,
        }
    }

    /// Its request waits for a foreground job's result.
    pub(in crate::reactor) fn waits_for_a_result(&self) -> bool {
        self.job.as_ref().is_some_and(|f| f.wait.foreground())
    }
}

/// A request answered by a job: how to answer, and its `X-Gearman-Timeout`.
pub(in crate::reactor) struct InFlight {
    pub(in crate::reactor) wait: JobWait,
    pub(in crate::reactor) version: Version,
    pub(in crate::reactor) keep_alive: bool,
    pub(in crate::reactor) timeout_ms: u64,
    pub(in crate::reactor) timer: Option<TimerKey>,
}
