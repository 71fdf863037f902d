//! The adapter against an independent brute-force matcher (every minute of a year), and
//! hand-computed DST days.

use super::*;
use chrono::{Datelike, Timelike};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn runs(expr: &str, from: &str, n: usize, zone: &Zone) -> Vec<String> {
    let t = Timing::parse(expr).unwrap();
    let mut at = utc(from);
    let mut out = vec![];
    for _ in 0..n {
        at = t.next_after(at, zone).unwrap();
        out.push(at.to_rfc3339());
    }
    out
}

/// An independent reading of one crontab field: does `v` match? Written for the test alone,
/// as directly from crontab(5) as possible.
fn brute_field(f: &str, v: u32, lo: u32, hi: u32, names: &[&str]) -> bool {
    let num = |s: &str| -> u32 {
        names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s))
            .map(|i| i as u32 + lo.min(1))
            .unwrap_or_else(|| s.parse().unwrap())
    };
    f.split(',').any(|item| {
        let (r, step) = item
            .split_once('/')
            .map_or((item, 1), |(r, s)| (r, s.parse().unwrap()));
        let (a, b) = if r == "*" {
            (lo, hi)
        } else if let Some((a, b)) = r.split_once('-') {
            (num(a), num(b))
        } else if step > 1 {
            (num(r), hi)
        } else {
            (num(r), num(r))
        };
        v >= a && v <= b && (v - a) % step == 0
    })
}

/// Per-field tables from the brute-force reading, then each minute checked against them.
struct Brute {
    fields: Vec<Vec<bool>>,
    or_rule: bool,
}

impl Brute {
    fn new(expr: &str) -> Brute {
        let f: Vec<&str> = expr.split_whitespace().collect();
        let months = [
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ];
        let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let table = |f: &str, lo: u32, hi: u32, names: &[&str]| {
            (0..=hi)
                .map(|v| v >= lo && brute_field(f, v, lo, hi, names))
                .collect()
        };
        Brute {
            fields: vec![
                table(f[0], 0, 59, &[]),
                table(f[1], 0, 23, &[]),
                table(f[2], 1, 31, &[]),
                table(f[3], 1, 12, &months),
                table(f[4], 0, 7, &days),
            ],
            or_rule: !f[2].starts_with('*') && !f[4].starts_with('*'),
        }
    }

    fn matches(&self, t: NaiveDateTime) -> bool {
        let dow = t.weekday().num_days_from_sunday() as usize;
        let dow_ok = self.fields[4][dow] || (dow == 0 && self.fields[4][7]);
        let dom_ok = self.fields[2][t.day() as usize];
        let day_ok = if self.or_rule {
            dom_ok || dow_ok
        } else {
            dom_ok && dow_ok
        };
        self.fields[0][t.minute() as usize]
            && self.fields[1][t.hour() as usize]
            && self.fields[3][t.month() as usize]
            && day_ok
    }
}

#[test]
fn a_year_of_runs_matches_a_brute_force_reading() {
    let exprs = [
        "0 3 * * *",
        "*/15 * * * *",
        "30 2 * * mon-fri",
        "0 0 1 * *",
        "0 12 * * 0",
        "0 12 * * 7",
        "0 0 1 * 1",
        "5 4 13 * fri",
        "0 9-17/2 * * 1-5",
        "15,45 */6 * jan,jul *",
        "0 0 29 2 *",
        "59 23 31 * *",
        "0 0 * * 5-7",
        "7/20 0 1-7 * *",
    ];
    let start = NaiveDateTime::parse_from_str("2028-01-01 00:00", "%Y-%m-%d %H:%M").unwrap();
    for expr in exprs {
        let t = Timing::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e:?}"));
        let brute = Brute::new(expr);
        let mut expected = vec![];
        let mut m = start;
        // 2028 is a leap year: it covers the 29 February entry.
        let end = NaiveDateTime::parse_from_str("2029-01-01 00:00", "%Y-%m-%d %H:%M").unwrap();
        while m < end {
            if brute.matches(m) {
                expected.push(m);
            }
            m += Duration::minutes(1);
        }
        let mut got = vec![];
        let mut at = Utc.from_utc_datetime(&(start - Duration::minutes(1)));
        loop {
            at = t.next_after(at, &Zone::Utc).unwrap();
            if at.naive_utc() >= end {
                break;
            }
            got.push(at.naive_utc());
        }
        assert!(!expected.is_empty(), "{expr}");
        assert_eq!(got.len(), expected.len(), "{expr}");
        assert_eq!(got, expected, "{expr}");
    }
}

#[test]
fn or_rule_names_and_sunday_as_seven() {
    let z = Zone::Utc;
    // 2027-02-01 is a Monday. "1st or any Monday".
    assert_eq!(
        runs("0 0 1 * 1", "2027-01-30T00:00:00Z", 4, &z),
        [
            "2027-02-01T00:00:00+00:00",
            "2027-02-08T00:00:00+00:00",
            "2027-02-15T00:00:00+00:00",
            "2027-02-22T00:00:00+00:00"
        ]
    );
    assert_eq!(
        runs("0 0 1 * 1", "2027-02-22T00:00:00Z", 2, &z),
        ["2027-03-01T00:00:00+00:00", "2027-03-08T00:00:00+00:00"]
    );
    // 0 and 7 are Sunday; names in any case.
    assert_eq!(
        runs("0 6 * * 0", "2026-11-22T07:00:00Z", 1, &z),
        runs("0 6 * * 7", "2026-11-22T07:00:00Z", 1, &z)
    );
    assert_eq!(
        runs("0 6 * * SUN", "2026-11-22T07:00:00Z", 1, &z),
        ["2026-11-29T06:00:00+00:00"]
    );
    assert_eq!(
        runs("0 0 1 FEB *", "2026-11-22T00:00:00Z", 1, &z),
        ["2027-02-01T00:00:00+00:00"]
    );
    // mon-fri is Monday to Friday (the crate alone would read 1-5 as Sunday-Thursday).
    let days: Vec<String> = runs("0 8 * * 1-5", "2026-11-21T00:00:00Z", 5, &z);
    assert_eq!(days[0], "2026-11-23T08:00:00+00:00");
    assert_eq!(days[4], "2026-11-27T08:00:00+00:00");
}

#[test]
fn macros() {
    let z = Zone::Utc;
    let from = "2026-11-22T06:37:00Z";
    assert_eq!(runs("@yearly", from, 1, &z), ["2027-01-01T00:00:00+00:00"]);
    assert_eq!(
        runs("@annually", from, 1, &z),
        ["2027-01-01T00:00:00+00:00"]
    );
    assert_eq!(runs("@monthly", from, 1, &z), ["2026-12-01T00:00:00+00:00"]);
    assert_eq!(runs("@weekly", from, 1, &z), ["2026-11-29T00:00:00+00:00"]);
    assert_eq!(runs("@daily", from, 1, &z), ["2026-11-23T00:00:00+00:00"]);
    assert_eq!(
        runs("@midnight", from, 1, &z),
        ["2026-11-23T00:00:00+00:00"]
    );
    assert_eq!(runs("@hourly", from, 1, &z), ["2026-11-22T07:00:00+00:00"]);
    assert!(matches!(Timing::parse("@reboot"), Ok(Timing::Reboot)));
    assert!(Timing::parse("@sometimes").is_err());
}

#[test]
fn every_is_aligned_to_the_epoch_so_a_restart_does_not_shift_it() {
    let z = Zone::Utc;
    assert_eq!(
        runs("@every 10s", "2026-11-22T06:37:03Z", 3, &z),
        [
            "2026-11-22T06:37:10+00:00",
            "2026-11-22T06:37:20+00:00",
            "2026-11-22T06:37:30+00:00"
        ]
    );
    // "Restart" at another moment: the same grid.
    assert_eq!(
        runs("@every 10s", "2026-11-22T06:37:27.5Z", 1, &z),
        ["2026-11-22T06:37:30+00:00"]
    );
    assert_eq!(
        runs("@every 1h", "2026-11-22T06:37:03Z", 1, &z),
        ["2026-11-22T07:00:00+00:00"]
    );
    assert!(Timing::parse("@every 500ms").is_err());
    assert!(Timing::parse("@every").is_err());
}

#[test]
fn entries_that_never_run_are_errors_not_hangs() {
    for (expr, at) in [("0 0 30 2 *", 4), ("0 0 31 4,6 *", 4), ("0 0 31 feb *", 4)] {
        let e = Timing::parse(expr).unwrap_err();
        assert_eq!(e.offset, at, "{expr}: {e:?}");
    }
    // With a day of week as well, the OR rule lets it run on Mondays.
    assert!(Timing::parse("0 0 30 2 mon").is_ok());
}

#[test]
fn field_errors_point_at_the_column() {
    let cases = [
        ("60 * * * *", 0, "minute: 60 is out of range 0-59"),
        ("* 24 * * *", 2, "hour: 24 is out of range 0-23"),
        ("* * 0 * *", 4, "day of month: 0 is out of range 1-31"),
        ("* * * 13 *", 6, "month: 13 is out of range 1-12"),
        ("* * * * 8", 8, "day of week: 8 is out of range 0-7"),
        (
            "* * * * funday",
            8,
            "day of week: \"funday\" is not a number or a name (sun, mon, tue...)",
        ),
        ("*/0 * * * *", 2, "minute: step 0 must be 1-59"),
        ("5-1 * * * *", 0, "minute: range 5-1 runs backwards"),
        ("1,2,x * * * *", 4, "minute: \"x\" is not a number"),
        (
            "* * * *",
            7,
            "a schedule needs 5 fields (minute hour day-of-month month day-of-week), found 4",
        ),
    ];
    for (expr, offset, msg) in cases {
        let e = Timing::parse(expr).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (offset, msg), "{expr}");
    }
}

fn zone(name: &str) -> Option<Zone> {
    match Zone::parse(name) {
        Ok(z) => Some(z),
        Err(_) => {
            eprintln!("SKIP: no tz data for {name}");
            None
        }
    }
}

#[test]
fn dst_spring_forward() {
    let Some(berlin) = zone("Europe/Berlin") else {
        return;
    };
    // 2026-03-29: 02:00 CET -> 03:00 CEST (01:00Z).
    // Fixed time in the gap: runs when the gap ends, once.
    assert_eq!(
        runs("30 2 * * *", "2026-03-28T12:00:00Z", 3, &berlin),
        [
            "2026-03-29T01:00:00+00:00",
            "2026-03-30T00:30:00+00:00",
            "2026-03-31T00:30:00+00:00"
        ]
    );
    // Hourly follows real time: 00:00Z (01:00 CET), then 01:00Z (03:00 CEST); 02:00 does not exist.
    assert_eq!(
        runs("0 * * * *", "2026-03-28T23:30:00Z", 3, &berlin),
        [
            "2026-03-29T00:00:00+00:00",
            "2026-03-29T01:00:00+00:00",
            "2026-03-29T02:00:00+00:00"
        ]
    );
    // */15 too: 01:45 CET = 00:45Z, then 03:00 CEST = 01:00Z.
    assert_eq!(
        runs("*/15 * * * *", "2026-03-29T00:40:00Z", 2, &berlin),
        ["2026-03-29T00:45:00+00:00", "2026-03-29T01:00:00+00:00"]
    );
    let Some(ny) = zone("America/New_York") else {
        return;
    };
    // 2026-03-08: 02:00 EST -> 03:00 EDT (07:00Z).
    assert_eq!(
        runs("30 2 * * *", "2026-03-07T12:00:00Z", 2, &ny),
        ["2026-03-08T07:00:00+00:00", "2026-03-09T06:30:00+00:00"]
    );
}

#[test]
fn dst_fall_back() {
    let Some(berlin) = zone("Europe/Berlin") else {
        return;
    };
    // 2026-10-25: 03:00 CEST -> 02:00 CET; 02:00-02:59 happens twice (00:00Z-00:59Z and 01:00Z-01:59Z).
    // Fixed time: once, at the first occurrence.
    assert_eq!(
        runs("30 2 * * *", "2026-10-24T12:00:00Z", 2, &berlin),
        ["2026-10-25T00:30:00+00:00", "2026-10-26T01:30:00+00:00"]
    );
    // Hourly: every real hour, the repeated one twice.
    assert_eq!(
        runs("0 * * * *", "2026-10-24T23:30:00Z", 4, &berlin),
        [
            "2026-10-25T00:00:00+00:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T02:00:00+00:00",
            "2026-10-25T03:00:00+00:00"
        ]
    );
    assert_eq!(
        runs("*/30 * * * *", "2026-10-24T23:50:00Z", 5, &berlin),
        [
            "2026-10-25T00:00:00+00:00",
            "2026-10-25T00:30:00+00:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T01:30:00+00:00",
            "2026-10-25T02:00:00+00:00"
        ]
    );
    let Some(ny) = zone("America/New_York") else {
        return;
    };
    // 2026-11-01: 02:00 EDT -> 01:00 EST; 01:30 happens at 05:30Z and 06:30Z.
    assert_eq!(
        runs("30 1 * * *", "2026-10-31T12:00:00Z", 2, &ny),
        ["2026-11-01T05:30:00+00:00", "2026-11-02T06:30:00+00:00"]
    );
    assert_eq!(
        runs("30 * * * *", "2026-11-01T05:00:00Z", 3, &ny),
        [
            "2026-11-01T05:30:00+00:00",
            "2026-11-01T06:30:00+00:00",
            "2026-11-01T07:30:00+00:00"
        ]
    );
}

#[test]
fn leap_day() {
    assert_eq!(
        runs("0 12 29 2 *", "2026-11-22T00:00:00Z", 3, &Zone::Utc),
        [
            "2028-02-29T12:00:00+00:00",
            "2032-02-29T12:00:00+00:00",
            "2036-02-29T12:00:00+00:00"
        ]
    );
}

#[test]
fn runs_between_counts_missed_runs() {
    let t = |s: &str| Timing::parse(s).unwrap();
    let (a, b) = (utc("2026-11-22T10:00:30Z"), utc("2026-11-22T10:02:30Z"));
    // Two minute marks, 10:01 and 10:02.
    assert_eq!(
        t("* * * * *").runs_between(a, b, &Zone::Utc, 100),
        (2, false)
    );
    assert_eq!(
        t("*/5 * * * *").runs_between(a, b, &Zone::Utc, 100),
        (0, false)
    );
    // The end is included, the start is not.
    let (c, d) = (utc("2026-11-22T10:00:00Z"), utc("2026-11-22T10:05:00Z"));
    assert_eq!(
        t("*/5 * * * *").runs_between(c, d, &Zone::Utc, 100),
        (1, false)
    );
    assert_eq!(
        t("@every 10s").runs_between(a, b, &Zone::Utc, 1),
        (12, false)
    );
    assert_eq!(t("@reboot").runs_between(a, b, &Zone::Utc, 100), (0, false));
    assert_eq!(
        t("* * * * *").runs_between(b, a, &Zone::Utc, 100),
        (0, false)
    );
    // A year down with an every-minute entry stops counting at the cap.
    let year = utc("2027-11-22T10:00:30Z");
    assert_eq!(
        t("* * * * *").runs_between(a, year, &Zone::Utc, 1000),
        (1000, true)
    );
}
