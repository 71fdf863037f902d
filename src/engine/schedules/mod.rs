//! Schedule entries inside the engine: arming them in the wheel, injecting their jobs on
//! time, and keeping each entry's history (runs, outcomes, durations, skips) for
//! `show schedules` and the log.
//!
//! This file: the entries armed in the wheel and injected on time. Beside it:
//!
//! - `load`: a schedules file loaded (what keeps its state across a reload), an entry's state
//!   restored from the journal, and its history journalled.
//! - `run_end`: how a run ends in its entry (its job's outcome, a run missed or skipped), and
//!   how often a streak of skips is logged.
//! - `run_history`: each entry's counts, marks and ring of its last runs.
//! - `ops`: an operator's hand on an entry: run, skip, pause, resume.
//! - `cluster_runs`: runs on a server of a cluster, handed out as claims for etcd.
//! - `cluster_history`: an entry's account of its runs for the whole cluster, and operators'
//!   asks handed to the cluster and their answers.
//! - `cluster_backfill`: backfills kept in etcd, and the leader's claims of the runs that wait
//!   (backfilled and catch-up times).
//! - `alerts`: the `on_failure=` and `on_success=` jobs that report a run.
//! - `groups`: `group=`, runs of the entries of one group one at a time.
//! - `after`: `@after` entries, run when their parents have run.
//! - `backfill`: runs that wait to be made: a backfill's, `catchup=all`'s, and the one
//!   `overlap=queue` holds.
//! - `watch`: heartbeat entries (`expect=ping`) and their pings; `max_duration=` and
//!   `min_duration=` of any run. `ping_state`: what a heartbeat entry keeps between pings.

pub(super) mod after;
mod alerts;
pub(super) mod backfill;
mod cluster_backfill;
mod cluster_history;
pub(super) mod cluster_runs;
pub(super) mod groups;
mod load;
pub(super) mod ops;
mod ping_state;
mod run_end;

use run_end::{streak_level, streak_note};
pub(super) mod run_history;
pub(super) mod watch;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use bytes::Bytes;
use chrono::DateTime;

use crate::engine::handles::KeyRef;
use crate::engine::{Engine, JobKey, NewJob, Origin, Outbox, TimerEvent, rfc3339};
use crate::proto::request::{JobBody, Priority};
use crate::schedule::cron::Timing;
use crate::schedule::file::{Catchup, Entry, EntryPriority, Overlap, ScheduleFile};
use crate::store::{Record, ScheduleCounters, ScheduleRan};
use crate::timer::TimerKey;
use run_history::{History, RunOutcome, ScheduleMarks};

/// Before this (2020-01-01) the wall clock is taken to be unset (an appliance without RTC).
const PLAUSIBLE_MS: u64 = 1_577_836_800_000;
/// A run this late counts as missed (the server was down, stalled, or the clock jumped).
const MISSED_AFTER_MS: u64 = 5 * 60_000;
/// How often to look again at an implausible clock.
const CLOCK_RECHECK_MS: u64 = 60_000;
/// Missed runs are counted one by one up to this many (an every-minute entry down for a
/// week); beyond, the count says "at least". `@every` is counted exactly whatever the span.
pub(super) const MISSED_COUNT_CAP: u64 = 10_000;

pub(crate) struct EntryState {
    pub entry: Entry,
    pub id: Rc<str>,
    /// Scheduled time of the next run.
    pub next_ms: Option<u64>,
    pub timer: Option<TimerKey>,
    pub history: History,
}

impl EntryState {
    /// The entry's first scheduled time after `after_ms` (ms since the epoch), if any.
    pub(super) fn time_after(&self, after_ms: u64) -> Option<u64> {
        self.entry
            .timing
            .next_after(utc(after_ms), &self.entry.zone)
            .map(|t| t.timestamp_millis().max(0) as u64)
    }
}

#[derive(Default)]
pub(crate) struct Schedules {
    pub entries: Vec<EntryState>,
    pub(super) by_id: HashMap<Rc<str>, usize>,
    /// Bumped on every load, so timers of an older load are recognised and ignored.
    generation: u64,
    warned_clock: bool,
    rng: u64,
    /// Runs are claimed from the cluster before they are made (`--etcd`).
    pub(super) clustered: bool,
    /// The cluster's leader, for `show schedules` (`-` when not clustered or unknown).
    pub(super) leader: Option<String>,
    /// Clustered overlap=skip entries with jobs of claimed runs still going here: the latest
    /// claimed scheduled time and the jobs left (cluster_runs.rs).
    pub(super) cluster_open: HashMap<Rc<str>, (u64, usize)>,
    /// When the file was last loaded: a new cluster leader counts an entry the cluster has
    /// no run of as due since then.
    pub(super) loaded_ms: u64,
    /// Last runs and counters read back from the journal, waiting for the entries to be
    /// loaded. Entries no longer in the file stay here, unused (at most one per entry the
    /// journal knows), in case a reload brings them back.
    restored: HashMap<Rc<str>, Restored>,
    /// `group=`: the groups' live jobs and held-back runs (groups.rs).
    pub(super) groups: groups::Groups,
    /// `@after`: the children's sets and links (after.rs).
    /// Boxed, like `pending`: most files have neither, and the server that holds the engine
    /// is moved on the stack at start-up (footprint.rs keeps it small).
    pub(super) after: Box<after::AfterState>,
    /// Backfill, catch-up and queued runs waiting to be made (backfill.rs).
    pub(super) pending: Box<backfill::Pending>,
    /// With `--etcd`: what the cluster is owed and what this server knows of it.
    pub(super) cluster: cluster_history::ClusterSide,
}

/// Who made a run: the entry's timing, an operator's `run schedule`, or a backfill (a manual
/// run standing for a past scheduled time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RunKind {
    Scheduled,
    Manual,
    Backfill,
}

#[derive(Clone, Copy, Debug, Default)]
struct Restored {
    last_run_ms: Option<u64>,
    seen_ms: Option<u64>,
    /// runs, failures, skips; `None` from a journal written before they were kept.
    counters: Option<[u64; 3]>,
    /// too_long, too_short; 0 from a journal written before they were kept.
    durations: [u64; 2],
    marks: ScheduleMarks,
}

/// What one run injected: the handles of its jobs, and how many were left out (`busy` names
/// a previous job still going, when that was a reason).
pub(super) struct Injected {
    pub handles: Vec<String>,
    pub skipped: u64,
    pub busy: Option<String>,
}

/// What a load of the schedules file did, for its log line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Entries whose id and timing did not change, so they kept their next run.
    pub kept: usize,
    /// Entries of the file that got their history back from the journal.
    pub restored: usize,
}

/// How a scheduled job ended (or paused).
#[derive(Clone, Copy)]
pub(crate) enum Outcome<'a> {
    Complete,
    Fail,
    Exception(&'a [u8]),
    Cancelled,
    /// Ran past a time limit (which one).
    Timeout(crate::engine::leases::TimeLimit),
    RetriesSpent,
    /// Waited in its queue past its function's `expire`.
    Expired,
    /// A worker died holding it; it is queued again.
    Requeued,
}

impl Outcome<'_> {
    pub(super) fn text(&self) -> String {
        match self {
            Outcome::Complete => "complete".into(),
            Outcome::Fail => "fail".into(),
            Outcome::Exception(t) => {
                let t: String = String::from_utf8_lossy(t)
                    .chars()
                    .take(200)
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                format!("exception: {t}")
            }
            Outcome::Cancelled => "cancelled".into(),
            Outcome::Timeout(limit) => limit.outcome_text(),
            Outcome::RetriesSpent => "retries spent".into(),
            Outcome::Expired => "expired".into(),
            Outcome::Requeued => "requeued after a dead worker".into(),
        }
    }

    pub(super) fn is_failure(&self) -> bool {
        !matches!(self, Outcome::Complete | Outcome::Requeued)
    }

    /// A failure's error text in words (WORK_EXCEPTION's data, or what happened: never
    /// empty) and the tries it had, given the times workers gave it back; `None` for an
    /// outcome that is not a failure of the job (complete, cancelled, requeued).
    pub(super) fn failure(&self, retries: u32) -> Option<(Bytes, u32)> {
        Some(match self {
            Outcome::Fail => (Bytes::from_static(b"failed (WORK_FAIL)"), retries + 1),
            Outcome::Exception([]) => (
                Bytes::from_static(b"failed (WORK_EXCEPTION without text)"),
                retries + 1,
            ),
            Outcome::Exception(d) => (Bytes::copy_from_slice(d), retries + 1),
            Outcome::Timeout(limit) => (limit.error_text().into(), retries + 1),
            Outcome::RetriesSpent => (
                format!("given back {retries} times by workers that left (--job-retries)").into(),
                retries,
            ),
            Outcome::Expired => (Bytes::from_static(b"expired"), retries),
            Outcome::Complete | Outcome::Cancelled | Outcome::Requeued => return None,
        })
    }

    /// How the run ended, for its history; `None` while it goes on (requeued).
    pub(super) fn run_outcome(&self) -> Option<RunOutcome> {
        match self {
            Outcome::Complete => Some(RunOutcome::Complete),
            Outcome::Requeued => None,
            Outcome::Cancelled => Some(RunOutcome::Cancelled),
            _ => Some(RunOutcome::Failed),
        }
    }
}

fn priority(p: EntryPriority) -> Priority {
    match p {
        EntryPriority::High => Priority::High,
        EntryPriority::Normal => Priority::Normal,
        EntryPriority::Low => Priority::Low,
    }
}

pub(super) fn utc(ms: u64) -> DateTime<chrono::Utc> {
    DateTime::from_timestamp_millis(ms as i64).unwrap_or_default()
}

/// `1 run`, `12 runs`, `at least 10000 runs`.
pub(super) fn missed_runs(n: u64, capped: bool) -> String {
    let at_least = if capped { "at least " } else { "" };
    format!("{at_least}{}", crate::plural::count(n, "run", "runs"))
}

pub(super) fn opt_time(ms: Option<u64>) -> String {
    ms.map_or_else(|| "-".to_string(), rfc3339)
}

impl Schedules {
    /// A random delay in `0..=max` ms (xorshift; jitter needs no more).
    pub(super) fn jitter(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut x = self.rng.max(1);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x % (max + 1)
    }
}

impl Engine {
    /// Arm the entry's next run after `after` (never before its last run: a clock that steps
    /// back does not repeat a run already made).
    pub(super) fn arm_after(&mut self, slot: usize, after: u64) {
        let st = &self.schedules.entries[slot];
        let from = st.history.last_run_ms.map_or(after, |l| l.max(after));
        match st.time_after(from) {
            Some(t) => self.arm_at(slot, t),
            None => {
                let st = &mut self.schedules.entries[slot];
                st.next_ms = None;
                if !matches!(st.entry.timing, Timing::Reboot | Timing::After(_)) {
                    log::warn!("schedule {}: no further run time", st.id);
                }
            }
        }
    }

    fn arm_at(&mut self, slot: usize, nominal: u64) {
        let jitter = self.schedules.entries[slot].entry.jitter_ms;
        let delay = self.schedules.jitter(jitter);
        let generation = self.schedules.generation;
        let key = self.timers.insert(
            nominal.saturating_add(delay),
            TimerEvent::ScheduleFire { slot, generation },
        );
        let st = &mut self.schedules.entries[slot];
        st.next_ms = Some(nominal);
        st.timer = Some(key);
    }

    /// A schedule timer went off.
    pub(super) fn fire_schedule(
        &mut self,
        slot: usize,
        generation: u64,
        now: u64,
        out: &mut Outbox,
    ) {
        if generation != self.schedules.generation || slot >= self.schedules.entries.len() {
            return;
        }
        let st = &mut self.schedules.entries[slot];
        st.timer = None;
        let Some(nominal) = st.next_ms else { return };
        if now < PLAUSIBLE_MS {
            if !self.schedules.warned_clock {
                self.schedules.warned_clock = true;
                log::warn!(
                    "the wall clock says {}, before 2020: schedules fire nothing until it is set",
                    rfc3339(now)
                );
            }
            let generation = self.schedules.generation;
            let key = self.timers.insert(
                now + CLOCK_RECHECK_MS,
                TimerEvent::ScheduleFire { slot, generation },
            );
            self.schedules.entries[slot].timer = Some(key);
            return;
        }
        let late = now.saturating_sub(nominal);
        if st.entry.expect_ping {
            // Its run happens elsewhere: wait for the ping (late or not, the grace decides).
            self.ping_due(slot, nominal);
        } else if late <= MISSED_AFTER_MS {
            self.run_entry(slot, nominal, now, out);
            self.missed_since(slot, nominal, now, out);
        } else if self.schedules.clustered && !self.schedules.cluster.leading {
            // A follower's late timer (it was stalled): the leader dealt with that time.
        } else if st.entry.catchup != Catchup::None {
            self.catch_up(slot, now, out);
        } else {
            // This run and every later one up to now are skipped (the next is armed after now).
            let (n, capped) = self.skip_until(slot, nominal, now, 1);
            let reason = format!(
                "{} missed from {} (now {}; server stalled or clock jumped); catchup=none",
                missed_runs(n, capped),
                rfc3339(nominal),
                rfc3339(now)
            );
            self.report_missed(slot, nominal, reason, now, out);
        }
        self.arm_after(slot, now);
    }

    /// The run due at `nominal` was made late: the entry's times that fell since, up to `now`,
    /// were not (the wall clock stepped forward, or the loop stalled under five minutes).
    /// They are made up under `catchup=all`, else counted, logged and alerted as missed; the
    /// next run is armed after now either way. On a follower the leader deals with them.
    fn missed_since(&mut self, slot: usize, nominal: u64, now: u64, out: &mut Outbox) {
        if self.schedules.clustered && !self.schedules.cluster.leading {
            return;
        }
        let st = &mut self.schedules.entries[slot];
        let Some(first) = st.time_after(nominal).filter(|&t| t <= now) else {
            return;
        };
        // Every time up to `nominal` is dealt with: what follows starts after it.
        st.history.seen_ms = st.history.seen_ms.max(Some(nominal));
        if matches!(st.entry.catchup, Catchup::All { .. }) {
            self.catch_up(slot, now, out);
            return;
        }
        let (n, capped) = self.skip_until(slot, nominal, now, 0);
        let reason = format!(
            "{} missed after {} (now {}; the wall clock stepped forward or the server stalled): the run due then was made late, the times since are not made up (catchup=all would)",
            missed_runs(n, capped),
            rfc3339(nominal),
            rfc3339(now),
        );
        self.report_missed(slot, first, reason, now, out);
    }

    /// Skip the runs in `(after, now]`, plus `extra` already due: count them, remember that
    /// everything up to `now` was dealt with, and journal it. Returns the count and whether
    /// it reached the counting cap.
    fn skip_until(&mut self, slot: usize, after: u64, now: u64, extra: u64) -> (u64, bool) {
        let st = &mut self.schedules.entries[slot];
        let (more, capped) =
            st.entry
                .timing
                .runs_between(utc(after), utc(now), &st.entry.zone, MISSED_COUNT_CAP);
        let n = more + extra;
        if n > 0 {
            st.history.skips += n;
            st.history.seen_ms = Some(now);
            self.journal_history(slot);
        }
        (n, capped)
    }

    /// At start: the runs of a `catchup=none` entry that fell while the server was down are
    /// skipped; count them, and say so in one line (`while`: when they fell, for the line;
    /// a new cluster leader's are those while no server led).
    pub(super) fn count_missed_while_down(
        &mut self,
        slot: usize,
        now: u64,
        out: &mut Outbox,
        while_: &str,
    ) {
        let st = &self.schedules.entries[slot];
        let Some(last) = st.history.last_run_ms.max(st.history.seen_ms) else {
            return;
        };
        let first = st.time_after(last).unwrap_or(last);
        let (n, capped) = self.skip_until(slot, last, now, 0);
        if n > 0 {
            let reason = format!(
                "{} missed {while_} (last one seen {}, now {}); catchup=none",
                missed_runs(n, capped),
                rfc3339(last),
                rfc3339(now)
            );
            self.report_missed(slot, first, reason, now, out);
        }
    }

    /// Make up the last run missed since the entry last ran, once, unless older than its
    /// deadline.
    pub(super) fn catch_up(&mut self, slot: usize, now: u64, out: &mut Outbox) {
        let st = &self.schedules.entries[slot];
        // In a cluster each missed time is claimed as a run of its own time, once.
        if let Catchup::All { max } = st.entry.catchup {
            self.catch_up_all(slot, max, now, out);
            return;
        }
        // From the latest time dealt with: a run skipped, dropped, or missed while paused
        // (`resume` marks its time as seen) is not made up.
        let Some(from) = st
            .history
            .last_run_ms
            .max(st.history.seen_ms)
            .or(st.next_ms.map(|n| n.saturating_sub(1)))
        else {
            return;
        };
        let mut last_missed = None;
        let mut first_missed = None;
        let mut newest_older = None;
        let mut older = 0u64;
        let mut at = utc(from);
        for _ in 0..1_000_000 {
            match st.entry.timing.next_after(at, &st.entry.zone) {
                Some(t) if (t.timestamp_millis() as u64) <= now => {
                    older += u64::from(last_missed.is_some());
                    newest_older = last_missed;
                    last_missed = Some(t.timestamp_millis() as u64);
                    first_missed.get_or_insert(t.timestamp_millis() as u64);
                    at = t;
                }
                _ => break,
            }
        }
        let Some(missed) = last_missed else { return };
        if older > 0 {
            // The times before the newest are not made up: counted, logged and alerted, so
            // that no time is passed over in silence.
            let first = first_missed.unwrap_or(missed);
            let h = &mut self.schedules.entries[slot].history;
            h.skips += older;
            h.seen_ms = h.seen_ms.max(newest_older);
            let reason = format!(
                "{} missed from {} (now {}): catchup=last makes up the newest only, {}",
                missed_runs(older, false),
                rfc3339(first),
                rfc3339(now),
                rfc3339(missed)
            );
            self.journal_history(slot);
            self.report_missed(slot, first, reason, now, out);
        }
        let st = &self.schedules.entries[slot];
        if st.entry.deadline_ms.is_some_and(|d| now - missed > d) {
            let st = &mut self.schedules.entries[slot];
            st.history.skips += 1;
            st.history.seen_ms = st.history.seen_ms.max(Some(missed));
            let reason = format!(
                "missed run at {} is older than its deadline; dropped",
                rfc3339(missed)
            );
            self.journal_history(slot);
            self.report_missed(slot, missed, reason, now, out);
            return;
        }
        log::info!(
            "schedule {}: catching up the run missed at {}",
            st.id,
            rfc3339(missed)
        );
        self.run_entry(slot, missed, now, out);
    }

    /// A run of the entry's timing is due: in a cluster it is claimed first (the reactor
    /// answers with `claim_granted`), else it is made at once.
    fn run_entry(&mut self, slot: usize, nominal: u64, now: u64, out: &mut Outbox) {
        if self.schedules.entries[slot].entry.expect_ping {
            self.ping_due(slot, nominal);
            return;
        }
        if self.schedules.clustered {
            if self.behind_catch_up(slot, nominal) {
                return;
            }
            let claim = self.claim_for(slot, nominal, now);
            out.claims.push(claim);
            return;
        }
        self.make_run(slot, nominal, now, out);
    }

    /// Make one run of the entry's timing, unless the operator asked to skip it. Returns how
    /// many jobs it started.
    pub(super) fn make_run(
        &mut self,
        slot: usize,
        nominal: u64,
        now: u64,
        out: &mut Outbox,
    ) -> usize {
        if self.schedules.entries[slot].history.marks.skip_next {
            let st = &mut self.schedules.entries[slot];
            let h = &mut st.history;
            h.marks.skip_next = false;
            h.skips += 1;
            h.seen_ms = h.seen_ms.max(Some(nominal));
            log::info!(
                "schedule {}: run at {} skipped, as asked (skip schedule)",
                st.id,
                rfc3339(nominal)
            );
            self.journal_history(slot);
            return 0;
        }
        if self.queue_behind(slot, nominal, now, out) || self.wait_for_group(slot, nominal) {
            return 0;
        }
        let run = self.inject_run(slot, nominal, now, false, out);
        let skipped = run.skipped;
        let handles = run.handles;
        let h = &mut self.schedules.entries[slot].history;
        h.skips += skipped;
        h.skip_streak += skipped;
        h.seen_ms = h.seen_ms.max(Some(nominal));
        if !handles.is_empty() || skipped > 0 {
            if !handles.is_empty() {
                h.skip_streak = 0;
                h.runs_skipped_in_row = 0;
                // Each job started is a run (see `count_run_in`).
                h.runs += handles.len() as u64;
                // A run made up later (catchup=all) is older than one already made.
                h.last_run_ms = Some(h.last_run_ms.map_or(nominal, |l| l.max(nominal)));
                h.marks.last_manual = false;
            }
            self.journal_history(slot);
        }
        if handles.is_empty() && skipped > 0 {
            self.run_skipped(slot, nominal, run.busy, now, out);
        }
        if !handles.is_empty() {
            log::info!(
                "schedule {}: run scheduled {} started {} -> {}",
                self.schedules.entries[slot].id,
                rfc3339(nominal),
                rfc3339(now),
                handles.join(" ")
            );
        }
        handles.len()
    }

    /// Inject one run's jobs (one per fan-out index), those whose previous job is still
    /// going (`overlap=skip`) or whose queue is full left out. Touches no history.
    pub(super) fn inject_run(
        &mut self,
        slot: usize,
        nominal: u64,
        now: u64,
        manual: bool,
        out: &mut Outbox,
    ) -> Injected {
        let kind = if manual {
            RunKind::Manual
        } else {
            RunKind::Scheduled
        };
        self.inject_run_as(slot, nominal, now, kind, out)
    }

    /// `inject_run` for a run of any kind.
    pub(super) fn inject_run_as(
        &mut self,
        slot: usize,
        nominal: u64,
        now: u64,
        kind: RunKind,
        out: &mut Outbox,
    ) -> Injected {
        let manual = kind != RunKind::Scheduled;
        let st = &self.schedules.entries[slot];
        let entry = st.entry.clone();
        let id = Rc::clone(&st.id);
        let mut busy = None;
        let f = self.func_id(&Bytes::from(entry.function.clone()));
        let p = priority(entry.priority);
        let mut handles = Vec::new();
        let mut skipped = 0;
        let after = self.after_placeholder(&id, nominal);
        for i in 0..entry.fanout {
            let unique: Bytes = match (entry.overlap, entry.fanout) {
                (Overlap::Allow, _) => Bytes::new(),
                (Overlap::Skip | Overlap::Queue, 1) => Bytes::from(entry.id.clone()),
                (Overlap::Skip | Overlap::Queue, _) => Bytes::from(format!("{}#{i}", entry.id)),
            };
            let key = KeyRef::of(&unique, b"");
            if let Some(existing) = key.and_then(|k| self.by_unique.get(f, k, &self.jobs)) {
                skipped += 1;
                let previous = self.by_handle.of(&self.jobs[existing]).to_string();
                if manual {
                    log::info!(
                        "schedule {id}: manual run not started: its previous job {previous} is still queued or running (overlap=skip)"
                    );
                } else {
                    let streak = self.schedules.entries[slot].history.skip_streak + skipped;
                    log::log!(
                        streak_level(streak),
                        "schedule {id}: run at {} skipped: its previous job {previous} is still queued or running (overlap=skip){}",
                        rfc3339(nominal),
                        streak_note(streak)
                    );
                }
                busy = Some(previous);
                continue;
            }
            if self.queue_full(f, p) {
                skipped += 1;
                log::warn!(
                    "schedule {id}: run at {} skipped: the queue of {} is full",
                    rfc3339(nominal),
                    entry.function
                );
                continue;
            }
            let data = entry.render_after(utc(nominal), i, &after);
            let new = NewJob {
                func: f,
                body: JobBody::new(&unique, data.as_bytes()),
                reducer: None,
                priority: p,
                background: true,
                due_ms: None,
                origin: Some(Origin {
                    entry: Rc::clone(&id),
                    scheduled_ms: nominal,
                    started_ms: None,
                    manual,
                    backfill: kind == RunKind::Backfill,
                    too_long: None,
                }),
            };
            let k: JobKey = self.create_job(new, key.is_some(), None, now, out);
            self.group_job_made(slot, k);
            handles.push(self.by_handle.of(&self.jobs[k]).to_string());
        }
        Injected {
            handles,
            skipped,
            busy,
        }
    }

    /// `show schedules`: one tab-separated line per entry. Columns are only ever added at the
    /// end, so that parsers of an older listing keep working.
    pub(super) fn schedules_listing(&self) -> String {
        let mut s = String::new();
        let pending = self.retries_pending_by_entry();
        for st in &self.schedules.entries {
            let h = &st.history;
            let _ = writeln!(
                s,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                st.id,
                st.entry.spec,
                st.entry.function,
                opt_time(st.next_ms),
                opt_time(h.last_run_ms),
                h.last_outcome.as_deref().unwrap_or("-"),
                h.last_duration_ms
                    .map_or_else(|| "-".to_string(), |d| d.to_string()),
                h.runs,
                h.failures,
                h.skips,
                run_history::marks_columns(h),
                h.last_error.as_deref().unwrap_or("-"),
                h.recent.column(),
                pending.get(&st.id).copied().unwrap_or(0),
                // The server that fires it: the cluster's leader (`--etcd`), else `-`.
                self.schedules.leader.as_deref().unwrap_or("-"),
                h.too_long,
                h.too_short
            );
        }
        s.push_str(".\n");
        s
    }

    /// Entries and their history, for the HTTP API and tests.
    pub fn schedule_count(&self) -> usize {
        self.schedules.entries.len()
    }
}
