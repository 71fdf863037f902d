//! A journal that cannot write (here: RLIMIT_FSIZE, so writes fail with EFBIG): submits get
//! `ERROR QUEUE_ERROR` with the reason, the server lives on and says so, and nothing that was
//! acknowledged is lost.

use crate::support;

use support::*;

#[test]
fn a_full_disk_refuses_new_jobs_and_loses_none_it_took() {
    let dir = TempDir::new("full");
    let mut full = Server::start_with_file_limit(&["--data-dir", dir.to_str().unwrap()], 64 * 1024);
    let mut c = full.connect();
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
    assert!(full.log().contains("journal"), "the log says so");
    // kill -9, then a server with room: every acknowledged job is there, no refused one.
    full.signal(libc::SIGKILL);
    full.exited(10);
    let s = Server::start(&["--data-dir", dir.to_str().unwrap()]);
    let mut c = s.connect();
    assert_eq!(c.admin("status", true), format!("big\t{acked}\t0\t0\n.\n"));
    let _ = std::fs::remove_dir_all(&dir);
}
