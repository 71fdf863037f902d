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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catchup {
    /// Runs missed while the server was down are not made up.
    None,
    /// The last missed run fires once at start (unless older than the deadline).
    Last,
}

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
    /// `on_success=FUNCTION`: the same for a run that completes.
    pub on_success: Option<String>,
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
    /// The workload template (after `--`).
    pub workload: String,
}

impl Entry {
    /// The workload of run `i` of `n` scheduled at `time`: `{time}`, `{id}`, `{i}` and `{n}`
    /// are replaced and `{{` is a literal brace; anything else stays as written.
    pub fn render(&self, time: DateTime<Utc>, i: u32) -> String {
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

/// The function an alert goes to (`on_failure=`, `on_success=`, `ON_FAILURE=`): one word of
/// at most 255 bytes; empty means none (so `ON_FAILURE=` turns the default off again).
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
const JOB_OPTIONS: [&str; 9] = [
    "priority", "overlap", "catchup", "deadline", "jitter", "fanout", "timeout", "retry", "backoff",
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
            if name == "ON_FAILURE" {
                // Like CRON_TZ: the entries below it get it; an empty value turns it off.
                match alert_function(value) {
                    Ok(f) => on_failure = f,
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
            if first.eq_ignore_ascii_case("@every") {
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
            on_success: None,
            group: None,
            timeout_ms: None,
            retry: super::backoff::RetryPolicy::default(),
            expect_ping: false,
            grace_ms: DEFAULT_GRACE_MS,
            max_duration_ms: None,
            min_duration_ms: None,
            workload: String::new(),
        };
        // Options that only a job gearwheel submits has, for the warning on `expect=ping`.
        let mut job_options: Vec<(usize, &str)> = Vec::new();
        let mut grace_at = None;
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
                "overlap" => pick(value, &[("skip", Overlap::Skip), ("allow", Overlap::Allow)])
                    .map(|v| entry.overlap = v)
                    .map_err(|m| bad(&m)),
                "catchup" => pick(value, &[("none", Catchup::None), ("last", Catchup::Last)])
                    .map(|v| entry.catchup = v)
                    .map_err(|m| bad(&m)),
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
                "on_failure" | "on_success" => match alert_function(value) {
                    Ok(f) if key == "on_failure" => {
                        entry.on_failure = f;
                        Ok(())
                    }
                    Ok(f) => {
                        entry.on_success = f;
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
                        "unknown option {key:?} (use id, priority, overlap, catchup, deadline, jitter, fanout, timeout, on_failure, on_success, retry, backoff, group, tz, expect, grace, max_duration or min_duration)"
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
        if let (Some(min), Some(max)) = (entry.min_duration_ms, entry.max_duration_ms) {
            if min >= max {
                errors.push(err(
                    func_at,
                    "min_duration= must be shorter than max_duration=".into(),
                ));
                continue;
            }
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
        Ok(file)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Entry {
        match parse(line, &Zone::Utc) {
            Ok(mut f) => f.entries.remove(0),
            Err(e) => panic!("{line}: {e:?}"),
        }
    }

    fn errs(text: &str) -> Vec<String> {
        parse(text, &Zone::Utc)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn the_example_lines() {
        let text = "# comment\n\nCRON_TZ=UTC\n*/5 * * * *        cleanup.tmp\n0 3 * * *          backup.db          -- {\"mode\":\"full\"}\n30 2 * * mon-fri   report.daily       priority=high catchup=last deadline=2h\n@hourly            metrics.rollup     jitter=30s\n@every 10s         heartbeat\n@reboot            cache.warm\n0 4 * * *          reindex.shard      fanout=16 -- shard {i} of {n}, tick {time}\n";
        let f = parse(text, &Zone::Local).unwrap();
        assert_eq!(f.entries.len(), 7);
        let e = &f.entries[1];
        assert_eq!(
            (e.id.as_str(), e.spec.as_str(), e.workload.as_str()),
            ("backup.db", "0 3 * * *", "{\"mode\":\"full\"}")
        );
        assert_eq!(e.zone, Zone::Utc);
        let r = &f.entries[2];
        assert_eq!(
            (r.priority, r.catchup, r.deadline_ms),
            (EntryPriority::High, Catchup::Last, Some(7_200_000))
        );
        assert_eq!(f.entries[3].jitter_ms, 30_000);
        assert!(matches!(f.entries[4].timing, Timing::Every(10_000)));
        assert!(matches!(f.entries[5].timing, Timing::Reboot));
        let s = &f.entries[6];
        assert_eq!(s.fanout, 16);
        let t = DateTime::parse_from_rfc3339("2026-11-22T04:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(s.render(t, 3), "shard 3 of 16, tick 2026-11-22T04:00:00Z");
        assert_eq!(e.render(t, 0), "{\"mode\":\"full\"}");
    }

    #[test]
    fn render_placeholders() {
        let mut e =
            one("* * * * * f id=job7 fanout=2 -- {{time} {id} {i}/{n} {x} {time {\"a\":{\"b\":1}}");
        let t = DateTime::parse_from_rfc3339("2026-11-22T04:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            e.render(t, 1),
            "{time} job7 1/2 {x} {time {\"a\":{\"b\":1}}"
        );
        e.workload = String::new();
        assert_eq!(e.render(t, 0), "");
    }

    #[test]
    fn zones_per_line_and_per_entry() {
        let text = "0 0 * * * a\nCRON_TZ=UTC\n0 0 * * * b\n0 0 * * * c tz=UTC\n";
        let f = parse(text, &Zone::Local).unwrap();
        assert_eq!(f.entries[0].zone, Zone::Local);
        assert_eq!(f.entries[1].zone, Zone::Utc);
        assert_eq!(f.entries[2].zone, Zone::Utc);
    }

    #[test]
    fn every_error_has_a_line_and_column() {
        let text = "60 * * * * f\n* * * * *\n* * * * * f bogus=1\n* * * * * f priority=urgent\n@sometimes f\n* * * * * f\n* * * * * f\nCRON_TZ=Mars/Base\n* * * * * f fanout=0 -- x\n@every 5 f\n* * * * * f stray\n";
        let e = errs(text);
        assert_eq!(
            e,
            vec![
                "1:1: minute: 60 is out of range 0-59",
                "2:10: a function name is missing (expected: MIN HOUR DOM MON DOW FUNCTION [key=value ...] [-- workload])",
                "3:13: unknown option \"bogus\" (use id, priority, overlap, catchup, deadline, jitter, fanout, timeout, on_failure, on_success, retry, backoff, group, tz, expect, grace, max_duration or min_duration)",
                "4:22: priority=\"urgent\": use high, normal or low",
                "5:1: unknown macro \"@sometimes\" (use @yearly @annually @monthly @weekly @daily @midnight @hourly @every @reboot)",
                "7:11: duplicate id \"f\" (first on line 6); give one of them id=NAME",
                "8:9: unknown time zone \"Mars/Base\" (No such file or directory (os error 2))",
                "9:20: fanout=\"0\": use a number from 1 to 10000",
                "10:8: \"5\" is not a duration: every number needs a unit (s, m, h or d)",
                "11:13: expected key=value or -- before the workload, found \"stray\"; a line \
                 like `MIN HOUR DOM MON DOW [USER] COMMAND ARGS` is crontab's, where the entry \
                 wants `FUNCTION [key=value ...] [-- workload]`; `gearwheel import-crontab` \
                 turns crontab lines into entries",
            ]
        );
    }

    #[test]
    fn crontab_settings_are_warned_about_not_refused() {
        let f = parse("MAILTO=root\nSHELL=/bin/sh\n0 0 * * * f\n", &Zone::Utc).unwrap();
        assert_eq!(f.entries.len(), 1);
        assert_eq!(f.warnings.len(), 2);
        assert_eq!(
            f.warnings[0].to_string(),
            "1:1: MAILTO= is a crontab setting gearwheel does not use (nothing is mailed); \
             ignored: to hear of a failed run, give the entries on_failure=FUNCTION (or an \
             ON_FAILURE=FUNCTION line) and run a worker for it"
        );
    }

    #[test]
    fn timeout_is_a_positive_duration() {
        let f = parse("* * * * * f timeout=90s\n* * * * * g\n", &Zone::Utc).unwrap();
        assert_eq!(f.entries[0].timeout_ms, Some(90_000));
        assert_eq!(f.entries[1].timeout_ms, None);
        let e = parse("* * * * * f timeout=0s\n", &Zone::Utc).unwrap_err();
        assert!(e[0].to_string().contains("would fail every run"), "{e:?}");
    }

    #[test]
    fn group_names_one_word() {
        let f = parse(
            "0 1 * * * backup group=nightly\n0 2 * * * reindex\n",
            &Zone::Utc,
        )
        .unwrap();
        assert_eq!(f.entries[0].group.as_deref(), Some("nightly"));
        assert_eq!(f.entries[1].group, None);
        let e = parse("* * * * * f group=\n", &Zone::Utc).unwrap_err();
        assert!(e[0].to_string().contains("name the group"), "{e:?}");
    }

    #[test]
    fn alerts_go_to_the_entry_option_or_the_file_default_below_it() {
        let text = "0 0 * * * a\nON_FAILURE=alert\n0 0 * * * b\n0 0 * * * c on_failure=page on_success=done\nON_FAILURE=\n0 0 * * * d\n";
        let f = parse(text, &Zone::Utc).unwrap();
        let got: Vec<(Option<&str>, Option<&str>)> = f
            .entries
            .iter()
            .map(|e| (e.on_failure.as_deref(), e.on_success.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (None, None),
                (Some("alert"), None),
                (Some("page"), Some("done")),
                (None, None)
            ]
        );
        let long = "x".repeat(256);
        for bad in [
            format!("* * * * * f on_failure={long}"),
            format!("ON_FAILURE={long}\n"),
        ] {
            let e = parse(&bad, &Zone::Utc).unwrap_err();
            assert!(
                e[0].to_string().contains("one word, at most 255 bytes"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn heartbeat_and_duration_options() {
        let text = "@every 5m host.alive expect=ping grace=2m\n0 3 * * * backup.remote expect=ping max_duration=2h min_duration=1m\n0 4 * * * backup.db max_duration=30m\n";
        let f = parse(text, &Zone::Utc).unwrap();
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
        let e = &f.entries;
        assert_eq!((e[0].expect_ping, e[0].grace_ms), (true, 120_000));
        assert_eq!(
            (e[1].grace_ms, e[1].max_duration_ms, e[1].min_duration_ms),
            (DEFAULT_GRACE_MS, Some(7_200_000), Some(60_000))
        );
        assert_eq!(
            (e[2].expect_ping, e[2].max_duration_ms),
            (false, Some(1_800_000))
        );
        assert_eq!(
            errs(
                "* * * * * f expect=pong\n* * * * * g max_duration=0s\n* * * * * h min_duration=1h max_duration=1h\n"
            ),
            vec![
                "1:20: expect=\"pong\": use job or ping",
                "2:26: max_duration=\"0s\": a duration of 0 says nothing; leave it out",
                "3:11: min_duration= must be shorter than max_duration=",
            ]
        );
    }

    #[test]
    fn options_of_a_job_are_warned_about_on_a_heartbeat() {
        let f = parse(
            "@hourly a expect=ping retry=3 -- x\n@hourly b grace=5m\n",
            &Zone::Utc,
        )
        .unwrap();
        let w: Vec<String> = f.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            vec![
                "1:23: retry= has no effect with expect=ping (gearwheel submits no job for this entry)",
                "1:9: a workload has no effect with expect=ping (gearwheel submits no job for this entry)",
                "2:11: grace= has no effect without expect=ping",
            ]
        );
    }

    /// How long this takes is measured in benches/timer.rs (`schedules file parse`), not here.
    #[test]
    fn ten_thousand_entries_all_load() {
        let mut text = String::new();
        for i in 0..10_000 {
            text.push_str(&format!(
                "{} {} * * mon-fri fn{i} priority=low -- payload {{time}}\n",
                i % 60,
                i % 24
            ));
        }
        let f = parse(&text, &Zone::Utc).unwrap();
        assert_eq!(f.entries.len(), 10_000);
    }
}

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
