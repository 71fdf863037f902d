//! Jobs over real sockets: every SUBMIT variant, the three GRAB packets and their ASSIGN
//! replies, WORK_* forwarding, status queries, priorities, handles and epochs. Coalescing on
//! uniques and the clients that join or leave a job are jobs_coalescing.rs.

use crate::support;

use std::time::{Duration, Instant};

use support::*;

#[test]
fn handles_start_at_one_with_the_prefix() {
    let s = server(&[]);
    let mut c = s.connect();
    for n in 1..=3 {
        assert_eq!(c.submit(t::SUBMIT_JOB_BG, "fh", "", b"x"), h(n));
    }
}

#[test]
fn default_handle_prefix_is_h_hostname() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let handle = c.submit(t::SUBMIT_JOB_BG, "fh", "", b"x");
    let parts: Vec<&str> = handle.split(':').collect();
    assert_eq!(parts.len(), 3, "handle {handle:?}");
    assert_eq!(parts[0], "H");
    assert!(!parts[1].is_empty(), "handle {handle:?}");
    assert_eq!(parts[2], "1");
}

#[test]
fn every_submit_variant_gets_job_created_with_its_priority_and_mode() {
    let s = server(&[]);
    let mut c = s.connect();
    let variants = [
        (t::SUBMIT_JOB, "n", 0),
        (t::SUBMIT_JOB_BG, "nbg", 1),
        (t::SUBMIT_JOB_HIGH, "h", 0),
        (t::SUBMIT_JOB_HIGH_BG, "hbg", 1),
        (t::SUBMIT_JOB_LOW, "l", 0),
        (t::SUBMIT_JOB_LOW_BG, "lbg", 1),
    ];
    for (i, (ptype, uniq, _)) in variants.iter().enumerate() {
        assert_eq!(c.submit(*ptype, "fv", uniq, b"d"), h(i as u32 + 1));
    }
    assert_eq!(c.admin("prioritystatus", true), "fv\t2\t2\t2\t0\n.\n");
    assert_eq!(c.admin("status", true), "fv\t6\t0\t0\n.\n");
    let mut expected = String::new();
    for (i, (_, _, bg)) in variants.iter().enumerate() {
        expected.push_str(&format!("{}\t0\t0\t{bg}\n", h(i as u32 + 1)));
    }
    expected.push_str(".\n");
    assert_eq!(c.admin("show jobs", true), expected);
    // Grab order: HIGH, then NORMAL, then LOW, each oldest first.
    let mut w = worker(&s, &["fv"]);
    let mut order = vec![];
    while let Some((_, _, u, _)) = w.grab_uniq() {
        order.push(u);
    }
    assert_eq!(order, ["h", "hbg", "n", "nbg", "l", "lbg"]);
}

#[test]
fn grab_job_gives_job_assign_handle_func_data() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fa"]);
    let handle = c.submit(t::SUBMIT_JOB, "fa", "u1", b"pay\0load");
    w.send_req(t::GRAB_JOB, &[]);
    assert_eq!(w.expect(t::JOB_ASSIGN), hb(&handle, &[b"fa", b"pay\0load"]));
}

#[test]
fn grab_job_uniq_gives_the_unique_or_empty() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fu"]);
    let h1 = c.submit(t::SUBMIT_JOB_BG, "fu", "my-unique", b"d1");
    let h2 = c.submit(t::SUBMIT_JOB_BG, "fu", "", b"d2");
    w.send_req(t::GRAB_JOB_UNIQ, &[]);
    assert_eq!(
        w.expect(t::JOB_ASSIGN_UNIQ),
        hb(&h1, &[b"fu", b"my-unique", b"d1"])
    );
    w.send_req(t::GRAB_JOB_UNIQ, &[]);
    assert_eq!(w.expect(t::JOB_ASSIGN_UNIQ), hb(&h2, &[b"fu", b"", b"d2"]));
    w.send_req(t::GRAB_JOB_UNIQ, &[]);
    w.expect(t::NO_JOB);
}

#[test]
fn grab_job_all_gives_job_assign_all_only_for_a_reducer_job() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fr"]);
    c.send_req(
        t::SUBMIT_REDUCE_JOB_BACKGROUND,
        &[b"fr", b"ur", b"myreducer", b"agg", b"rdata"],
    );
    let h1 = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    let h2 = c.submit(t::SUBMIT_JOB_BG, "fr", "plain", b"pdata");
    w.send_req(t::GRAB_JOB_ALL, &[]);
    assert_eq!(
        w.expect(t::JOB_ASSIGN_ALL),
        hb(&h1, &[b"fr", b"ur", b"myreducer", b"rdata"])
    );
    w.send_req(t::GRAB_JOB_ALL, &[]);
    assert_eq!(
        w.expect(t::JOB_ASSIGN_UNIQ),
        hb(&h2, &[b"fr", b"plain", b"pdata"])
    );
    w.send_req(t::GRAB_JOB_ALL, &[]);
    w.expect(t::NO_JOB);
}

#[test]
fn submit_reduce_job_foreground_gets_results_background_does_not() {
    let s = server(&[]);
    let mut fg = s.connect();
    let mut bgc = s.connect();
    let mut w = worker(&s, &["fred"]);
    fg.send_req(
        t::SUBMIT_REDUCE_JOB,
        &[b"fred", b"u-fg", b"red", b"", b"data-fg"],
    );
    let hfg = String::from_utf8(fg.expect(t::JOB_CREATED)).unwrap();
    bgc.send_req(
        t::SUBMIT_REDUCE_JOB_BACKGROUND,
        &[b"fred", b"u-bg", b"red", b"", b"data-bg"],
    );
    let hbg = String::from_utf8(bgc.expect(t::JOB_CREATED)).unwrap();
    assert_eq!(
        fg.admin("show jobs", true),
        format!("{hfg}\t0\t0\t0\n{hbg}\t0\t0\t1\n.\n")
    );
    for _ in 0..2 {
        w.send_req(t::GRAB_JOB_ALL, &[]);
        let b = w.expect(t::JOB_ASSIGN_ALL);
        let handle = String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap()).to_string();
        work(&mut w, t::WORK_COMPLETE, &handle, &[b"done"]);
    }
    assert_eq!(fg.expect(t::WORK_COMPLETE), hb(&hfg, &[b"done"]));
    // The server has handled both results: an echo answered first proves the background
    // client was sent nothing (a wait alone would prove nothing).
    sync(&mut bgc);
}

#[test]
fn grab_without_can_do_or_work_is_no_job() {
    let s = server(&[]);
    let mut w = s.connect();
    for g in [t::GRAB_JOB, t::GRAB_JOB_UNIQ, t::GRAB_JOB_ALL] {
        w.send_req(g, &[]);
        w.expect(t::NO_JOB);
    }
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "other", "", b"x");
    w.can_do(&["mine"]);
    for g in [t::GRAB_JOB, t::GRAB_JOB_UNIQ, t::GRAB_JOB_ALL] {
        w.send_req(g, &[]);
        w.expect(t::NO_JOB);
    }
}

#[test]
fn work_packets_are_forwarded_verbatim_to_the_client() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fw"]);
    let handle = c.submit(t::SUBMIT_JOB, "fw", "u", b"in");
    let (hh, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(hh, handle);
    work(&mut w, t::WORK_STATUS, &handle, &[b"3", b"10"]);
    work(&mut w, t::WORK_DATA, &handle, &[b"da\0ta"]);
    work(&mut w, t::WORK_WARNING, &handle, &[b"warn"]);
    work(&mut w, t::WORK_DATA, &handle, &[b""]);
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"res\0ult"]);
    assert_eq!(c.expect(t::WORK_STATUS), hb(&handle, &[b"3", b"10"]));
    assert_eq!(c.expect(t::WORK_DATA), hb(&handle, &[b"da\0ta"]));
    assert_eq!(c.expect(t::WORK_WARNING), hb(&handle, &[b"warn"]));
    assert_eq!(c.expect(t::WORK_DATA), hb(&handle, &[b""]));
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&handle, &[b"res\0ult"]));
    // The job is gone: the worker gets nothing more, a second COMPLETE is refused.
    work(&mut w, t::WORK_COMPLETE, &handle, &[b"again"]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
    // The refusal proves the server handled the second COMPLETE; the client's next packet is
    // its echo, not a second result.
    sync(&mut c);
    assert_eq!(c.admin("status", true), "fw\t0\t0\t1\n.\n");
}

#[test]
fn work_fail_is_forwarded() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut c2 = s.connect();
    let mut w = worker(&s, &["ff"]);
    let handle = c.submit(t::SUBMIT_JOB_HIGH, "ff", "shared", b"x");
    assert_eq!(c2.submit(t::SUBMIT_JOB, "ff", "shared", b"x"), handle);
    w.grab_uniq().unwrap();
    // A trailing NUL (as gearmand itself sends WORK_FAIL) is accepted.
    w.send_req(t::WORK_FAIL, &[handle.as_bytes(), b""]);
    for cl in [&mut c, &mut c2] {
        let p = cl.read_packet();
        assert_eq!(p.ptype, t::WORK_FAIL);
        assert_eq!(p.args()[0], handle.as_bytes());
    }
    sync(&mut w);
    assert_eq!(c.admin("status", true), "ff\t0\t0\t1\n.\n");
}

/// The Rust gearman-worker crate sends `WORK_FAIL handle\0message`. gearmand reads the handle
/// up to the first NUL and fails the job; so does gearwheel, and the client gets the plain
/// WORK_FAIL. GET_STATUS, the other packet whose last argument is a handle, reads it alike.
#[test]
fn bytes_after_a_last_argument_handle_are_not_part_of_it() {
    let s = Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--verbose",
        "DEBUG",
        "--job-handle-prefix",
        PREFIX,
    ]);
    let mut c = s.connect();
    let mut w = worker(&s, &["ff"]);
    let handle = c.submit(t::SUBMIT_JOB, "ff", "", b"x");
    w.grab_uniq().unwrap();
    c.send_req(t::GET_STATUS, &[handle.as_bytes(), b"junk"]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"1", b"1", b"0", b"0"])
    );
    w.send_req(t::WORK_FAIL, &[handle.as_bytes(), b"it went\0wrong"]);
    sync(&mut w);
    assert_eq!(c.expect(t::WORK_FAIL), handle.as_bytes());
    assert_eq!(c.admin("status", true), "ff\t0\t0\t1\n.\n");
    s.wait_log(
        &format!("WORK_FAIL {handle}: after the handle, 13 bytes \"it went\\x00wrong\""),
        5,
    );
    s.wait_log(
        &format!("GET_STATUS {handle}: after the handle, 4 bytes \"junk\""),
        5,
    );
}

#[test]
fn work_exception_goes_to_clients_that_asked_others_get_work_fail() {
    let s = server(&[]);
    let mut wants = s.connect();
    let mut plain = s.connect();
    let mut w = worker(&s, &["fe"]);
    wants.send_req(t::OPTION_REQ, &[b"exceptions"]);
    assert_eq!(wants.expect(t::OPTION_RES), b"exceptions");
    let handle = wants.submit(t::SUBMIT_JOB, "fe", "shared", b"x");
    assert_eq!(plain.submit(t::SUBMIT_JOB, "fe", "shared", b"x"), handle);
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_EXCEPTION, &handle, &[b"boom"]);
    assert_eq!(wants.expect(t::WORK_EXCEPTION), hb(&handle, &[b"boom"]));
    let p = plain.read_packet();
    assert_eq!(p.ptype, t::WORK_FAIL, "{p:?}");
    assert_eq!(p.args()[0], handle.as_bytes());
    // The exception ended the job.
    work(&mut w, t::WORK_COMPLETE, &handle, &[b""]);
    expect_error(
        &mut w,
        "JOB_NOT_FOUND",
        "Job given in work result not found",
    );
}

#[test]
fn exceptions_flag_turns_the_option_on_for_everyone() {
    let s = server(&["--exceptions"]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fe"]);
    let handle = c.submit(t::SUBMIT_JOB, "fe", "", b"x");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_EXCEPTION, &handle, &[b"boom"]);
    assert_eq!(c.expect(t::WORK_EXCEPTION), hb(&handle, &[b"boom"]));
}

#[test]
fn get_status_unknown_queued_and_running() {
    let s = server(&[]);
    let mut c = s.connect();
    c.send_req(t::GET_STATUS, &[b"H:nohost:999"]);
    assert_eq!(c.expect(t::STATUS_RES), b"H:nohost:999\x000\x000\x000\x000");
    let handle = c.submit(t::SUBMIT_JOB_BG, "fs", "", b"x");
    c.send_req(t::GET_STATUS, &[handle.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"1", b"0", b"0", b"0"])
    );
    let mut w = worker(&s, &["fs"]);
    w.grab_uniq().unwrap();
    c.send_req(t::GET_STATUS, &[handle.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"1", b"1", b"0", b"0"])
    );
    work(&mut w, t::WORK_STATUS, &handle, &[b"1", b"4"]);
    sync(&mut w);
    c.send_req(t::GET_STATUS, &[handle.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"1", b"1", b"1", b"4"])
    );
    work(&mut w, t::WORK_COMPLETE, &handle, &[b""]);
    sync(&mut w);
    c.send_req(t::GET_STATUS, &[handle.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"0", b"0", b"0", b"0"])
    );
}

#[test]
fn get_status_unique_counts_foreground_clients() {
    let s = server(&[]);
    c_status_unique(&s);
}

fn c_status_unique(s: &Server) {
    let mut q = s.connect();
    q.send_req(t::GET_STATUS_UNIQUE, &[b"nouniq"]);
    assert_eq!(
        q.expect(t::STATUS_RES_UNIQUE),
        b"nouniq\x000\x000\x000\x000\x000"
    );
    let mut clients: Vec<_> = (0..3).map(|_| s.connect()).collect();
    for c in clients.iter_mut() {
        c.submit(t::SUBMIT_JOB, "fsu", "U1", b"x");
    }
    // A background joiner is not a client.
    q.submit(t::SUBMIT_JOB_BG, "fsu", "U1", b"x");
    q.send_req(t::GET_STATUS_UNIQUE, &[b"U1"]);
    assert_eq!(
        q.expect(t::STATUS_RES_UNIQUE),
        b"U1\x001\x000\x000\x000\x003"
    );
    let mut w = worker(s, &["fsu"]);
    let (handle, _, _, _) = w.grab_uniq().unwrap();
    work(&mut w, t::WORK_STATUS, &handle, &[b"2", b"5"]);
    sync(&mut w);
    q.send_req(t::GET_STATUS_UNIQUE, &[b"U1"]);
    assert_eq!(
        q.expect(t::STATUS_RES_UNIQUE),
        b"U1\x001\x001\x002\x005\x003"
    );
}

#[test]
fn echo_round_trips_any_bytes() {
    let s = server(&[]);
    let mut c = s.connect();
    for data in [&b""[..], b"hello", b"\0\0with\0nuls\0", &[0xffu8; 300][..]] {
        c.send_req(t::ECHO_REQ, &[data]);
        assert_eq!(c.expect(t::ECHO_RES), data);
    }
}

#[test]
fn set_client_id_is_shown_in_workers() {
    let s = server(&[]);
    let mut w = s.connect();
    w.send_req(t::SET_CLIENT_ID, &[b"my-worker-7"]);
    w.can_do(&["fa", "fb"]);
    sync(&mut w);
    let mut a = s.connect();
    let out = a.admin("workers", true);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    let words: Vec<&str> = lines[0].split(' ').collect();
    assert!(words[0].parse::<u32>().is_ok(), "fd in {out:?}");
    assert_eq!(&words[1..], ["127.0.0.1", "my-worker-7", ":", "fb", "fa"]);
    assert_eq!(lines[1], ".");
}

#[test]
fn option_req_exceptions_only() {
    let s = server(&[]);
    let mut c = s.connect();
    c.send_req(t::OPTION_REQ, &[b"exceptions"]);
    assert_eq!(c.expect(t::OPTION_RES), b"exceptions");
    c.send_req(t::OPTION_REQ, &[b"EXCEPTIONS"]);
    assert_eq!(c.expect(t::OPTION_RES), b"EXCEPTIONS");
    for bad in [&b"foo"[..], b"", b"exceptionsx"] {
        c.send_req(t::OPTION_REQ, &[bad]);
        expect_error(
            &mut c,
            "UNKNOWN_OPTION",
            "Server does not recognize given option",
        );
    }
    sync(&mut c);
}

#[test]
fn all_yours_is_accepted_silently() {
    let s = server(&[]);
    let mut w = worker(&s, &["f"]);
    w.send_req(t::ALL_YOURS, &[]);
    // Nothing before the echo's reply: ALL_YOURS got no answer.
    sync(&mut w);
}

#[test]
fn server_only_packets_from_a_client_are_not_expected_and_the_connection_stays() {
    let s = server(&[]);
    let mut c = s.connect();
    let cases: [(u32, &[u8]); 12] = [
        (5, b""),
        (t::NOOP, b""),
        (t::JOB_CREATED, b"H:x:1"),
        (t::NO_JOB, b""),
        (t::JOB_ASSIGN, b"H:x:1\0f\0d"),
        (t::ECHO_RES, b"e"),
        (t::ERROR, b"X\0y"),
        (t::STATUS_RES, b"H:x:1\x000\x000\x000\x000"),
        (t::OPTION_RES, b"exceptions"),
        (t::JOB_ASSIGN_UNIQ, b"H:x:1\0f\0u\0d"),
        (t::JOB_ASSIGN_ALL, b"H:x:1\0f\0u\0r\0d"),
        (t::STATUS_RES_UNIQUE, b"u\x000\x000\x000\x000\x000"),
    ];
    for (ptype, b) in cases {
        c.send(&raw_packet(b"\0REQ", ptype, b));
        let p = c.read_packet();
        assert_eq!(p.ptype, t::ERROR, "type {ptype}: {p:?}");
        assert_eq!(
            split_error(&p.body),
            ("INVALID_COMMAND".into(), "Command not expected".into()),
            "type {ptype}"
        );
    }
    sync(&mut c);
}

#[test]
fn priorities_within_one_function() {
    let s = server(&[]);
    let mut c = s.connect();
    let subs = [
        (t::SUBMIT_JOB_LOW_BG, "L1"),
        (t::SUBMIT_JOB_BG, "N1"),
        (t::SUBMIT_JOB_HIGH_BG, "H1"),
        (t::SUBMIT_JOB_LOW, "L2"),
        (t::SUBMIT_JOB, "N2"),
        (t::SUBMIT_JOB_HIGH, "H2"),
    ];
    for (p, u) in subs {
        c.submit(p, "fp", u, u.as_bytes());
    }
    let mut w = worker(&s, &["fp"]);
    let mut got = vec![];
    while let Some((_, _, u, d)) = w.grab_uniq() {
        assert_eq!(u.as_bytes(), &d[..]);
        got.push(u);
    }
    assert_eq!(got, ["H1", "H2", "N1", "N2", "L1", "L2"]);
}

#[test]
fn priority_is_global_across_functions_whatever_the_can_do_order() {
    for order in [["fnA", "fnB"], ["fnB", "fnA"]] {
        let s = server(&[]);
        let mut c = s.connect();
        c.submit(t::SUBMIT_JOB_LOW_BG, "fnB", "lowB", b"");
        c.submit(t::SUBMIT_JOB_BG, "fnB", "normB", b"");
        c.submit(t::SUBMIT_JOB_HIGH_BG, "fnA", "highA", b"");
        c.submit(t::SUBMIT_JOB_LOW_BG, "fnA", "lowA", b"");
        let mut w = worker(&s, &order);
        let mut got = vec![];
        while let Some((_, f, u, _)) = w.grab_uniq() {
            got.push(format!("{f}/{u}"));
        }
        assert_eq!(
            got,
            ["fnA/highA", "fnB/normB", "fnB/lowB", "fnA/lowA"],
            "CAN_DO order {order:?}"
        );
    }
}

#[test]
fn equal_priority_across_functions_is_oldest_first() {
    for order in [["fx", "fy", "fz"], ["fz", "fy", "fx"]] {
        let s = server(&[]);
        let mut c = s.connect();
        let subs = [
            ("fy", "1"),
            ("fx", "2"),
            ("fz", "3"),
            ("fy", "4"),
            ("fx", "5"),
        ];
        for (f, u) in subs {
            c.submit(t::SUBMIT_JOB_BG, f, u, b"");
        }
        let mut w = worker(&s, &order);
        let mut got = vec![];
        while let Some((_, f, u, _)) = w.grab_uniq() {
            got.push(format!("{f}/{u}"));
        }
        assert_eq!(got, ["fy/1", "fx/2", "fz/3", "fy/4", "fx/5"], "{order:?}");
    }
}

fn submit_epoch(c: &mut support::Conn, func: &str, unique: &str, epoch: &str, data: &[u8]) {
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[func.as_bytes(), unique.as_bytes(), epoch.as_bytes(), data],
    );
}

#[test]
fn submit_job_epoch_in_the_past_runs_now_as_background() {
    let s = server(&[]);
    let mut c = s.connect();
    submit_epoch(&mut c, "fep", "old", "1000", b"ep-data");
    let handle = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    assert_eq!(
        c.admin("show jobs", true),
        format!("{handle}\t0\t0\t1\n.\n")
    );
    let mut w = worker(&s, &["fep"]);
    let (hh, f, u, d) = w.grab_uniq().expect("a past epoch is due now");
    assert_eq!(
        (hh.as_str(), f.as_str(), u.as_str(), &d[..]),
        (handle.as_str(), "fep", "old", &b"ep-data"[..])
    );
    work(&mut w, t::WORK_COMPLETE, &handle, &[b""]);
    // Background: the submitter gets nothing. The worker's echo proves the result was
    // handled; then the submitter's echo comes before anything else.
    sync(&mut w);
    sync(&mut c);
}

#[test]
fn submit_job_epoch_in_the_future_runs_at_its_time_and_wakes_the_sleeper() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fut"]);
    let due = now_secs() + 2;
    let t0 = Instant::now();
    submit_epoch(&mut c, "fut", "later", &due.to_string(), b"d");
    let handle = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    // Counted in status, not runnable yet.
    assert_eq!(c.admin("status", true), "fut\t1\t0\t1\n.\n");
    assert!(w.grab_uniq().is_none(), "a future job must not run early");
    w.send_req(t::PRE_SLEEP, &[]);
    w.expect_silence(300);
    let p = read_within(&mut w, 3500).expect("a NOOP when the job is due");
    assert_eq!(p.ptype, t::NOOP);
    assert!(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            >= (due * 1000) as u128 - 20,
        "woken before the due time"
    );
    assert!(t0.elapsed() < Duration::from_secs(4));
    let (hh, _, u, _) = w.grab_uniq().expect("due now");
    assert_eq!((hh, u.as_str()), (handle, "later"));
}

#[test]
fn submit_job_epoch_with_garbage_epoch_is_invalid_argument() {
    let s = server(&[]);
    let mut c = s.connect();
    for bad in ["abc", "", "-5", "12x"] {
        submit_epoch(&mut c, "fep", "u", bad, b"d");
        expect_error_code(&mut c, "INVALID_ARGUMENT");
    }
    sync(&mut c);
    assert_eq!(c.admin("show jobs", true), ".\n");
}

#[test]
fn work_status_is_forwarded_verbatim_and_stored_as_numbers() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut w = worker(&s, &["fst"]);
    let handle = c.submit(t::SUBMIT_JOB, "fst", "", b"x");
    w.grab_uniq().unwrap();
    work(&mut w, t::WORK_STATUS, &handle, &[b"50%", b"100 "]);
    assert_eq!(c.expect(t::WORK_STATUS), hb(&handle, &[b"50%", b"100 "]));
    c.send_req(t::GET_STATUS, &[handle.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        hb(&handle, &[b"1", b"1", b"50", b"100"])
    );
}

#[test]
fn client_id_is_cut_to_127_bytes() {
    let s = server(&[]);
    let mut w = s.connect();
    let long = "i".repeat(200);
    w.send_req(t::SET_CLIENT_ID, &[long.as_bytes()]);
    w.can_do(&["f"]);
    sync(&mut w);
    let out = w.admin("workers", true);
    let words: Vec<&str> = out.lines().next().unwrap().split(' ').collect();
    assert_eq!(words[2], "i".repeat(127), "{out:?}");
}

#[test]
fn round_robin_serves_a_workers_functions_in_turn() {
    let s = server(&["-R"]);
    let mut c = s.connect();
    for u in ["a1", "a2", "a3"] {
        c.submit(t::SUBMIT_JOB_BG, "fa", u, b"");
    }
    for u in ["b1", "b2", "b3"] {
        c.submit(t::SUBMIT_JOB_BG, "fb", u, b"");
    }
    let mut w = worker(&s, &["fa", "fb"]);
    let mut got = vec![];
    while let Some((_, f, u, _)) = w.grab_uniq() {
        got.push((f, u));
    }
    assert_eq!(got.len(), 6);
    for pair in got.windows(2) {
        assert_ne!(pair[0].0, pair[1].0, "functions alternate: {got:?}");
    }
    // Each function's own jobs stay in FIFO order.
    let a: Vec<&str> = got
        .iter()
        .filter(|x| x.0 == "fa")
        .map(|x| x.1.as_str())
        .collect();
    assert_eq!(a, ["a1", "a2", "a3"]);
}

#[test]
fn show_unique_jobs_prints_an_empty_line_for_no_unique() {
    let s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "f", "", b"");
    c.submit(t::SUBMIT_JOB_BG, "f", "uniq", b"");
    assert_eq!(c.admin("show unique jobs", true), "\nuniq\n.\n");
}
