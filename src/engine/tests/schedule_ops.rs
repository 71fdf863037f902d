//! `run`, `skip`, `pause` and `resume schedule`: each rule with the manual clock.

use super::*;
use crate::schedule::file::parse;
use crate::store::{Record, Replayed};

/// 2026-11-22T06:37:30Z
pub(super) const T0: u64 = 1_795_329_450_000;
pub(super) const MIN: u64 = 60_000;

/// 2026-11-22 at hh:mm UTC.
pub(super) fn at(h: u64, m: u64) -> u64 {
    T0 - 30_000 - (6 * 60 + 37) * MIN + (h * 60 + m) * MIN
}

fn config(durable: bool) -> EngineConfig {
    EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        durable,
        ..EngineConfig::default()
    }
}

pub(super) fn world(text: &str, durable: bool, now: u64) -> World {
    let mut w = World::with(config(durable));
    w.now = now;
    w.e.load_schedules(parse(text, &Zone::Utc).unwrap(), now, true, &mut w.out);
    w.out.replies.clear();
    w
}

/// Fire every timer due up to `to`, one deadline at a time, as the loop does.
pub(super) fn run_to(w: &mut World, to: u64) {
    while let Some(d) = w.e.next_deadline().filter(|&d| d <= to) {
        w.now = d.max(w.now);
        w.e.on_time(w.now, &mut w.out);
    }
    w.now = to;
    w.out.replies.clear();
}

pub(super) fn line(w: &mut World, text: &str) -> String {
    let c = w.conn();
    w.admin(c, text)
}

pub(super) fn row(w: &mut World, id: &str) -> Vec<String> {
    let listing = line(w, "show schedules");
    listing
        .lines()
        .find(|l| l.starts_with(&format!("{id}\t")))
        .unwrap_or_else(|| panic!("{id} not in {listing}"))
        .split('\t')
        .map(String::from)
        .collect()
}

/// Jobs queued for `func` (the `status` line's total), 0 when it is not listed.
pub(super) fn queued(w: &mut World, func: &str) -> u64 {
    let status = line(w, "status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{func}\t")))
        .and_then(|rest| rest.split('\t').next()?.parse().ok())
        .unwrap_or(0)
}

/// What a journal restart brings back: the newest state record per entry, handed to a new
/// engine through `Engine::restore`, as the journal's replay hands it.
pub(super) fn restart(w: &mut World, text: &str, now: u64) -> World {
    let mut replayed = Replayed::default();
    for d in w.e.take_durable() {
        if let Record::ScheduleRan(s) = d {
            replayed.schedules.retain(|old| old.entry != s.entry);
            replayed.schedules.push(s);
        }
    }
    let mut next = World::with(config(true));
    next.now = now;
    next.e.restore(replayed, now, &mut next.out);
    next.e
        .load_schedules(parse(text, &Zone::Utc).unwrap(), now, true, &mut next.out);
    next.out.replies.clear();
    next
}

#[test]
fn a_paused_entry_fires_nothing_but_runs_by_hand() {
    let mut w = world("* * * * * beat -- at {time}\n", false, T0);
    assert_eq!(line(&mut w, "pause schedule beat"), "OK\r\n");
    let r = row(&mut w, "beat");
    assert_eq!((r[3].as_str(), r[10].as_str()), ("-", "paused"));
    run_to(&mut w, T0 + 5 * MIN);
    assert_eq!(queued(&mut w, "beat"), 0, "nothing fires while paused");
    assert_eq!(w.e.next_deadline(), None, "a paused entry arms no timer");

    // A run now works on a paused entry, with the usual workload, marked manual.
    let reply = line(&mut w, "run schedule beat");
    assert!(
        reply.starts_with("OK H:t:") && reply.ends_with('\n'),
        "{reply}"
    );
    let wk = w.conn();
    w.can_do(wk, "beat");
    let (h, data) = w.grab(wk).unwrap();
    assert_eq!(&h[..], reply[3..].trim().as_bytes());
    assert_eq!(&data[..], b"at 2026-11-22T06:42:30Z");
    w.now += 40;
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    let r = row(&mut w, "beat");
    assert_eq!(
        r[3..13],
        [
            "-",
            "2026-11-22T06:42:30Z",
            "complete",
            "40",
            "1",
            "0",
            "0",
            "paused",
            "-",
            "manual"
        ]
    );
    // Still paused after its manual run.
    run_to(&mut w, T0 + 10 * MIN);
    assert_eq!(queued(&mut w, "beat"), 0);
}

#[test]
fn skip_drops_the_next_run_only() {
    let mut w = world("* * * * * m overlap=allow\n", false, T0);
    assert_eq!(line(&mut w, "skip schedule m"), "OK\r\n");
    assert_eq!(
        line(&mut w, "skip schedule m"),
        "OK\r\n",
        "twice is still one run"
    );
    assert_eq!(row(&mut w, "m")[11], "skip-next");
    run_to(&mut w, T0 + MIN); // 06:38 skipped
    assert_eq!(queued(&mut w, "m"), 0);
    let r = row(&mut w, "m");
    assert_eq!(
        (r[7].as_str(), r[9].as_str(), r[11].as_str()),
        ("0", "1", "-")
    );
    run_to(&mut w, T0 + 2 * MIN); // 06:39 runs
    assert_eq!(queued(&mut w, "m"), 1);
    let r = row(&mut w, "m");
    assert_eq!(
        (r[4].as_str(), r[7].as_str(), r[12].as_str()),
        ("2026-11-22T06:39:00Z", "1", "scheduled")
    );
    // A manual run does not use up a skip.
    line(&mut w, "skip schedule m");
    assert!(line(&mut w, "run schedule m").starts_with("OK "));
    assert_eq!(row(&mut w, "m")[11], "skip-next");
    run_to(&mut w, T0 + 3 * MIN);
    assert_eq!(queued(&mut w, "m"), 2, "the manual run only");
}

#[test]
fn a_manual_run_of_an_overlap_skip_entry_still_running_is_refused() {
    // overlap=skip is the default: one run at a time, manual ones included.
    let mut w = world("* * * * * backup\n", false, T0);
    let first = line(&mut w, "run schedule backup");
    let handle = first[3..].trim().to_string();
    assert_eq!(
        line(&mut w, "run schedule backup"),
        format!(
            "ERR RUN_IN_PROGRESS The+previous+run+{handle}+is+still+queued+or+running+(overlap=skip)\r\n"
        )
    );
    // The scheduled run meets the manual one the same way.
    run_to(&mut w, T0 + MIN);
    assert_eq!(queued(&mut w, "backup"), 1);
    let r = row(&mut w, "backup");
    assert_eq!(
        (r[7].as_str(), r[9].as_str()),
        ("1", "1"),
        "one run, one skip"
    );
    // A refused manual run is not a skip of the timing.
    line(&mut w, "run schedule backup");
    assert_eq!(row(&mut w, "backup")[9], "1");
}

#[test]
fn unknown_entries_and_bad_lines_get_errors() {
    let mut w = world("* * * * * m\n", false, T0);
    for op in ["run", "skip", "pause", "resume"] {
        assert_eq!(
            line(&mut w, &format!("{op} schedule nope")),
            "ERR UNKNOWN_SCHEDULE No+schedule+entry+has+this+id\r\n"
        );
        for bad in [
            format!("{op} schedule"),
            format!("{op} job m"),
            format!("{op} schedule m extra"),
        ] {
            assert!(
                line(&mut w, &bad).starts_with("ERR INVALID_ARGUMENTS "),
                "{bad}"
            );
        }
    }
    assert_eq!(queued(&mut w, "m"), 0);
}

#[test]
fn a_pause_survives_a_reload_even_of_a_changed_timing() {
    let mut w = world("* * * * * a\n*/5 * * * * b\n", false, T0);
    line(&mut w, "pause schedule a");
    line(&mut w, "pause schedule b");
    let file = parse("* * * * * a\n*/10 * * * * b\n", &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, false, &mut w.out);
    for id in ["a", "b"] {
        let r = row(&mut w, id);
        assert_eq!((r[3].as_str(), r[10].as_str()), ("-", "paused"), "{id}");
    }
    run_to(&mut w, T0 + 30 * MIN);
    assert_eq!(queued(&mut w, "a") + queued(&mut w, "b"), 0);
}

#[test]
fn resume_arms_the_next_run_and_makes_up_none_missed_while_paused() {
    let text = "0 * * * * hourly catchup=last\n";
    let mut w = world(text, false, T0);
    line(&mut w, "pause schedule hourly");
    // Paused over 07:00, 08:00 and 09:00.
    run_to(&mut w, T0 + 3 * 60 * MIN);
    assert_eq!(line(&mut w, "resume schedule hourly"), "OK\r\n");
    assert_eq!(
        line(&mut w, "resume schedule hourly"),
        "OK\r\n",
        "resume twice"
    );
    assert_eq!(queued(&mut w, "hourly"), 0, "no catch-up at resume");
    let r = row(&mut w, "hourly");
    assert_eq!(
        (r[3].as_str(), r[10].as_str()),
        ("2026-11-22T10:00:00Z", "active")
    );
    run_to(&mut w, T0 + 4 * 60 * MIN);
    assert_eq!(queued(&mut w, "hourly"), 1, "10:00 runs");
}

#[test]
fn a_pause_survives_a_journal_restart_and_a_later_restart_makes_up_nothing_missed_while_paused() {
    let text = "0 * * * * hourly catchup=last\n@reboot warm\n";
    let mut w = world(text, true, T0);
    assert_eq!(queued(&mut w, "warm"), 1);
    run_to(&mut w, at(7, 10)); // 07:00 runs
    assert_eq!(queued(&mut w, "hourly"), 1);
    line(&mut w, "pause schedule hourly");
    line(&mut w, "pause schedule warm");
    line(&mut w, "skip schedule hourly");

    // Down from 07:10 to 09:30: still paused, no catch-up, no @reboot run, nothing armed.
    let mut w = restart(&mut w, text, at(9, 30));
    assert_eq!(queued(&mut w, "hourly") + queued(&mut w, "warm"), 0);
    let r = row(&mut w, "hourly");
    assert_eq!(
        (r[3].as_str(), r[10].as_str(), r[11].as_str()),
        ("-", "paused", "skip-next")
    );
    assert_eq!(row(&mut w, "warm")[10], "paused");
    run_to(&mut w, at(10, 30));
    assert_eq!(queued(&mut w, "hourly"), 0);

    // Resumed at 10:30; down from 10:40 to 10:50: the runs missed while paused (08:00 to
    // 10:00) are not made up by the catch-up at start.
    line(&mut w, "resume schedule hourly");
    let mut w = restart(&mut w, text, at(10, 50));
    assert_eq!(queued(&mut w, "hourly"), 0, "nothing made up");
    let r = row(&mut w, "hourly");
    assert_eq!(
        (r[3].as_str(), r[10].as_str(), r[11].as_str()),
        ("2026-11-22T11:00:00Z", "active", "skip-next")
    );
    // The skip asked before the restarts takes the 11:00 run; 12:00 runs.
    run_to(&mut w, at(11, 30));
    assert_eq!(queued(&mut w, "hourly"), 0);
    run_to(&mut w, at(12, 30));
    assert_eq!(queued(&mut w, "hourly"), 1);
}

#[test]
fn a_manual_run_is_journalled_as_manual() {
    let text = "0 3 * * * nightly\n";
    let mut w = world(text, true, T0);
    line(&mut w, "run schedule nightly");
    let mut w = restart(&mut w, text, T0 + MIN);
    let r = row(&mut w, "nightly");
    assert_eq!(
        (r[4].as_str(), r[7].as_str(), r[12].as_str()),
        ("2026-11-22T06:37:30Z", "1", "manual")
    );
}
