//! `timeout FUNCTION DURATION` over real sockets: a worker without CAN_DO_TIMEOUT that holds a
//! job past the lease loses it (its late result is refused), and the lease survives kill -9
//! through the journal.

use crate::support;

use support::*;

#[test]
fn a_lease_fails_a_held_job_and_survives_a_crash() {
    let dir = TempDir::new("leases");
    let args = ["--data-dir", dir.to_str().unwrap()];
    let mut s = Server::start(&args);
    let mut admin = s.connect();
    assert_eq!(admin.admin("timeout slow 1s", false), "OK\r\n");
    assert_eq!(admin.admin("show timeouts", true), "slow\t1000\n.\n");

    let mut c = s.connect();
    let handle = c.submit(t::SUBMIT_JOB_BG, "slow", "", b"x");
    let mut w = s.connect();
    w.can_do(&["slow"]);
    let (h, _, _, _) = w.grab_uniq().expect("the job");
    assert_eq!(h, handle);
    let failed = poll(5, "the held job to fail", || {
        let f = admin.admin("show failed", true);
        if f.contains(&handle) { Ok(f) } else { Err(f) }
    });
    assert!(
        failed.contains("timed out: held 1000 ms by a worker without CAN_DO_TIMEOUT"),
        "{failed}"
    );
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"late"]);
    assert_eq!(w.read_packet().ptype, t::ERROR);

    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
    let s = Server::start(&args);
    let mut admin = s.connect();
    assert_eq!(admin.admin("timeout slow", false), "OK 1000\n");
    assert_eq!(admin.admin("timeout slow off", false), "OK\r\n");
    drop(admin);
    drop(s);
    let s = Server::start(&args);
    assert_eq!(s.connect().admin("show timeouts", true), ".\n");
    let _ = std::fs::remove_dir_all(&dir);
}
