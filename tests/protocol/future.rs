//! Future jobs over real sockets and real time: EPOCH and SCHED jobs reach a sleeping worker
//! on time, and `show scheduled` lists them.

use crate::support;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::*;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn an_epoch_job_reaches_a_sleeping_worker_within_50ms_of_its_time() {
    // Wall time on purpose: the one end-to-end check of the production clock, that a real
    // server sleeping in poll on the system clock wakes at a deadline neither early nor late
    // (the tests on a manual clock cannot see the poll's timeout or its rounding).
    let s = Server::start(&["--job-handle-prefix", "H:t"]);
    let mut worker = s.connect();
    let mut client = s.connect();
    worker.can_do(&["later"]);
    worker.send_req(t::PRE_SLEEP, &[]);
    // Aim at the start of a second at least 2 s away.
    let due_s = now_ms() / 1000 + 3;
    let due_ms = due_s * 1000;
    let epoch = due_s.to_string();
    client.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"later", b"e2", epoch.as_bytes(), b"payload"],
    );
    let h2 = String::from_utf8(client.expect(t::JOB_CREATED)).unwrap();
    let listing = client.admin("show scheduled", true);
    assert!(
        listing.starts_with(&format!("{h2}\tlater\te2\t")),
        "{listing}"
    );
    // Nothing until the due time. Short reads: the kernel lets a long SO_RCVTIMEO overshoot.
    while now_ms() + 30 < due_ms {
        let left = due_ms - 30 - now_ms();
        worker
            .stream
            .set_read_timeout(Some(Duration::from_millis(left.clamp(1, 50))))
            .unwrap();
        if let Ok(p) = worker.try_read_packet() {
            panic!(
                "got {p:?} {} ms before the due time",
                due_ms as i64 - now_ms() as i64
            );
        }
    }
    // Then the NOOP, promptly.
    worker
        .stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    assert_eq!(worker.read_packet().ptype, t::NOOP);
    let late = now_ms() as i64 - due_ms as i64;
    assert!(
        (0..50).contains(&late),
        "NOOP came {late} ms after the due time"
    );
    let (h, f, u, d) = worker.grab_uniq().expect("the due job");
    assert_eq!(
        (h, f.as_str(), u.as_str(), d),
        (h2, "later", "e2", b"payload".to_vec())
    );
}

#[test]
fn epoch_errors_and_the_past() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    for bad in [&b""[..], b"abc", b"-1", b"99999999999999999999999"] {
        c.send_req(t::SUBMIT_JOB_EPOCH, &[b"f", b"", bad, b"d"]);
        let e = c.expect(t::ERROR);
        assert!(
            e.starts_with(b"INVALID_ARGUMENT\0"),
            "{}",
            String::from_utf8_lossy(&e)
        );
    }
    // An epoch in the past runs now.
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"f", b"", b"100", b"d"]);
    c.expect(t::JOB_CREATED);
    assert_eq!(c.admin("prioritystatus", true), "f\t0\t1\t0\t0\n.\n");
}

#[test]
fn sched_jobs_are_scheduled_in_the_given_zone_and_bad_fields_say_why() {
    let s = Server::start(&["--timezone", "UTC", "--job-handle-prefix", "H:t"]);
    let mut c = s.connect();
    // Minute 0 of hour 0 on Monday, January 1st: far enough to be stable.
    c.send_req(
        t::SUBMIT_JOB_SCHED,
        &[b"f", b"u", b"0", b"0", b"1", b"1", b"", b"data"],
    );
    let h = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    let listing = c.admin("show scheduled", true);
    let line = listing.lines().next().unwrap();
    let cols: Vec<&str> = line.split('\t').collect();
    assert_eq!(cols[..3], [h.as_str(), "f", "u"]);
    assert!(cols[3].ends_with("-01-01T00:00:00Z"), "{line}");
    assert_eq!(cols[4], "normal");
    assert_eq!(c.admin("status", true), "f\t1\t0\t0\n.\n");
    assert_eq!(c.admin("prioritystatus", true), "f\t0\t0\t0\t0\n.\n");
    c.send_req(t::GET_STATUS, &[h.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        format!("{h}\x001\x000\x000\x000").into_bytes()
    );
    c.send_req(
        t::SUBMIT_JOB_SCHED,
        &[b"f", b"", b"0", b"0", b"31", b"2", b"", b"x"],
    );
    assert_eq!(
        c.expect(t::ERROR),
        b"INVALID_ARGUMENT\0day 31 never occurs in month 2"
    );
    c.send_req(
        t::SUBMIT_JOB_SCHED,
        &[b"f", b"", b"", b"", b"", b"", b"7", b"x"],
    );
    assert_eq!(
        c.expect(t::ERROR),
        b"INVALID_ARGUMENT\0day of week 7 is out of range 0-6"
    );
    assert_eq!(c.admin(&format!("cancel job {h}"), false), "OK\r\n");
    assert_eq!(c.admin("show scheduled", true), ".\n");
}

#[test]
fn an_idle_server_holding_future_jobs_does_not_wake_up() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let far = (now_ms() / 1000 + 3600).to_string();
    for i in 0..100 {
        c.send_req(
            t::SUBMIT_JOB_EPOCH,
            &[b"f", format!("u{i}").as_bytes(), far.as_bytes(), b""],
        );
        c.expect(t::JOB_CREATED);
    }
    let cpu = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let switches = |pid: u32| -> u64 {
        let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        st.lines()
            // Voluntary switches only: each is the loop going to sleep in poll, so they count
            // wake-ups. A nonvoluntary one is the scheduler preempting a process that was
            // already running (a loaded machine finishing the last reply's turn), not a wake.
            .filter(|l| l.starts_with("voluntary_ctxt_switches"))
            .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let pid = s.child.id();
    let (cpu0, sw0) = (cpu(pid), switches(pid));
    let start = Instant::now();
    // Wall time on purpose: what is measured is a real process's CPU and context switches
    // while real time passes, which a manual clock cannot stand for.
    std::thread::sleep(Duration::from_millis(1500));
    let (cpu1, sw1) = (cpu(pid), switches(pid));
    assert!(start.elapsed() >= Duration::from_millis(1500));
    assert_eq!(cpu1 - cpu0, 0, "an idle server used CPU");
    assert!(sw1 - sw0 <= 1, "an idle server woke up {} times", sw1 - sw0);
}

/// The job's line about being far ahead, if the log has one.
fn far_line(s: &Server, handle: &str) -> Option<String> {
    s.log()
        .lines()
        .find(|l| l.contains(&format!("future job {handle} ")) && l.contains("beyond"))
        .map(str::to_string)
}

#[test]
fn jobs_due_beyond_the_horizon_are_warned_about_with_their_due_time() {
    let s = Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--verbose",
        "WARNING",
        "--timezone",
        "UTC",
        "--job-handle-prefix",
        "H:t",
    ]);
    let mut c = s.connect();
    // An epoch 40 days ahead: beyond the default 31 days.
    let epoch = (now_ms() / 1000 + 40 * 86_400).to_string();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"f", b"far", epoch.as_bytes(), b"x"]);
    let far = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    // A SCHED job on the 1st of a month three or four months away (all fields must match).
    let month = (chrono::Utc::now()
        .format("%m")
        .to_string()
        .parse::<u32>()
        .unwrap()
        + 2)
        % 12
        + 1;
    let m = month.to_string();
    c.send_req(
        t::SUBMIT_JOB_SCHED,
        &[b"f", b"sched", b"0", b"0", b"1", m.as_bytes(), b"", b"x"],
    );
    let sched = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    // One a minute ahead: no warning.
    let soon = (now_ms() / 1000 + 60).to_string();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"f", b"near", soon.as_bytes(), b"x"]);
    let near = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    // The log is in order: once a later job's warning is there, `near` had its chance.
    let epoch2 = (now_ms() / 1000 + 100 * 86_400).to_string();
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"f", b"far2", epoch2.as_bytes(), b"x"],
    );
    let far2 = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    s.wait_log(&format!("future job {far2} "), 5);
    let line = far_line(&s, &far).unwrap_or_else(|| panic!("no warning: {}", s.log()));
    assert!(line.trim_start().starts_with("WARNING"), "{line}");
    assert!(
        line.contains("39d ahead") || line.contains("40d ahead"),
        "{line}"
    );
    let due = chrono::DateTime::from_timestamp(epoch.parse().unwrap(), 0).unwrap();
    assert!(
        line.contains(&due.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "{line}"
    );
    let line = far_line(&s, &sched).unwrap_or_else(|| panic!("no warning: {}", s.log()));
    assert!(
        line.contains(&format!("-{month:02}-01T00:00:00Z")),
        "{line}"
    );
    assert!(far_line(&s, &near).is_none(), "{}", s.log());

    // A wider horizon keeps the same job quiet.
    let s = Server::start(&["--future-horizon", "60d"]);
    let mut c = s.connect();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[b"f", b"far", epoch.as_bytes(), b"x"]);
    let far = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"f", b"far2", epoch2.as_bytes(), b"x"],
    );
    let far2 = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    s.wait_log(&format!("future job {far2} "), 5);
    s.wait_log("beyond --future-horizon 60d", 5);
    assert!(far_line(&s, &far).is_none(), "{}", s.log());
}
