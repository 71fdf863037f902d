//! A schedule entry's timing in words ("every weekday at 02:30 Europe/Berlin"), for people
//! reading the console or `show schedules`. Pure, from the spec text the file gave; a shape it
//! has no words for comes back as the fields themselves, never a wrong sentence.

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// `spec` (five crontab fields or a macro) in `zone` in words.
pub fn describe(spec: &str, zone: &str) -> String {
    let t = spec.trim();
    let lower = t.to_ascii_lowercase();
    let fields = match lower.as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        "@reboot" => return "once, when the server starts".into(),
        _ if lower.starts_with("@every") => return format!("every {}", t[6..].trim()),
        _ if lower.starts_with("@after") => {
            return format!(
                "after a run of each of {}",
                t[6..].trim().replace(',', ", ")
            );
        }
        _ => t,
    };
    let f: Vec<&str> = fields.split_whitespace().collect();
    let Ok([min, hour, dom, mon, dow]) = <[&str; 5]>::try_from(f) else {
        return format!("{t} ({zone})");
    };
    match (time(min, hour), days(dom, mon, dow)) {
        (Some(time), Some(days)) => {
            let days = if days.is_empty() { "every day" } else { &days };
            match time {
                Time::At(at) => format!("{days} at {at} {zone}"),
                Time::Often(often) if days == "every day" => format!("{often} ({zone})"),
                Time::Often(often) => format!("{often}, {days} ({zone})"),
            }
        }
        _ => format!("{t} ({zone})"),
    }
}

enum Time {
    /// Clock times: "02:30", "02:30 and 14:30".
    At(String),
    /// A frequency: "every 5 minutes".
    Often(String),
}

fn num(s: &str, hi: u32) -> Option<u32> {
    s.parse().ok().filter(|n| *n <= hi)
}

fn nums(s: &str, hi: u32) -> Option<Vec<u32>> {
    s.split(',').map(|p| num(p, hi)).collect()
}

/// The step of `*/N` (N > 1).
fn step(s: &str) -> Option<u32> {
    s.strip_prefix("*/")?.parse().ok().filter(|n| *n > 1)
}

fn plural(n: u32, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn time(min: &str, hour: &str) -> Option<Time> {
    if let (Some(ms), Some(hs)) = (nums(min, 59), nums(hour, 23))
        && ms.len() * hs.len() <= 4
    {
        let mut at: Vec<String> = Vec::new();
        for h in &hs {
            for m in &ms {
                at.push(format!("{h:02}:{m:02}"));
            }
        }
        return Some(Time::At(and(&at)));
    }
    let often = match (min, hour) {
        ("*", "*") => "every minute".to_string(),
        (m, "*") if step(m).is_some() => format!("every {}", plural(step(m)?, "minute")),
        (m, "*") => format!("every hour at minute {}", and(&strs(nums(m, 59)?))),
        (m, h) if step(h).is_some() => format!(
            "every {} at minute {}",
            plural(step(h)?, "hour"),
            and(&strs(nums(m, 59)?))
        ),
        _ => return None,
    };
    Some(Time::Often(often))
}

fn strs(v: Vec<u32>) -> Vec<String> {
    v.into_iter().map(|n| n.to_string()).collect()
}

/// A weekday field (0-7, names, one range or a list), in words.
fn weekdays(dow: &str) -> Option<String> {
    let day = |s: &str| -> Option<u32> {
        let l = s.to_ascii_lowercase();
        let by_name = DAYS
            .iter()
            .position(|d| d[..3].eq_ignore_ascii_case(&l))
            .map(|i| i as u32);
        by_name.or_else(|| num(s, 7).map(|n| n % 7))
    };
    if let Some((a, b)) = dow.split_once('-') {
        let (a, b) = (day(a)?, day(b)?);
        return Some(match (a, b) {
            (1, 5) => "every weekday".into(),
            _ => format!("{} to {}", DAYS[a as usize], DAYS[b as usize]),
        });
    }
    let mut list: Vec<u32> = dow.split(',').map(day).collect::<Option<_>>()?;
    list.sort_unstable();
    list.dedup();
    if list == [0, 6] {
        return Some("every Saturday and Sunday".into());
    }
    let names: Vec<String> = list.iter().map(|d| DAYS[*d as usize].to_string()).collect();
    Some(format!("every {}", and(&names)))
}

fn days(dom: &str, mon: &str, dow: &str) -> Option<String> {
    let mut parts = Vec::new();
    let dom_words = match dom {
        "*" => None,
        d => Some(format!(
            "on day {} of the month",
            and(&strs(nums(d, 31)?.into_iter().filter(|n| *n > 0).collect()))
        )),
    };
    let dow_words = match dow {
        "*" => None,
        d => Some(weekdays(d)?),
    };
    match (dom_words, dow_words) {
        // Both restricted: cron runs on either (Vixie's rule).
        (Some(a), Some(b)) => parts.push(format!("{a} or {b}")),
        (Some(a), None) | (None, Some(a)) => parts.push(a),
        (None, None) => {}
    }
    if mon != "*" {
        let months: Vec<String> = nums(mon, 12)?
            .into_iter()
            .filter(|m| *m > 0)
            .map(|m| MONTHS[m as usize - 1].to_string())
            .collect();
        if months.is_empty() {
            return None;
        }
        parts.push(format!("in {}", and(&months)));
    }
    Some(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn common_shapes_in_words() {
        for (spec, zone, words) in [
            (
                "30 2 * * 1-5",
                "Europe/Berlin",
                "every weekday at 02:30 Europe/Berlin",
            ),
            ("0 3 * * *", "UTC", "every day at 03:00 UTC"),
            ("@daily", "local", "every day at 00:00 local"),
            ("@weekly", "UTC", "every Sunday at 00:00 UTC"),
            ("@monthly", "UTC", "on day 1 of the month at 00:00 UTC"),
            (
                "@yearly",
                "UTC",
                "on day 1 of the month in January at 00:00 UTC",
            ),
            ("* * * * *", "UTC", "every minute (UTC)"),
            ("*/5 * * * *", "UTC", "every 5 minutes (UTC)"),
            ("15 * * * *", "UTC", "every hour at minute 15 (UTC)"),
            ("@hourly", "UTC", "every hour at minute 0 (UTC)"),
            ("0 */6 * * *", "UTC", "every 6 hours at minute 0 (UTC)"),
            (
                "0 9,17 * * mon,WED,fri",
                "UTC",
                "every Monday, Wednesday and Friday at 09:00 and 17:00 UTC",
            ),
            (
                "0 8 * * 6,0",
                "UTC",
                "every Saturday and Sunday at 08:00 UTC",
            ),
            ("0 8 * * 7", "UTC", "every Sunday at 08:00 UTC"),
            ("0 8 * * tue-thu", "UTC", "Tuesday to Thursday at 08:00 UTC"),
            (
                "*/10 * * * 1-5",
                "UTC",
                "every 10 minutes, every weekday (UTC)",
            ),
            (
                "0 0 1,15 * 1",
                "UTC",
                "on day 1 and 15 of the month or every Monday at 00:00 UTC",
            ),
            ("@every 90s", "UTC", "every 90s"),
            ("@reboot", "UTC", "once, when the server starts"),
            ("@after a,b", "UTC", "after a run of each of a, b"),
        ] {
            assert_eq!(describe(spec, zone), words, "{spec}");
        }
    }

    #[test]
    fn shapes_without_words_show_their_fields() {
        for spec in [
            "1-5/2 * * * *",
            "0 0 L * *",
            "0 0 * * 1#2",
            "0 25 * * *",
            "1 2 3",
        ] {
            assert_eq!(describe(spec, "UTC"), format!("{spec} (UTC)"));
        }
        // Many clock times: the fields, not a long sentence.
        assert_eq!(
            describe("0,30 1,2,3 * * *", "UTC"),
            "0,30 1,2,3 * * * (UTC)"
        );
    }
}
