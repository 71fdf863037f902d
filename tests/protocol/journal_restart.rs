//! Time across a restart: a future job keeps its time when the server dies before it, and a
//! `catchup=last` entry that missed runs while the server was down fires once at start (the
//! older times it does not make up are counted as missed).

use crate::support;
use support::*;

fn data_dir(name: &str) -> TempDir {
    TempDir::new(&format!("restart-{name}"))
}

// The servers run in-process on one manual clock that goes on across the restart; `kill9`
// stops one without closing its journal, as SIGKILL leaves the data directory.

#[test]
fn a_future_job_runs_at_its_time_after_a_restart_before_it() {
    let dir = data_dir("future");
    let args = ["--data-dir", dir.to_str().unwrap()];
    let s = InProcess::start(&args);
    let due_s = s.now_ms() / 1000 + 3;
    let mut c = s.connect();
    let epoch = due_s.to_string();
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"later", b"u", epoch.as_bytes(), b"x"],
    );
    let h = c.expect(t::JOB_CREATED);
    s.advance(1000);
    let s = InProcess::start_on(s.kill9(), &args);
    let mut w = s.connect();
    w.can_do(&["later"]);
    w.send_req(t::PRE_SLEEP, &[]);
    // Nothing before the time: after each step the server has acted on it (`advance`).
    while s.now_ms() + 30 < due_s * 1000 {
        let left = due_s * 1000 - 30 - s.now_ms();
        s.advance(left.clamp(1, 50));
        if let Some(p) = w.read_within(1) {
            panic!("got {p:?} before the due time");
        }
    }
    let noop = s.advance_until_packet(&mut w, 10, 3000);
    assert_eq!(noop.ptype, t::NOOP);
    let late = s.now_ms() as i64 - (due_s * 1000) as i64;
    assert!((0..200).contains(&late), "{late} ms late");
    let (got, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(got.as_bytes(), &h[..]);
}

#[test]
fn a_missed_catchup_last_run_fires_once_at_start() {
    let dir = data_dir("catchup");
    let file = dir.with_extension("cron");
    std::fs::write(&file, "@every 2s tick catchup=last overlap=allow\n").unwrap();
    let args = [
        "--data-dir",
        dir.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let s = InProcess::start(&args);
    let start = s.now_ms();
    while !s.log().contains("schedule tick: run scheduled") {
        assert!(s.now_ms() - start < 4000, "no run: {}", s.log());
        s.advance(100);
    }
    // The run is logged mid-turn and written at the turn's end: kill only once it is written.
    wait_admin(&mut s.connect(), "show journal", true, 5, |o| {
        o.lines()
            .any(|l| l.strip_prefix("writes\t").is_some_and(|n| n != "0"))
    });
    let clock = s.kill9();
    // Down for more than two intervals.
    clock.advance(4500);
    let s = InProcess::start_on(clock, &args);
    s.wait_log("schedule tick: catching up the run missed at", 2);
    s.advance(300);
    assert_eq!(s.log().matches("catching up").count(), 1, "{}", s.log());
    // The older of the two times missed is not made up: it is counted, logged and alerted,
    // never passed over in silence.
    s.wait_log("tick: 1 run missed from", 2);
    assert!(
        s.log().contains("catchup=last makes up the newest only"),
        "{}",
        s.log()
    );
    assert_eq!(s.connect().schedule_row("tick")[9], "1");
}
