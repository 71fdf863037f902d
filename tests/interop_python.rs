//! Interop with python `gear` 0.16 (opendev): tests/interop/gear_client.py and
//! tests/interop/gear_worker.py.
//!
//! What gear sends: the worker sends SET_CLIENT_ID on connect, CAN_DO per function, then
//! GRAB_JOB_UNIQ / PRE_SLEEP. The client sends no SET_CLIENT_ID; `setOption` sends OPTION_REQ;
//! it submits with an empty unique unless one is given. It writes admin text commands (`status`,
//! `show jobs`, `cancel job H`, `workers`, `version` ...) with a bare `\n` on the same connection
//! as its binary packets, and tells replies apart by a leading NUL byte.

mod support;

use support::*;

fn have_gear() -> bool {
    require(have_python_gear(), "python3 with the gear package")
}

fn gear_worker(s: &Server) -> Proc {
    script_worker(s, "python3", "gear_worker.py", 10)
}

fn gear_client(s: &Server, scenario: &str, arg: &str) -> String {
    script_client(s, "python3", "gear_client.py", scenario, arg)
}

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
    if !have_gear() {
        return;
    }
    let s = Server::start(&[]);
    let _w = gear_worker(&s);
    assert_eq!(gear_client(&s, "do", ""), GEAR_DO);
}

#[test]
fn gear_background_jobs_run_in_priority_order() {
    if !have_gear() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        gear_client(&s, "background", ""),
        "submitted L1 True\n\
         submitted N1 True\n\
         submitted H1 True\n\
         submitted L2 True\n\
         submitted N2 True\n\
         submitted H2 True\n\
         distinct 6\n"
    );
    let mut admin = s.connect();
    assert_eq!(admin.admin("prioritystatus", true), "log\t2\t2\t2\t0\n.\n");
    let mut w = gear_worker(&s);
    w.wait_stdout("job log L2\n", 5);
    let order: Vec<String> = w
        .stdout()
        .lines()
        .filter_map(|l| l.strip_prefix("job log ").map(str::to_string))
        .collect();
    assert_eq!(order, ["H1", "H2", "N1", "N2", "L1", "L2"]);
}

#[test]
fn gear_admin_text_mixed_with_binary_on_one_connection() {
    if !have_gear() {
        return;
    }
    let s = Server::start(&[]);
    let _w = gear_worker(&s);
    let dir = TempDir::new("gear-admin");
    let flag = dir.path("release");
    let out = gear_client(&s, "admin", flag.to_str().unwrap());
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

/// With a long `--grab-wait` the worker's GRAB after each job waits; every next job must
/// reach it at once (six jobs in a row would take six seconds if a wait ran to its end), and
/// the worker must take the late answer to its GRAB in its stride.
#[test]
fn gear_worker_with_a_long_grab_wait() {
    if !have_gear() {
        return;
    }
    let s = Server::start(&["--grab-wait", "1000"]);
    let _w = gear_worker(&s);
    let start = std::time::Instant::now();
    assert_eq!(gear_client(&s, "do", ""), GEAR_DO);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(4), "took {took:?}");
}
