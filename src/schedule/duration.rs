//! Durations as people write them in a schedules file: `30s`, `5m`, `2h`, `1d`, and sums
//! such as `1h30m`.

/// Milliseconds as the largest whole unit, as a schedules file would say them: `90s` stays
/// `90s`, `600000` is `10m`.
pub fn show_duration(ms: u64) -> String {
    for (unit, n) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms % n == 0 {
            return format!("{}{unit}", ms / n);
        }
    }
    format!("{}s", ms.div_ceil(1000))
}

/// Milliseconds in a duration text, or why it is not one.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut saw_unit = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1_000,
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            _ => {
                return Err(format!(
                    "{s:?} is not a duration (use s, m, h or d, e.g. 30s, 5m, 1h30m)"
                ));
            }
        };
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a duration: a number must come before {c:?}"))?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("duration {s:?} is too long"))?;
        num.clear();
        saw_unit = true;
    }
    if !num.is_empty() || !saw_unit {
        return Err(format!(
            "{s:?} is not a duration: every number needs a unit (s, m, h or d)"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(30_000));
        assert_eq!(parse_duration("5m"), Ok(300_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("0s"), Ok(0));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("1h30").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
