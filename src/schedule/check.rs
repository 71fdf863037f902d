//! `gearwheel check`: validate a schedules file without a server, and show when its entries
//! would run.

use std::fmt::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};

use super::cron::Timing;
use super::file::parse;
use super::zone::Zone;

/// Check `text` (read from `name`); with `next > 0`, list each entry's next run times after
/// `from`. Returns the report and whether the file is valid.
pub fn check(
    name: &str,
    text: &str,
    zone: &Zone,
    next: usize,
    from: DateTime<Utc>,
) -> (String, bool) {
    let mut out = String::new();
    let file = match parse(text, zone) {
        Ok(f) => f,
        Err(errors) => {
            for e in errors {
                let _ = writeln!(out, "{name}:{e}");
            }
            return (out, false);
        }
    };
    for w in &file.warnings {
        let _ = writeln!(out, "{name}:{w} (warning)");
    }
    let n = file.entries.len();
    let noun = if n == 1 { "entry" } else { "entries" };
    let _ = writeln!(out, "{name}: {n} {noun} OK");
    if next == 0 {
        return (out, true);
    }
    for e in &file.entries {
        // A fan-out multiplies every run below: say so beside the function.
        let fanout = if e.expect_ping {
            // A heartbeat runs nothing here: say what each time waits for instead.
            format!(
                " expect=ping (no job; a ping within {} of each time)",
                super::duration::show_duration(e.grace_ms)
            )
        } else if e.fanout > 1 {
            format!(" fanout={} ({} jobs per run)", e.fanout, e.fanout)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "\n{}  [{}]  -> {}{fanout}  (zone {})",
            e.id,
            e.spec,
            e.function,
            e.zone.name()
        );
        if matches!(e.timing, Timing::Reboot) {
            let _ = writeln!(out, "  once, when the server starts");
            continue;
        }
        if let Timing::After(p) = &e.timing {
            let _ = writeln!(out, "  after each run of {}", p.ids.join(" and "));
            continue;
        }
        let mut at = from;
        for _ in 0..next {
            match e.timing.next_after(at, &e.zone) {
                Some(t) => {
                    let local = e.zone.local_time(t);
                    let _ = writeln!(
                        out,
                        "  {}  ({} {})",
                        t.to_rfc3339_opts(SecondsFormat::Secs, true),
                        local.format("%Y-%m-%d %H:%M:%S %a"),
                        e.zone.name()
                    );
                    at = t;
                }
                None => {
                    let _ = writeln!(out, "  no further run");
                    break;
                }
            }
        }
    }
    (out, true)
}

/// `--from`: RFC 3339, or whole seconds since 1970.
pub fn parse_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(secs) = s.parse::<i64>() {
        return DateTime::from_timestamp(secs, 0).ok_or_else(|| format!("{s}: out of range"));
    }
    if chrono::NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%dT%H:%M:%S%.f").is_ok() {
        // The entries may each have their own zone, so a wall-clock time alone is ambiguous.
        return Err(format!(
            "{s:?} has no time zone: add Z for UTC or an offset, e.g. {s}Z or {s}+02:00"
        ));
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time or unix seconds: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_errors_with_file_line_and_column() {
        let (out, ok) = check(
            "s.cron",
            "0 3 * * * a\n0 25 * * * b\n61 * * * * c\n",
            &Zone::Utc,
            0,
            Utc::now(),
        );
        assert!(!ok);
        assert_eq!(
            out,
            "s.cron:2:3: hour: 25 is out of range 0-23\ns.cron:3:1: minute: 61 is out of range 0-59\n"
        );
    }

    #[test]
    fn lists_next_runs_including_a_dst_day() {
        let from = parse_time("2026-03-28T12:00:00Z").unwrap();
        let (out, ok) = check(
            "s.cron",
            "30 2 * * * nightly tz=Europe/Berlin\n@reboot warm\n",
            &Zone::Utc,
            2,
            from,
        );
        assert!(ok);
        if Zone::parse("Europe/Berlin").is_ok() {
            assert!(
                out.contains("  2026-03-29T01:00:00Z  (2026-03-29 03:00:00 Sun Europe/Berlin)"),
                "{out}"
            );
            assert!(
                out.contains("  2026-03-30T00:30:00Z  (2026-03-30 02:30:00 Mon Europe/Berlin)"),
                "{out}"
            );
        }
        assert!(out.contains("once, when the server starts"));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("0").unwrap().timestamp(), 0);
        assert_eq!(
            parse_time("2026-01-01T00:00:00+01:00").unwrap().timestamp(),
            1_767_222_000
        );
        assert!(parse_time("yesterday").is_err());
        let e = parse_time("2026-03-29T00:00:00").unwrap_err();
        assert!(e.contains("has no time zone"), "{e}");
        assert!(e.contains("2026-03-29T00:00:00Z"), "{e}");
    }

    #[test]
    fn a_fan_out_is_shown_beside_the_function() {
        let from = parse_time("2026-01-01T00:00:00Z").unwrap();
        let (out, ok) = check(
            "s.cron",
            "0 4 * * * shard fanout=16
",
            &Zone::Utc,
            1,
            from,
        );
        assert!(ok);
        assert!(
            out.contains("-> shard fanout=16 (16 jobs per run)  (zone UTC)"),
            "{out}"
        );
    }

    #[test]
    fn a_heartbeat_says_it_runs_no_job() {
        let from = parse_time("2026-01-01T00:00:00Z").unwrap();
        let (out, ok) = check(
            "s.cron",
            "@every 5m host.alive expect=ping grace=2m\n",
            &Zone::Utc,
            1,
            from,
        );
        assert!(ok);
        assert!(
            out.contains(
                "-> host.alive expect=ping (no job; a ping within 2m of each time)  (zone UTC)"
            ),
            "{out}"
        );
    }

    /// What a line pasted from a crontab is told.
    fn first_error(line: &str) -> String {
        let (out, ok) = check("s.cron", line, &Zone::Utc, 0, Utc::now());
        assert!(!ok, "{line}");
        out
    }

    #[test]
    fn crontab_lines_are_told_what_they_are() {
        assert_eq!(
            first_error("@every 500ms tick\n"),
            "s.cron:1:8: @every 500ms: the shortest interval is 1s\n"
        );
        assert_eq!(
            first_error("@every 0s tick\n"),
            "s.cron:1:8: @every 0s: the shortest interval is 1s\n"
        );
        let six = first_error("0 */5 * * * * job\n");
        assert!(
            six.starts_with("s.cron:1:13: a sixth time field \"*\""),
            "{six}"
        );
        assert!(
            six.contains("no seconds") && six.contains("import-crontab"),
            "{six}"
        );
        let cmd = first_error("* * * * * /usr/bin/backup.sh --full\n");
        assert!(
            cmd.starts_with(
                "s.cron:1:11: \"/usr/bin/backup.sh\" is a command, not a function name"
            ),
            "{cmd}"
        );
        assert!(cmd.contains("import-crontab"), "{cmd}");
        let user = first_error("17 * * * * root cd / && run-parts /etc/cron.hourly\n");
        assert!(user.contains("found \"cd\""), "{user}");
        assert!(
            user.contains("[USER] COMMAND") && user.contains("import-crontab"),
            "{user}"
        );
    }
}
