//! Interop with PHP's pecl/gearman (php-gearman, on libgearman): tests/interop/client.php and
//! tests/interop/worker.php.
//!
//! What pecl sends: `OPTION_REQ exceptions` on every connection (addServer; the client sends it
//! a second time before its first job) and throws if the server refuses; workers send CAN_DO in
//! reverse order of addFunction, then GRAB_JOB_ALL / PRE_SLEEP; SET_CLIENT_ID from setId();
//! SUBMIT_JOB* with a generated UUID unique unless one is given; runTasks() pipelines its
//! submits newest task first.

use crate::support;

use support::*;

/// The order of the six background `log` jobs of the `background` scenario.
const ORDER: [&str; 6] = ["H1", "H2", "N1", "N2", "L1", "L2"];

/// What the client's `do` scenario prints against a working worker.
const PHP_DO: &str = "doNormal lamroNod aiv SUCCESS\n\
         doHigh hgiHod aiv SUCCESS\n\
         doLow woLod aiv SUCCESS\n\
         throw '' WORK_EXCEPTION\n\
         fail '' WORK_FAIL\n\
         progress SUCCESS=chunkdone:p\n";

#[test]
fn php_do_normal_high_low_exception_fail_data() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = PHP_SCRIPTS.worker(&s);
    assert_eq!(PHP_SCRIPTS.client(&s, "ping", ""), "ping true\n");
    assert_eq!(PHP_SCRIPTS.client(&s, "do", ""), PHP_DO);
}

#[test]
fn php_add_tasks_run_tasks_callbacks() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = PHP_SCRIPTS.worker(&s);
    assert_eq!(
        PHP_SCRIPTS.client(&s, "tasks", ""),
        "runTasks true SUCCESS\n\
         t1 complete:cba\n\
         t2 status:1/2 data:chunk warning:careful status:2/2 complete:done:p\n\
         t3 exception:boom\n\
         t4 fail:\n"
    );
}

#[test]
fn php_background_jobs_run_in_priority_order() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        PHP_SCRIPTS.client(&s, "background", ""),
        "doLowBackground L1 SUCCESS handle\n\
         doBackground N1 SUCCESS handle\n\
         doHighBackground H1 SUCCESS handle\n\
         doLowBackground L2 SUCCESS handle\n\
         doBackground N2 SUCCESS handle\n\
         doHighBackground H2 SUCCESS handle\n\
         distinct 6\n"
    );
    let (mut admin, _w) = queued_jobs_run_by_priority(&s, 2, |s| PHP_SCRIPTS.worker(s), &ORDER);
    wait_admin(&mut admin, "status", true, 3, |st| {
        status_row(st, "log") == Some((0, 0, 1))
    });
    // The worker's SET_CLIENT_ID shows in `workers`, with its functions newest registration
    // first, as gearmand lists them (pecl sends CAN_DO in reverse order of addFunction).
    let workers = admin.admin("workers", true);
    assert!(
        workers
            .lines()
            .any(|l| l.ends_with(" 127.0.0.1 php-worker : reverse progress throw fail log hold")),
        "{workers:?}"
    );
}

#[test]
fn php_job_status_while_running() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = PHP_SCRIPTS.worker(&s);
    let dir = TempDir::new("php-status");
    let flag = dir.path("release");
    assert_eq!(
        PHP_SCRIPTS.client(&s, "status", flag.to_str().unwrap()),
        "submitted SUCCESS\n\
         jobStatus 1 1 3 7\n\
         jobStatusByUniqueKey 1 1 3 7\n\
         unknown 0 0 0 0\n\
         finished 0 0 0 0\n"
    );
}

/// A long `--grab-wait` delays no job (see `Scripts::do_under_a_long_grab_wait`).
#[test]
fn php_worker_with_a_long_grab_wait() {
    if !PHP_SCRIPTS.present() {
        return;
    }
    PHP_SCRIPTS.do_under_a_long_grab_wait(PHP_DO);
}
