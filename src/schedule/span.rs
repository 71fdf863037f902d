//! The FROM and TO of a backfill (admin line, CLI, HTTP): an RFC 3339 time, or a date that
//! stands for its whole day in UTC (FROM its first millisecond, TO its last), so that
//! `2026-11-01 2026-11-07` is the whole week. Pure.

use chrono::{DateTime, NaiveDate};

/// A backfill's range in ms since 1970, both ends included.
pub fn parse_range(from: &str, to: &str) -> Result<(u64, u64), String> {
    Ok((bound(from, false)?, bound(to, true)?))
}

/// One end: `end` reads a date as the last millisecond of its day.
fn bound(s: &str, end: bool) -> Result<u64, String> {
    let ms = if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let day = d
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis());
        let day = day.ok_or_else(|| format!("{s:?}: out of range"))?;
        if end { day + 86_400_000 - 1 } else { day }
    } else {
        DateTime::parse_from_rfc3339(s)
            .map_err(|_| {
                format!(
                    "{s:?} is not an RFC 3339 time (2026-11-01T03:00:00Z) or a date (2026-11-01)"
                )
            })?
            .timestamp_millis()
    };
    u64::try_from(ms).map_err(|_| format!("{s:?} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_cover_their_whole_days_and_times_are_exact() {
        let (from, to) = parse_range("2026-11-01", "2026-11-02").unwrap();
        assert_eq!(from, 1_793_491_200_000);
        assert_eq!(to, 1_793_491_200_000 + 2 * 86_400_000 - 1);
        let (from, to) = parse_range("2026-11-01T03:00:00Z", "2026-11-01T05:00:00+02:00").unwrap();
        assert_eq!(from, 1_793_491_200_000 + 3 * 3_600_000);
        assert_eq!(to, 1_793_491_200_000 + 3 * 3_600_000);
        for bad in [
            "yesterday",
            "2026-13-01",
            "1969-12-31",
            "2026-11-01T03:00:00",
        ] {
            assert!(parse_range(bad, "2026-11-01").is_err(), "{bad}");
        }
    }
}
