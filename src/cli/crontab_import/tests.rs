use super::*;

fn opts() -> Options {
    Options {
        host: "web1".into(),
        user: None,
        version: "0".into(),
        monitor: None,
    }
}

fn one(text: &str, system: bool) -> Import {
    let src = Source {
        name: "t".into(),
        text: text.into(),
        system,
    };
    translate(&[src], &opts())
}

fn entries(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn workers(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("#   gearwheel work "))
        .map(str::to_string)
        .collect()
}

fn parses(text: &str) -> crate::schedule::file::ScheduleFile {
    crate::schedule::file::parse(text, &Zone::Utc).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
}

#[test]
fn a_user_crontab() {
    let text = "# m h dom mon dow command\nPATH=/usr/bin:/bin\nMAILTO=ops@example.org\n*/5 * * * * /usr/local/bin/cleanup-tmp --age 7d\n0 3 * * 1-5 cd /srv && ./backup.sh%full%now\n@daily date +\\%F >> /tmp/d\n";
    let imp = one(text, false);
    assert_eq!(imp.entries, 3);
    assert_eq!(
        entries(&imp.text),
        vec![
            "*/5 * * * *  web1.cleanup_tmp",
            "0 3 * * 1-5  web1.backup",
            "@daily  web1.date"
        ]
    );
    assert_eq!(
        workers(&imp.text),
        vec![
            "-f web1.cleanup_tmp -- /usr/bin/env PATH=/usr/bin:/bin /bin/sh -c '/usr/local/bin/cleanup-tmp --age 7d'",
            "-f web1.backup -- /usr/bin/env PATH=/usr/bin:/bin /bin/sh -c 'printf '\\''full\\nnow'\\'' | /bin/sh -c \"$1\"' /bin/sh 'cd /srv && ./backup.sh'",
            "-f web1.date -- /usr/bin/env PATH=/usr/bin:/bin /bin/sh -c 'date +%F >> /tmp/d'",
        ]
    );
    assert!(imp.text.contains("#   as the crontab's owner:"));
    assert_eq!(imp.reports.len(), 1);
    assert_eq!(imp.reports[0].line, 3);
    assert!(
        imp.reports[0].message.contains("ON_FAILURE=FUNCTION"),
        "{:?}",
        imp.reports
    );
    let f = parses(&imp.text);
    assert_eq!(f.entries.len(), 3);
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
}

#[test]
fn system_lines_name_their_user_and_shell() {
    let text = "SHELL=/bin/bash\nCRON_TZ=UTC\n17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly\n30 2 * * * www-data php /var/www/cron.php\n";
    let imp = one(text, true);
    assert_eq!(
        entries(&imp.text),
        vec![
            "17 * * * *  web1.cron_hourly  tz=UTC",
            "30 2 * * *  web1.cron  tz=UTC"
        ]
    );
    assert!(imp.text.contains("#   as user root:\n#   gearwheel work -f web1.cron_hourly -- /bin/bash -c 'cd / && run-parts --report /etc/cron.hourly'\n"), "{}", imp.text);
    assert!(imp.text.contains("#   as user www-data:\n#   gearwheel work -f web1.cron -- /bin/bash -c 'php /var/www/cron.php'\n"));
    assert!(imp.reports.is_empty(), "{:?}", imp.reports);
    parses(&imp.text);
}

#[test]
fn a_root_field_makes_the_file_a_system_crontab() {
    let imp = one(
        "0 1 * * * root /usr/sbin/logrotate /etc/logrotate.conf\n0 2 * * * backup /usr/local/bin/dump\n",
        false,
    );
    assert_eq!(
        entries(&imp.text),
        vec!["0 1 * * *  web1.logrotate", "0 2 * * *  web1.dump"]
    );
    assert!(imp.text.contains("as user root:"));
    assert!(imp.text.contains("as user backup:"));
    assert_eq!(imp.reports.len(), 1);
    assert!(imp.reports[0].message.contains("read as a system crontab"));
    assert_eq!(imp.reports[0].line, 1);
}

#[test]
fn nothing_is_dropped_silently() {
    let text = "@reboot /usr/local/bin/warm-cache\n60 * * * * /bin/too-late\n0 0 30 2 * /bin/never\n@fortnightly /bin/x\n* * * *\n5 4 * * *   \nFOO=bar\nRANDOM_DELAY=10\nCRON_TZ=Mars/Base\n0 0 * * * /bin/ok\nHOME=/tmp\n";
    let imp = one(text, false);
    let lines: Vec<usize> = imp.reports.iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![1, 2, 3, 4, 5, 6, 8, 9, 11], "{:?}", imp.reports);
    assert_eq!(imp.entries, 1);
    assert_eq!(imp.dropped, 6);
    let msg = |l: usize| {
        imp.reports
            .iter()
            .find(|r| r.line == l)
            .unwrap()
            .message
            .clone()
    };
    assert!(msg(1).contains("@reboot"));
    assert!(msg(2).contains("minute: 60 is out of range"), "{}", msg(2));
    assert!(msg(3).contains("never"), "{}", msg(3));
    assert!(msg(4).contains("unknown macro"));
    assert!(msg(5).contains("only 4 time fields"));
    assert!(msg(6).contains("no command"), "{}", msg(6));
    assert!(msg(8).contains("jitter="));
    assert!(msg(9).contains("Mars/Base"));
    assert!(msg(11).contains("applies to none"));
    // Dropped lines stay, commented, in their place; FOO=bar reaches the one entry.
    assert!(imp.text.contains("# NOT CARRIED OVER (t:1: @reboot"));
    assert!(
        imp.text.contains("/usr/bin/env FOO=bar /bin/sh -c /bin/ok"),
        "{}",
        imp.text
    );
    assert_eq!(entries(&imp.text), vec!["0 0 * * *  web1.ok"]);
    parses(&imp.text);
}

#[test]
fn names_stay_unique_and_env_applies_from_its_line_on() {
    let text = "* * * * * debian-sa1 1 1\nA = \"x y\"\n59 23 * * * debian-sa1 60 2\nA=z\n0 0 * * * echo hi\n";
    let imp = one(text, false);
    assert_eq!(
        entries(&imp.text),
        vec![
            "* * * * *  web1.debian_sa1",
            "59 23 * * *  web1.debian_sa1_2",
            "0 0 * * *  web1.line5"
        ]
    );
    let w = workers(&imp.text);
    assert_eq!(w[0], "-f web1.debian_sa1 -- /bin/sh -c 'debian-sa1 1 1'");
    assert_eq!(
        w[1],
        "-f web1.debian_sa1_2 -- /usr/bin/env 'A=x y' /bin/sh -c 'debian-sa1 60 2'"
    );
    assert_eq!(
        w[2],
        "-f web1.line5 -- /usr/bin/env A=z /bin/sh -c 'echo hi'"
    );
    parses(&imp.text);
}

#[test]
fn zones_carry_over_per_entry_and_stay_in_their_file() {
    if Zone::parse("Europe/Berlin").is_err() {
        eprintln!("SKIP: no system tz database");
        return;
    }
    let a = Source {
        name: "a".into(),
        text: "0 1 * * * a\nCRON_TZ=Europe/Berlin\n0 2 * * * b\nCRON_TZ=UTC\n0 3 * * * c\n".into(),
        system: false,
    };
    let b = Source {
        name: "b".into(),
        text: "0 4 * * * root c\nSHELL=/bin/bash\n".into(),
        system: true,
    };
    let imp = translate(&[a, b], &opts());
    assert_eq!(
        entries(&imp.text),
        vec![
            "0 1 * * *  web1.a",
            "0 2 * * *  web1.b  tz=Europe/Berlin",
            "0 3 * * *  web1.c  tz=UTC",
            "0 4 * * *  web1.c_2",
        ]
    );
    // The second file's env line is its own, reported against it.
    assert_eq!(imp.reports.len(), 1);
    assert_eq!(
        (imp.reports[0].source.as_str(), imp.reports[0].line),
        ("b", 2)
    );
    let f = crate::schedule::file::parse(&imp.text, &Zone::Local).unwrap();
    let zones: Vec<&str> = f.entries.iter().map(|e| e.zone.name()).collect();
    assert_eq!(zones, vec!["local", "Europe/Berlin", "UTC", "local"]);
    assert!(imp.text.contains("\n# a:3: 0 2 * * * b\n"));
    assert!(imp.text.contains("\n# b:1: 0 4 * * * root c\n"));
}

#[test]
fn monitor_mode_watches_the_crontab_it_writes_back() {
    let text = "# mine\nPATH=/usr/bin:/bin\nMAILTO=ops@example.org\n*/5 * * * * /usr/local/bin/cleanup-tmp --age 7d\n0 3 * * 1-5 cd /srv && ./backup.sh%full%now\n@reboot /usr/bin/warm\n";
    let src = Source {
        name: "t".into(),
        text: text.into(),
        system: false,
    };
    let o = Options {
        monitor: Some(Monitor {
            server: Some("http://gw:8080".into()),
        }),
        ..opts()
    };
    let imp = translate(&[src], &o);
    assert_eq!(
        entries(&imp.text),
        vec![
            "*/5 * * * *  web1.cleanup_tmp  expect=ping",
            "0 3 * * 1-5  web1.backup  expect=ping"
        ]
    );
    assert!(workers(&imp.text).is_empty(), "no worker: nothing moves");
    assert_eq!(
        imp.crontab,
        "# mine\nPATH=/usr/bin:/bin\nMAILTO=ops@example.org\n\
         */5 * * * * gearwheel ping -s http://gw:8080 web1.cleanup_tmp -- /bin/sh -c '/usr/local/bin/cleanup-tmp --age 7d'\n\
         0 3 * * 1-5 gearwheel ping -s http://gw:8080 web1.backup -- /bin/sh -c 'cd /srv && ./backup.sh'%full%now\n\
         @reboot /usr/bin/warm\n"
    );
    let f = parses(&imp.text);
    assert!(f.entries.iter().all(|e| e.expect_ping));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
}

#[test]
fn mailto_becomes_on_failure_guidance_in_both_modes() {
    for monitor in [None, Some(Monitor::default())] {
        let src = Source {
            name: "t".into(),
            text: "MAILTO=ops@example.org\n0 3 * * * /bin/backup\n".into(),
            system: false,
        };
        let imp = translate(&[src], &Options { monitor, ..opts() });
        assert!(
            imp.text.contains(
                "# MAILTO=ops@example.org: cron mailed the output of the entries below there"
            ) && imp
                .text
                .contains("#     gearwheel work -f mail.ops_example_org -- sh -c ")
                && imp.text.contains("\n# ON_FAILURE=mail.ops_example_org\n"),
            "{}",
            imp.text
        );
        // Uncommented, the guidance is a valid line of the file.
        let on = imp.text.replace("\n# ON_FAILURE=", "\nON_FAILURE=");
        let f = parses(&on);
        assert_eq!(
            f.entries[0].on_failure.as_deref(),
            Some("mail.ops_example_org")
        );
    }
}
