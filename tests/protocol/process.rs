//! The process: signals, graceful shutdown, the pid file, the log file and SIGHUP, and
//! gearmand-style flags. (The command-line-only checks are in protocol_cli.rs: running
//! short-lived processes with `Command::output` in parallel with socket reads made those
//! reads fail with EINTR now and then, see the note there.)

use crate::support;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::*;

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> TempDir {
    TempDir::new(&format!("proto-{name}"))
}

#[test]
fn sigterm_exits_zero_quickly() {
    let mut s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB, "f", "", b"x");
    let t0 = Instant::now();
    s.signal(libc::SIGTERM);
    let st = s.wait_exit(3).expect("exits on SIGTERM");
    assert_eq!(st.code(), Some(0));
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[test]
fn sigint_exits_zero() {
    let mut s = server(&[]);
    s.signal(libc::SIGINT);
    assert_eq!(s.wait_exit(3).expect("exits on SIGINT").code(), Some(0));
}

/// A running job, then a graceful shutdown started by `start`: the listener closes, the
/// running job may still finish and its client hears it, then the process exits 0.
fn graceful_with_a_running_job(start: impl FnOnce(&Server)) {
    let mut s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fg"]);
    let mut w2 = worker(&s, &["fg"]);
    let handle = c.submit(t::SUBMIT_JOB, "fg", "", b"x");
    let queued = c.submit(t::SUBMIT_JOB_BG, "fg", "", b"y");
    let (hh, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(hh, handle);
    start(&s);
    s.wait_log("graceful shutdown", 3);
    wait_until(3, "the listener to close", || {
        TcpStream::connect(s.addr).is_err()
    });
    // Barrier: an echo answered on an existing connection proves the server handled the
    // shutdown and turned again since, still running while the job does.
    c.send_req(t::ECHO_REQ, &[b"draining"]);
    assert_eq!(c.expect(t::ECHO_RES), b"draining");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "must wait for the running job"
    );
    // Nothing new is handed out while draining.
    assert!(
        w2.grab_uniq().is_none(),
        "no job is handed out while draining"
    );
    // Existing connections still work.
    c.send_req(t::GET_STATUS, &[queued.as_bytes()]);
    c.expect(t::STATUS_RES);
    work(&mut w, t::WORK_STATUS, &handle, &[b"1", b"2"]);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"finished"]);
    assert_eq!(c.expect(t::WORK_STATUS), hb(&handle, &[b"1", b"2"]));
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"finished"]));
    let st = s.wait_exit(3).expect("exits once the job is done");
    assert_eq!(st.code(), Some(0));
}

#[test]
fn sigusr1_is_a_graceful_shutdown() {
    graceful_with_a_running_job(|s| s.signal(libc::SIGUSR1));
}

#[test]
fn shutdown_graceful_admin_command() {
    graceful_with_a_running_job(|s| {
        let mut a = s.connect();
        assert_eq!(a.admin("shutdown graceful", false), "OK\r\n");
    });
}

#[test]
fn graceful_shutdown_with_no_running_job_exits_at_once() {
    let mut s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "f", "", b"queued, not running");
    s.signal(libc::SIGUSR1);
    assert_eq!(s.wait_exit(3).expect("exits").code(), Some(0));
}

#[test]
fn graceful_timeout_bounds_the_wait() {
    let mut s = server(&["--graceful-timeout", "1"]);
    let mut c = s.connect();
    let mut w = worker(&s, &["stuck"]);
    c.submit(t::SUBMIT_JOB, "stuck", "", b"x");
    w.grab_uniq().unwrap();
    let t0 = Instant::now();
    s.signal(libc::SIGUSR1);
    let st = s.wait_exit(4).expect("exits after the graceful timeout");
    let took = t0.elapsed();
    assert_eq!(st.code(), Some(0));
    assert!(took >= Duration::from_millis(900), "exited after {took:?}");
    assert!(took < Duration::from_millis(3000), "exited after {took:?}");
}

#[test]
fn pid_file_is_written_and_removed() {
    let dir = scratch("pid");
    let pid_path = dir.join("g.pid");
    let mut s = server(&["--pid-file", pid_path.to_str().unwrap()]);
    let pid = s.child.id();
    wait_until(3, "the pid file", || {
        std::fs::read_to_string(&pid_path).is_ok_and(|x| x.ends_with('\n'))
    });
    assert_eq!(
        std::fs::read_to_string(&pid_path).unwrap().trim(),
        pid.to_string()
    );
    s.signal(libc::SIGTERM);
    assert_eq!(s.wait_exit(3).expect("exits").code(), Some(0));
    assert!(!pid_path.exists(), "pid file removed at exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pid_file_is_removed_after_admin_shutdown() {
    let dir = scratch("pid2");
    let pid_path = dir.join("g.pid");
    let mut s = server(&["-P", pid_path.to_str().unwrap()]);
    wait_until(3, "the pid file", || pid_path.exists());
    let mut a = s.connect();
    assert_eq!(a.admin("shutdown", false), "OK\r\n");
    assert_eq!(s.wait_exit(3).expect("exits").code(), Some(0));
    assert!(!pid_path.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sighup_reopens_the_log_file() {
    let dir = scratch("log");
    let log = dir.join("g.log");
    let moved = dir.join("g.log.1");
    let s = server(&["--log-file", log.to_str().unwrap()]);
    wait_until(3, "log lines in the file", || {
        std::fs::read_to_string(&log).is_ok_and(|x| x.contains("Listening on"))
    });
    std::fs::rename(&log, &moved).unwrap();
    s.signal(libc::SIGHUP);
    wait_until(3, "the log file to be reopened", || log.exists());
    // Make the server log something: a framing error is logged as a warning.
    let mut bad = s.connect();
    bad.send(&raw_packet(b"\0REQ", 99, b""));
    expect_error_code(&mut bad, "INVALID_COMMAND");
    wait_until(3, "a line in the new file", || {
        std::fs::read_to_string(&log).is_ok_and(|x| x.contains("closing connection"))
    });
    let old = std::fs::read_to_string(&moved).unwrap();
    assert!(old.contains("Listening on"), "{old}");
    assert!(!old.contains("closing connection"), "{old}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn threads_and_builtin_queue_flags_start_with_a_notice() {
    let s = server(&["-t", "4", "-q", "builtin"]);
    s.wait_log("--threads 4 ignored", 3);
    s.wait_log("--queue-type builtin ignored", 3);
    let mut c = s.connect();
    sync(&mut c);
}

#[test]
fn gearmand_equals_form_flags_are_accepted() {
    let s = Server::start_args(&[
        "serve",
        "--port=0",
        "--verbose=INFO",
        "--job-handle-prefix=H:eq",
    ]);
    let mut c = s.connect();
    assert_eq!(c.submit(t::SUBMIT_JOB_BG, "f", "", b""), "H:eq:1");
}
