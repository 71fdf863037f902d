//! The schedules file over real sockets: runs reach a real worker, outcomes show in `show
//! schedules`, and a broken reload leaves the running schedule alone. Tests about how often
//! entries fire run the server in-process and let time pass on its manual clock.

use crate::support;
use std::time::Duration;

use support::*;

fn temp_file(name: &str, text: &str) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new(&format!("sched-{name}"));
    let p = dir.path("schedules.cron");
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

fn row(c: &mut Conn, id: &str) -> Vec<String> {
    c.schedule_row(id)
}

/// Work one job: complete it, or fail it when `fail` is set. Returns the workload.
fn work_one(w: &mut Conn, fail: bool) -> Vec<u8> {
    work_one_waking(w, fail, |w| w.read_packet())
}

/// `work_one` on a server whose clock the test moves: while the worker sleeps, time passes
/// in steps until its NOOP comes.
fn work_one_in(s: &InProcess, w: &mut Conn, fail: bool) -> Vec<u8> {
    work_one_waking(w, fail, |w| s.advance_until_packet(w, 50, 10_000))
}

/// Grab until a job comes, sleeping between tries until `wake` reads the NOOP.
fn work_one_waking(w: &mut Conn, fail: bool, mut wake: impl FnMut(&mut Conn) -> Packet) -> Vec<u8> {
    loop {
        if let Some((h, _, _, data)) = w.grab_uniq() {
            if fail {
                w.send_req(t::WORK_FAIL, &[h.as_bytes()]);
            } else {
                w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"done"]);
            }
            return data;
        }
        w.send_req(t::PRE_SLEEP, &[]);
        assert_eq!(wake(w).ptype, t::NOOP);
    }
}

#[test]
fn every_second_runs_three_times_in_three_seconds_with_outcomes() {
    let (_dir, path) = temp_file("every", "@every 1s tick -- run {time}\n@every 1s bad\n");
    let s = InProcess::start(&["--schedules", path.to_str().unwrap()]);
    let mut w = s.connect();
    w.can_do(&["tick"]);
    let start = s.now_ms();
    let mut workloads = vec![];
    for _ in 0..3 {
        workloads.push(String::from_utf8(work_one_in(&s, &mut w, false)).unwrap());
    }
    let took = Duration::from_millis(s.now_ms() - start);
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_millis(4500),
        "{took:?}"
    );
    for wl in &workloads {
        assert!(wl.starts_with("run 20") && wl.ends_with('Z'), "{wl}");
    }
    let mut f = s.connect();
    f.can_do(&["bad"]);
    work_one_in(&s, &mut f, true);
    let mut admin = s.connect();
    let tick = row(&mut admin, "tick");
    assert_eq!(tick[1..3], ["@every 1s", "tick"]);
    assert_eq!(tick[5], "complete");
    assert!(tick[7].parse::<u32>().unwrap() >= 3, "{tick:?}");
    assert_eq!(tick[8], "0");
    let bad = row(&mut admin, "bad");
    assert_eq!(bad[5], "fail");
    assert!(bad[8].parse::<u32>().unwrap() >= 1, "{bad:?}");
    // While nobody works `bad`, overlap=skip keeps one job queued and counts the skips.
    s.advance(2100);
    let bad = row(&mut admin, "bad");
    assert!(bad[9].parse::<u32>().unwrap() >= 1, "{bad:?}");
    assert!(
        admin.admin("status", true).contains("bad\t1\t0\t"),
        "one job, not a pile"
    );
    s.wait_log("schedule tick job", 2);
}

#[test]
fn a_broken_reload_keeps_the_running_schedule() {
    let (_dir, path) = temp_file("reload", "@every 1s tick\n");
    let s = Server::start(&["--schedules", path.to_str().unwrap()]);
    let mut admin = s.connect();
    std::fs::write(&path, "@every 1s tick\n61 * * * * broken\n").unwrap();
    let reply = admin.admin("reload schedules", false);
    assert!(reply.starts_with("ERR SCHEDULE_ERROR "), "{reply}");
    assert!(
        reply.contains(":2:1:+minute:+61+is+out+of+range+0-59"),
        "{reply}"
    );
    s.signal(libc::SIGHUP);
    s.wait_log("reload of", 3);
    // The old entry still runs.
    let mut w = s.connect();
    w.can_do(&["tick"]);
    work_one(&mut w, false);
    assert!(!admin.admin("show schedules", true).contains("broken"));
    // A good file is taken, and the entry keeps its history.
    std::fs::write(&path, "@every 1s tick\n@every 1h other\n").unwrap();
    assert_eq!(admin.admin("reload schedules", false), "OK 2\n");
    let tick = row(&mut admin, "tick");
    assert!(tick[7].parse::<u32>().unwrap() >= 1, "{tick:?}");
    assert_eq!(row(&mut admin, "other")[7], "0");
}

#[test]
fn a_bad_schedules_file_stops_start_up_with_line_and_column() {
    let (_dir, path) = temp_file("bad", "# ok\n*/5 * * * * fine\n0 25 * * * broken\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args(["serve", "-p", "0", "--schedules", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:3:3: hour: 25 is out of range 0-23",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn check_validates_and_lists_next_runs() {
    let (_dir, good) = temp_file("check-good", "CRON_TZ=UTC\n0 3 * * * backup\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args([
            "check",
            good.to_str().unwrap(),
            "--next",
            "2",
            "--from",
            "2026-11-22T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 entry OK"), "{text}");
    assert!(
        text.contains("  2026-11-22T03:00:00Z") && text.contains("  2026-11-23T03:00:00Z"),
        "{text}"
    );
    let (_dir, bad) = temp_file("check-bad", "0 3 * * * a\n* * * * * a\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args(["check", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":2:11: duplicate id \"a\" (first on line 1)"),
        "{err}"
    );
}

#[test]
fn a_failed_run_is_a_warning_visible_at_notice_and_warning() {
    let (_dir, path) = temp_file("warn", "@every 1s flaky\n");
    // The README's systemd unit runs with --verbose NOTICE; WARNING is stricter still.
    let s = Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--verbose",
        "WARNING",
        "--schedules",
        path.to_str().unwrap(),
    ]);
    let mut w = s.connect();
    w.can_do(&["flaky"]);
    work_one(&mut w, true);
    s.wait_log("schedule flaky job", 3);
    let log = s.log();
    let line = log
        .lines()
        .find(|l| l.contains("schedule flaky job"))
        .unwrap();
    assert!(line.trim_start().starts_with("WARNING"), "{line}");
    assert!(
        line.ends_with(": fail") || line.contains(": fail "),
        "{line}"
    );
}

#[test]
fn a_schedule_without_workers_warns_once_not_every_run() {
    let (_dir, path) = temp_file("quiet", "@every 1s nobody\n");
    let s = InProcess::start(&["--schedules", path.to_str().unwrap()]);
    let mut admin = s.connect();
    // The first run stays queued; the next ones are skipped (overlap=skip).
    let start = s.now_ms();
    while row(&mut admin, "nobody")[9].parse::<u32>().unwrap() < 3 {
        assert!(s.now_ms() - start < 8000, "no skips: {}", s.log());
        s.advance(100);
    }
    let log = s.log();
    let warned = log.lines().filter(|l| l.contains("skipped")).count();
    assert_eq!(warned, 1, "{log}");
    assert!(log.contains("noted at the 10th"), "{log}");
}
