//! Time across a restart: a future job keeps its time when the server dies before it, and a
//! `catchup=last` entry that missed runs while the server was down fires once at start.

mod support;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::*;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn data_dir(name: &str) -> TempDir {
    TempDir::new(&format!("restart-{name}"))
}

fn kill9(mut s: Server) {
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
}

#[test]
fn a_future_job_runs_at_its_time_after_a_restart_before_it() {
    let dir = data_dir("future");
    let args = ["--data-dir", dir.to_str().unwrap()];
    let s = Server::start(&args);
    let due_s = now_ms() / 1000 + 3;
    let mut c = s.connect();
    let epoch = due_s.to_string();
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"later", b"u", epoch.as_bytes(), b"x"],
    );
    let h = c.expect(t::JOB_CREATED);
    std::thread::sleep(Duration::from_millis(1000));
    kill9(s);
    let s = Server::start(&args);
    let mut w = s.connect();
    w.can_do(&["later"]);
    w.send_req(t::PRE_SLEEP, &[]);
    // Nothing before the time (short reads: a long SO_RCVTIMEO overshoots).
    while now_ms() + 30 < due_s * 1000 {
        let left = due_s * 1000 - 30 - now_ms();
        w.stream
            .set_read_timeout(Some(Duration::from_millis(left.clamp(1, 50))))
            .unwrap();
        if let Ok(p) = w.try_read_packet() {
            panic!("got {p:?} before the due time");
        }
    }
    w.stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    assert_eq!(w.read_packet().ptype, t::NOOP);
    let late = now_ms() as i64 - (due_s * 1000) as i64;
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
    let s = Server::start(&args);
    s.wait_log("schedule tick: run scheduled", 4);
    // The run is logged mid-turn and written at the turn's end: kill only once it is written.
    wait_admin(&mut s.connect(), "show journal", true, 5, |o| {
        o.lines()
            .any(|l| l.strip_prefix("writes\t").is_some_and(|n| n != "0"))
    });
    kill9(s);
    // Down for more than two intervals.
    std::thread::sleep(Duration::from_millis(4500));
    let s = Server::start(&args);
    s.wait_log("schedule tick: catching up the run missed at", 2);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.log().matches("catching up").count(), 1, "{}", s.log());
}
