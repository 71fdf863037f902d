//! Schedules at run time: runs fired, overlap, reloads, run history, against a manual clock.

use super::*;
use crate::schedule::file::parse;

/// 2026-11-22T06:37:30Z
const T0: u64 = 1_795_329_450_000;

fn world_with(text: &str) -> World {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    w.now = T0;
    let file = parse(text, &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, true, &mut w.out);
    w.out.replies.clear();
    w
}

fn tick(w: &mut World, to: u64) {
    w.now = to;
    w.e.on_time(to, &mut w.out);
    w.out.replies.clear();
}

fn row(w: &mut World, id: &str) -> Vec<String> {
    let c = w.conn();
    let listing = w.admin(c, "show schedules");
    listing
        .lines()
        .find(|l| l.starts_with(&format!("{id}\t")))
        .unwrap_or_else(|| panic!("{id} not in {listing}"))
        .split('\t')
        .map(String::from)
        .collect()
}

#[test]
fn runs_on_time_with_rendered_workload_and_outcome_history() {
    let mut w = world_with("@every 10s beat id=hb -- at {time} id {id}\n");
    assert_eq!(w.e.next_deadline(), Some(T0 + 10_000));
    let r = row(&mut w, "hb");
    assert_eq!(
        r[..5],
        ["hb", "@every 10s", "beat", "2026-11-22T06:37:40Z", "-"]
    );
    tick(&mut w, T0 + 10_000);
    let wk = w.conn();
    w.can_do(wk, "beat");
    let (h, d) = w.grab(wk).unwrap();
    assert_eq!(d, b("at 2026-11-22T06:37:40Z id hb"));
    w.now += 250;
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b("ok"),
        },
    );
    let r = row(&mut w, "hb");
    assert_eq!(
        r[3..10],
        [
            "2026-11-22T06:37:50Z",
            "2026-11-22T06:37:40Z",
            "complete",
            "250",
            "1",
            "0",
            "0"
        ]
    );
    // The columns added since end each row: active, no skip asked, the last run was
    // one of its timing, no error, its recent runs, no retries pending, no cluster leader,
    // no too_long or too_short alert.
    assert_eq!(
        r[10..],
        [
            "active",
            "-",
            "scheduled",
            "-",
            "2026-11-22T06:37:40Z 250ms complete",
            "0",
            "-",
            "0",
            "0"
        ]
    );
    // A failing run is counted.
    tick(&mut w, T0 + 20_000);
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkException {
            handle: h,
            data: b("disk\tfull"),
        },
    );
    let r = row(&mut w, "hb");
    assert_eq!(r[5..10], ["exception: disk full", "0", "2", "1", "0"]);
    assert_eq!(r[13], "disk full", "the last error, one line");
}

#[test]
fn overlap_skip_skips_while_the_previous_job_is_queued_and_allow_does_not() {
    let mut w = world_with("@every 1m slow\n@every 1m fast overlap=allow\n");
    let first = T0 + 30_000;
    tick(&mut w, first);
    tick(&mut w, first + 60_000);
    let slow = row(&mut w, "slow");
    assert_eq!((slow[7].as_str(), slow[9].as_str()), ("1", "1"), "{slow:?}");
    let fast = row(&mut w, "fast");
    assert_eq!((fast[7].as_str(), fast[9].as_str()), ("2", "0"));
    let c = w.conn();
    assert_eq!(w.admin(c, "status"), "slow\t1\t0\t0\nfast\t2\t0\t0\n.\n");
}

#[test]
fn fanout_makes_n_jobs_each_with_its_own_unique() {
    let mut w = world_with("@every 1m shard fanout=3 -- {i}/{n}\n");
    tick(&mut w, T0 + 30_000);
    let c = w.conn();
    assert_eq!(
        w.admin(c, "show unique jobs"),
        "shard#0\nshard#1\nshard#2\n.\n"
    );
    let wk = w.conn();
    w.can_do(wk, "shard");
    let datas: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk).map(|(_, d)| d)).collect();
    assert_eq!(datas, ["0/3", "1/3", "2/3"].map(b));
    // RUNS counts each job an entry starts (as FAILURES counts each that fails).
    assert_eq!(row(&mut w, "shard")[7], "3");
}

#[test]
fn jitter_stays_within_its_bound() {
    let mut w = world_with("@every 1m j jitter=20s\n");
    for n in 1..50u64 {
        let nominal = T0 + 30_000 + (n - 1) * 60_000;
        let d = w.e.next_deadline().unwrap();
        assert!(d >= nominal && d <= nominal + 20_000, "{d} vs {nominal}");
        tick(&mut w, d);
        // Keep the queue empty so that overlap does not interfere.
        let wk = w.conn();
        w.can_do(wk, "j");
        let (h, _) = w.grab(wk).unwrap();
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b(""),
            },
        );
    }
}

#[test]
fn a_forward_clock_jump_skips_missed_runs_unless_catchup_last() {
    let mut w = world_with(
        "*/5 * * * * none\n*/5 * * * * last catchup=last\n*/5 * * * * old catchup=last deadline=10m\n",
    );
    // First run at 06:40 goes normally.
    tick(&mut w, T0 + 150_000);
    let c = w.conn();
    let wk = w.conn();
    for f in ["none", "last", "old"] {
        w.can_do(wk, f);
    }
    while let Some((h, _)) = w.grab(wk) {
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b(""),
            },
        );
    }
    // The clock jumps 3 hours; the 06:45 timer fires at 09:42.
    tick(&mut w, T0 + 3 * 3_600_000 + 270_000);
    let none = row(&mut w, "none");
    // Every run from 06:45 to 09:40 is skipped, and each is counted.
    assert_eq!((none[7].as_str(), none[9].as_str()), ("1", "36"));
    let last = row(&mut w, "last");
    // The last missed run (09:40) is made once.
    assert_eq!(
        (last[4].as_str(), last[7].as_str()),
        ("2026-11-22T09:40:00Z", "2")
    );
    let old = row(&mut w, "old");
    assert_eq!(
        old[4], "2026-11-22T09:40:00Z",
        "09:40 is within 10 minutes of 09:42"
    );
    // All three look ahead from now, not from before the jump.
    assert_eq!(none[3], "2026-11-22T09:45:00Z");
    let _ = c;
}

#[test]
fn a_backward_clock_step_never_repeats_a_run() {
    let mut w = world_with("*/5 * * * * e\n");
    tick(&mut w, T0 + 150_000); // 06:40 runs
    assert_eq!(row(&mut w, "e")[4], "2026-11-22T06:40:00Z");
    // The clock steps back 20 minutes; a reload re-arms from "now".
    w.now = T0 - 20 * 60_000;
    let file = parse("*/5 * * * * e overlap=allow\n", &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, false, &mut w.out);
    assert_eq!(row(&mut w, "e")[3], "2026-11-22T06:45:00Z");
}

#[test]
fn catchup_at_start_uses_the_recorded_last_run_and_the_deadline() {
    let text = "0 * * * * hourly catchup=last\n0 * * * * strict catchup=last deadline=30m\n0 * * * * plain\n";
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    w.now = T0; // 06:37:30; missed 03:00..06:00
    let file = parse(text, &Zone::Utc).unwrap();
    // The journal said each last ran at 02:00.
    for id in ["hourly", "strict", "plain"] {
        w.e.restore_schedule_run(id, T0 - 4 * 3_600_000 - 37 * 60_000 - 30_000);
    }
    w.e.load_schedules(file, w.now, true, &mut w.out);
    let c = w.conn();
    let status = w.admin(c, "status");
    assert!(status.contains("hourly\t1\t"), "{status}");
    assert!(
        !status.contains("strict\t1"),
        "06:00 is 37 minutes old, past the 30m deadline: {status}"
    );
    assert!(!status.contains("plain\t1"), "{status}");
    assert_eq!(row(&mut w, "hourly")[4], "2026-11-22T06:00:00Z");
    // 03:00, 04:00 and 05:00 are not made up (counted), and 06:00 is past its deadline.
    assert_eq!(row(&mut w, "strict")[9], "4");
    assert_eq!(row(&mut w, "hourly")[9], "3");
}

/// What the journal would bring back: the newest history record of each entry.
type Saved = (String, u64, u64, [u64; 3]);
fn journalled(w: &mut World) -> Vec<Saved> {
    let mut newest: Vec<Saved> = Vec::new();
    for d in w.e.take_durable() {
        if let crate::store::Record::ScheduleRan(crate::store::ScheduleRan {
            entry,
            fire_ms,
            counters: Some(c),
            ..
        }) = d
        {
            let entry = String::from_utf8_lossy(&entry).into_owned();
            newest.retain(|(e, ..)| *e != entry);
            newest.push((entry, fire_ms, c.seen_ms, [c.runs, c.failures, c.skips]));
        }
    }
    newest
}

#[test]
fn a_restart_keeps_the_counters_and_counts_runs_missed_while_down() {
    let text = "* * * * * minute\n@every 10s tick\n0 * * * * gone\n";
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        durable: true,
        ..EngineConfig::default()
    });
    w.now = T0;
    w.e.load_schedules(parse(text, &Zone::Utc).unwrap(), T0, true, &mut w.out);
    // `tick` runs at 06:37:40 and is skipped at :50 and 06:38:00 (its job is still
    // queued); `minute` runs at 06:38. Then a worker fails the queued `tick`.
    for s in 1..=3 {
        tick(&mut w, T0 + s * 10_000);
    }
    let wk = w.conn();
    w.can_do(wk, "tick");
    let (h, _) = w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkFail {
            handle: h,
            after_handle: b(""),
        },
    );
    let before: Vec<Vec<String>> = ["minute", "tick"]
        .iter()
        .map(|id| row(&mut w, id))
        .collect();
    assert_eq!(before[0][7..10], ["1", "0", "0"]);
    assert_eq!(before[1][7..10], ["1", "1", "2"]);
    let saved = journalled(&mut w);

    // Down from 06:38:00 to 06:40:30: `minute` misses 06:39 and 06:40, `tick` the 15
    // runs after 06:38:00 (those before were counted already); `gone` is no longer in
    // the file.
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        durable: true,
        ..EngineConfig::default()
    });
    let later = T0 + 3 * 60_000;
    w.now = later;
    for (id, fire_ms, seen_ms, counters) in &saved {
        w.e.restore_schedule_run(id, *fire_ms);
        w.e.restore_schedule_counters(id, Some(*seen_ms), *counters);
    }
    w.e.restore_schedule_run("gone", T0 - 60_000);
    let text = "* * * * * minute\n@every 10s tick\n";
    let report =
        w.e.load_schedules(parse(text, &Zone::Utc).unwrap(), later, true, &mut w.out);
    assert_eq!(report.restored, 2, "a removed entry is not recovered");
    let minute = row(&mut w, "minute");
    assert_eq!(minute[4], before[0][4], "the last run survives");
    assert_eq!(minute[7..10], ["1", "0", "2"]);
    let tick_row = row(&mut w, "tick");
    assert_eq!(tick_row[7..10], ["1", "1", "17"]);
    // The new counts are journalled, so a second restart keeps them.
    let again = journalled(&mut w);
    assert!(
        again
            .iter()
            .any(|(e, _, _, c)| e == "minute" && *c == [1, 0, 2]),
        "{again:?}"
    );
}

#[test]
fn reload_keeps_history_and_next_run_of_unchanged_entries() {
    let mut w = world_with("@every 1m keep\n@every 1m change\n@every 1m gone\n");
    tick(&mut w, T0 + 30_000);
    let before = row(&mut w, "keep");
    let file = parse(
        "@every 1m keep\n@every 2m change\n@every 1m new\n",
        &Zone::Utc,
    )
    .unwrap();
    w.now += 1_000;
    w.e.load_schedules(file, w.now, false, &mut w.out);
    let after = row(&mut w, "keep");
    assert_eq!(before, after);
    let change = row(&mut w, "change");
    assert_eq!(
        (change[1].as_str(), change[3].as_str(), change[7].as_str()),
        ("@every 2m", "2026-11-22T06:40:00Z", "1")
    );
    let c = w.conn();
    let listing = w.admin(c, "show schedules");
    assert!(!listing.contains("gone"));
    assert!(listing.contains("new\t"));
    // The jobs already queued stay queued.
    assert!(w.admin(c, "status").contains("gone\t1\t"));
}

#[test]
fn reboot_runs_once_at_start_and_not_on_reload() {
    let mut w = world_with("@reboot warm\n");
    let c = w.conn();
    assert_eq!(w.admin(c, "status"), "warm\t1\t0\t0\n.\n");
    let file = parse("@reboot warm\n@reboot warm2\n", &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, false, &mut w.out);
    assert_eq!(w.admin(c, "status"), "warm\t1\t0\t0\n.\n");
}

#[test]
fn a_clock_before_2020_fires_nothing() {
    let mut w = World::with(EngineConfig {
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    w.now = 86_400_000; // 1970-01-02
    let file = parse("* * * * * f\n", &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, true, &mut w.out);
    let d = w.e.next_deadline().unwrap();
    tick(&mut w, d);
    tick(&mut w, d + 60_000);
    let c = w.conn();
    assert_eq!(w.admin(c, "status"), ".\n");
    // The clock is set: runs resume.
    let later = T0;
    for _ in 0..3 {
        let d = w.e.next_deadline().unwrap();
        tick(&mut w, d.max(later));
    }
    assert!(w.admin(c, "status").starts_with("f\t1\t"));
}

/// `group=`: the reindex due while the backup runs waits for it, and starts when it ends;
/// a second reindex due meanwhile is skipped, not queued twice; a manual run is refused.
#[test]
fn runs_of_one_group_never_overlap() {
    let mut w = world_with(
        "@every 10s backup id=backup group=nightly\n@every 10s reindex id=reindex group=nightly\n@every 10s other id=other\n",
    );
    let wk = w.conn();
    for f in ["backup", "reindex", "other"] {
        w.can_do(wk, f);
    }
    tick(&mut w, T0 + 10_000);
    // One of the group's two due runs was made, the other waits; `other` is not grouped.
    let mut got = Vec::new();
    while let Some((h, d)) = w.grab(wk) {
        got.push((h, d));
    }
    let funcs: Vec<String> = got
        .iter()
        .map(|(h, _)| String::from_utf8_lossy(w.e.job_function(h).expect("a job")).into_owned())
        .collect();
    assert_eq!(funcs.len(), 2, "{funcs:?}");
    assert!(funcs.contains(&"other".to_string()), "{funcs:?}");
    let first = funcs.iter().find(|f| *f != "other").unwrap().clone();
    let second = if first == "backup" {
        "reindex"
    } else {
        "backup"
    };
    let c = w.conn();
    assert!(
        w.admin(c, &format!("run schedule {second}"))
            .starts_with("ERR RUN_IN_PROGRESS The+previous+run+of+group+nightly"),
    );
    // Due again while the first runs: the waiting entry is not queued twice, the running
    // ones (and other's) are skipped by overlap=skip.
    tick(&mut w, T0 + 20_000);
    assert!(w.grab(wk).is_none());
    assert_eq!(row(&mut w, second)[9], "1", "one skip");
    w.e.check_queues();
    // The group's run ends: the waiting one starts.
    let (h, _) = got
        .iter()
        .zip(&funcs)
        .find(|(_, f)| **f == first)
        .map(|(j, _)| j.clone())
        .unwrap();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    let (h2, _) = w.grab(wk).expect("the waiting run");
    assert_eq!(
        w.e.job_function(&h2).map(|f| f.to_vec()),
        Some(second.as_bytes().to_vec())
    );
    assert!(w.grab(wk).is_none());
}
