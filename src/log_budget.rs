//! The one bound on the log lines a peer can cause: every refusal, protocol error and
//! connection failure a peer's bytes (or its silence, or its leaving) make the server log
//! passes `peer_log!`, and the whole server writes at most `--refusals-logged-per-second`
//! of them a second. What it holds back is counted by cause and said in one summary line
//! once the second is over, so a flood of peers costs the log one line a second and says
//! what it was.
//!
//! `LogBudget` is pure, with time passed in. The server keeps one on its loop's thread
//! (`admit`, `flush`, `summary_at`), as the `log` crate keeps its logger: so that the
//! engine's few peer-caused lines and the reactor's share one budget without the engine
//! seeing the reactor. A server runs on one thread, and an in-process test server on its
//! own, so each server has its own budget.

use std::cell::RefCell;
use std::fmt;

use log::Level;

/// Why a peer made the server log: the summary's counts are by cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// An ACL denial, protected mode's refusal, or a per-connection denial count.
    Denied,
    /// An HTTP request from a foreign `Host`, or a browser on another site.
    Host,
    /// A console action refused (not from the console's page, or not from loopback).
    Console,
    /// A TLS handshake that failed, timed out, or came to a plaintext port.
    Tls,
    /// Bytes that are not the protocol: a bad packet or admin line, an oversized one, an
    /// HTTP request that does not parse or does not come in time.
    Protocol,
    /// A connection's read or write failed, or the peer left in the middle of something.
    Connection,
    /// A connection refused at accept (`--max-connections`).
    Accept,
    /// What a worker sent that the server refused or dropped (too many functions, a result
    /// for a job it does not run).
    Worker,
    /// A peer that does not read its replies, closed or paused (`--max-output-buffer`,
    /// `--max-total-output`).
    Output,
}

impl Cause {
    pub const ALL: [Cause; 9] = [
        Cause::Denied,
        Cause::Host,
        Cause::Console,
        Cause::Tls,
        Cause::Protocol,
        Cause::Connection,
        Cause::Accept,
        Cause::Worker,
        Cause::Output,
    ];

    /// The cause as the summary line names it.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Denied => "denied",
            Cause::Host => "foreign host or site",
            Cause::Console => "console action",
            Cause::Tls => "tls",
            Cause::Protocol => "protocol error",
            Cause::Connection => "connection error",
            Cause::Accept => "refused at accept",
            Cause::Worker => "worker",
            Cause::Output => "unread output",
        }
    }
}

/// The default of `--refusals-logged-per-second`.
pub const DEFAULT_PER_SECOND: u32 = 100;

/// At most `per_second` lines in each second of the clock; the rest counted by cause until
/// a summary says them.
#[derive(Debug)]
pub struct LogBudget {
    per_second: u32,
    /// The second (`now / 1000`) `logged` counts in.
    second: u64,
    logged: u32,
    /// Lines held back since the last summary, by `Cause::ALL`'s order.
    held: [u64; Cause::ALL.len()],
    /// When the first of them was held.
    held_since: Option<u64>,
    /// The most severe level among them: the summary's.
    held_level: Level,
}

/// What a summary says: the lines held back, by cause, over how long.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub level: Level,
    pub held: Vec<(Cause, u64)>,
    /// Seconds of the clock since the one in which the first line was held, at least 1.
    pub seconds: u64,
    pub per_second: u32,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u64 = self.held.iter().map(|(_, n)| n).sum();
        write!(
            f,
            "{total} more refusals not logged in the last {} s (past --refusals-logged-per-second {}):",
            self.seconds, self.per_second
        )?;
        for (i, (cause, n)) in self.held.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep} {} {n}", cause.label())?;
        }
        Ok(())
    }
}

impl LogBudget {
    pub fn new(per_second: u32) -> LogBudget {
        LogBudget {
            per_second,
            second: 0,
            logged: 0,
            held: [0; Cause::ALL.len()],
            held_since: None,
            held_level: Level::Trace,
        }
    }

    /// May a line of `cause` at `level` be written at `now_ms`? If not, it is counted for
    /// the summary.
    pub fn admit(&mut self, now_ms: u64, cause: Cause, level: Level) -> bool {
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.logged = 0;
        }
        if self.logged < self.per_second {
            self.logged += 1;
            return true;
        }
        if let Some(n) = Cause::ALL.iter().position(|c| *c == cause) {
            self.held[n] += 1;
        }
        self.held_since.get_or_insert(now_ms);
        self.held_level = self.held_level.min(level);
        false
    }

    /// When the next summary is due: the end of the second in which the first line it
    /// counts was held (so a flood gets one summary a second); `None` while nothing is held.
    pub fn summary_at(&self) -> Option<u64> {
        self.held_since.map(|t| (t / 1000 + 1) * 1000)
    }

    /// The summary, once due at `now_ms`; what it says is no longer held.
    pub fn summary(&mut self, now_ms: u64) -> Option<Summary> {
        let since = self
            .held_since
            .filter(|_| self.summary_at() <= Some(now_ms))?;
        let held = Cause::ALL
            .iter()
            .zip(std::mem::take(&mut self.held))
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (*c, n))
            .collect();
        let level = std::mem::replace(&mut self.held_level, Level::Trace);
        self.held_since = None;
        Some(Summary {
            level,
            held,
            seconds: (now_ms / 1000).saturating_sub(since / 1000).max(1),
            per_second: self.per_second,
        })
    }
}

thread_local! {
    /// The budget of the server running on this thread.
    static BUDGET: RefCell<LogBudget> = RefCell::new(LogBudget::new(DEFAULT_PER_SECOND));
}

/// Start this thread's budget afresh at `per_second` (the server's loop, as it starts).
pub fn configure(per_second: u32) {
    BUDGET.with_borrow_mut(|b| *b = LogBudget::new(per_second));
}

/// `peer_log!`'s question: may a line of `cause` at `level` be written at `now_ms`? A line
/// the log would not write anyway (below `--verbose`) is neither written nor counted. A
/// summary that is due is written first.
pub fn admit(now_ms: u64, cause: Cause, level: Level) -> bool {
    if level > log::max_level() {
        return false;
    }
    BUDGET.with_borrow_mut(|b| {
        write_summary(b, now_ms);
        b.admit(now_ms, cause, level)
    })
}

/// Write the summary if one is due at `now_ms` (the loop asks once a turn).
pub fn flush(now_ms: u64) {
    BUDGET.with_borrow_mut(|b| write_summary(b, now_ms));
}

/// When this thread's next summary is due, for the loop's sleep.
pub fn summary_at() -> Option<u64> {
    BUDGET.with_borrow(LogBudget::summary_at)
}

fn write_summary(b: &mut LogBudget, now_ms: u64) {
    if let Some(s) = b.summary(now_ms) {
        log::log!(s.level, "{s}");
    }
}

/// `log!` for a line a peer can cause, through this thread's `LogBudget`:
/// `peer_log!(now, Cause::Host, Warn, "HTTP connection {idx}: ...", ...)`. Peer data in it
/// goes through `crate::peer_text::shown`.
#[macro_export]
macro_rules! peer_log {
    ($now:expr, $cause:expr, $level:ident, $($arg:tt)+) => {
        if $crate::log_budget::admit($now, $cause, ::log::Level::$level) {
            ::log::log!(::log::Level::$level, $($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_the_budget_a_second_then_one_summary_of_the_rest() {
        let mut b = LogBudget::new(2);
        assert!(b.admit(5_000, Cause::Host, Level::Warn));
        assert!(b.admit(5_100, Cause::Denied, Level::Warn));
        assert_eq!(b.summary_at(), None);
        assert!(!b.admit(5_200, Cause::Host, Level::Warn));
        assert!(!b.admit(5_300, Cause::Host, Level::Info));
        assert!(!b.admit(5_999, Cause::Denied, Level::Info));
        assert_eq!(b.summary_at(), Some(6_000));
        assert_eq!(b.summary(5_999), None);
        let s = b.summary(6_000).expect("due");
        assert_eq!(
            s,
            Summary {
                level: Level::Warn,
                held: vec![(Cause::Denied, 1), (Cause::Host, 2)],
                seconds: 1,
                per_second: 2,
            }
        );
        assert_eq!(
            s.to_string(),
            "3 more refusals not logged in the last 1 s (past --refusals-logged-per-second 2): denied 1, foreign host or site 2"
        );
        // Said once: nothing is held any more.
        assert_eq!(b.summary(6_000), None);
        assert_eq!(b.summary_at(), None);
        // A new second has its own budget.
        assert!(b.admit(6_001, Cause::Tls, Level::Warn));
        assert!(b.admit(6_002, Cause::Tls, Level::Warn));
        assert!(!b.admit(6_003, Cause::Tls, Level::Info));
        // A summary that waited (nothing woke the loop) spans the time since the first held.
        let s = b.summary(9_500).expect("due");
        assert_eq!((s.seconds, s.level), (3, Level::Info));
        assert_eq!(s.held, vec![(Cause::Tls, 1)]);
    }

    #[test]
    fn a_flood_gets_one_summary_a_second() {
        let mut b = LogBudget::new(1);
        let mut summaries = 0;
        let mut written = 0;
        for now in (0..10_000).step_by(10) {
            if b.summary(now).is_some() {
                summaries += 1;
            }
            if b.admit(now, Cause::Protocol, Level::Warn) {
                written += 1;
            }
        }
        assert_eq!(written, 10);
        assert_eq!(summaries, 9);
        assert_eq!(
            b.summary(10_000).map(|s| s.held),
            Some(vec![(Cause::Protocol, 99)])
        );
    }

    #[test]
    fn a_budget_of_zero_writes_only_summaries() {
        let mut b = LogBudget::new(0);
        assert!(!b.admit(0, Cause::Accept, Level::Warn));
        assert_eq!(
            b.summary(1_000).map(|s| s.held),
            Some(vec![(Cause::Accept, 1)])
        );
    }
}
