//! Coalescing over real sockets: clients that submit the same unique share one job (joining
//! a queued or running one), uniques at and past their bound, `-` uniques on the data, and
//! what a job does when its clients join or leave (background joiners, foreground leavers).

use crate::support;

use support::*;

#[test]
fn coalescing_three_clients_and_a_background_joiner() {
    let s = server(&[]);
    let mut c1 = s.connect();
    let mut c2 = s.connect();
    let mut c3 = s.connect();
    let mut c4 = s.connect();
    let handle = c1.submit(t::SUBMIT_JOB, "fc", "U1", b"data-1");
    assert_eq!(handle, h(1));
    assert_eq!(c2.submit(t::SUBMIT_JOB, "fc", "U1", b"other-data"), handle);
    assert_eq!(c3.submit(t::SUBMIT_JOB_LOW, "fc", "U1", b"x"), handle);
    assert_eq!(c4.submit(t::SUBMIT_JOB_BG, "fc", "U1", b"y"), handle);
    assert_eq!(c1.admin("status", true), "fc\t1\t0\t0\n.\n");
    let mut w = worker(&s, &["fc"]);
    let (hh, _, u, d) = w.grab_uniq().unwrap();
    // The first submit's data is the job's data.
    assert_eq!(
        (hh.as_str(), u.as_str(), &d[..]),
        (handle.as_str(), "U1", &b"data-1"[..])
    );
    assert!(w.grab_uniq().is_none());
    work(&mut w, t::WORK_STATUS, &handle, &[b"1", b"2"]);
    work(&mut w, t::WORK_DATA, &handle, &[b"chunk"]);
    work(&mut w, t::WORK_WARNING, &handle, &[b"careful"]);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"final"]);
    for c in [&mut c1, &mut c2, &mut c3] {
        assert_eq!(c.expect(t::WORK_STATUS), hb(&handle, &[b"1", b"2"]));
        assert_eq!(c.expect(t::WORK_DATA), hb(&handle, &[b"chunk"]));
        assert_eq!(c.expect(t::WORK_WARNING), hb(&handle, &[b"careful"]));
        assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"final"]));
    }
    // The background submitter of the same job is sent none of it: its echo comes first.
    sync(&mut c4);
}

#[test]
fn a_client_joining_a_running_job_gets_the_rest() {
    let s = server(&[]);
    let mut c1 = s.connect();
    let mut c2 = s.connect();
    let mut w = worker(&s, &["fj"]);
    let handle = c1.submit(t::SUBMIT_JOB, "fj", "run", b"x");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_DATA, &handle, &[b"early"]);
    assert_eq!(c1.expect(t::WORK_DATA), hb(&handle, &[b"early"]));
    assert_eq!(c2.submit(t::SUBMIT_JOB, "fj", "run", b"x"), handle);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"done"]);
    assert_eq!(c1.expect(t::WORK_COMPLETE), hb(&handle, &[b"done"]));
    assert_eq!(c2.expect(t::WORK_COMPLETE), hb(&handle, &[b"done"]));
}

#[test]
fn same_unique_under_two_functions_is_two_jobs() {
    let s = server(&[]);
    let mut c = s.connect();
    let a = c.submit(t::SUBMIT_JOB_BG, "fx", "same", b"d");
    let b = c.submit(t::SUBMIT_JOB_BG, "fy", "same", b"d");
    assert_ne!(a, b);
    assert_eq!(c.admin("status", true), "fx\t1\t0\t0\nfy\t1\t0\t0\n.\n");
}

#[test]
fn empty_unique_never_coalesces() {
    let s = server(&[]);
    let mut c = s.connect();
    let a = c.submit(t::SUBMIT_JOB_BG, "fe", "", b"d");
    let b = c.submit(t::SUBMIT_JOB_BG, "fe", "", b"d");
    let d = c.submit(t::SUBMIT_JOB, "fe", "", b"d");
    assert_eq!([a, b, d], [h(1), h(2), h(3)]);
}

#[test]
fn unique_dash_coalesces_on_the_data() {
    let s = server(&[]);
    let mut c = s.connect();
    let a = c.submit(t::SUBMIT_JOB_BG, "fd", "-", b"payload");
    let b = c.submit(t::SUBMIT_JOB_BG, "fd", "-", b"payload");
    let d = c.submit(t::SUBMIT_JOB_BG, "fd", "-", b"other");
    assert_eq!(a, b);
    assert_ne!(a, d);
    // Empty data with `-` does not coalesce.
    let e1 = c.submit(t::SUBMIT_JOB_BG, "fd", "-", b"");
    let e2 = c.submit(t::SUBMIT_JOB_BG, "fd", "-", b"");
    assert_ne!(e1, e2);
    // A literal unique equal to the data is a different key.
    let lit = c.submit(t::SUBMIT_JOB_BG, "fd", "payload", b"payload");
    assert_ne!(lit, a);
}

#[test]
fn after_completion_the_same_unique_is_a_new_job() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fn"]);
    let h1 = c.submit(t::SUBMIT_JOB, "fn", "again", b"x");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_COMPLETE, &h1, &[b""]);
    c.expect(t::WORK_COMPLETE);
    let h2 = c.submit(t::SUBMIT_JOB, "fn", "again", b"x");
    assert_eq!((h1, h2), (h(1), h(2)));
}

#[test]
fn unique_of_64_bytes_is_kept_whole() {
    let s = server(&[]);
    let mut c = s.connect();
    let u64s = "u".repeat(63) + "Z";
    let handle = c.submit(t::SUBMIT_JOB_BG, "fl", &u64s, b"d");
    let mut w = worker(&s, &["fl"]);
    let (hh, _, u, _) = w.grab_uniq().unwrap();
    assert_eq!((hh, u), (handle, u64s.clone()));
    // And it coalesces on all 64 bytes.
    let mut other = s.connect();
    let h2 = other.submit(t::SUBMIT_JOB_BG, "fl", &u64s, b"d");
    assert_eq!(h2, h(1));
    let u63 = "u".repeat(63);
    assert_eq!(other.submit(t::SUBMIT_JOB_BG, "fl", &u63, b"d"), h(2));
}

#[test]
fn unique_of_65_bytes_is_refused() {
    let s = server(&[]);
    let mut c = s.connect();
    let u = "u".repeat(65);
    for p in [
        t::SUBMIT_JOB,
        t::SUBMIT_JOB_BG,
        t::SUBMIT_JOB_HIGH,
        t::SUBMIT_JOB_LOW_BG,
    ] {
        c.send_req(p, &[b"fl", u.as_bytes(), b"d"]);
        expect_error(&mut c, "ARGUMENT_TOO_LARGE", "Unique value too large");
    }
    c.send_req(
        t::SUBMIT_REDUCE_JOB,
        &[b"fl", u.as_bytes(), b"r", b"", b"d"],
    );
    expect_error(&mut c, "ARGUMENT_TOO_LARGE", "Unique value too large");
    sync(&mut c);
    assert_eq!(c.admin("show jobs", true), ".\n");
}

#[test]
fn foreground_joiner_of_a_background_job_leaving_does_not_kill_it() {
    let s = server(&[]);
    let mut bg = s.connect();
    let handle = bg.submit(t::SUBMIT_JOB_BG, "fb", "keep", b"data");
    {
        let mut fg = s.connect();
        assert_eq!(fg.submit(t::SUBMIT_JOB, "fb", "keep", b"data"), handle);
    }
    // Wait until the server has seen the close; the job must still be there afterwards.
    let mut a = s.connect();
    wait_clients(&mut a, "keep", 0);
    assert_eq!(
        a.admin("show jobs", true),
        format!("{handle}\t0\t0\t1\n.\n")
    );
    let mut w = worker(&s, &["fb"]);
    let (hh, _, _, d) = w.grab_uniq().expect("the background job survives");
    assert_eq!((hh, d), (handle, b"data".to_vec()));
}

#[test]
fn background_joiner_keeps_a_foreground_job_alive() {
    let s = server(&[]);
    let mut bg = s.connect();
    let handle;
    {
        let mut fg = s.connect();
        handle = fg.submit(t::SUBMIT_JOB, "fb2", "keep", b"data");
        assert_eq!(bg.submit(t::SUBMIT_JOB_BG, "fb2", "keep", b"data"), handle);
    }
    wait_clients(&mut bg, "keep", 0);
    let mut w = worker(&s, &["fb2"]);
    let (hh, _, _, _) = w.grab_uniq().expect("a background submit keeps the job");
    assert_eq!(hh, handle);
}

#[test]
fn foreground_job_whose_only_client_left_while_queued_is_dropped() {
    let s = server(&[]);
    {
        let mut fg = s.connect();
        fg.submit(t::SUBMIT_JOB, "fg", "gone", b"data");
    }
    let mut a = s.connect();
    // The job dropped and no worker: `fg` stays listed, as gearmand's does.
    wait_admin(&mut a, "status", true, 4, |o| o == "fg\t0\t0\t0\n.\n");
    let mut w = worker(&s, &["fg"]);
    assert!(w.grab_uniq().is_none());
    w.send_req(t::GRAB_JOB, &[]);
    w.expect(t::NO_JOB);
}

#[test]
fn foreground_job_with_one_client_left_still_runs() {
    let s = server(&[]);
    let mut stay = s.connect();
    let handle = stay.submit(t::SUBMIT_JOB, "fg", "half", b"d");
    {
        let mut leave = s.connect();
        assert_eq!(leave.submit(t::SUBMIT_JOB, "fg", "half", b"d"), handle);
    }
    wait_clients(&mut stay, "half", 1);
    let mut w = worker(&s, &["fg"]);
    w.grab_uniq().expect("still queued");
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"r"]);
    assert_eq!(stay.expect(t::WORK_COMPLETE), hb(&handle, &[b"r"]));
}

/// Poll GET_STATUS_UNIQUE until the job with `unique` has `n` foreground clients.
fn wait_clients(c: &mut support::Conn, unique: &str, n: u32) {
    wait_until(4, "the client count", || {
        c.send_req(t::GET_STATUS_UNIQUE, &[unique.as_bytes()]);
        let b = c.expect(t::STATUS_RES_UNIQUE);
        let args: Vec<&[u8]> = b.split(|&x| x == 0).collect();
        assert_eq!(args[1], b"1", "the job {unique} is gone: {b:?}");
        args[5] == n.to_string().as_bytes()
    });
}

#[test]
fn a_running_job_whose_clients_all_left_finishes_quietly() {
    let s = server(&[]);
    let mut w = worker(&s, &["fq"]);
    let handle;
    {
        let mut c = s.connect();
        handle = c.submit(t::SUBMIT_JOB, "fq", "lonely", b"x");
        w.grab_uniq().unwrap();
    }
    let mut a = s.connect();
    // The job keeps running without clients.
    wait_clients(&mut a, "lonely", 0);
    assert_eq!(a.admin("status", true), "fq\t1\t1\t1\n.\n");
    work(&mut w, t::WORK_DATA, &handle, &[b"nobody listens"]);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"r"]);
    // No ERROR comes before the ECHO reply.
    sync(&mut w);
    assert_eq!(a.admin("status", true), "fq\t0\t0\t1\n.\n");
}
