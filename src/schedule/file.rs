//! The schedules file: crontab lines that inject Gearman jobs. Parsing keeps line and
//! column for every error, and collects them all rather than stopping at the first.
//!
//! ```text
//! # minute hour day-of-month month day-of-week   function   [key=value ...]   [-- workload]
//! CRON_TZ=Europe/Berlin
//! 30 2 * * mon-fri   report.daily   priority=high catchup=last deadline=2h
//! @every 10s         heartbeat
//! ```

use std::collections::HashMap;
use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};

use super::cron::Timing;
use super::duration::parse_duration;
use super::zone::Zone;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryPriority {
    High,
    Normal,
    Low,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// A run is skipped while the previous job of the entry is still queued or running.
    Skip,
    /// Every run is a new job.
    Allow,
    /// A run that comes while the previous job is still going waits (at most one) and
    /// starts when it ends; another that comes meanwhile is skipped, as under `Skip`.
    Queue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catchup {
    /// Runs missed while the server was down are not made up.
    None,
    /// The last missed run fires once at start (unless older than the deadline).
    Last,
    /// Every missed run is made up, oldest first, one after the other as `overlap=` allows;
    /// at most `max` (`catchup_max=`), the older ones beyond it are missed.
    All { max: u32 },
}

/// `catchup_max=` unless given: the most runs `catchup=all` makes up at once.
pub const DEFAULT_CATCHUP_MAX: u32 = 100;
/// The largest `catchup_max=`: each run made up is a job, and the times are held in memory
/// while they wait.
pub const CATCHUP_MAX_LIMIT: u32 = 100_000;

/// One schedule entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: String,
    pub line: usize,
    /// The timing as written (`*/5 * * * *`, `@every 10s`), for `show schedules`.
    pub spec: String,
    pub timing: Timing,
    pub zone: Zone,
    pub function: String,
    pub priority: EntryPriority,
    pub overlap: Overlap,
    pub catchup: Catchup,
    pub deadline_ms: Option<u64>,
    pub jitter_ms: u64,
    pub fanout: u32,
    /// `on_failure=FUNCTION` (or the file's `ON_FAILURE=`): a run that fails for good, or
    /// never happens, submits a background job to it with a JSON account of the run.
    pub on_failure: Option<String>,
    /// `on_success=FUNCTION`: the same for a run that completes. Either may instead be a
    /// webhook URL (src/schedule/webhook.rs), which the server POSTs the alert to itself.
    pub on_success: Option<String>,
    /// `alert_format=generic|slack` (or the file's `ALERT_FORMAT=`): a webhook alert's body.
    pub alert_format: super::webhook::AlertFormat,
    /// `timeout=DURATION`: a run not ended this long after a worker took it fails.
    pub timeout_ms: Option<u64>,
    /// `group=NAME`: runs of the entries of one group never run at the same time.
    pub group: Option<String>,
    /// `retry=N backoff=DURATION[..MAX]`: a failed run is queued again (src/schedule/backoff.rs).
    pub retry: super::backoff::RetryPolicy,
    /// `expect=ping`: the entry submits no job; each run is a ping from a job that runs
    /// elsewhere (cron on another machine, CI, a daemon), and a run not pinged in time is
    /// missed.
    pub expect_ping: bool,
    /// `grace=DURATION` (`DEFAULT_GRACE_MS` unless given): how long after its scheduled time a
    /// run of an `expect=ping` entry may be pinged before it counts as missed.
    pub grace_ms: u64,
    /// `max_duration=DURATION`: a run still going this long after it started raises a
    /// `too_long` alert (once), without failing it.
    pub max_duration_ms: Option<u64>,
    /// `min_duration=DURATION`: a run that succeeds sooner raises a `too_short` alert.
    pub min_duration_ms: Option<u64>,
    /// `when=` and `within=` of an `@after` entry (src/schedule/after.rs).
    pub after: super::after::AfterRule,
    /// The workload template (after `--`).
    pub workload: String,
}

impl Entry {
    /// The workload of run `i` of `n` scheduled at `time`: `{time}`, `{id}`, `{i}` and `{n}`
    /// are replaced and `{{` is a literal brace; anything else stays as written.
    pub fn render(&self, time: DateTime<Utc>, i: u32) -> String {
        self.render_after(time, i, "[]")
    }

    /// `render`, with `{after}` replaced by `after` (the parents' runs of an `@after` entry's
    /// run, a JSON array: src/engine/schedules/after.rs).
    pub fn render_after(&self, time: DateTime<Utc>, i: u32, after: &str) -> String {
        let mut out = String::with_capacity(self.workload.len());
        let mut rest = self.workload.as_str();
        while let Some(p) = rest.find('{') {
            out.push_str(&rest[..p]);
            rest = &rest[p..];
            let (text, len) = if rest.starts_with("{{") {
                ("{".to_string(), 2)
            } else if rest.starts_with("{time}") {
                (time.to_rfc3339_opts(SecondsFormat::Secs, true), 6)
            } else if rest.starts_with("{id}") {
                (self.id.clone(), 4)
            } else if rest.starts_with("{i}") {
                (i.to_string(), 3)
            } else if rest.starts_with("{n}") {
                (self.fanout.to_string(), 3)
            } else if rest.starts_with("{after}") {
                (after.to_string(), 7)
            } else {
                ("{".to_string(), 1)
            };
            out.push_str(&text);
            rest = &rest[len..];
        }
        out.push_str(rest);
        out
    }

    /// Whether two entries would fire the same way (a reload keeps the history and the next
    /// run of an entry whose id and timing did not change).
    pub fn same_timing(&self, other: &Entry) -> bool {
        self.spec == other.spec && self.zone == other.zone
    }
}

/// `grace=` unless given: a ping may come up to an hour after its run's scheduled time.
pub const DEFAULT_GRACE_MS: u64 = 3_600_000;

/// An error at a place in the file (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// A parsed file: its entries, and warnings about lines that were read but ignored.
#[derive(Clone, Debug, Default)]
pub struct ScheduleFile {
    pub entries: Vec<Entry>,
    pub warnings: Vec<ScheduleError>,
}

/// Whitespace-separated words with their byte offsets.
fn words(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line
        .char_indices()
        .chain(std::iter::once((line.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

fn column(line: &str, offset: usize) -> usize {
    line[..offset.min(line.len())].chars().count() + 1
}

fn is_env_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && name.chars().any(|c| c.is_ascii_uppercase())
        }
        None => false,
    }
}

/// One of a few words, or "use a, b or c".
fn pick<T: Copy>(value: &str, choices: &[(&str, T)]) -> Result<T, String> {
    if let Some((_, v)) = choices.iter().find(|(w, _)| *w == value) {
        return Ok(*v);
    }
    let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
    let (last, rest) = words.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
    Err(format!("use {} or {last}", rest.join(", ")))
}

/// Where an alert goes (`on_failure=`, `on_success=`, `ON_FAILURE=`, `ON_SUCCESS=`): a
/// function, one word of at most 255 bytes, or a webhook URL; empty means none (so
/// `ON_FAILURE=` turns the default off again).
fn alert_target(value: &str) -> Result<Option<String>, String> {
    if super::webhook::is_url(value) {
        return super::webhook::HookUrl::parse(value).map(|_| Some(value.to_string()));
    }
    alert_function(value)
}

/// A function name (an alert's, a group's): one word of at most 255 bytes; empty is none.
fn alert_function(value: &str) -> Result<Option<String>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() > 255 || value.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err("a function name: one word, at most 255 bytes".into());
    }
    Ok(Some(value.to_string()))
}

/// The options of a job gearwheel submits, which an `expect=ping` entry (no job) ignores.
const JOB_OPTIONS: [&str; 10] = [
    "priority",
    "overlap",
    "catchup",
    "catchup_max",
    "deadline",
    "jitter",
    "fanout",
    "timeout",
    "retry",
    "backoff",
];

/// Where a crontab line that was pasted as it is should go.
const IMPORT_HINT: &str = "; `gearwheel import-crontab` turns crontab lines into entries";

/// A word that reads as a cron time field (`*`, `*/5`, `1-5`, `0,30`, `mon-fri`), not as a
/// function name: only digits, `*`, `/`, `-`, `,`, or a day or month name with those.
fn looks_like_field(w: &str) -> bool {
    const NAMES: [&str; 19] = [
        "sun", "mon", "tue", "wed", "thu", "fri", "sat", "jan", "feb", "mar", "apr", "may", "jun",
        "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let lower = w.to_ascii_lowercase();
    let parts_ok = lower.split([',', '-', '/']).all(|p| {
        p == "*" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) || NAMES.contains(&p)
    });
    parts_ok && lower.bytes().any(|b| b == b'*' || b.is_ascii_digit())
}

/// Parse a whole file. `default_zone` applies until a `CRON_TZ=` line.
pub fn parse(text: &str, default_zone: &Zone) -> Result<ScheduleFile, Vec<ScheduleError>> {
    let mut file = ScheduleFile::default();
    let mut errors = Vec::new();
    let mut zone = default_zone.clone();
    let mut on_failure: Option<String> = None;
    let mut on_success: Option<String> = None;
    let mut alert_format = super::webhook::AlertFormat::Generic;
    let mut zones: HashMap<String, Zone> = HashMap::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let err = |offset: usize, message: String| ScheduleError {
            line: line_no,
            column: column(raw, offset),
            message,
        };
        let ws = words(raw);
        let Some(&(first_at, first)) = ws.first() else {
            continue;
        };
        if first.starts_with('#') {
            continue;
        }
        if is_env_assignment(first) {
            let (name, value) = raw[first_at..].split_once('=').unwrap_or_default();
            let value = value.trim().trim_matches('"');
            if name == "ON_FAILURE" || name == "ON_SUCCESS" {
                // Like CRON_TZ: the entries below it get it; an empty value turns it off.
                match alert_target(value) {
                    Ok(f) if name == "ON_FAILURE" => on_failure = f,
                    Ok(f) => on_success = f,
                    Err(m) => errors.push(err(first_at + name.len() + 1, m)),
                }
            } else if name == "ALERT_FORMAT" {
                match super::webhook::AlertFormat::parse(value) {
                    Ok(f) => alert_format = f,
                    Err(m) => errors.push(err(first_at + name.len() + 1, m)),
                }
            } else if name == "CRON_TZ" || name == "TZ" {
                match zones
                    .get(value)
                    .cloned()
                    .map_or_else(|| Zone::parse(value), Ok)
                {
                    Ok(z) => {
                        zones.insert(value.to_string(), z.clone());
                        zone = z;
                    }
                    Err(e) => errors.push(err(first_at + name.len() + 1, e)),
                }
            } else if name == "MAILTO" {
                file.warnings.push(err(
                    first_at,
                    "MAILTO= is a crontab setting gearwheel does not use (nothing is mailed); \
                     ignored: to hear of a failed run, give the entries on_failure=FUNCTION \
                     (or an ON_FAILURE=FUNCTION line) and run a worker for it"
                        .into(),
                ));
            } else {
                file.warnings.push(err(
                    first_at,
                    format!("{name}= is a crontab setting gearwheel does not use; ignored"),
                ));
            }
            continue;
        }
        // The timing: a macro (with its duration for @every) or five fields.
        let spec_words = if first.starts_with('@') {
            if first.eq_ignore_ascii_case("@every") || first.eq_ignore_ascii_case("@after") {
                2
            } else {
                1
            }
        } else {
            5
        };
        if ws.len() <= spec_words {
            let at = ws.last().map_or(0, |w| w.0 + w.1.len());
            let what = if ws.len() < spec_words {
                "the schedule is incomplete"
            } else {
                "a function name is missing"
            };
            errors.push(err(
                at,
                format!(
                    "{what} (expected: {} FUNCTION [key=value ...] [-- workload])",
                    if spec_words == 5 {
                        "MIN HOUR DOM MON DOW"
                    } else {
                        "@macro"
                    }
                ),
            ));
            continue;
        }
        let spec_end = ws[spec_words - 1].0 + ws[spec_words - 1].1.len();
        let spec_text = &raw[first_at..spec_end];
        let timing = match Timing::parse(spec_text) {
            Ok(Timing::After(mut parents)) => {
                parents.place(|offset| column(raw, first_at + offset));
                Timing::After(parents)
            }
            Ok(t) => t,
            Err(e) => {
                errors.push(err(first_at + e.offset, e.message));
                continue;
            }
        };
        let (func_at, function) = ws[spec_words];
        if spec_words == 5 && looks_like_field(function) {
            errors.push(err(
                func_at,
                format!(
                    "a sixth time field {function:?}: the schedule is crontab's five fields \
                     (MIN HOUR DOM MON DOW, no seconds), then the function name{IMPORT_HINT}"
                ),
            ));
            continue;
        }
        if function.contains('/') {
            errors.push(err(
                func_at,
                format!(
                    "{function:?} is a command, not a function name: an entry names the Gearman \
                     function a worker serves, and `gearwheel work -f FUNCTION -- COMMAND` runs \
                     the command{IMPORT_HINT}"
                ),
            ));
            continue;
        }
        if function == "--" || function.contains('=') {
            errors.push(err(
                func_at,
                format!("expected a function name, found {function:?}"),
            ));
            continue;
        }
        let mut entry = Entry {
            id: function.to_string(),
            line: line_no,
            spec: spec_text.split_whitespace().collect::<Vec<_>>().join(" "),
            timing,
            zone: zone.clone(),
            function: function.to_string(),
            priority: EntryPriority::Normal,
            overlap: Overlap::Skip,
            catchup: Catchup::None,
            deadline_ms: None,
            jitter_ms: 0,
            fanout: 1,
            on_failure: on_failure.clone(),
            on_success: on_success.clone(),
            alert_format,
            group: None,
            timeout_ms: None,
            retry: super::backoff::RetryPolicy::default(),
            expect_ping: false,
            grace_ms: DEFAULT_GRACE_MS,
            max_duration_ms: None,
            min_duration_ms: None,
            after: super::after::AfterRule::default(),
            workload: String::new(),
        };
        let mut after_options: Vec<(usize, &str)> = Vec::new();
        // Options that only a job gearwheel submits has, for the warning on `expect=ping`.
        let mut job_options: Vec<(usize, &str)> = Vec::new();
        let mut grace_at = None;
        let mut catchup_max: Option<(usize, u32)> = None;
        let mut id_at = func_at;
        let mut ok = true;
        for &(at, word) in &ws[spec_words + 1..] {
            if word == "--" {
                let rest = &raw[at + 2..];
                entry.workload = rest
                    .strip_prefix(' ')
                    .or_else(|| rest.strip_prefix('\t'))
                    .unwrap_or(rest)
                    .to_string();
                break;
            }
            let Some((key, value)) = word.split_once('=') else {
                errors.push(err(
                    at,
                    format!(
                        "expected key=value or -- before the workload, found {word:?}; a line \
                         like `MIN HOUR DOM MON DOW [USER] COMMAND ARGS` is crontab's, where the \
                         entry wants `FUNCTION [key=value ...] [-- workload]`{IMPORT_HINT}"
                    ),
                ));
                ok = false;
                break;
            };
            let vat = at + key.len() + 1;
            let bad = |what: &str| err(vat, format!("{key}={value:?}: {what}"));
            if JOB_OPTIONS.contains(&key) {
                job_options.push((at, key));
            }
            let r: Result<(), ScheduleError> = match key {
                "id" if !value.is_empty() && !value.contains(char::is_whitespace) => {
                    entry.id = value.to_string();
                    id_at = at;
                    Ok(())
                }
                "id" => Err(bad("an id must be a non-empty word")),
                "priority" => pick(
                    value,
                    &[
                        ("high", EntryPriority::High),
                        ("normal", EntryPriority::Normal),
                        ("low", EntryPriority::Low),
                    ],
                )
                .map(|v| entry.priority = v)
                .map_err(|m| bad(&m)),
                "overlap" => pick(
                    value,
                    &[
                        ("skip", Overlap::Skip),
                        ("allow", Overlap::Allow),
                        ("queue", Overlap::Queue),
                    ],
                )
                .map(|v| entry.overlap = v)
                .map_err(|m| bad(&m)),
                "catchup" => pick(
                    value,
                    &[
                        ("none", Catchup::None),
                        ("last", Catchup::Last),
                        (
                            "all",
                            Catchup::All {
                                max: DEFAULT_CATCHUP_MAX,
                            },
                        ),
                    ],
                )
                .map(|v| entry.catchup = v)
                .map_err(|m| bad(&m)),
                "catchup_max" => match value.parse::<u32>() {
                    Ok(n) if (1..=CATCHUP_MAX_LIMIT).contains(&n) => {
                        catchup_max = Some((at, n));
                        Ok(())
                    }
                    _ => Err(bad(&format!("a number of runs, 1 to {CATCHUP_MAX_LIMIT}"))),
                },
                "deadline" => parse_duration(value)
                    .map(|d| entry.deadline_ms = Some(d))
                    .map_err(|e| err(vat, e)),
                "timeout" => match parse_duration(value) {
                    Ok(0) => Err(bad("a timeout of 0 would fail every run; leave it out")),
                    Ok(d) => {
                        entry.timeout_ms = Some(d);
                        Ok(())
                    }
                    Err(e) => Err(err(vat, e)),
                },
                "expect" => pick(value, &[("job", false), ("ping", true)])
                    .map(|v| entry.expect_ping = v)
                    .map_err(|m| bad(&m)),
                "grace" => {
                    grace_at = Some(at);
                    parse_duration(value)
                        .map(|d| entry.grace_ms = d)
                        .map_err(|e| err(vat, e))
                }
                "max_duration" | "min_duration" => match parse_duration(value) {
                    Ok(0) => Err(bad("a duration of 0 says nothing; leave it out")),
                    Ok(d) if key == "max_duration" => {
                        entry.max_duration_ms = Some(d);
                        Ok(())
                    }
                    Ok(d) => {
                        entry.min_duration_ms = Some(d);
                        Ok(())
                    }
                    Err(e) => Err(err(vat, e)),
                },
                "when" => {
                    after_options.push((at, key));
                    pick(
                        value,
                        &[
                            ("success", super::after::When::Success),
                            ("always", super::after::When::Always),
                        ],
                    )
                    .map(|v| entry.after.when = v)
                    .map_err(|m| bad(&m))
                }
                "within" => {
                    after_options.push((at, key));
                    match parse_duration(value) {
                        Ok(0) => Err(bad("a span of 0 would miss every run; leave it out")),
                        Ok(d) => {
                            entry.after.within_ms = Some(d);
                            Ok(())
                        }
                        Err(e) => Err(err(vat, e)),
                    }
                }
                "jitter" => parse_duration(value)
                    .map(|d| entry.jitter_ms = d)
                    .map_err(|e| err(vat, e)),
                "retry" => super::backoff::parse_retries(value)
                    .map(|n| entry.retry.retries = n)
                    .map_err(|e| err(vat, e)),
                "backoff" => super::backoff::Backoff::parse(value)
                    .map(|b| entry.retry.backoff = b)
                    .map_err(|e| err(vat, e)),
                "fanout" => match value.parse::<u32>() {
                    Ok(n) if (1..=10_000).contains(&n) => {
                        entry.fanout = n;
                        Ok(())
                    }
                    _ => Err(bad("use a number from 1 to 10000")),
                },
                "group" => match alert_function(value) {
                    Ok(Some(g)) => {
                        entry.group = Some(g);
                        Ok(())
                    }
                    Ok(None) => Err(bad("name the group: one word")),
                    Err(_) => Err(bad("a group name: one word, at most 255 bytes")),
                },
                "on_failure" | "on_success" => match alert_target(value) {
                    Ok(f) if key == "on_failure" => {
                        entry.on_failure = f;
                        Ok(())
                    }
                    Ok(f) => {
                        entry.on_success = f;
                        Ok(())
                    }
                    // Without the value: a webhook URL's path is often its secret.
                    Err(m) => Err(err(vat, format!("{key}=: {m}"))),
                },
                "alert_format" => match super::webhook::AlertFormat::parse(value) {
                    Ok(f) => {
                        entry.alert_format = f;
                        Ok(())
                    }
                    Err(m) => Err(bad(&m)),
                },
                "tz" => match zones
                    .get(value)
                    .cloned()
                    .map_or_else(|| Zone::parse(value), Ok)
                {
                    Ok(z) => {
                        zones.insert(value.to_string(), z.clone());
                        entry.zone = z;
                        Ok(())
                    }
                    Err(e) => Err(err(vat, e)),
                },
                _ => Err(err(
                    at,
                    format!(
                        "unknown option {key:?} (use id, priority, overlap, catchup, catchup_max, deadline, jitter, fanout, timeout, on_failure, on_success, alert_format, retry, backoff, group, tz, expect, grace, max_duration, min_duration, when or within)"
                    ),
                )),
            };
            if let Err(e) = r {
                errors.push(e);
                ok = false;
            }
        }
        if !ok {
            continue;
        }
        if entry.expect_ping {
            for (at, key) in job_options {
                file.warnings.push(err(
                    at,
                    format!(
                        "{key}= has no effect with expect=ping (gearwheel submits no job for \
                         this entry)"
                    ),
                ));
            }
            if !entry.workload.is_empty() {
                file.warnings.push(err(
                    func_at,
                    "a workload has no effect with expect=ping (gearwheel submits no job for \
                     this entry)"
                        .into(),
                ));
            }
        } else if let Some(at) = grace_at {
            file.warnings
                .push(err(at, "grace= has no effect without expect=ping".into()));
        }
        if matches!(entry.timing, Timing::After(_)) {
            if entry.expect_ping {
                errors.push(err(
                    first_at,
                    "@after with expect=ping: a ping entry submits no job, so it has nothing \
                     to run after its parents"
                        .into(),
                ));
                continue;
            }
        } else {
            for (at, key) in after_options {
                file.warnings
                    .push(err(at, format!("{key}= has no effect without @after")));
            }
        }
        if let (Some(min), Some(max)) = (entry.min_duration_ms, entry.max_duration_ms) {
            if min >= max {
                errors.push(err(
                    func_at,
                    "min_duration= must be shorter than max_duration=".into(),
                ));
                continue;
            }
        }
        match (catchup_max, &mut entry.catchup) {
            (Some((_, n)), Catchup::All { max }) => *max = n,
            (Some((at, _)), _) => file.warnings.push(err(
                at,
                "catchup_max= has no effect without catchup=all".into(),
            )),
            (None, _) => {}
        }
        if entry.deadline_ms.is_some() && entry.catchup == Catchup::None {
            file.warnings.push(err(
                func_at,
                "deadline= has no effect without catchup=last".into(),
            ));
        }
        if let Some(prev) = ids.get(&entry.id) {
            errors.push(err(
                id_at,
                format!(
                    "duplicate id {:?} (first on line {prev}); give one of them id=NAME",
                    entry.id
                ),
            ));
            continue;
        }
        ids.insert(entry.id.clone(), line_no);
        file.entries.push(entry);
    }
    if errors.is_empty() {
        // The graph needs every entry: its errors come once the lines are all read.
        let nodes: Vec<super::after::Node<'_>> = file
            .entries
            .iter()
            .map(|e| super::after::Node {
                id: &e.id,
                line: e.line,
                parents: match &e.timing {
                    Timing::After(p) => Some(p),
                    _ => None,
                },
            })
            .collect();
        errors = super::after::check_graph(&nodes)
            .into_iter()
            .map(|(line, column, message)| ScheduleError {
                line,
                column,
                message,
            })
            .collect();
    }
    if errors.is_empty() {
        Ok(file)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod example_file {
    #[test]
    fn the_shipped_example_parses() {
        let text = include_str!("../../schedules/example.cron");
        let f = super::parse(text, &super::Zone::Utc).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(f.entries.len(), 7);
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }
}
