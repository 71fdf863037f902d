//! The outbox: what the engine hands the reactor after a request or a timer (replies in
//! order, lazy replies that may share a write, resumed connections, a shutdown).

use super::*;

/// What the engine asks of the reactor after a request: replies in order, and at most one
/// shutdown.
#[derive(Debug, Default)]
pub struct Outbox {
    pub replies: Vec<(ConnId, Response)>,
    pub shutdown: Option<Shutdown>,
    /// Connections whose held GRAB was answered: the reactor serves what they sent after it.
    pub resumed: Vec<ConnId>,
    /// Indexes in `replies` of the replies that may wait for the next reply to the same
    /// connection (see `push_lazy`), ascending.
    pub lazy: Vec<usize>,
    /// Due schedule runs of a clustered server, waiting for their claim (cluster_runs.rs).
    pub claims: Vec<RunClaim>,
    /// Claimed overlap=skip runs of this server whose jobs all ended (entry, scheduled ms):
    /// the cluster marks their records done (cluster_runs.rs).
    pub runs_ended: Vec<(std::rc::Rc<str>, u64)>,
    /// Operators' asks the cluster answered, for a connection that is not an admin line's
    /// (HTTP): connection, ticket, and `Ok` or why not (cluster_history.rs).
    pub ops_answered: Vec<(ConnId, u64, Result<(), String>)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    Immediate,
    Graceful,
}

impl Outbox {
    pub fn push(&mut self, to: ConnId, r: Response) {
        self.replies.push((to, r));
    }

    /// Queue a reply that need not leave at once: a JOB_CREATED whose foreground job went to a
    /// waiting worker, so that its result follows within microseconds and both can share one
    /// write (one send and one wake-up of the client fewer). The reactor bounds the wait.
    pub fn push_lazy(&mut self, to: ConnId, r: Response) {
        self.lazy.push(self.replies.len());
        self.replies.push((to, r));
    }

    /// Forget every queued reply.
    pub fn clear_replies(&mut self) {
        self.replies.clear();
        self.lazy.clear();
    }
}

/// A due run waiting for its claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunClaim {
    pub entry: std::rc::Rc<str>,
    /// Its scheduled time (unix ms).
    pub nominal_ms: u64,
    /// `overlap=skip`: another server's run still going blocks it.
    pub overlap_skip: bool,
    /// The unique its jobs get (overlap=skip), for the other servers to see.
    pub unique: String,
    /// Until when this run blocks the entry on other servers: now plus the entry's
    /// `timeout=` (0 without one: nothing says when it ends, so it does not block).
    pub until_ms: u64,
}
