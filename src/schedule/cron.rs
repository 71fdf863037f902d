//! The adapter that gives the `cron` crate crontab's semantics. The crate wants six fields
//! with seconds, numbers Sunday as 1, ANDs day-of-month with day-of-week, skips times in a
//! DST gap and runs repeated times twice. So: each crontab field is parsed and checked here
//! (with its column, for errors), expanded to an explicit list, and handed to the crate as
//! `0 MIN HOUR DOM MON DOW` with weekday names; Vixie's OR rule is two crate schedules merged
//! by earliest time; the crate iterates wall-clock times (naive, in UTC clothing) and this
//! module maps them to instants with cronie's DST rule.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};

use super::zone::Zone;

/// A field error: the column (0-based, in bytes, within the expression) and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub offset: usize,
    pub message: String,
}

/// When an entry runs.
#[derive(Clone, Debug)]
pub enum Timing {
    /// Five crontab fields.
    Cron(CronExpr),
    /// `@every DURATION`: at multiples of the interval since the epoch.
    Every(u64),
    /// `@reboot`: once when the server starts.
    Reboot,
    /// `@after ID[,ID...]`: when the named entries have run (schedule/after.rs), never on
    /// the clock.
    After(super::after::Parents),
}

#[derive(Clone, Debug)]
pub struct CronExpr {
    /// One schedule, or two (day-of-month, day-of-week) when both are restricted.
    schedules: Vec<cron::Schedule>,
    /// Minute and hour are fixed (no `*`, no step): such an entry runs once a day at its
    /// time(s), whatever DST does; others follow real time.
    fixed_time: bool,
}

const NAMES_MONTH: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const NAMES_DOW: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const CRATE_DOW: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

struct FieldKind {
    name: &'static str,
    lo: u32,
    hi: u32,
    names: &'static [&'static str],
    /// The value the first name stands for (jan = 1, sun = 0).
    names_base: u32,
}

const MINUTE: FieldKind = FieldKind {
    name: "minute",
    lo: 0,
    hi: 59,
    names: &[],
    names_base: 0,
};
const HOUR: FieldKind = FieldKind {
    name: "hour",
    lo: 0,
    hi: 23,
    names: &[],
    names_base: 0,
};
const DOM: FieldKind = FieldKind {
    name: "day of month",
    lo: 1,
    hi: 31,
    names: &[],
    names_base: 0,
};
const MONTH: FieldKind = FieldKind {
    name: "month",
    lo: 1,
    hi: 12,
    names: &NAMES_MONTH,
    names_base: 1,
};
const DOW: FieldKind = FieldKind {
    name: "day of week",
    lo: 0,
    hi: 7,
    names: &NAMES_DOW,
    names_base: 0,
};

fn value(kind: &FieldKind, s: &str, offset: usize) -> Result<u32, FieldError> {
    if let Some(i) = kind.names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(i as u32 + kind.names_base);
    }
    let err = |m: String| FieldError { offset, message: m };
    if s.is_empty() {
        return Err(err(format!("{}: a value is missing", kind.name)));
    }
    let n: u32 = s
        .parse()
        .ok()
        .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            err(if kind.names.is_empty() {
                format!("{}: {s:?} is not a number", kind.name)
            } else {
                format!(
                    "{}: {s:?} is not a number or a name ({}...)",
                    kind.name,
                    kind.names[..3].join(", ")
                )
            })
        })?;
    if n < kind.lo || n > kind.hi {
        return Err(err(format!(
            "{}: {n} is out of range {}-{}",
            kind.name, kind.lo, kind.hi
        )));
    }
    Ok(n)
}

/// Parse one field into the set of values it matches (bit n = value n).
fn field(kind: &FieldKind, text: &str, base: usize) -> Result<u64, FieldError> {
    let mut set = 0u64;
    let mut pos = 0;
    for item in text.split(',') {
        let at = base + pos;
        pos += item.len() + 1;
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let off = at + r.len() + 1;
                let st: u32 = s
                    .parse()
                    .ok()
                    .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| FieldError {
                        offset: off,
                        message: format!("{}: step {s:?} is not a number", kind.name),
                    })?;
                if st == 0 || st > kind.hi {
                    return Err(FieldError {
                        offset: off,
                        message: format!("{}: step {st} must be 1-{}", kind.name, kind.hi),
                    });
                }
                (r, st)
            }
            None => (item, 1),
        };
        let (lo, hi) = if range == "*" {
            (kind.lo, kind.hi)
        } else if let Some((a, b)) = range.split_once('-') {
            let lo = value(kind, a, at)?;
            let hi = value(kind, b, at + a.len() + 1)?;
            if lo > hi {
                return Err(FieldError {
                    offset: at,
                    message: format!("{}: range {range} runs backwards", kind.name),
                });
            }
            (lo, hi)
        } else {
            let v = value(kind, range, at)?;
            // `a/n` means from a to the end, stepping n.
            (v, if step > 1 { kind.hi } else { v })
        };
        let mut v = lo;
        while v <= hi {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

fn list(set: u64, lo: u32, hi: u32) -> String {
    if (lo..=hi).all(|v| set & (1 << v) != 0) {
        return "*".into();
    }
    (lo..=hi)
        .filter(|v| set & (1 << v) != 0)
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn dow_list(set: u64) -> String {
    // Crontab's 7 is Sunday too.
    let set = (set | ((set >> 7) & 1)) & 0x7f;
    if set == 0x7f {
        return "*".into();
    }
    (0..7)
        .filter(|v| set & (1 << v) != 0)
        .map(|v| CRATE_DOW[v])
        .collect::<Vec<_>>()
        .join(",")
}

fn days_in_month(m: u32) -> u32 {
    match m {
        2 => 29,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl CronExpr {
    /// Parse five whitespace-separated crontab fields. Offsets in errors are into `expr`.
    pub fn parse(expr: &str) -> Result<CronExpr, FieldError> {
        let mut fields: Vec<(&str, usize)> = Vec::with_capacity(5);
        let mut start = None;
        for (i, c) in expr
            .char_indices()
            .chain(std::iter::once((expr.len(), ' ')))
        {
            match (c.is_whitespace(), start) {
                (true, Some(s)) => {
                    fields.push((&expr[s..i], s));
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if fields.len() != 5 {
            return Err(FieldError {
                offset: fields.get(5).map_or(expr.len(), |f| f.1),
                message: format!(
                    "a schedule needs 5 fields (minute hour day-of-month month day-of-week), found {}",
                    fields.len()
                ),
            });
        }
        let min = field(&MINUTE, fields[0].0, fields[0].1)?;
        let hour = field(&HOUR, fields[1].0, fields[1].1)?;
        let dom = field(&DOM, fields[2].0, fields[2].1)?;
        let mon = field(&MONTH, fields[3].0, fields[3].1)?;
        let dow = field(&DOW, fields[4].0, fields[4].1)?;
        let dom_star = fields[2].0.starts_with('*');
        let dow_star = fields[4].0.starts_with('*');
        let fixed_time = [fields[0].0, fields[1].0]
            .iter()
            .all(|f| !f.contains('*') && !f.contains('/'));
        // A day of month that no chosen month has never comes (`0 0 30 2 *`), unless the
        // day of week can match instead.
        if dow_star || dom_star {
            let possible = (1..=12)
                .filter(|m| mon & (1 << m) != 0)
                .any(|m| (1..=days_in_month(m)).any(|d| dom & (1 << d) != 0));
            if !possible && !dom_star {
                return Err(FieldError {
                    offset: fields[2].1,
                    message:
                        "day of month: no chosen month has that day, so the entry would never run"
                            .into(),
                });
            }
        }
        let (m, h, mo) = (list(min, 0, 59), list(hour, 0, 23), list(mon, 1, 12));
        let build = |d: &str, w: &str| {
            let text = format!("0 {m} {h} {d} {mo} {w}");
            cron::Schedule::from_str(&text).map_err(|e| FieldError {
                offset: 0,
                message: format!("internal schedule {text:?} refused: {e}"),
            })
        };
        let schedules = if !dom_star && !dow_star {
            // Vixie: either may match.
            vec![build(&list(dom, 1, 31), "*")?, build("*", &dow_list(dow))?]
        } else {
            vec![build(&list(dom, 1, 31), &dow_list(dow))?]
        };
        Ok(CronExpr {
            schedules,
            fixed_time,
        })
    }

    /// The next wall-clock minute strictly after `naive` that the fields match.
    fn next_naive(&self, naive: NaiveDateTime) -> Option<NaiveDateTime> {
        let t = Utc.from_utc_datetime(&naive);
        self.schedules
            .iter()
            .filter_map(|s| s.after(&t).next())
            .min()
            .map(|d| d.naive_utc())
    }

    pub fn is_fixed_time(&self) -> bool {
        self.fixed_time
    }

    /// The next run strictly after `after`, with cronie's DST rule: a fixed-time entry whose
    /// time falls into a gap runs when the gap ends, and at a repeated time only at the first
    /// occurrence; other entries follow real time (none in the gap, both in the overlap).
    pub fn next_after(&self, after: DateTime<Utc>, zone: &Zone) -> Option<DateTime<Utc>> {
        const SHIFT: i64 = 3; // hours; larger than any DST shift
        let local = zone.local_time(after);
        let offset_at = |t: DateTime<Utc>| zone.local_time(t) - t.naive_utc();
        let near_transition =
            offset_at(after - Duration::hours(SHIFT)) != offset_at(after + Duration::hours(SHIFT));
        // Near a transition, wall-clock order is not real order: look a little behind.
        let mut naive = if near_transition {
            local - Duration::hours(SHIFT)
        } else {
            local
        };
        let mut best: Option<DateTime<Utc>> = None;
        for _ in 0..100_000 {
            let n = self.next_naive(naive)?;
            if let Some(b) = best {
                if n > zone.local_time(b) + Duration::hours(SHIFT) {
                    break;
                }
            }
            let candidates: Vec<DateTime<Utc>> = match zone.instants(n) {
                LocalResult::Single(t) => vec![t],
                LocalResult::Ambiguous(a, b) if self.fixed_time => vec![a.min(b)],
                LocalResult::Ambiguous(a, b) => vec![a, b],
                LocalResult::None if self.fixed_time => zone.gap_end(n).into_iter().collect(),
                LocalResult::None => vec![],
            };
            for t in candidates {
                if t > after && best.is_none_or(|b| t < b) {
                    best = Some(t);
                }
            }
            if best.is_some() && !near_transition {
                break;
            }
            naive = n;
        }
        best
    }
}

impl Timing {
    /// Parse the timing part of an entry: five fields, or a macro.
    pub fn parse(text: &str) -> Result<Timing, FieldError> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        let fields = match lower.as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            "@reboot" => return Ok(Timing::Reboot),
            _ if lower.starts_with("@after")
                && !lower[6..].starts_with(|c: char| c.is_alphanumeric()) =>
            {
                // Ids are case-sensitive: read them from `t`, not the lower-cased copy.
                let list = &t[6..];
                let skip = list.len() - list.trim_start().len();
                return super::after::Parents::parse(list.trim(), 6 + skip)
                    .map(Timing::After)
                    .map_err(|(offset, message)| FieldError { offset, message });
            }
            _ if lower.starts_with("@every") => {
                let d = t["@every".len()..].trim();
                let too_short = || FieldError {
                    offset: 7,
                    message: format!("@every {d}: the shortest interval is 1s"),
                };
                // `500ms` is not a duration we take, but the reader meant one: say why.
                let ms_given = d
                    .strip_suffix("ms")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if ms_given {
                    return Err(too_short());
                }
                let ms = super::duration::parse_duration(d).map_err(|m| FieldError {
                    offset: 7,
                    message: m,
                })?;
                if ms < 1000 {
                    return Err(too_short());
                }
                return Ok(Timing::Every(ms));
            }
            _ if lower.starts_with('@') => {
                return Err(FieldError {
                    offset: 0,
                    message: format!(
                        "unknown macro {t:?} (use @yearly @annually @monthly @weekly @daily @midnight @hourly @every @reboot @after)"
                    ),
                });
            }
            _ => return CronExpr::parse(text).map(Timing::Cron),
        };
        CronExpr::parse(fields).map(Timing::Cron)
    }

    /// How many run times fall in `(after, upto]`, counting at most `cap` of them one by one
    /// (`@every` is counted by division, whatever the span); true when the cap was reached.
    pub fn runs_between(
        &self,
        after: DateTime<Utc>,
        upto: DateTime<Utc>,
        zone: &Zone,
        cap: u64,
    ) -> (u64, bool) {
        if upto <= after {
            return (0, false);
        }
        match self {
            Timing::Every(ms) => {
                let ms = (*ms).max(1) as i64;
                let n = upto.timestamp_millis().div_euclid(ms)
                    - after.timestamp_millis().div_euclid(ms);
                (n.max(0) as u64, false)
            }
            Timing::Reboot | Timing::After(_) => (0, false),
            Timing::Cron(_) => {
                let mut n = 0;
                let mut at = after;
                while n < cap {
                    match self.next_after(at, zone) {
                        Some(t) if t <= upto => {
                            n += 1;
                            at = t;
                        }
                        _ => return (n, false),
                    }
                }
                (n, true)
            }
        }
    }

    /// The next run strictly after `after`; `None` for `@reboot` and `@after` (and for fields
    /// that never match again).
    pub fn next_after(&self, after: DateTime<Utc>, zone: &Zone) -> Option<DateTime<Utc>> {
        match self {
            Timing::Cron(c) => c.next_after(after, zone),
            Timing::Every(ms) => {
                let ms = *ms as i64;
                let next = (after.timestamp_millis().div_euclid(ms) + 1) * ms;
                DateTime::from_timestamp_millis(next)
            }
            Timing::Reboot | Timing::After(_) => None,
        }
    }
}

#[cfg(test)]
mod tests;
