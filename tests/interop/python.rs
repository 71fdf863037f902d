//! Interop with python `gear` 0.16 (opendev): tests/interop/gear_client.py and
//! tests/interop/gear_worker.py.
//!
//! What gear sends: the worker sends SET_CLIENT_ID on connect, CAN_DO per function, then
//! GRAB_JOB_UNIQ / PRE_SLEEP. The client sends no SET_CLIENT_ID; `setOption` sends OPTION_REQ;
//! it submits with an empty unique unless one is given. It writes admin text commands (`status`,
//! `show jobs`, `cancel job H`, `workers`, `version` ...) with a bare `\n` on the same connection
//! as its binary packets, and tells replies apart by a leading NUL byte.

use crate::support;

use support::*;

/// The order of the six background `log` jobs of the `background` scenario.
const ORDER: [&str; 6] = ["H1", "H2", "N1", "N2", "L1", "L2"];

/// What the client's `do` scenario prints against a working worker.
const GEAR_DO: &str = "option exceptions True\n\
         normal ['olleh'] False\n\
         high ['hgih'] False\n\
         low ['wol'] False\n\
         progress ['chunk', 'careful', 'done:p'] True b'2' b'2' False\n\
         fail [] True None\n\
         throw [] True boom\n";

#[test]
fn gear_submit_priorities_status_data_fail_exception() {
    if !GEAR_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = GEAR_SCRIPTS.worker(&s);
    assert_eq!(GEAR_SCRIPTS.client(&s, "do", ""), GEAR_DO);
}

#[test]
fn gear_background_jobs_run_in_priority_order() {
    if !GEAR_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        GEAR_SCRIPTS.client(&s, "background", ""),
        "submitted L1 True\n\
         submitted N1 True\n\
         submitted H1 True\n\
         submitted L2 True\n\
         submitted N2 True\n\
         submitted H2 True\n\
         distinct 6\n"
    );
    queued_jobs_run_by_priority(&s, 2, |s| GEAR_SCRIPTS.worker(s), &ORDER);
}

#[test]
fn gear_admin_text_mixed_with_binary_on_one_connection() {
    if !GEAR_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = GEAR_SCRIPTS.worker(&s);
    let dir = TempDir::new("gear-admin");
    let flag = dir.path("release");
    let out = GEAR_SCRIPTS.client(&s, "admin", flag.to_str().unwrap());
    let lines: Vec<&str> = out.lines().collect();
    let expect_version = format!("version 'OK {}\\n'", env!("CARGO_PKG_VERSION"));
    assert_eq!(lines.len(), 12, "{out}");
    assert_eq!(lines[0], expect_version);
    assert_eq!(lines[1], "status-packet True b'3' b'7'");
    // The function list order is the server's; compare as sets of lines.
    let status = lines[2]
        .strip_prefix("status '")
        .and_then(|x| x.strip_suffix("\\n.\\n'"))
        .unwrap_or_else(|| panic!("{}", lines[2]));
    let mut status: Vec<&str> = status.split("\\n").collect();
    status.sort();
    assert_eq!(
        status,
        [
            "fail\\t0\\t0\\t1",
            "hold\\t1\\t1\\t1",
            "log\\t0\\t0\\t1",
            "progress\\t0\\t0\\t1",
            "reverse\\t0\\t0\\t1",
            "throw\\t0\\t0\\t1",
        ]
    );
    // One running foreground job: `HANDLE\t0\t0\t0`.
    let jobs = lines[3]
        .strip_prefix("show jobs 'H:")
        .unwrap_or_else(|| panic!("{}", lines[3]));
    assert!(jobs.ends_with("\\t0\\t0\\t0\\n.\\n'"), "{}", lines[3]);
    assert_eq!(lines[4], "show unique jobs 'gear-hold\\n.\\n'");
    assert_eq!(lines[5], "get_status True True True b'3' b'7'");
    assert_eq!(
        lines[6],
        "workers ['gear-worker : hold log throw fail progress reverse']"
    );
    assert_eq!(lines[7], "complete True ['released']");
    assert_eq!(lines[8], "show unique jobs 'gear-cancel\\n.\\n'");
    assert_eq!(lines[9], "cancel 'OK\\r\\n'");
    assert_eq!(lines[10], "cancel again 'ERR UNKNOWN_JOB\\r\\n'");
    assert_eq!(lines[11], "show jobs '.\\n'");
}

/// A long `--grab-wait` delays no job (see `Scripts::do_under_a_long_grab_wait`).
#[test]
fn gear_worker_with_a_long_grab_wait() {
    if !GEAR_SCRIPTS.present() {
        return;
    }
    GEAR_SCRIPTS.do_under_a_long_grab_wait(GEAR_DO);
}
