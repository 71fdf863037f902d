//! A wall clock stepped forward under five minutes: the run that was due is made late, and
//! every time the step passed over is counted, logged and alerted as missed, or made up under
//! `catchup=all`; none is skipped in silence.

use crate::support;

use gearwheel::clock::Clock;
use support::*;

/// The server in-process on a manual clock set half a second into a whole second, with the
/// schedules file `text`.
fn start(text: &str) -> (TempDir, InProcess) {
    let dir = TempDir::new("clock-step");
    let file = dir.join("s.cron");
    std::fs::write(&file, text).unwrap();
    let clock = manual_clock();
    let now = clock.now_ms();
    clock.set(now - now % 1000 + 500);
    let s = InProcess::start_on(clock, &["--schedules", file.to_str().unwrap()]);
    (dir, s)
}

#[test]
fn a_forward_step_counts_and_logs_every_time_it_passed_over() {
    let (_dir, s) = start("@every 1s tick overlap=allow\n");
    let mut admin = s.connect();
    s.advance(1000);
    assert_eq!(admin.queued("tick"), 1, "the run on time");
    let before = admin.schedule_row("tick");
    assert_eq!(before[9], "0", "{before:?}");
    // 20 s forward at once: the run due 1 s after the last is made, 19.5 s late; the 19
    // whole seconds after it, up to now, are missed.
    s.set_time(s.now_ms() + 20_000);
    assert_eq!(admin.queued("tick"), 2, "the late run, and no other");
    let after = admin.schedule_row("tick");
    assert_eq!(after[9], "19", "skips: {after:?}");
    s.wait_log("19 runs missed after", 5);
    assert!(
        s.log()
            .contains("the wall clock stepped forward or the server stalled"),
        "{}",
        s.log()
    );
    let runs = admin.admin("show runs tick", true);
    assert!(runs.contains("missed"), "{runs}");
    // The next run is the one after now, on time.
    s.advance(1000);
    assert_eq!(admin.queued("tick"), 3, "{}", admin.admin("status", true));
    assert_eq!(admin.schedule_row("tick")[9], "19");
}

#[test]
fn under_catchup_all_a_forward_step_makes_up_the_times_it_passed_over() {
    let (_dir, s) = start("@every 1s tick overlap=allow catchup=all catchup_max=5\n");
    let mut admin = s.connect();
    s.advance(1000);
    assert_eq!(admin.queued("tick"), 1);
    s.set_time(s.now_ms() + 20_000);
    // The late run, then the newest five of the 19 passed over; the 14 older are missed.
    poll(5, "the catch-up runs to be queued", || {
        let n = admin.queued("tick");
        if n == 1 + 1 + 5 {
            Ok(())
        } else {
            Err(n.to_string())
        }
    });
    assert_eq!(admin.schedule_row("tick")[9], "14");
    s.wait_log("14 runs missed from", 5);
}
