//! Time zones for schedules: the server's local zone, UTC, or a named IANA zone read from
//! the system tz database. Only the two conversions the schedule code needs are offered.

use std::sync::Arc;

use chrono::{DateTime, Local, LocalResult, NaiveDateTime, TimeZone, Utc};

#[derive(Clone)]
pub enum Zone {
    Local,
    Utc,
    Named { name: String, tz: Arc<tzfile::Tz> },
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.name() == other.name()
    }
}

impl Zone {
    /// `local`, `UTC`, or an IANA name such as `Europe/Berlin`.
    pub fn parse(name: &str) -> Result<Zone, String> {
        match name {
            "local" | "Local" => Ok(Zone::Local),
            "UTC" | "utc" | "Etc/UTC" | "Z" => Ok(Zone::Utc),
            _ => {
                if name.is_empty() || name.contains("..") || name.starts_with('/') {
                    return Err(format!("unknown time zone {name:?}"));
                }
                tzfile::Tz::named(name)
                    .map(|tz| Zone::Named {
                        name: name.to_string(),
                        tz: Arc::new(tz),
                    })
                    .map_err(|e| format!("unknown time zone {name:?} ({e})"))
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Zone::Local => "local",
            Zone::Utc => "UTC",
            Zone::Named { name, .. } => name,
        }
    }

    /// Wall-clock time in this zone at an instant.
    pub fn local_time(&self, t: DateTime<Utc>) -> NaiveDateTime {
        match self {
            Zone::Local => t.with_timezone(&Local).naive_local(),
            Zone::Utc => t.naive_utc(),
            Zone::Named { tz, .. } => t.with_timezone(&tz.as_ref()).naive_local(),
        }
    }

    /// The instants a wall-clock time names: one, two (a repeated hour), or none (a gap).
    pub fn instants(&self, naive: NaiveDateTime) -> LocalResult<DateTime<Utc>> {
        fn utc<T: TimeZone>(r: LocalResult<DateTime<T>>) -> LocalResult<DateTime<Utc>> {
            r.map(|d| d.with_timezone(&Utc))
        }
        match self {
            Zone::Local => utc(Local.from_local_datetime(&naive)),
            Zone::Utc => LocalResult::Single(Utc.from_utc_datetime(&naive)),
            Zone::Named { tz, .. } => utc(tz.as_ref().from_local_datetime(&naive)),
        }
    }

    /// For a wall-clock time inside a DST gap: the instant the gap ends (the clock jumped).
    pub fn gap_end(&self, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
        let mut t = naive;
        for _ in 0..(4 * 60) {
            t += chrono::Duration::minutes(1);
            // The first wall-clock minute that exists again is the end of the gap.
            if let LocalResult::Single(x) | LocalResult::Ambiguous(x, _) = self.instants(t) {
                return Some(x);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn naive(y: i32, m: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap()
    }

    #[test]
    fn named_zones_know_their_gaps_and_overlaps() {
        let Ok(berlin) = Zone::parse("Europe/Berlin") else {
            eprintln!("SKIP: no system tz database");
            return;
        };
        assert!(matches!(
            berlin.instants(naive(2026, 3, 29, 2, 30)),
            LocalResult::None
        ));
        assert!(matches!(
            berlin.instants(naive(2026, 10, 25, 2, 30)),
            LocalResult::Ambiguous(..)
        ));
        let t = berlin.instants(naive(2026, 7, 1, 12, 0)).single().unwrap();
        assert_eq!(t.to_rfc3339(), "2026-07-01T10:00:00+00:00");
        assert_eq!(berlin.local_time(t), naive(2026, 7, 1, 12, 0));
    }

    #[test]
    fn bad_names_are_refused() {
        assert!(Zone::parse("Mars/Olympus").is_err());
        assert!(Zone::parse("../../etc/passwd").is_err());
        assert!(Zone::parse("").is_err());
        assert_eq!(Zone::parse("UTC").unwrap(), Zone::Utc);
    }
}
