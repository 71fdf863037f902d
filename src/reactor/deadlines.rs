//! The reactor's own deadlines: what it must do to a connection when time passes (an HTTP
//! request that does not arrive, an idle keep-alive, a job answer that comes too late, a TLS
//! handshake that does not finish) or to a listener (an accept to try again), in a timer wheel of its own (`crate::timer::Timers`, the engine's type, not its wheel). The loop
//! sleeps until the earlier of the two wheels.
//!
//! Adding a deadline kind: one variant in `Deadline`, its arm in `Server::on_deadlines`, and
//! `arm`/`cancel` where it starts and stops; every match on `Deadline` lists every variant,
//! so that the compiler names each place a new kind must be handled. A deadline names its
//! connection's `ConnId`, so one that outlives its connection (or its slot's next tenant) is
//! recognised and dropped.

use super::token::Listener;
use crate::engine::ConnId;
use crate::timer::{TimerKey, Timers};

/// What a passed deadline means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// An HTTP connection sat idle between requests (`--http-idle-timeout`).
    HttpIdle(ConnId),
    /// An HTTP request's head and body did not arrive in time (`--http-header-timeout`).
    HttpRequest(ConnId),
    /// A foreground job over HTTP did not answer within its `X-Gearman-Timeout`.
    HttpJob(ConnId),
    /// A refused HTTP connection drained its client's bytes long enough.
    HttpLinger(ConnId),
    /// A TLS handshake did not finish within `--ssl-handshake-timeout` (tls_glue.rs).
    TlsHandshake(ConnId),
    /// Accept on a listener again: it failed (out of descriptors, say) with clients waiting,
    /// and under edge-triggered polling no readiness event comes for them (accept.rs).
    AcceptRetry(Listener),
}

/// The wheel of reactor deadlines, made at the first one: only HTTP and TLS connections (and a
/// failing accept) have any, and a wheel's slots are 8 kB a server without them need not hold.
#[derive(Default)]
pub struct Deadlines {
    wheel: Option<Timers<Deadline>>,
}

/// At most this many deadlines are acted on per turn (as the engine's wheel does): the rest
/// are due at once on the next.
pub const DEADLINES_PER_TURN: usize = 1024;

impl Deadlines {
    /// `what` happens at `at` (ms) unless cancelled with the key first.
    pub fn arm(&mut self, at: u64, what: Deadline) -> TimerKey {
        self.wheel.get_or_insert_with(Timers::new).insert(at, what)
    }

    /// Cancel a deadline; a stale key (fired or cancelled already) is ignored.
    pub fn cancel(&mut self, key: TimerKey) {
        if let Some(w) = self.wheel.as_mut() {
            w.cancel(key);
        }
    }

    /// The next deadline, for the loop's sleep.
    pub fn next(&self) -> Option<u64> {
        self.wheel.as_ref()?.next_deadline()
    }

    /// One deadline that passed by `now`, with the key it was armed under.
    pub fn due(&mut self, now: u64) -> Option<(TimerKey, Deadline)> {
        self.wheel.as_mut()?.poll(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(index: u32) -> ConnId {
        ConnId {
            index,
            generation: 1,
        }
    }

    #[test]
    fn deadlines_fire_in_time_order_and_cancelled_ones_never() {
        let mut d = Deadlines::default();
        assert_eq!((d.next(), d.due(1_000)), (None, None));
        let a = d.arm(1_500, Deadline::HttpIdle(conn(1)));
        let b = d.arm(1_000, Deadline::HttpRequest(conn(2)));
        let c = d.arm(1_200, Deadline::HttpJob(conn(3)));
        d.cancel(c);
        assert_eq!(d.next(), Some(1_000));
        assert_eq!(d.due(999), None);
        assert_eq!(d.due(1_600), Some((b, Deadline::HttpRequest(conn(2)))));
        assert_eq!(d.due(1_600), Some((a, Deadline::HttpIdle(conn(1)))));
        assert_eq!(d.due(1_600), None);
        assert_eq!(d.next(), None);
        // A fired key is stale: cancelling it does nothing.
        d.cancel(a);
    }
}
