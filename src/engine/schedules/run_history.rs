//! What each schedule entry has done: its `History` (counts, the operator's marks, the last
//! error) with a ring of its last `RUNS_KEPT` runs (scheduled time, start, duration, outcome,
//! manual or not), for `show schedules`, `/schedules` and the console's strips. The ring is
//! kept in memory across reloads but not journalled (see docs/schedules.md, "Run history").

use std::collections::VecDeque;
use std::fmt::Write as _;

use bytes::Bytes;

use crate::engine::rfc3339;

/// Runs kept per entry (the "last 20 runs"); older ones fall off.
pub const RUNS_KEPT: usize = 20;
/// An error text kept for an entry is cut to this many characters (one line).
pub const ERROR_CHARS: usize = 200;

/// What an entry has done so far.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Scheduled time of the last run made.
    pub last_run_ms: Option<u64>,
    pub last_outcome: Option<String>,
    pub last_duration_ms: Option<u64>,
    pub runs: u64,
    pub failures: u64,
    pub skips: u64,
    /// Runs still going at their `max_duration=` (`too_long` alerts).
    pub too_long: u64,
    /// Runs that succeeded sooner than their `min_duration=` (`too_short` alerts).
    pub too_short: u64,
    /// The latest scheduled time dealt with, run or skipped: runs missed while the server was
    /// down are counted after it, so none is counted twice.
    pub seen_ms: Option<u64>,
    /// Runs skipped since the last run made, so that a long streak (no worker at all) is
    /// logged at 1, 10, 100, ... instead of every time.
    pub skip_streak: u64,
    /// Runs in a row none of whose jobs started (overlap=skip, queue full): the second one
    /// means nothing ran for longer than the entry's interval, which alerts `on_failure=`.
    pub runs_skipped_in_row: u64,
    /// What the operator set (paused, skip the next run) and whether the last run was manual.
    pub marks: ScheduleMarks,
    /// The last runs, oldest first (bounded).
    pub recent: RunRing,
    /// Why the last failed, missed or skipped run went wrong (one line, bounded).
    pub last_error: Option<String>,
    /// A heartbeat entry's pings (`expect=ping`): the run awaited and the run going on.
    pub ping: super::ping_state::PingState,
}

/// What the operator set on an entry, and whether its last run was a manual one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScheduleMarks {
    /// Fires nothing until `resume`; `run schedule` still works.
    pub paused: bool,
    /// The next run of its timing is skipped (and counted as a skip).
    pub skip_next: bool,
    /// The last run made was a `run schedule`, not one of its timing.
    pub last_manual: bool,
}

/// The columns `show schedules` ends with: paused or active, whether the next run is skipped,
/// and whether the last run was manual.
pub(in crate::engine) fn marks_columns(h: &History) -> String {
    let m = h.marks;
    format!(
        "{}\t{}\t{}",
        if m.paused { "paused" } else { "active" },
        if m.skip_next { "skip-next" } else { "-" },
        match (h.last_run_ms, m.last_manual) {
            (None, _) => "-",
            (Some(_), true) => "manual",
            (Some(_), false) => "scheduled",
        }
    )
}

/// How one run ended, or why it never happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    Complete,
    /// WORK_FAIL, WORK_EXCEPTION, a timeout or `--job-retries` spent.
    Failed,
    /// Cancelled by an operator (not a failure of the run).
    Cancelled,
    /// It was due but never ran: the server was down or stalled (`catchup=none`), or the
    /// made-up run was past its `deadline`.
    Missed,
    /// Not started: the previous run was still going (`overlap=skip`) or the queue was full.
    Skipped,
    /// Still going at its `max_duration=` (the run goes on; its end is a record of its own).
    TooLong,
    /// Succeeded sooner than its `min_duration=`.
    TooShort,
}

impl RunOutcome {
    /// The outcome a word names (`name`'s inverse), for accounts read back.
    pub fn from_name(word: &str) -> Option<RunOutcome> {
        [
            RunOutcome::Complete,
            RunOutcome::Failed,
            RunOutcome::Cancelled,
            RunOutcome::Missed,
            RunOutcome::Skipped,
            RunOutcome::TooLong,
            RunOutcome::TooShort,
        ]
        .into_iter()
        .find(|o| o.name() == word)
    }

    /// The word in `show schedules` and `/schedules`.
    pub fn name(self) -> &'static str {
        match self {
            RunOutcome::Complete => "complete",
            RunOutcome::Failed => "failed",
            RunOutcome::Cancelled => "cancelled",
            RunOutcome::Missed => "missed",
            RunOutcome::Skipped => "skipped",
            RunOutcome::TooLong => "too_long",
            RunOutcome::TooShort => "too_short",
        }
    }
}

/// One run of an entry (one job of it, for a fan-out entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// Its scheduled (nominal) time; for a manual run, when it was asked for.
    pub scheduled_ms: u64,
    /// When a worker took it; `None` for a run that never started.
    pub started_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub outcome: RunOutcome,
    pub manual: bool,
    /// A backfill's run (manual too): `scheduled_ms` is the past time it stands for.
    pub backfill: bool,
    /// Its job's handle, which names its kept output (`show runs`): two runs may start in
    /// the same millisecond, never with one handle. `None` for a run that had no job.
    pub handle: Option<Bytes>,
}

impl RunRecord {
    /// A run that never started.
    pub fn never(scheduled_ms: u64, outcome: RunOutcome) -> RunRecord {
        RunRecord {
            scheduled_ms,
            started_ms: None,
            duration_ms: None,
            outcome,
            manual: false,
            backfill: false,
            handle: None,
        }
    }
}

/// The last `RUNS_KEPT` runs, oldest first.
#[derive(Clone, Debug, Default)]
pub struct RunRing {
    runs: VecDeque<RunRecord>,
}

impl RunRing {
    pub fn push(&mut self, r: RunRecord) {
        if self.runs.len() == RUNS_KEPT {
            self.runs.pop_front();
        }
        self.runs.push_back(r);
    }

    pub fn iter(&self) -> impl Iterator<Item = &RunRecord> {
        self.runs.iter()
    }

    /// The `show schedules` column: runs oldest first, `;` between them, each
    /// `SCHEDULED DURATION OUTCOME [manual|backfill]` (duration `-` for a run that never started).
    pub fn column(&self) -> String {
        if self.runs.is_empty() {
            return "-".into();
        }
        let mut s = String::new();
        for (i, r) in self.runs.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            let _ = write!(s, "{} ", rfc3339(r.scheduled_ms));
            match r.duration_ms {
                Some(d) => {
                    let _ = write!(s, "{d}ms");
                }
                None => s.push('-'),
            }
            let _ = write!(s, " {}", r.outcome.name());
            if r.backfill {
                s.push_str(" backfill");
            } else if r.manual {
                s.push_str(" manual");
            }
        }
        s
    }
}

/// An error text as kept: one line (controls become spaces), at most `ERROR_CHARS` characters.
pub fn one_line(text: &str) -> String {
    text.chars()
        .take(ERROR_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(at: u64, outcome: RunOutcome) -> RunRecord {
        RunRecord {
            scheduled_ms: at,
            started_ms: Some(at),
            duration_ms: Some(5),
            outcome,
            manual: false,
            backfill: false,
            handle: None,
        }
    }

    #[test]
    fn the_ring_keeps_the_last_twenty_oldest_first() {
        let mut ring = RunRing::default();
        assert_eq!(ring.column(), "-");
        for i in 0..25u64 {
            ring.push(run(1_700_000_000_000 + i * 60_000, RunOutcome::Complete));
        }
        assert_eq!(ring.iter().count(), RUNS_KEPT);
        let first = ring.iter().next().unwrap().scheduled_ms;
        assert_eq!(
            first,
            1_700_000_000_000 + 5 * 60_000,
            "the five oldest fell off"
        );
        assert_eq!(
            ring.iter().last().unwrap().scheduled_ms,
            1_700_000_000_000 + 24 * 60_000
        );
    }

    #[test]
    fn the_column_names_time_duration_outcome_and_manual() {
        let mut ring = RunRing::default();
        ring.push(run(1_700_000_000_000, RunOutcome::Complete));
        ring.push(RunRecord {
            scheduled_ms: 1_700_000_060_000,
            started_ms: None,
            duration_ms: None,
            outcome: RunOutcome::Missed,
            manual: false,
            backfill: false,
            handle: None,
        });
        ring.push(RunRecord {
            manual: true,
            ..run(1_700_000_090_000, RunOutcome::Failed)
        });
        assert_eq!(
            ring.column(),
            "2023-11-14T22:13:20Z 5ms complete;2023-11-14T22:14:20Z - missed;\
             2023-11-14T22:14:50Z 5ms failed manual"
        );
    }

    #[test]
    fn error_text_is_one_bounded_line() {
        assert_eq!(one_line("disk\nfull\t!"), "disk full !");
        assert_eq!(one_line(&"é".repeat(500)).chars().count(), ERROR_CHARS);
    }
}
