//! A journal that cannot write (here: RLIMIT_FSIZE, so writes fail with EFBIG): submits get
//! `ERROR QUEUE_ERROR` with the reason, the server lives on and says so, and nothing that was
//! acknowledged is lost.

mod support;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use support::*;

#[test]
fn a_full_disk_refuses_new_jobs_and_loses_none_it_took() {
    let dir = TempDir::new("full");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gearwheel"));
    cmd.args([
        "serve",
        "-p",
        "0",
        "--verbose",
        "INFO",
        "--data-dir",
        dir.to_str().unwrap(),
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64 * 1024,
                rlim_max: 64 * 1024,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log2 = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("gearwheel: Listening on ") {
                let _ = tx.send(a.trim().to_string());
            }
            log2.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .parse()
        .unwrap();
    let mut c = Conn::connect(addr);
    let data = vec![b'x'; 1000];
    let mut acked = 0;
    let mut refused = None;
    for i in 0..1000 {
        c.send_req(
            t::SUBMIT_JOB_BG,
            &[b"big", format!("u{i}").as_bytes(), &data],
        );
        let p = c.read_packet();
        match p.ptype {
            t::JOB_CREATED => acked += 1,
            t::ERROR => {
                refused = Some(String::from_utf8_lossy(&p.body).into_owned());
                break;
            }
            other => panic!("unexpected {other}"),
        }
    }
    let refused = refused.expect("the journal filled up");
    assert!(refused.starts_with("QUEUE_ERROR\0"), "{refused}");
    assert!(
        refused.contains("journal"),
        "the reason is given: {refused}"
    );
    assert!(acked > 10, "{acked}");
    // The server lives on, keeps refusing while it cannot write, and counts only what it took.
    c.send_req(t::ECHO_REQ, &[b"alive"]);
    assert_eq!(c.expect(t::ECHO_RES), b"alive");
    c.send_req(t::SUBMIT_JOB_BG, &[b"big", b"again", &data]);
    assert_eq!(c.read_packet().ptype, t::ERROR);
    assert_eq!(c.admin("status", true), format!("big\t{acked}\t0\t0\n.\n"));
    assert!(log.lock().unwrap().contains("journal"), "the log says so");
    // kill -9, then a server with room: every acknowledged job is there, no refused one.
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
    let s = Server::start(&["--data-dir", dir.to_str().unwrap()]);
    let mut c = s.connect();
    assert_eq!(c.admin("status", true), format!("big\t{acked}\t0\t0\n.\n"));
    let _ = std::fs::remove_dir_all(&dir);
}
