//! Interop with PHP's pecl/gearman (php-gearman, on libgearman): tests/interop/client.php and
//! tests/interop/worker.php.
//!
//! What pecl sends: `OPTION_REQ exceptions` on every connection (addServer; the client sends it
//! a second time before its first job) and throws if the server refuses; workers send CAN_DO in
//! reverse order of addFunction, then GRAB_JOB_ALL / PRE_SLEEP; SET_CLIENT_ID from setId();
//! SUBMIT_JOB* with a generated UUID unique unless one is given; runTasks() pipelines its
//! submits newest task first.

mod support;

use support::*;

fn have_php() -> bool {
    require(
        have_php_gearman(),
        "php-cli with the gearman extension (php-gearman)",
    )
}

fn php_worker(s: &Server) -> Proc {
    script_worker(s, "php", "worker.php", 5)
}

fn php_client(s: &Server, scenario: &str, arg: &str) -> String {
    script_client(s, "php", "client.php", scenario, arg)
}

/// What the client's `do` scenario prints against a working worker.
const PHP_DO: &str = "doNormal lamroNod aiv SUCCESS\n\
         doHigh hgiHod aiv SUCCESS\n\
         doLow woLod aiv SUCCESS\n\
         throw '' WORK_EXCEPTION\n\
         fail '' WORK_FAIL\n\
         progress SUCCESS=chunkdone:p\n";

#[test]
fn php_do_normal_high_low_exception_fail_data() {
    if !have_php() {
        return;
    }
    let s = Server::start(&[]);
    let _w = php_worker(&s);
    assert_eq!(php_client(&s, "ping", ""), "ping true\n");
    assert_eq!(php_client(&s, "do", ""), PHP_DO);
}

#[test]
fn php_add_tasks_run_tasks_callbacks() {
    if !have_php() {
        return;
    }
    let s = Server::start(&[]);
    let _w = php_worker(&s);
    assert_eq!(
        php_client(&s, "tasks", ""),
        "runTasks true SUCCESS\n\
         t1 complete:cba\n\
         t2 status:1/2 data:chunk warning:careful status:2/2 complete:done:p\n\
         t3 exception:boom\n\
         t4 fail:\n"
    );
}

#[test]
fn php_background_jobs_run_in_priority_order() {
    if !have_php() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        php_client(&s, "background", ""),
        "doLowBackground L1 SUCCESS handle\n\
         doBackground N1 SUCCESS handle\n\
         doHighBackground H1 SUCCESS handle\n\
         doLowBackground L2 SUCCESS handle\n\
         doBackground N2 SUCCESS handle\n\
         doHighBackground H2 SUCCESS handle\n\
         distinct 6\n"
    );
    let mut admin = s.connect();
    assert_eq!(admin.admin("prioritystatus", true), "log\t2\t2\t2\t0\n.\n");
    let mut w = php_worker(&s);
    w.wait_stdout("job log L2\n", 5);
    let order: Vec<String> = w
        .stdout()
        .lines()
        .filter_map(|l| l.strip_prefix("job log ").map(str::to_string))
        .collect();
    assert_eq!(order, ["H1", "H2", "N1", "N2", "L1", "L2"]);
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
    if !have_php() {
        return;
    }
    let s = Server::start(&[]);
    let _w = php_worker(&s);
    let dir = TempDir::new("php-status");
    let flag = dir.path("release");
    assert_eq!(
        php_client(&s, "status", flag.to_str().unwrap()),
        "submitted SUCCESS\n\
         jobStatus 1 1 3 7\n\
         jobStatusByUniqueKey 1 1 3 7\n\
         unknown 0 0 0 0\n\
         finished 0 0 0 0\n"
    );
}

/// With a long `--grab-wait` the worker's GRAB after each job waits; every next job must
/// reach it at once (six jobs in a row would take six seconds if a wait ran to its end), and
/// the worker must take the late answer to its GRAB in its stride.
#[test]
fn php_worker_with_a_long_grab_wait() {
    if !have_php() {
        return;
    }
    let s = Server::start(&["--grab-wait", "1000"]);
    let _w = php_worker(&s);
    let start = std::time::Instant::now();
    assert_eq!(php_client(&s, "do", ""), PHP_DO);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(4), "took {took:?}");
}
