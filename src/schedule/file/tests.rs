//! The unit tests of file.rs.

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
            "3:13: unknown option \"bogus\" (use id, priority, overlap, catchup, catchup_max, deadline, jitter, fanout, timeout, on_failure, on_success, alert_format, retry, backoff, group, tz, expect, grace, max_duration, min_duration, when or within)",
            "4:22: priority=\"urgent\": use high, normal or low",
            "5:1: unknown macro \"@sometimes\" (use @yearly @annually @monthly @weekly @daily @midnight @hourly @every @reboot @after)",
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

/// `@after`: its parse, and the graph's errors (src/schedule/after.rs).
mod after {
    use crate::schedule::Zone;
    use crate::schedule::after::When;
    use crate::schedule::file::parse;

    fn errs(text: &str) -> Vec<String> {
        match parse(text, &Zone::Utc) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn parents_when_and_within_parse() {
        let f = parse(
            "@daily a\n@daily b\n@after a,b  c  when=always within=1h -- {after}\n",
            &Zone::Utc,
        )
        .unwrap();
        let c = &f.entries[2];
        let crate::schedule::cron::Timing::After(p) = &c.timing else {
            panic!("{:?}", c.timing)
        };
        assert_eq!(p.ids, ["a", "b"]);
        assert_eq!(c.spec, "@after a,b");
        assert_eq!(c.after.when, When::Always);
        assert_eq!(c.after.within_ms, Some(3_600_000));
    }

    #[test]
    fn unknown_self_and_cycles_are_errors_with_their_columns() {
        assert_eq!(
            errs("@daily a\n@after a,zz b\n"),
            ["2:10: @after zz: no entry of this file has the id \"zz\""]
        );
        assert_eq!(
            errs("@after a a\n"),
            ["1:8: @after a: an entry cannot run after itself"]
        );
        assert_eq!(
            errs("@after b a\n@after a b\n"),
            ["2:8: @after makes a cycle: a -> b -> a"]
        );
        assert_eq!(
            errs("@daily x\n@after x,c a\n@after a b\n@after b c\n"),
            ["3:8: @after makes a cycle: a -> c -> b -> a"]
        );
        assert_eq!(
            errs("@after a,a b\n@daily a\n"),
            ["1:10: @after names \"a\" twice"]
        );
        assert_eq!(
            errs("@after  b\n"),
            [
                "1:10: a function name is missing (expected: @macro FUNCTION [key=value ...] [-- workload])"
            ]
        );
    }

    #[test]
    fn when_and_within_need_after_and_a_job() {
        let f = parse("@daily a when=always\n", &Zone::Utc).unwrap();
        assert_eq!(
            f.warnings[0].to_string(),
            "1:10: when= has no effect without @after"
        );
        assert_eq!(
            errs("@daily a\n@after a b expect=ping\n"),
            [
                "2:1: @after with expect=ping: a ping entry submits no job, so it has nothing to run after its parents"
            ]
        );
        assert_eq!(
            errs("@daily a\n@after a b within=0s\n"),
            ["2:19: within=\"0s\": a span of 0 would miss every run; leave it out"]
        );
    }
}

#[test]
fn overlap_queue_catchup_all_and_its_cap() {
    let e = one("@hourly a overlap=queue catchup=all");
    assert_eq!(e.overlap, Overlap::Queue);
    assert_eq!(
        e.catchup,
        Catchup::All {
            max: DEFAULT_CATCHUP_MAX
        }
    );
    // The cap applies in either order.
    let e = one("@hourly a catchup_max=7 catchup=all");
    assert_eq!(e.catchup, Catchup::All { max: 7 });
    let f = parse("@hourly a catchup_max=7\n", &Zone::Utc).unwrap();
    assert_eq!(f.entries[0].catchup, Catchup::None);
    assert!(
        f.warnings[0]
            .to_string()
            .contains("catchup_max= has no effect without catchup=all"),
        "{:?}",
        f.warnings
    );
    for bad in ["catchup_max=0", "catchup_max=100001", "catchup_max=x"] {
        let e = errs(&format!("@hourly a catchup=all {bad}\n"));
        assert!(e[0].contains("a number of runs, 1 to 100000"), "{e:?}");
    }
    assert!(errs("@hourly a overlap=wait\n")[0].contains("use skip, allow or queue"));
    assert!(errs("@hourly a catchup=some\n")[0].contains("use none, last or all"));
}

#[test]
fn alerts_to_webhooks_their_format_and_the_file_defaults() {
    let text = "ALERT_FORMAT=slack\nON_SUCCESS=https://hooks.slack.com/services/T/B/x\n\
                0 0 * * * a\n0 0 * * * b on_failure=http://127.0.0.1:9/h alert_format=generic\n";
    let f = parse(text, &Zone::Utc).unwrap();
    let (a, b) = (&f.entries[0], &f.entries[1]);
    assert_eq!(
        (a.on_success.as_deref(), a.alert_format),
        (
            Some("https://hooks.slack.com/services/T/B/x"),
            crate::schedule::webhook::AlertFormat::Slack
        )
    );
    assert_eq!(
        (b.on_failure.as_deref(), b.alert_format),
        (
            Some("http://127.0.0.1:9/h"),
            crate::schedule::webhook::AlertFormat::Generic
        )
    );
    let e = errs("0 0 * * * a on_failure=http://alerts.example.com/s3cret\n");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("1:24: on_failure=: http:// only to a loopback address")
            && !e[0].contains("s3cret"),
        "{e:?}"
    );
    assert_eq!(
        errs("ALERT_FORMAT=teams\n0 0 * * * a alert_format=x\n"),
        [
            "1:14: use generic or slack",
            "2:26: alert_format=\"x\": use generic or slack"
        ]
    );
}
