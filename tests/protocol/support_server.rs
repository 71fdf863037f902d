//! The test support's own promises: a server that exits at start fails the test with its
//! whole log, read to its end, so that the reason is in the failure; an in-process restart
//! is not refused for a lock that only a sibling test's child still holds.

use crate::support;

use support::*;

#[test]
#[should_panic(expected = "no-such-schedules-file")]
fn a_server_that_exits_at_start_shows_why() {
    Server::start(&["--schedules", "/nonexistent/no-such-schedules-file"]);
}

/// An in-process restart while a child that another test is starting sits between its fork
/// and its exec: the child's copy of the journal lock's descriptor keeps the lock held, and
/// the restart waits for it instead of failing as if another server had the directory.
#[test]
fn an_in_process_restart_waits_for_a_forked_childs_copy_of_the_journal_lock() {
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("restart-fork");
    let data = dir.path("data");
    let args = ["--data-dir", data.to_str().unwrap()];
    let s = InProcess::start(&args);
    // The child says it has forked (it holds the lock's copy now), then waits before its exec.
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors it is given.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let [forked, tell] = fds;
    let mut child = std::process::Command::new("true");
    // SAFETY: the hook only writes and sleeps (async-signal-safe), in the child.
    unsafe {
        child.pre_exec(move || {
            libc::write(tell, b"f".as_ptr().cast(), 1);
            libc::usleep(500_000);
            Ok(())
        });
    }
    let spawner = std::thread::spawn(move || child.status().unwrap());
    let mut byte = 0u8;
    // SAFETY: a one-byte read into a local.
    assert_eq!(unsafe { libc::read(forked, (&raw mut byte).cast(), 1) }, 1);
    let clock = s.kill9();
    let s = InProcess::start_on(clock, &args);
    assert!(s.connect().admin("version", false).starts_with("OK "));
    assert!(spawner.join().unwrap().success());
    // SAFETY: closing the pipe's two ends, used by no one now.
    unsafe {
        libc::close(forked);
        libc::close(tell);
    }
}
