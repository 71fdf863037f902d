//! Interop with Perl's Gearman::Client and Gearman::Worker (libgearman-client-perl 2.004):
//! tests/interop/client.pl and tests/interop/worker.pl.
//!
//! What they send: the worker uses plain GRAB_JOB and PRE_SLEEP (it expects JOB_ASSIGN, no
//! unique), and polls with GRAB_JOB every 10-12 s even without a NOOP; a dying handler makes it
//! send WORK_EXCEPTION *and then* WORK_FAIL for the same handle. The client (with
//! `exceptions => 1`) sends OPTION_REQ exceptions, submits with an empty unique unless `uniq`
//! is given, and asks for `status\n` in text on a cached connection.

use crate::support;

use support::*;

/// The order of the six background `log` jobs of the `background` scenario.
const ORDER: [&str; 6] = ["H1", "H2", "N1", "N2", "L1", "L2"];

/// What the client's `do` scenario prints against a working worker.
const PERL_DO: &str = "normal olleh\n\
         high hgih\n\
         low wol\n\
         progress done:p status:1/2 data:chunk warning:careful status:2/2\n\
         fail undef on_fail=1\n\
         throw undef on_exception=boom on_fail=0\n";

#[test]
fn perl_do_task_priorities_status_data_fail_exception() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = PERL_SCRIPTS.worker(&s);
    assert_eq!(PERL_SCRIPTS.client(&s, "do", ""), PERL_DO);
}

#[test]
fn perl_dispatch_background_runs_in_priority_order() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        PERL_SCRIPTS.client(&s, "background", ""),
        "low L1 handle\n\
         normal N1 handle\n\
         high H1 handle\n\
         low L2 handle\n\
         normal N2 handle\n\
         high H2 handle\n\
         distinct 6\n\
         status log 6 0 0\n"
    );
    let (mut admin, _w) = queued_jobs_run_by_priority(&s, 2, |s| PERL_SCRIPTS.worker(s), &ORDER);
    wait_admin(&mut admin, "status", true, 3, |st| {
        status_row(st, "log") == Some((0, 0, 1))
    });
}

#[test]
fn perl_client_prefix_joins_the_function_with_a_tab() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    // The worker side in raw bytes: it does "pre\treverse", as a Perl worker with the same
    // prefix would register it.
    let name: &[u8] = b"pre\treverse";
    let mut w = s.connect();
    w.send_req(t::CAN_DO, &[name]);
    w.send_req(t::ECHO_REQ, &[b"sync"]);
    w.expect(t::ECHO_RES);
    let worker = std::thread::spawn(move || {
        w.send_req(t::PRE_SLEEP, &[]);
        w.expect(t::NOOP);
        w.send_req(t::GRAB_JOB, &[]);
        let assigned = w.expect(t::JOB_ASSIGN);
        let mut args = assigned.splitn(3, |&b| b == 0);
        let (handle, func, data) = (
            args.next().unwrap().to_vec(),
            args.next().unwrap().to_vec(),
            args.next().unwrap().to_vec(),
        );
        let reply: Vec<u8> = data.iter().rev().copied().collect();
        w.send_req(t::WORK_COMPLETE, &[&handle, &reply]);
        (func, w)
    });
    assert_eq!(
        PERL_SCRIPTS.client(&s, "prefix", ""),
        "prefix cba\nbackground handle\n"
    );
    let (func, _w) = worker.join().unwrap();
    assert_eq!(func, name);
    let mut a = s.connect();
    assert_eq!(
        a.admin_bytes(b"status", true),
        b"pre\treverse\t1\t0\t1\n.\n"
    );
}

#[test]
fn perl_get_status_while_running() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let _w = PERL_SCRIPTS.worker(&s);
    let dir = TempDir::new("perl-status");
    let flag = dir.path("release");
    assert_eq!(
        PERL_SCRIPTS.client(&s, "status", flag.to_str().unwrap()),
        "submitted ok\n\
         get_status 1 1 3 7\n\
         finished 0 0 0 0\n"
    );
}

#[test]
fn perl_dying_handler_reports_exception() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    let s = Server::start(&[]);
    let mut w = PERL_SCRIPTS.worker(&s);
    let out = PERL_SCRIPTS.client(&s, "die", "");
    // The client sees the WORK_EXCEPTION (the worker froze the error text with Storable).
    assert!(
        out.starts_with("die undef on_exception=died on_fail=0\n"),
        "{out:?}\n{}",
        w.describe()
    );
    w.wait_stdout("job die x\n", 5);
}

/// A long `--grab-wait` delays no job (see `Scripts::do_under_a_long_grab_wait`).
#[test]
fn perl_worker_with_a_long_grab_wait() {
    if !PERL_SCRIPTS.present() {
        return;
    }
    PERL_SCRIPTS.do_under_a_long_grab_wait(PERL_DO);
}
