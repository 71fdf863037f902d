//! `timeout FUNCTION DURATION`: a job lease for workers without CAN_DO_TIMEOUT, with the manual
//! clock.

use super::*;
use crate::store::{FunctionLease, Record};

fn admin(w: &mut World, line: &str) -> String {
    let c = w.conn();
    w.admin(c, line)
}

#[test]
fn a_lease_fails_a_job_held_too_long_by_a_worker_without_can_do_timeout() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        durable: true,
        ..EngineConfig::default()
    });
    assert_eq!(admin(&mut w, "timeout f"), "OK none\n");
    assert_eq!(admin(&mut w, "timeout f 5s"), "OK\r\n");
    assert_eq!(admin(&mut w, "timeout f"), "OK 5000\n");
    assert_eq!(admin(&mut w, "show timeouts"), "f\t5000\n.\n");
    assert!(
        w.e.take_durable().any(
            |d| matches!(d, Record::FunctionLease(FunctionLease { func, ms: 5000 }) if func == "f")
        ),
        "journalled"
    );
    assert!(admin(&mut w, "timeout f soon").starts_with("ERR INVALID_ARGUMENTS"));

    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, true);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    assert_eq!(w.e.next_deadline(), Some(w.now + 5000));
    w.e.on_time(w.now + 4999, &mut w.out);
    assert_eq!(w.e.running_jobs(), 1);
    w.now += 5000;
    w.e.on_time(w.now, &mut w.out);
    assert_eq!(w.e.running_jobs(), 0, "the lease ran out");
    let failed = admin(&mut w, "show failed");
    assert!(
        failed.starts_with(&format!("{}\tf\t", String::from_utf8_lossy(&h)))
            && failed.contains(
                "timed out: held 5000 ms by a worker without CAN_DO_TIMEOUT (timeout FUNCTION)"
            ),
        "{failed}"
    );

    // A worker's own CAN_DO_TIMEOUT is its word: the lease does not shorten it.
    w.submit(c, "f", "", "d2", Priority::Normal, true);
    let own = w.conn();
    w.req(
        own,
        Request::CanDoTimeout {
            func: b("f"),
            timeout_ms: 60_000,
        },
    );
    w.grab(own).unwrap();
    assert_eq!(w.e.next_deadline(), Some(w.now + 60_000));

    // `off` removes it, journalled as 0.
    assert_eq!(admin(&mut w, "timeout f off"), "OK\r\n");
    assert_eq!(admin(&mut w, "show timeouts"), ".\n");
    assert!(
        w.e.take_durable()
            .any(|d| matches!(d, Record::FunctionLease(FunctionLease { ms: 0, .. })))
    );
}

/// An engine whose tables of functions' settings hold `max` each.
fn bounded(max: usize) -> World {
    World::with(EngineConfig {
        max_function_settings: max,
        ..EngineConfig::default()
    })
}

#[test]
fn leases_are_bounded_by_the_flag() {
    let mut w = bounded(3);
    for i in 0..3 {
        assert_eq!(admin(&mut w, &format!("timeout f{i} 1s")), "OK\r\n");
    }
    assert_eq!(
        admin(&mut w, "timeout one-more 1s"),
        "ERR TOO_MANY_LEASES 3+functions+have+a+lease+already+(--max-function-settings):+clear+one+with+timeout+FUNCTION+off\r\n"
    );
    assert_eq!(
        admin(&mut w, "timeout f1 2s"),
        "OK\r\n",
        "changing one is fine"
    );
    assert_eq!(admin(&mut w, "timeout f1"), "OK 2000\n");
    // `off` frees a place.
    assert_eq!(admin(&mut w, "timeout f2 off"), "OK\r\n");
    assert_eq!(admin(&mut w, "timeout one-more 1s"), "OK\r\n");
}

/// A restart with a lower bound than the journal's leases reads every one back; admin lines
/// add none until enough are cleared.
#[test]
fn leases_read_back_past_a_lower_bound_are_all_kept() {
    let mut w = bounded(2);
    for i in 0..4 {
        w.e.restore_lease(Bytes::from(format!("f{i}")), 1000);
    }
    assert_eq!(
        admin(&mut w, "show timeouts"),
        "f0\t1000\nf1\t1000\nf2\t1000\nf3\t1000\n.\n"
    );
    assert!(admin(&mut w, "timeout one-more 1s").starts_with("ERR TOO_MANY_LEASES"));
    assert_eq!(admin(&mut w, "timeout f3 2s"), "OK\r\n");
    for f in ["f0", "f1", "f2"] {
        assert_eq!(admin(&mut w, &format!("timeout {f} off")), "OK\r\n");
    }
    assert_eq!(admin(&mut w, "timeout one-more 1s"), "OK\r\n");
    assert!(admin(&mut w, "timeout two-more 1s").starts_with("ERR TOO_MANY_LEASES"));
}
