//! Interop with Perl's Gearman::Client and Gearman::Worker (libgearman-client-perl 2.004):
//! tests/interop/client.pl and tests/interop/worker.pl.
//!
//! What they send: the worker uses plain GRAB_JOB and PRE_SLEEP (it expects JOB_ASSIGN, no
//! unique), and polls with GRAB_JOB every 10-12 s even without a NOOP; a dying handler makes it
//! send WORK_EXCEPTION *and then* WORK_FAIL for the same handle. The client (with
//! `exceptions => 1`) sends OPTION_REQ exceptions, submits with an empty unique unless `uniq`
//! is given, and asks for `status\n` in text on a cached connection.

mod support;

use support::*;

fn have_perl() -> bool {
    require(
        have_perl_gearman(),
        "Perl Gearman::Client (libgearman-client-perl)",
    )
}

fn perl_worker(s: &Server) -> Proc {
    script_worker(s, "perl", "worker.pl", 5)
}

fn perl_client(s: &Server, scenario: &str, arg: &str) -> String {
    script_client(s, "perl", "client.pl", scenario, arg)
}

/// What the client's `do` scenario prints against a working worker.
const PERL_DO: &str = "normal olleh\n\
         high hgih\n\
         low wol\n\
         progress done:p status:1/2 data:chunk warning:careful status:2/2\n\
         fail undef on_fail=1\n\
         throw undef on_exception=boom on_fail=0\n";

#[test]
fn perl_do_task_priorities_status_data_fail_exception() {
    if !have_perl() {
        return;
    }
    let s = Server::start(&[]);
    let _w = perl_worker(&s);
    assert_eq!(perl_client(&s, "do", ""), PERL_DO);
}

#[test]
fn perl_dispatch_background_runs_in_priority_order() {
    if !have_perl() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        perl_client(&s, "background", ""),
        "low L1 handle\n\
         normal N1 handle\n\
         high H1 handle\n\
         low L2 handle\n\
         normal N2 handle\n\
         high H2 handle\n\
         distinct 6\n\
         status log 6 0 0\n"
    );
    let mut admin = s.connect();
    assert_eq!(admin.admin("prioritystatus", true), "log\t2\t2\t2\t0\n.\n");
    let mut w = perl_worker(&s);
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
}

#[test]
fn perl_get_status_while_running() {
    if !have_perl() {
        return;
    }
    let s = Server::start(&[]);
    let _w = perl_worker(&s);
    let dir = TempDir::new("perl-status");
    let flag = dir.path("release");
    assert_eq!(
        perl_client(&s, "status", flag.to_str().unwrap()),
        "submitted ok\n\
         get_status 1 1 3 7\n\
         finished 0 0 0 0\n"
    );
}

#[test]
fn perl_dying_handler_reports_exception() {
    if !have_perl() {
        return;
    }
    let s = Server::start(&[]);
    let mut w = perl_worker(&s);
    let out = perl_client(&s, "die", "");
    // The client sees the WORK_EXCEPTION (the worker froze the error text with Storable).
    assert!(
        out.starts_with("die undef on_exception=died on_fail=0\n"),
        "{out:?}\n{}",
        w.describe()
    );
    w.wait_stdout("job die x\n", 5);
}

/// With a long `--grab-wait` the worker's GRAB after each job waits; every next job must
/// reach it at once (six jobs in a row would take six seconds if a wait ran to its end), and
/// the worker must take the late answer to its GRAB in its stride.
#[test]
fn perl_worker_with_a_long_grab_wait() {
    if !have_perl() {
        return;
    }
    let s = Server::start(&["--grab-wait", "1000"]);
    let _w = perl_worker(&s);
    let start = std::time::Instant::now();
    assert_eq!(perl_client(&s, "do", ""), PERL_DO);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(4), "took {took:?}");
}
