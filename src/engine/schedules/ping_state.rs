//! A heartbeat entry's state between its pings (the run awaited, the run going on), kept with
//! its history across reloads; `watch` acts on it.

use crate::timer::TimerKey;

/// A heartbeat entry's pings: the run it waits for and the run going on.
#[derive(Clone, Debug, Default)]
pub struct PingState {
    /// The run awaited: its scheduled time and its grace deadline in the wheel.
    pub(super) awaiting: Option<(u64, TimerKey)>,
    /// A scheduled time already answered by a ping that came before it (the ping's machine
    /// a little ahead, or a daemon pinging on its own beat): its tick awaits nothing.
    pub(super) answered_early: Option<u64>,
    /// The latest scheduled time that came, for a ping outside any run's window.
    pub(super) last_due: Option<u64>,
    /// A `/start` ping's run, until its end ping.
    pub(super) started: Option<Started>,
    /// Runs missed in a row: only the first of a streak alerts.
    pub(super) missed_in_row: u64,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Started {
    pub(super) at_ms: u64,
    pub(super) scheduled_ms: u64,
    /// The `max_duration=` deadline, cancelled by the end ping.
    pub(super) too_long: Option<TimerKey>,
}

impl PingState {
    /// The deadlines to cancel when the entries are loaded again (they are armed again).
    pub(super) fn take_timers(&mut self) -> impl Iterator<Item = TimerKey> {
        let a = self.awaiting.as_mut().map(|(_, k)| *k);
        let b = self.started.as_mut().and_then(|s| s.too_long.take());
        a.into_iter().chain(b)
    }
}
