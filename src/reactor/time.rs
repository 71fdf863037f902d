//! The loop's time: the clock (the system's, or a manual one in tests), the turn count, and
//! the one reading of the clock each turn acts at.

use std::io;
use std::sync::Arc;

use mio::Registry;

use crate::clock::Clock;

use super::embedded;

/// How long a lazy reply may wait for company: 2 ticks of the loop's millisecond clock, so
/// 1 to 2 ms. Long enough for a worker on the same network to answer a short job, too short
/// for any client to notice a JOB_CREATED that comes late. On a clock moved by hand no reply
/// waits: the hold is a trade of latency for syscalls on real time, not a deadline.
pub(super) const LAZY_HOLD_MS: u64 = 2;

/// The loop's time: the clock, the turn count, and the one reading of the clock each turn
/// acts at.
pub(super) struct Time {
    /// Loop turns since start.
    pub(super) turn: u64,
    /// `now` of the current loop turn: the clock is read once per turn, and everything the
    /// turn does happens at that time.
    pub(super) now: u64,
    /// The monotonic time of the same reading (`Clock::mono_ms`): the etcd link's, read only
    /// when there is one.
    pub(super) mono: u64,
    /// The time (src/clock.rs): the system clock, or a manual one in tests (embedded.rs).
    pub(super) clock: Arc<dyn Clock>,
    /// How a manual clock wakes the loop when it moves (none on the system clock).
    pub(super) wake: Option<Arc<embedded::Wake>>,
    /// `LAZY_HOLD_MS`, or 0 on a manual clock.
    pub(super) lazy_hold_ms: u64,
}

impl Time {
    /// The loop's time on `clock`; a manual clock wakes the loop (through `registry`)
    /// whenever it moves, and holds no lazy reply.
    pub(super) fn new(clock: Arc<dyn Clock>, registry: &Registry) -> io::Result<Time> {
        let wake = match clock.manual() {
            Some(m) => Some(embedded::Wake::watch(m, registry)?),
            None => None,
        };
        let lazy_hold_ms = if wake.is_some() { 0 } else { LAZY_HOLD_MS };
        Ok(Time {
            turn: 0,
            now: 0,
            mono: 0,
            clock,
            wake,
            lazy_hold_ms,
        })
    }
}
