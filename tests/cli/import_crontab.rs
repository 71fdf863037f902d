//! `gearwheel import-crontab` as a process, on Debian's own crontab files and hand-written
//! awkward ones: the result passes `gearwheel check` and a real server, every line is either
//! an entry or reported, a worker command from its comments really runs the line's command
//! with cron's stdin, and each entry fires at the same minutes as the crontab line over 2028,
//! as computed by an independent crontab matcher written here (every minute of the year in
//! release builds; windows around month ends and DST changes in debug builds).

use crate::support;

use std::collections::BTreeSet;

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Timelike, Utc};
use gearwheel::schedule::Zone;
use gearwheel::schedule::file::{Entry, parse};
use support::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/crontab");

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// Run import-crontab; it must succeed.
fn import(args: &[&str]) -> Out {
    let mut a = vec!["import-crontab", "--host", "web1"];
    a.extend_from_slice(args);
    let o = gw(&a, None, 20);
    assert_eq!(o.code(), Some(0), "{o:?}");
    o
}

/// The output passes `gearwheel check` as a process.
fn check_passes(text: &str) {
    let dir = TempDir::new("import");
    let p = dir.join("out.cron");
    std::fs::write(&p, text).unwrap();
    let o = gw(&["check", p.to_str().unwrap(), "--tz", "UTC"], None, 20);
    assert_eq!(o.code(), Some(0), "{o:?}\n{text}");
    assert!(!o.stdout.contains("warning"), "{o:?}");
}

// ---- An independent crontab reader and matcher: what cron itself would do. ----

/// One crontab field as a bit set.
fn field(text: &str, lo: u32, hi: u32, names: &[&str], first: u32) -> u64 {
    let value = |s: &str| -> u32 {
        match names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            Some(i) => i as u32 + first,
            None => s.parse().unwrap_or_else(|_| panic!("bad value {s:?}")),
        }
    };
    let mut set = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().unwrap()),
            None => (item, 1),
        };
        let (a, b) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a), value(b))
        } else if step > 1 {
            (value(range), hi)
        } else {
            (value(range), value(range))
        };
        let mut v = a;
        while v <= b {
            set |= 1 << v;
            v += step;
        }
    }
    set
}

struct CronLine {
    min: u64,
    hour: u64,
    dom: u64,
    mon: u64,
    dow: u64,
    either_day: bool,
    /// cronie: neither minute nor hour starts with `*`.
    fixed: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn cron_line(f: &[&str]) -> CronLine {
    let mut dow = field(f[4], 0, 7, &DAYS, 0);
    if dow & (1 << 7) != 0 {
        dow |= 1;
    }
    CronLine {
        min: field(f[0], 0, 59, &[], 0),
        hour: field(f[1], 0, 23, &[], 0),
        dom: field(f[2], 1, 31, &[], 0),
        mon: field(f[3], 1, 12, &MONTHS, 1),
        dow,
        either_day: !f[2].starts_with('*') && !f[4].starts_with('*'),
        fixed: !f[0].starts_with('*') && !f[1].starts_with('*'),
    }
}

impl CronLine {
    fn matches(&self, t: NaiveDateTime) -> bool {
        let bit = |set: u64, v: u32| set & (1 << v) != 0;
        let dom = bit(self.dom, t.day());
        let dow = bit(self.dow, t.weekday().num_days_from_sunday());
        let day = if self.either_day {
            dom || dow
        } else {
            dom && dow
        };
        bit(self.min, t.minute()) && bit(self.hour, t.hour()) && bit(self.mon, t.month()) && day
    }

    /// The instants in [a, b) at which cron runs the line in `zone`, minute by minute, with
    /// cronie's DST rule: fixed-time lines run once for a wall-clock time the clock skipped
    /// (when it lands) and not again for a repeated one; others follow the wall clock.
    fn minutes(&self, zone: &Zone, a: DateTime<Utc>, b: DateTime<Utc>) -> BTreeSet<i64> {
        let minute = Duration::minutes(1);
        let mut t = a - Duration::days(1);
        let mut prev = zone.local_time(t - minute);
        let mut high = prev;
        let mut out = BTreeSet::new();
        while t < b {
            let local = zone.local_time(t);
            let fire = if self.fixed {
                let mut skipped = prev + minute;
                let mut hit = self.matches(local);
                while !hit && skipped < local {
                    hit = self.matches(skipped);
                    skipped += minute;
                }
                hit && local > high
            } else {
                self.matches(local)
            };
            if fire && t >= a {
                out.insert(t.timestamp());
            }
            high = high.max(local);
            prev = local;
            t += minute;
        }
        out
    }
}

/// The crontab's line `n` as (five fields, zone name), read here without gearwheel.
fn source_line(text: &str, n: usize, system: bool) -> (Vec<String>, String) {
    let mut zone = "UTC".to_string();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim();
        if let Some(z) = t.strip_prefix("CRON_TZ=") {
            zone = z.to_string();
        }
        if i + 1 == n {
            let words: Vec<&str> = t.split_whitespace().collect();
            let fields: Vec<String> = match words[0].to_ascii_lowercase().as_str() {
                "@yearly" | "@annually" => vec!["0", "0", "1", "1", "*"],
                "@monthly" => vec!["0", "0", "1", "*", "*"],
                "@weekly" => vec!["0", "0", "*", "*", "0"],
                "@daily" | "@midnight" => vec!["0", "0", "*", "*", "*"],
                "@hourly" => vec!["0", "*", "*", "*", "*"],
                _ => words[..5].to_vec(),
            }
            .into_iter()
            .map(String::from)
            .collect();
            assert!(!system || words.len() > if t.starts_with('@') { 2 } else { 6 });
            return (fields, zone);
        }
    }
    panic!("no line {n}");
}

fn utc(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

/// The stretches of 2028 compared: all of it in release builds; in debug builds (where the
/// cron crate is slow) the days around every month end and both DST changes of Europe and
/// the US.
fn windows() -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    if !cfg!(debug_assertions) {
        return vec![(utc(2028, 1, 1), utc(2029, 1, 1))];
    }
    let mut w = vec![(utc(2028, 1, 1), utc(2028, 1, 3))];
    for m in 1..=12 {
        let end = if m == 12 {
            utc(2029, 1, 3)
        } else {
            utc(2028, m + 1, 3)
        };
        w.push((utc(2028, m, 26), end));
    }
    w.push((utc(2028, 3, 10), utc(2028, 3, 14)));
    w.push((utc(2028, 11, 3), utc(2028, 11, 7)));
    w
}

/// The instants in [a, b) at which the entry fires, from gearwheel's own schedule code.
fn fires(e: &Entry, a: DateTime<Utc>, b: DateTime<Utc>) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    let mut t = a - Duration::seconds(1);
    while let Some(n) = e.timing.next_after(t, &e.zone) {
        if n >= b {
            break;
        }
        out.insert(n.timestamp());
        t = n;
    }
    out
}

/// Import `name`, check the result, compare every entry's minutes with cron's; returns the
/// import's output and the crontab lines the entries came from.
fn same_minutes(name: &str, system: bool) -> (Out, BTreeSet<usize>) {
    let path = fixture(name);
    let mut args = vec![path.as_str()];
    if system {
        args.push("--system");
    }
    let o = import(&args);
    check_passes(&o.stdout);
    let source = std::fs::read_to_string(&path).unwrap();
    let file = parse(&o.stdout, &Zone::Utc).unwrap_or_else(|e| panic!("{e:?}"));
    let out_lines: Vec<&str> = o.stdout.lines().collect();
    let mut from = BTreeSet::new();
    for e in &file.entries {
        // The comment above each entry names its crontab line.
        let comment = out_lines[e.line - 2];
        let n: usize = comment
            .strip_prefix(&format!("# {path}:"))
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no source comment above {:?}", out_lines[e.line - 1]));
        from.insert(n);
        let (fields, zone) = source_line(&source, n, system);
        assert_eq!(e.zone.name(), zone, "line {n}");
        let words: Vec<&str> = fields.iter().map(String::as_str).collect();
        let cron = cron_line(&words);
        let mut compared = 0;
        for (a, b) in windows() {
            let want = cron.minutes(&e.zone, a, b);
            let got = fires(e, a, b);
            assert_eq!(
                want.symmetric_difference(&got).next(),
                None,
                "{name}:{n} ({}) differs in {a}..{b}: cron {} runs, gearwheel {}",
                e.spec,
                want.len(),
                got.len()
            );
            compared += want.len();
        }
        assert!(compared > 0, "{name}:{n} never ran in the windows");
    }
    (o, from)
}

/// Every entry line of the crontab is an entry of the output or reported with its number.
fn nothing_lost(name: &str, o: &Out, from: &BTreeSet<usize>) {
    let path = fixture(name);
    let text = std::fs::read_to_string(&path).unwrap();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim();
        let env = t
            .split_once('=')
            .is_some_and(|(n, _)| !n.trim().contains(char::is_whitespace) && !n.contains('*'));
        if t.is_empty() || t.starts_with('#') || env {
            continue;
        }
        let n = i + 1;
        assert!(
            from.contains(&n) || o.stderr.contains(&format!("{path}:{n}: not carried over")),
            "{name}:{n} is neither an entry nor reported:\n{}",
            o.stderr
        );
    }
}

#[test]
fn debian_crontabs_move_over_and_fire_at_the_same_minutes() {
    let mut entries = 0;
    let names = [
        "debian/crontab",
        "debian/cron.d-anacron",
        "debian/cron.d-certbot",
        "debian/cron.d-e2scrub_all",
        "debian/cron.d-php",
        "debian/cron.d-sysstat",
    ];
    for name in names {
        let (o, from) = same_minutes(name, true);
        nothing_lost(name, &o, &from);
        assert!(
            o.stderr.contains("line(s) not carried over") && o.stderr.contains("; 0 line(s)"),
            "{name}: {}",
            o.stderr
        );
        entries += from.len();
    }
    let o = import(&[&fixture("debian/crontab"), "--system"]);
    // The command and the user come through to the worker line.
    assert!(
        o.stdout.contains("#   as user root:\n#   gearwheel work -f web1.cron_hourly -- /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin /bin/sh -c 'cd / && run-parts --report /etc/cron.hourly'\n"),
        "{}",
        o.stdout
    );
    // All six at once, as `import-crontab /etc/crontab /etc/cron.d/*` would: one valid file,
    // function names unique across the files.
    let paths: Vec<String> = names.iter().map(|n| fixture(n)).collect();
    let mut args: Vec<&str> = paths.iter().map(String::as_str).collect();
    args.push("--system");
    let o = import(&args);
    check_passes(&o.stdout);
    let file = parse(&o.stdout, &Zone::Utc).unwrap();
    assert_eq!(file.entries.len(), entries);
    let sysstat = import(&[&fixture("debian/cron.d-sysstat"), "--system"]).stdout;
    assert!(sysstat.contains("5-55/10 * * * *  web1.debian_sa1\n"));
    assert!(sysstat.contains("59 23 * * *  web1.debian_sa1_2\n"));
}

#[test]
fn tricky_crontabs_move_over_and_what_cannot_is_reported() {
    let (o, from) = same_minutes("user-tricky", false);
    nothing_lost("user-tricky", &o, &from);
    let path = fixture("user-tricky");
    for (n, what) in [
        (4, "MAILTO=alice@example.org: cron mails"),
        (35, "CRON_TZ= comes after the last entry"),
        (38, "not carried over: @reboot"),
        (39, "not carried over: odd fields: day of month"),
        (40, "not carried over: odd fields: minute: 61"),
        (41, "RANDOM_DELAY=5"),
        (42, "not carried over: no command"),
        (43, "HOME= comes after the last entry"),
    ] {
        let line = format!("gearwheel import-crontab: {path}:{n}: {what}");
        assert!(o.stderr.contains(&line), "{line}\n{}", o.stderr);
    }
    // MAILTO's way over is an alert job: the report names the setting that sends it.
    assert!(
        o.stderr
            .contains("put ON_FAILURE=FUNCTION above the entries")
            && !o.stderr.contains("does not exist yet"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("19 entries; 4 line(s) not carried over"),
        "{}",
        o.stderr
    );

    let (o, from) = same_minutes("system-tricky", true);
    nothing_lost("system-tricky", &o, &from);
    assert!(
        o.stderr.contains("6 entries; 1 line(s) not carried over"),
        "{}",
        o.stderr
    );
    for who in ["root", "www-data", "postgres", "backup", "nobody"] {
        assert!(o.stdout.contains(&format!("#   as user {who}:\n")), "{who}");
    }
    // An empty MAILTO= mails nothing: nothing to report.
    assert!(!o.stderr.contains("MAILTO"), "{}", o.stderr);
}

#[test]
fn stdin_and_check_and_a_real_server_take_the_result() {
    let text = std::fs::read(fixture("user-tricky")).unwrap();
    let o = gw(
        &["import-crontab", "--host", "web1", "--check", "-"],
        Some(&text),
        20,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(o.stderr.contains("(output): 19 entries OK"), "{}", o.stderr);
    assert!(
        o.stdout
            .starts_with("# gearwheel schedules imported from stdin (host web1)")
    );

    let dir = TempDir::new("import-serve");
    let p = dir.join("imported.cron");
    std::fs::write(&p, &o.stdout).unwrap();
    let s = Server::start(&["--schedules", p.to_str().unwrap()]);
    let listing = admin_text(&s, "show schedules", true);
    assert_eq!(
        listing.lines().filter(|l| l.starts_with("web1.")).count(),
        19,
        "{listing}"
    );

    // Missing files and bad flags are exit 2.
    assert_eq!(
        gw(&["import-crontab", "/nonexistent/crontab"], None, 20).code(),
        Some(2)
    );
    assert_eq!(gw(&["import-crontab", "--bogus"], None, 20).code(), Some(2));
}

#[test]
fn a_worker_line_from_the_comments_runs_the_command_with_crons_stdin() {
    let o = import(&[&fixture("user-tricky"), "--user", "alice"]);
    let line = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("#   gearwheel work -f web1.cat "))
        .unwrap_or_else(|| panic!("no worker line for web1.cat:\n{}", o.stdout));
    assert!(o.stdout.contains("#   as user alice:\n"));
    let s = Server::start(&[]);
    let script = format!("exec {BIN} work -s {} -f web1.cat {line}", s.addr);
    let mut c = std::process::Command::new("/bin/sh");
    c.args(["-c", &script]);
    let _worker = Proc::spawn("gearwheel work", &mut c, None);
    wait_workers(&s, "web1.cat", 1);
    let r = gw(
        &["submit", "-s", &s.addr.to_string(), "-f", "web1.cat", ""],
        None,
        20,
    );
    assert_eq!(r.code(), Some(0), "{r:?}");
    // `cat - | tr a-z A-Z; echo " $GREETING"%one%two \% three`, with GREETING='hello there'.
    assert_eq!(r.stdout, "ONE\nTWO % THREE hello there\n");
}

/// `--monitor`: the schedules file on stdout expects pings and passes `check`; the crontab to
/// install is written to `--crontab-out` with each command run through `gearwheel ping`.
#[test]
fn monitor_writes_the_crontab_back_wrapped_in_gearwheel_ping() {
    let dir = TempDir::new("import-monitor");
    let out = dir.join("watched.crontab");
    let crontab = "MAILTO=ops@example.org\n0 3 * * * /usr/local/bin/backup --full\n";
    let o = gw(
        &[
            "import-crontab",
            "--host",
            "web1",
            "--monitor",
            "--crontab-out",
            out.to_str().unwrap(),
            "--ping-server",
            "http://gw:8080",
        ],
        Some(crontab.as_bytes()),
        20,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stdout.contains("\n0 3 * * *  web1.backup  expect=ping\n"),
        "{o:?}"
    );
    assert!(
        o.stdout.contains("\n# ON_FAILURE=mail.ops_example_org\n"),
        "{o:?}"
    );
    check_passes(&o.stdout);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "MAILTO=ops@example.org\n0 3 * * * gearwheel ping -s http://gw:8080 web1.backup -- /bin/sh -c '/usr/local/bin/backup --full'\n"
    );
    // --monitor needs somewhere to write the crontab.
    let o = gw(
        &["import-crontab", "--monitor"],
        Some(crontab.as_bytes()),
        20,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(
        o.stderr.contains("--monitor needs --crontab-out FILE"),
        "{o:?}"
    );
}
