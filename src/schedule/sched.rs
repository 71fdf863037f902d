//! SUBMIT_JOB_SCHED's five fields (minute, hour, day of month, month, day of week with
//! 0 = Monday, as the protocol text has it) and the next time they all match.

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveTime, Utc};

use super::zone::Zone;

/// Each field is one value or `None` for "any" (an empty field, or `*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedSpec {
    pub minute: Option<u32>,
    pub hour: Option<u32>,
    pub day_of_month: Option<u32>,
    pub month: Option<u32>,
    /// 0 = Monday ... 6 = Sunday.
    pub day_of_week: Option<u32>,
}

fn field(raw: &[u8], name: &str, lo: u32, hi: u32) -> Result<Option<u32>, String> {
    let s = std::str::from_utf8(raw)
        .map_err(|_| format!("{name} is not text"))?
        .trim();
    if s.is_empty() || s == "*" {
        return Ok(None);
    }
    let n: u32 = s
        .parse()
        .ok()
        .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("{name} {s:?} is not a number"))?;
    if n < lo || n > hi {
        return Err(format!("{name} {n} is out of range {lo}-{hi}"));
    }
    Ok(Some(n))
}

fn days_in_month(month: u32) -> u32 {
    match month {
        2 => 29,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl SchedSpec {
    /// Check the raw fields: each in range, and a day that exists in the month.
    pub fn parse(fields: &[impl AsRef<[u8]>; 5]) -> Result<SchedSpec, String> {
        let spec = SchedSpec {
            minute: field(fields[0].as_ref(), "minute", 0, 59)?,
            hour: field(fields[1].as_ref(), "hour", 0, 23)?,
            day_of_month: field(fields[2].as_ref(), "day of month", 1, 31)?,
            month: field(fields[3].as_ref(), "month", 1, 12)?,
            day_of_week: field(fields[4].as_ref(), "day of week", 0, 6)?,
        };
        if let (Some(d), Some(m)) = (spec.day_of_month, spec.month) {
            if d > days_in_month(m) {
                return Err(format!("day {d} never occurs in month {m}"));
            }
        }
        Ok(spec)
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        self.month.is_none_or(|m| d.month() == m)
            && self.day_of_month.is_none_or(|m| d.day() == m)
            && self
                .day_of_week
                .is_none_or(|w| d.weekday().num_days_from_monday() == w)
    }

    /// The first matching minute strictly after `after`, in `zone`'s wall-clock time. A match
    /// that falls in a DST gap runs when the gap ends; one in a repeated hour runs once, at
    /// its first occurrence.
    pub fn next_after(&self, after: DateTime<Utc>, zone: &Zone) -> Option<DateTime<Utc>> {
        let local = zone.local_time(after);
        let mut date = local.date();
        // Feb 29 on a given weekday recurs within 28 years; search a little past that.
        for _ in 0..(366 * 29) {
            if self.day_matches(date) {
                for h in self.hour.map_or(0..=23, |h| h..=h) {
                    for m in self.minute.map_or(0..=59, |m| m..=m) {
                        let naive = date.and_time(NaiveTime::from_hms_opt(h, m, 0)?);
                        if naive <= local {
                            continue;
                        }
                        let instant = match zone.instants(naive) {
                            LocalResult::Single(t) => t,
                            LocalResult::Ambiguous(a, b) => a.min(b),
                            LocalResult::None => zone.gap_end(naive)?,
                        };
                        if instant > after {
                            return Some(instant);
                        }
                    }
                }
            }
            date = date.succ_opt()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(f: [&str; 5]) -> Result<SchedSpec, String> {
        SchedSpec::parse(&f.map(|s| s.as_bytes()))
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn next(f: [&str; 5], after: &str) -> String {
        spec(f)
            .unwrap()
            .next_after(utc(after), &Zone::Utc)
            .unwrap()
            .to_rfc3339()
    }

    #[test]
    fn every_field_alone() {
        let t = "2026-11-22T06:37:30+00:00";
        assert_eq!(next(["", "", "", "", ""], t), "2026-11-22T06:38:00+00:00");
        assert_eq!(next(["15", "", "", "", ""], t), "2026-11-22T07:15:00+00:00");
        assert_eq!(next(["", "3", "", "", ""], t), "2026-11-23T03:00:00+00:00");
        assert_eq!(next(["", "", "1", "", ""], t), "2026-12-01T00:00:00+00:00");
        assert_eq!(next(["", "", "", "1", ""], t), "2027-01-01T00:00:00+00:00");
        // 2026-11-22 is a Sunday; 0 = Monday.
        assert_eq!(next(["", "", "", "", "0"], t), "2026-11-23T00:00:00+00:00");
        assert_eq!(next(["", "", "", "", "6"], t), "2026-11-22T06:38:00+00:00");
        assert_eq!(
            next(["*", "*", "*", "*", "*"], t),
            "2026-11-22T06:38:00+00:00"
        );
    }

    #[test]
    fn the_same_minute_is_not_now_but_next_time() {
        assert_eq!(
            next(["37", "6", "", "", ""], "2026-11-22T06:37:00+00:00"),
            "2026-11-23T06:37:00+00:00"
        );
        assert_eq!(
            next(["38", "6", "", "", ""], "2026-11-22T06:37:59+00:00"),
            "2026-11-22T06:38:00+00:00"
        );
    }

    #[test]
    fn month_ends_and_leap_years() {
        let t = "2026-11-22T00:00:00+00:00";
        assert_eq!(
            next(["0", "0", "31", "", ""], t),
            "2026-12-31T00:00:00+00:00"
        );
        assert_eq!(
            next(["0", "0", "31", "", ""], "2026-12-31T00:00:00+00:00"),
            "2027-01-31T00:00:00+00:00"
        );
        assert_eq!(
            next(["0", "0", "30", "", ""], "2027-01-30T00:00:00+00:00"),
            "2027-03-30T00:00:00+00:00"
        );
        assert_eq!(
            next(["0", "12", "29", "2", ""], t),
            "2028-02-29T12:00:00+00:00"
        );
        assert_eq!(
            next(["0", "12", "29", "2", ""], "2028-03-01T00:00:00+00:00"),
            "2032-02-29T12:00:00+00:00"
        );
        // 2100 is not a leap year.
        assert_eq!(
            next(["0", "0", "29", "2", ""], "2096-03-01T00:00:00+00:00"),
            "2104-02-29T00:00:00+00:00"
        );
        // Feb 29 that is also a Monday (0): 2044.
        assert_eq!(
            next(["0", "0", "29", "2", "0"], t),
            "2044-02-29T00:00:00+00:00"
        );
    }

    #[test]
    fn bad_fields_say_why() {
        assert_eq!(
            spec(["60", "", "", "", ""]).unwrap_err(),
            "minute 60 is out of range 0-59"
        );
        assert_eq!(
            spec(["", "24", "", "", ""]).unwrap_err(),
            "hour 24 is out of range 0-23"
        );
        assert_eq!(
            spec(["", "", "0", "", ""]).unwrap_err(),
            "day of month 0 is out of range 1-31"
        );
        assert_eq!(
            spec(["", "", "", "13", ""]).unwrap_err(),
            "month 13 is out of range 1-12"
        );
        assert_eq!(
            spec(["", "", "", "", "7"]).unwrap_err(),
            "day of week 7 is out of range 0-6"
        );
        assert_eq!(
            spec(["x", "", "", "", ""]).unwrap_err(),
            "minute \"x\" is not a number"
        );
        assert_eq!(
            spec(["-1", "", "", "", ""]).unwrap_err(),
            "minute \"-1\" is not a number"
        );
        assert_eq!(
            spec(["", "", "31", "2", ""]).unwrap_err(),
            "day 31 never occurs in month 2"
        );
        assert_eq!(
            spec(["", "", "31", "4", ""]).unwrap_err(),
            "day 31 never occurs in month 4"
        );
        assert_eq!(
            spec(["", "", "30", "2", ""]).unwrap_err(),
            "day 30 never occurs in month 2"
        );
        assert!(spec(["", "", "29", "2", ""]).is_ok());
    }

    #[test]
    fn dst_gap_and_overlap() {
        let Ok(berlin) = Zone::parse("Europe/Berlin") else {
            eprintln!("SKIP: no system tz database");
            return;
        };
        // 2026-03-29 02:30 does not exist in Berlin: run when the gap ends (03:00 CEST = 01:00Z).
        let s = spec(["30", "2", "29", "3", ""]).unwrap();
        let t = s.next_after(utc("2026-03-28T12:00:00Z"), &berlin).unwrap();
        assert_eq!(t.to_rfc3339(), "2026-03-29T01:00:00+00:00");
        // 2026-10-25 02:30 happens twice: run at the first (CEST, 00:30Z), once.
        let s = spec(["30", "2", "25", "10", ""]).unwrap();
        let t = s.next_after(utc("2026-10-24T12:00:00Z"), &berlin).unwrap();
        assert_eq!(t.to_rfc3339(), "2026-10-25T00:30:00+00:00");
        let again = s.next_after(t, &berlin).unwrap();
        assert_eq!(again.to_rfc3339(), "2027-10-25T00:30:00+00:00");
    }
}
