//! Workers over real sockets: registration, giving jobs back (death, CANT_DO,
//! RESET_ABILITIES), retries, CAN_DO_TIMEOUT and the NOOP wake-ups. The server runs
//! in-process on a manual clock: time passes (for CAN_DO_TIMEOUT) only by `advance`, and
//! "nothing came" is checked once the server has settled, never after a wait alone.

mod support;

use std::time::Duration;

use support::*;

/// The server with `--job-handle-prefix H:test` plus `extra`, in-process (in_process.rs).
fn server(extra: &[&str]) -> InProcess {
    let mut args = vec!["--job-handle-prefix", PREFIX];
    args.extend_from_slice(extra);
    InProcess::start(&args)
}

/// Nothing has come to `c`, now that the server has done all it had to do.
fn silent(s: &InProcess, c: &mut Conn) {
    s.settle();
    c.expect_silence(1);
}

#[test]
fn can_do_twice_counts_twice_and_cant_do_removes_all() {
    let s = server(&[]);
    let mut w = s.connect();
    w.can_do(&["dupf", "dupf", "other"]);
    sync(&mut w);
    let mut a = s.connect();
    assert_eq!(
        a.admin("status", true),
        "dupf\t0\t0\t2\nother\t0\t0\t1\n.\n"
    );
    let out = a.admin("workers", true);
    assert!(out.ends_with(" : other dupf dupf\n.\n"), "{out:?}");
    w.send_req(t::CANT_DO, &[b"dupf"]);
    sync(&mut w);
    // A function with no worker and no job is forgotten.
    assert_eq!(a.admin("status", true), "other\t0\t0\t1\n.\n");
    w.send_req(t::RESET_ABILITIES, &[]);
    sync(&mut w);
    assert_eq!(a.admin("status", true), ".\n");
    assert_eq!(a.admin("workers", true), ".\n");
    // Without abilities, no job.
    a.submit(t::SUBMIT_JOB_BG, "other", "", b"x");
    assert!(w.grab_uniq().is_none());
}

#[test]
fn cant_do_of_an_unknown_function_is_harmless() {
    let s = server(&[]);
    let mut w = worker(&s, &["f"]);
    w.send_req(t::CANT_DO, &[b"never-seen"]);
    sync(&mut w);
    assert_eq!(w.admin("status", true), "f\t0\t0\t1\n.\n");
}

#[test]
fn worker_killed_mid_job_gives_it_back_to_the_head_of_the_queue() {
    let s = server(&[]);
    let mut c = s.connect();
    let h1 = c.submit(t::SUBMIT_JOB, "fk", "one", b"data-1");
    let h2 = c.submit(t::SUBMIT_JOB, "fk", "two", b"data-2");
    {
        let mut w1 = worker(&s, &["fk"]);
        let (hh, _, _, _) = w1.grab_uniq().unwrap();
        assert_eq!(hh, h1);
        work(&mut w1, t::WORK_STATUS, &h1, &[b"1", b"2"]);
        assert_eq!(c.expect(t::WORK_STATUS), hb(&h1, &[b"1", b"2"]));
    }
    let mut a = s.connect();
    wait_status(&mut a, "fk", 2, 0);
    assert_eq!(
        a.admin("show jobs", true),
        format!("{h1}\t1\t0\t0\n{h2}\t0\t0\t0\n.\n")
    );
    // The progress of the dead run is forgotten.
    a.send_req(t::GET_STATUS, &[h1.as_bytes()]);
    assert_eq!(a.expect(t::STATUS_RES), hb(&h1, &[b"1", b"0", b"0", b"0"]));
    let mut w2 = worker(&s, &["fk"]);
    let (hh, f, u, d) = w2.grab_uniq().unwrap();
    assert_eq!(
        (hh.as_str(), f.as_str(), u.as_str(), &d[..]),
        (h1.as_str(), "fk", "one", &b"data-1"[..])
    );
    work(&mut w2, t::WORK_COMPLETE, &h1, &[b"r1"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&h1, &[b"r1"]));
    s.wait_log("(retry 1)", 3);
}

#[test]
fn jobs_given_back_together_keep_their_order_at_the_head() {
    let s = server(&[]);
    let mut c = s.connect();
    for u in ["j1", "j2", "j3"] {
        c.submit(t::SUBMIT_JOB_BG, "fo", u, b"");
    }
    {
        let mut w = worker(&s, &["fo"]);
        assert_eq!(w.grab_uniq().unwrap().2, "j1");
        assert_eq!(w.grab_uniq().unwrap().2, "j2");
    }
    wait_status(&mut c, "fo", 3, 0);
    let mut w = worker(&s, &["fo"]);
    let mut got = vec![];
    while let Some((_, _, u, _)) = w.grab_uniq() {
        got.push(u);
    }
    assert_eq!(got, ["j1", "j2", "j3"], "given-back jobs keep their order");
}

#[test]
fn job_retries_limit_fails_the_job() {
    let s = server(&["-j", "2"]);
    let mut c = s.connect();
    let handle = c.submit(t::SUBMIT_JOB, "fr", "r", b"x");
    let mut a = s.connect();
    for round in 1..=2u32 {
        {
            let mut w = worker(&s, &["fr"]);
            let (hh, _, _, _) = w.grab_uniq().expect("the job is handed out again");
            assert_eq!(hh, handle);
        }
        if round == 1 {
            wait_status(&mut a, "fr", 1, 0);
            assert_eq!(
                a.admin("show jobs", true),
                format!("{handle}\t1\t0\t0\n.\n")
            );
        }
    }
    let p = c.read_packet();
    assert_eq!(p.ptype, t::WORK_FAIL, "{p:?}");
    assert_eq!(p.args()[0], handle.as_bytes());
    s.wait_log("Dropped job due to max retry count", 3);
    assert_eq!(a.admin("show jobs", true), ".\n");
    // No job and no worker left: `fr` is forgotten.
    assert_eq!(a.admin("status", true), ".\n");
}

#[test]
fn background_job_retry_limit_drops_it() {
    let s = server(&["--job-retries", "1"]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fr", "", b"x");
    {
        let mut w = worker(&s, &["fr"]);
        w.grab_uniq().unwrap();
    }
    s.wait_log("Dropped job due to max retry count", 3);
    assert_eq!(c.admin("show jobs", true), ".\n");
}

#[test]
fn cant_do_while_holding_a_job_gives_it_back() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fa", "fb"]);
    let ha = c.submit(t::SUBMIT_JOB, "fa", "", b"a");
    let hbb = c.submit(t::SUBMIT_JOB, "fb", "", b"b");
    let (h1, _, _, _) = w.grab_uniq().unwrap();
    let (h2, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!((&h1, &h2), (&ha, &hbb));
    w.send_req(t::CANT_DO, &[b"fa"]);
    sync(&mut w);
    assert_eq!(
        w.admin("show jobs", true),
        format!("{ha}\t1\t0\t0\n{hbb}\t0\t0\t0\n.\n")
    );
    assert_eq!(w.admin("status", true), "fa\t1\t0\t0\nfb\t1\t1\t1\n.\n");
    // The job of fb is still this worker's.
    work(&mut w, t::WORK_COMPLETE, &hbb, &[b"rb"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&hbb, &[b"rb"]));
    // The given-back job is for someone else now; a late result is refused.
    work(&mut w, t::WORK_COMPLETE, &ha, &[b"late"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    let mut w2 = worker(&s, &["fa"]);
    let (hh, _, _, d) = w2.grab_uniq().unwrap();
    assert_eq!((hh, d), (ha, b"a".to_vec()));
}

#[test]
fn reset_abilities_while_holding_a_job_gives_it_back() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fa"]);
    let handle = c.submit(t::SUBMIT_JOB, "fa", "", b"a");
    w.grab_uniq().unwrap();
    w.send_req(t::RESET_ABILITIES, &[]);
    sync(&mut w);
    assert_eq!(
        w.admin("show jobs", true),
        format!("{handle}\t1\t0\t0\n.\n")
    );
    assert_eq!(w.admin("status", true), "fa\t1\t0\t0\n.\n");
    let mut w2 = worker(&s, &["fa"]);
    let (hh, _, _, _) = w2.grab_uniq().unwrap();
    assert_eq!(hh, handle);
}

#[test]
fn can_do_timeout_fails_a_job_that_runs_too_long() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.send_req(t::CAN_DO_TIMEOUT, &[b"slow", b"300"]);
    sync(&mut w);
    let handle = c.submit(t::SUBMIT_JOB, "slow", "", b"x");
    let t0 = s.now_ms();
    let (hh, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(hh, handle);
    let p = s.advance_until_packet(&mut c, 10, 5000);
    let elapsed = Duration::from_millis(s.now_ms() - t0);
    assert_eq!(p.ptype, t::WORK_FAIL, "{p:?}");
    assert_eq!(p.args()[0], handle.as_bytes());
    assert!(
        elapsed >= Duration::from_millis(250),
        "failed after {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "failed after {elapsed:?}");
    s.wait_log("CAN_DO_TIMEOUT", 2);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"late"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    assert_eq!(w.admin("status", true), "slow\t0\t0\t1\n.\n");
}

#[test]
fn can_do_timeout_does_not_fire_for_a_job_finished_in_time() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.send_req(t::CAN_DO_TIMEOUT, &[b"quick", b"300"]);
    sync(&mut w);
    let handle = c.submit(t::SUBMIT_JOB, "quick", "", b"x");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"r"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"r"]));
    // A second job after the first's deadline would have passed.
    s.advance(350);
    silent(&s, &mut c);
    let h2 = c.submit(t::SUBMIT_JOB, "quick", "", b"y");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_COMPLETE, &h2, &[b"r2"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&h2, &[b"r2"]));
    assert!(!s.log().contains("CAN_DO_TIMEOUT"), "{}", s.log());
}

#[test]
fn pre_sleep_then_submit_wakes_with_noop() {
    let s = server(&[]);
    let mut w = worker(&s, &["fs"]);
    w.send_req(t::PRE_SLEEP, &[]);
    silent(&s, &mut w);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fs", "", b"x");
    assert_eq!(w.expect(t::NOOP), b"");
    // One NOOP only, even for more jobs before the worker grabs.
    c.submit(t::SUBMIT_JOB_BG, "fs", "", b"y");
    silent(&s, &mut w);
    assert!(w.grab_uniq().is_some());
}

#[test]
fn pre_sleep_with_work_queued_gets_noop_at_once() {
    let s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fs", "", b"x");
    let mut w = worker(&s, &["fs"]);
    w.send_req(t::PRE_SLEEP, &[]);
    assert_eq!(w.expect(t::NOOP), b"");
}

#[test]
fn pre_sleep_without_can_do_gets_nothing() {
    let s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fs", "", b"x");
    let mut w = s.connect();
    w.send_req(t::PRE_SLEEP, &[]);
    silent(&s, &mut w);
    // Registering while asleep with work queued wakes at once.
    w.can_do(&["fs"]);
    assert_eq!(w.expect(t::NOOP), b"");
}

#[test]
fn sleeping_worker_of_another_function_is_not_woken() {
    let s = server(&[]);
    let mut w = worker(&s, &["mine"]);
    w.send_req(t::PRE_SLEEP, &[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "theirs", "", b"x");
    silent(&s, &mut w);
}

fn sleepers(s: &InProcess, n: usize, func: &str) -> Vec<Conn> {
    let mut ws: Vec<Conn> = (0..n).map(|_| worker(s, &[func])).collect();
    for w in ws.iter_mut() {
        w.send_req(t::PRE_SLEEP, &[]);
        sync(w);
    }
    ws
}

/// Which of the sleepers got a NOOP (the others must get nothing), once the server settled.
fn woken(s: &InProcess, ws: &mut [Conn]) -> Vec<usize> {
    s.settle();
    (0..ws.len()).filter(|&i| got_noop(&mut ws[i], 1)).collect()
}

#[test]
fn default_wakeup_is_one_sleeper_per_new_job() {
    let s = server(&[]);
    let mut ws = sleepers(&s, 3, "fw");
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    let first = woken(&s, &mut ws);
    assert_eq!(first.len(), 1, "one job wakes one sleeper, woke {first:?}");
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"2");
    let second = woken(&s, &mut ws);
    assert_eq!(second.len(), 1, "woke {second:?}");
    assert_ne!(first, second, "an already woken worker is not woken again");
}

#[test]
fn worker_wakeup_zero_wakes_all_sleepers() {
    let s = server(&["-w", "0"]);
    let mut ws = sleepers(&s, 3, "fw");
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    assert_eq!(woken(&s, &mut ws), [0, 1, 2]);
}

#[test]
fn worker_wakeup_two_wakes_two() {
    let s = server(&["--worker-wakeup", "2"]);
    let mut ws = sleepers(&s, 3, "fw");
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    assert_eq!(woken(&s, &mut ws).len(), 2);
}

#[test]
fn a_woken_worker_that_leaves_work_behind_wakes_the_next_sleeper() {
    let s = server(&[]);
    let mut ws = sleepers(&s, 3, "fw");
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"2");
    let first = woken(&s, &mut ws);
    assert_eq!(first.len(), 2, "two jobs wake two sleepers, woke {first:?}");
    let rest = (0..3).find(|i| !first.contains(i)).unwrap();
    // One woken worker grabs and leaves a job behind: the remaining sleeper is woken.
    assert!(ws[first[0]].grab_uniq().is_some());
    assert!(
        got_noop(&mut ws[rest], 1000),
        "the last sleeper should be woken"
    );
    // The one that grabbed is awake and gets nothing.
    silent(&s, &mut ws[first[0]]);
}

#[test]
fn a_given_back_job_wakes_a_sleeper() {
    let s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    let mut holder = worker(&s, &["fw"]);
    holder.grab_uniq().unwrap();
    let mut sleeper = worker(&s, &["fw"]);
    sleeper.send_req(t::PRE_SLEEP, &[]);
    silent(&s, &mut sleeper);
    drop(holder);
    assert_eq!(sleeper.expect(t::NOOP), b"");
    assert!(sleeper.grab_uniq().is_some());
}

#[test]
fn sleeper_is_woken_again_after_grabbing() {
    let s = server(&[]);
    let mut w = worker(&s, &["fw"]);
    let mut c = s.connect();
    for round in 0..3 {
        w.send_req(t::PRE_SLEEP, &[]);
        silent(&s, &mut w);
        c.submit(t::SUBMIT_JOB_BG, "fw", "", format!("{round}").as_bytes());
        assert_eq!(w.expect(t::NOOP), b"", "round {round}");
        let (hh, _, _, _) = w.grab_uniq().unwrap();
        work(&mut w, t::WORK_COMPLETE, &hh, &[b""]);
        assert!(w.grab_uniq().is_none());
    }
}

#[test]
fn a_woken_worker_that_leaves_without_grabbing_passes_the_wakeup_on() {
    let s = server(&[]);
    let mut ws = sleepers(&s, 2, "fw");
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fw", "", b"1");
    let first = woken(&s, &mut ws);
    assert_eq!(first.len(), 1, "woke {first:?}");
    let other = 1 - first[0];
    let mut other_w = ws.remove(other);
    drop(ws);
    // The job is still queued and a worker for it sleeps: it must learn about the job.
    assert!(
        got_noop(&mut other_w, 1000),
        "the remaining sleeper was never woken for the queued job"
    );
    assert!(other_w.grab_uniq().is_some());
}

#[test]
fn a_woken_worker_that_grabs_another_functions_job_passes_the_wakeup_on() {
    let s = server(&[]);
    // A can do fx and fy, B only fx; both sleep.
    let mut ws = vec![worker(&s, &["fx", "fy"]), worker(&s, &["fx"])];
    for w in ws.iter_mut() {
        w.send_req(t::PRE_SLEEP, &[]);
        sync(w);
    }
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fx", "", b"x");
    let first = woken(&s, &mut ws);
    assert_eq!(first.len(), 1, "woke {first:?}");
    if first == [1] {
        // B was woken: the scenario needs A woken; B's grab takes the job and ends it.
        eprintln!("SKIP: the rotation woke B first");
        return;
    }
    // A HIGH job for fy arrives; A, already woken, grabs it (global priority) and leaves
    // the fx job behind, which only B could take now.
    c.submit(t::SUBMIT_JOB_HIGH_BG, "fy", "", b"y");
    let (_, f, _, _) = ws[0].grab_uniq().unwrap();
    assert_eq!(f, "fy");
    assert!(
        got_noop(&mut ws[1], 1000),
        "work was left behind for B, but B was never woken"
    );
}

#[test]
fn can_do_past_max_functions_per_worker_gets_an_error_and_the_connection_stays() {
    let s = server(&["--max-functions-per-worker", "2"]);
    let mut w = s.connect();
    w.can_do(&["m1", "m2", "m3"]);
    let err = w.expect(t::ERROR);
    assert!(
        err.starts_with(b"TOO_MANY_FUNCTIONS\0"),
        "{}",
        err.escape_ascii()
    );
    // Still served, and m3 was not registered (nor made).
    sync(&mut w);
    let mut a = s.connect();
    assert_eq!(a.admin("status", true), "m1\t0\t0\t1\nm2\t0\t0\t1\n.\n");
    // The log reaches the test through a pipe and a reader thread: wait for the line.
    s.wait_log("--max-functions-per-worker", 10);
    w.can_do(&["m4"]);
    assert!(w.expect(t::ERROR).starts_with(b"TOO_MANY_FUNCTIONS\0"));
    sync(&mut w);
    assert_eq!(
        s.log().matches("refusing more").count(),
        1,
        "one WARNING per connection"
    );
    a.submit(t::SUBMIT_JOB_BG, "m2", "", b"x");
    assert!(w.grab_uniq().is_some());
}

/// Many CAN_DOs on one connection are cheap to make and to drop (they were
/// quadratic), and the worker's jobs still flow. Bounded: 10,000 functions, a few jobs.
#[test]
fn a_worker_of_ten_thousand_functions_registers_works_and_leaves() {
    let s = server(&[]);
    let mut w = s.connect();
    let names: Vec<String> = (0..10_000).map(|i| format!("many-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    w.can_do(&refs);
    sync(&mut w);
    let mut c = s.connect();
    for i in [0, 4_999, 9_999] {
        c.submit(t::SUBMIT_JOB_BG, &names[i], "", b"job");
        let (_, f, _, _) = w.grab_uniq().expect("a job");
        assert_eq!(f, names[i]);
    }
    drop(w);
    let mut a = s.connect();
    wait_admin(&mut a, "workers", true, 4, |s| s == ".\n");
}
