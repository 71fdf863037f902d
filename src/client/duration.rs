//! Durations (`10s`, `5m`, `2h`, `1d`, `1h30m`, `250ms`) and points in time (RFC 3339 or unix
//! seconds) as the command line gives them. Pure: `now` is a parameter.

use std::time::Duration;

/// Parse a duration: one or more `<number><unit>` parts with units `ms`, `s`, `m`, `h`, `d`;
/// a bare number is seconds. Zero is allowed; signs, fractions and spaces are not.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = |why: &str| {
        Err(format!(
            "{s:?} is not a duration ({why}; e.g. 10s, 5m, 2h, 1d)"
        ))
    };
    if s.is_empty() {
        return bad("empty");
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u64>() {
            Ok(n) => Ok(Duration::from_secs(n)),
            Err(_) => bad("too large"),
        };
    }
    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return bad("a number must come before each unit");
        }
        let Ok(n) = rest[..digits].parse::<u64>() else {
            return bad("too large");
        };
        rest = &rest[digits..];
        let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit_ms: u64 = match &rest[..letters] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => return bad("each number needs a unit after the first"),
            _ => return bad("units are ms, s, m, h and d"),
        };
        rest = &rest[letters..];
        match n.checked_mul(unit_ms).and_then(|v| total_ms.checked_add(v)) {
            Some(v) => total_ms = v,
            None => return bad("too large"),
        }
    }
    Ok(Duration::from_millis(total_ms))
}

/// A duration the way `parse_duration` reads it back, in the largest units that are exact:
/// `90s` -> `1m30s`, `1500ms` -> `1s500ms`, zero -> `0s`.
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    out
}

/// Parse `--at`: unix seconds, or an RFC 3339 time such as `2030-01-02T03:04:05Z` or
/// `2030-01-02T03:04:05+01:00` (a space may stand for the `T`). Returns unix seconds; a
/// fraction of a second is rounded up so that the job never runs early.
pub fn parse_at(s: &str) -> Result<u64, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map_err(|_| format!("{s:?}: unix seconds too large"));
    }
    let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|e| {
        format!(
            "{s:?} is not a time ({e}); use RFC 3339 like 2030-01-02T03:04:05Z, or unix seconds"
        )
    })?;
    let secs = t.timestamp();
    let secs = if t.timestamp_subsec_nanos() > 0 {
        secs + 1
    } else {
        secs
    };
    u64::try_from(secs).map_err(|_| format!("{s:?} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> u64 {
        parse_duration(s).unwrap().as_millis() as u64
    }

    #[test]
    fn units_and_combinations() {
        assert_eq!(d("10s"), 10_000);
        assert_eq!(d("5m"), 300_000);
        assert_eq!(d("2h"), 7_200_000);
        assert_eq!(d("1d"), 86_400_000);
        assert_eq!(d("250ms"), 250);
        assert_eq!(d("1h30m"), 5_400_000);
        assert_eq!(d("1d2h3m4s5ms"), 93_784_005);
        assert_eq!(d("0s"), 0);
        assert_eq!(d("0"), 0);
        assert_eq!(d("45"), 45_000);
        assert_eq!(d("007s"), 7_000);
    }

    #[test]
    fn bad_durations_say_why() {
        for bad in [
            "",
            "s",
            "10x",
            "10sec",
            "-5s",
            "1.5s",
            " 5s",
            "5s ",
            "5 s",
            "1h30",
            "m5",
            "99999999999999999999s",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("not a duration"), "{bad:?}: {e}");
        }
        assert!(
            parse_duration("99999999999999d")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_duration("18446744073709551615").is_ok());
    }

    #[test]
    fn formatting_reads_back() {
        for (ms, s) in [
            (0, "0s"),
            (1500, "1s500ms"),
            (90_000, "1m30s"),
            (86_400_000, "1d"),
            (93_784_005, "1d2h3m4s5ms"),
        ] {
            assert_eq!(format_duration(Duration::from_millis(ms)), s);
            assert_eq!(d(s), ms);
        }
    }

    #[test]
    fn times_in_rfc3339_or_unix_seconds() {
        assert_eq!(parse_at("0").unwrap(), 0);
        assert_eq!(parse_at("1700000000").unwrap(), 1_700_000_000);
        assert_eq!(parse_at("2030-01-02T03:04:05Z").unwrap(), 1_893_553_445);
        assert_eq!(
            parse_at("2030-01-02T04:04:05+01:00").unwrap(),
            1_893_553_445
        );
        assert_eq!(parse_at("2030-01-02 03:04:05Z").unwrap(), 1_893_553_445);
        assert_eq!(parse_at("2030-01-02T03:04:04.2Z").unwrap(), 1_893_553_445);
        assert!(
            parse_at("1969-12-31T23:59:59Z")
                .unwrap_err()
                .contains("1970")
        );
        assert!(parse_at("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(parse_at("2030-01-02").is_err());
        assert!(parse_at("").is_err());
        assert!(parse_at("-5").is_err());
    }
}
