//! The admin text protocol on the binary port: formats, line endings, errors, and text mixed
//! with binary packets on one connection.

use crate::support;

use support::*;

#[test]
fn admin_and_binary_mixed_on_one_connection_in_one_write() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut bytes = req(t::ECHO_REQ, &[b"one"]);
    bytes.extend_from_slice(b"status\n");
    bytes.extend_from_slice(&req(t::SUBMIT_JOB_BG, &[b"fm", b"", b"x"]));
    bytes.extend_from_slice(b"version\r\n");
    bytes.extend_from_slice(b"status\r\n");
    bytes.extend_from_slice(&req(t::ECHO_REQ, &[b"two"]));
    c.send(&bytes);
    assert_eq!(c.expect(t::ECHO_RES), b"one");
    assert_eq!(c.read_text(true), ".\n");
    assert_eq!(c.expect(t::JOB_CREATED), h(1).as_bytes());
    assert_eq!(
        c.read_text(false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    assert_eq!(c.read_text(true), "fm\t1\t0\t0\n.\n");
    assert_eq!(c.expect(t::ECHO_RES), b"two");
}

#[test]
fn status_and_prioritystatus_formats() {
    let s = server(&[]);
    let mut c = s.connect();
    let _w = worker(&s, &["fa"]);
    let mut w2 = worker(&s, &["fb", "fa"]);
    c.submit(t::SUBMIT_JOB_HIGH_BG, "fa", "", b"");
    c.submit(t::SUBMIT_JOB_BG, "fa", "", b"");
    c.submit(t::SUBMIT_JOB_LOW_BG, "fa", "", b"");
    c.submit(t::SUBMIT_JOB_LOW_BG, "fa", "", b"");
    c.submit(t::SUBMIT_JOB_BG, "fb", "", b"");
    assert_eq!(c.admin("status", true), "fa\t4\t0\t2\nfb\t1\t0\t1\n.\n");
    assert_eq!(
        c.admin("prioritystatus", true),
        "fa\t1\t1\t2\t2\nfb\t0\t1\t0\t1\n.\n"
    );
    // A running job counts in TOTAL and RUNNING, not in the priority columns.
    let (_, f, _, _) = w2.grab_uniq().unwrap();
    assert_eq!(f, "fa");
    assert_eq!(c.admin("status", true), "fa\t4\t1\t2\nfb\t1\t0\t1\n.\n");
    assert_eq!(
        c.admin("prioritystatus", true),
        "fa\t0\t1\t2\t2\nfb\t0\t1\t0\t1\n.\n"
    );
}

#[test]
fn empty_server_lists_are_just_the_dot() {
    let s = server(&[]);
    let mut c = s.connect();
    for cmd in [
        "status",
        "prioritystatus",
        "workers",
        "show jobs",
        "show unique jobs",
    ] {
        assert_eq!(c.admin(cmd, true), ".\n", "{cmd}");
    }
}

#[test]
fn workers_lists_only_connections_with_abilities_newest_function_first() {
    let s = server(&[]);
    let mut a = s.connect();
    a.send_req(t::SET_CLIENT_ID, &[b"just-a-client"]);
    sync(&mut a);
    let mut w1 = s.connect();
    w1.can_do(&["f1", "f2"]);
    sync(&mut w1);
    let mut w2 = s.connect();
    w2.send_req(t::SET_CLIENT_ID, &[b"w2id"]);
    w2.can_do(&["f3"]);
    sync(&mut w2);
    let out = a.admin("workers", true);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out:?}");
    assert_eq!(lines[2], ".");
    let mut rows: Vec<Vec<&str>> = lines[..2].iter().map(|l| l.split(' ').collect()).collect();
    rows.sort_by_key(|r| r[2].to_string());
    for r in &rows {
        assert!(r[0].parse::<i32>().is_ok(), "fd in {out:?}");
        assert_eq!(r[1], "127.0.0.1");
        assert_eq!(r[3], ":");
    }
    // The default client id is `-`.
    assert_eq!(&rows[0][2..], ["-", ":", "f2", "f1"]);
    assert_eq!(&rows[1][2..], ["w2id", ":", "f3"]);
    assert!(!out.contains("just-a-client"), "{out:?}");
    // Distinct connections, distinct fds.
    assert_ne!(rows[0][0], rows[1][0]);
    drop(w1);
    wait_admin(&mut a, "workers", true, 4, |o| o.lines().count() == 2);
}

#[test]
fn show_jobs_and_show_unique_jobs() {
    let s = server(&[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB, "fs", "u-fg", b"");
    c.submit(t::SUBMIT_JOB_BG, "fs", "u-bg", b"");
    let mut w = worker(&s, &["fs"]);
    w.grab_uniq().unwrap();
    assert_eq!(
        c.admin("show jobs", true),
        format!("{}\t0\t0\t0\n{}\t0\t0\t1\n.\n", h(1), h(2))
    );
    let uniq = c.admin("show unique jobs", true);
    let mut got: Vec<&str> = uniq.lines().collect();
    assert_eq!(got.pop(), Some("."));
    got.sort();
    assert_eq!(got, ["u-bg", "u-fg"]);
    assert_eq!(c.admin("SHOW JOBS", true).lines().count(), 3);
}

#[test]
fn cancel_job_queued_unknown_and_running() {
    let s = server(&[]);
    let mut c = s.connect();
    let mut c2 = s.connect();
    let queued = c.submit(t::SUBMIT_JOB, "fc", "q", b"");
    assert_eq!(c2.submit(t::SUBMIT_JOB, "fc", "q", b""), queued);
    let mut a = s.connect();
    assert_eq!(a.admin(&format!("cancel job {queued}"), false), "OK\r\n");
    for cl in [&mut c, &mut c2] {
        let p = cl.read_packet();
        assert_eq!(p.ptype, t::WORK_FAIL, "{p:?}");
        assert_eq!(p.args()[0], queued.as_bytes());
    }
    assert_eq!(a.admin("show jobs", true), ".\n");
    // No job and no worker left: `fc` stays listed, as gearmand's does.
    assert_eq!(a.admin("status", true), "fc\t0\t0\t0\n.\n");
    assert_eq!(
        a.admin(&format!("cancel job {queued}"), false),
        "ERR UNKNOWN_JOB\r\n"
    );
    assert_eq!(
        a.admin("cancel job H:nohost:77", false),
        "ERR UNKNOWN_JOB\r\n"
    );
    let running = c.submit(t::SUBMIT_JOB, "fc", "r", b"");
    let mut w = worker(&s, &["fc"]);
    let (hh, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(hh, running);
    assert_eq!(
        a.admin(&format!("cancel job {running}"), false),
        "ERR JOB_RUNNING The+job+is+running+on+a+worker\r\n"
    );
    work(&mut w, t::WORK_COMPLETE, &running, &[b"ok"]);
    assert_eq!(c.expect(t::WORK_COMPLETE), hb(&running, &[b"ok"]));
}

#[test]
fn cancelled_job_is_not_handed_out() {
    let s = server(&[]);
    let mut c = s.connect();
    let h1 = c.submit(t::SUBMIT_JOB_BG, "fc", "", b"1");
    c.submit(t::SUBMIT_JOB_BG, "fc", "", b"2");
    assert_eq!(c.admin(&format!("cancel job {h1}"), false), "OK\r\n");
    let mut w = worker(&s, &["fc"]);
    let (_, _, _, d) = w.grab_uniq().unwrap();
    assert_eq!(d, b"2");
    assert!(w.grab_uniq().is_none());
}

#[test]
fn create_and_drop_function() {
    let s = server(&[]);
    let mut a = s.connect();
    assert_eq!(a.admin("create function newfn", false), "OK\r\n");
    assert_eq!(a.admin("status", true), "newfn\t0\t0\t0\n.\n");
    assert_eq!(a.admin("prioritystatus", true), "newfn\t0\t0\t0\t0\n.\n");
    assert_eq!(
        a.admin("drop function nosuch", false),
        "ERR function not found\r\n"
    );
    let w = worker(&s, &["newfn"]);
    assert_eq!(
        a.admin("drop function newfn", false),
        "ERR there are still connected workers or executing clients\r\n"
    );
    drop(w);
    wait_status(&mut a, "newfn", 0, 0);
    wait_admin(&mut a, "status", true, 4, |o| o == "newfn\t0\t0\t0\n.\n");
    // Queued jobs also keep it.
    a.submit(t::SUBMIT_JOB_BG, "newfn", "", b"");
    assert_eq!(
        a.admin("drop function newfn", false),
        "ERR there are still connected workers or executing clients\r\n"
    );
    assert_eq!(a.admin(&format!("cancel job {}", h(1)), false), "OK\r\n");
    assert_eq!(a.admin("drop function newfn", false), "OK\r\n");
    assert_eq!(a.admin("status", true), ".\n");
    assert_eq!(
        a.admin("drop function newfn", false),
        "ERR function not found\r\n"
    );
}

#[test]
fn maxqueue_set_read_back_and_errors() {
    let s = server(&[]);
    let mut a = s.connect();
    assert_eq!(a.admin("maxqueue fmq", false), "ERR function not found\r\n");
    assert_eq!(a.admin("maxqueue fmq 1 2 3", false), "OK\r\n");
    assert_eq!(a.admin("maxqueue fmq", false), "OK 1 2 3\n");
    assert_eq!(a.admin("maxqueue fmq 7", false), "OK\r\n");
    assert_eq!(a.admin("maxqueue fmq", false), "OK 7 7 7\n");
    assert_eq!(a.admin("MAXQUEUE fmq 0", false), "OK\r\n");
    assert_eq!(a.admin("maxqueue fmq", false), "OK 0 0 0\n");
    assert_eq!(
        a.admin("maxqueue", false),
        "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+maxqueue\r\n"
    );
    sync(&mut a);
}

#[test]
fn max_queue_flag_is_the_default_limit() {
    let s = server(&["--max-queue", "2"]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fq", "", b"");
    c.submit(t::SUBMIT_JOB_BG, "fq", "", b"");
    c.send_req(t::SUBMIT_JOB_BG, &[b"fq", b"", b""]);
    expect_error(&mut c, "QUEUE_ERROR", "Job queue is full");
    assert_eq!(c.admin("maxqueue fq", false), "OK 2 2 2\n");
}

#[test]
fn getpid_verbose_version() {
    let s = server(&[]);
    let mut a = s.connect();
    assert_eq!(a.admin("getpid", false), format!("OK {}\n", s.child.id()));
    assert_eq!(a.admin("verbose", false), "OK INFO\n");
    assert_eq!(
        a.admin("version", false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

#[test]
fn verbose_reports_the_configured_level() {
    let s = support::Server::start_args(&["serve", "-p", "0", "--verbose", "warning"]);
    let mut a = s.connect();
    assert_eq!(a.admin("verbose", false), "OK WARNING\n");
}

#[test]
fn words_are_case_insensitive_and_both_line_endings_work() {
    let s = server(&[]);
    let mut a = s.connect();
    a.submit(t::SUBMIT_JOB_BG, "fx", "", b"");
    let expect = "fx\t1\t0\t0\n.\n";
    assert_eq!(a.admin("STATUS", true), expect);
    assert_eq!(a.admin("Status", true), expect);
    a.send(b"status\r\n");
    assert_eq!(a.read_text(true), expect);
    a.send(b"status\n");
    assert_eq!(a.read_text(true), expect);
    a.send(b"VERSION\r\nversion\n");
    assert_eq!(
        a.read_text(false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    assert_eq!(
        a.read_text(false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

#[test]
fn admin_error_replies() {
    let s = server(&[]);
    let mut a = s.connect();
    assert_eq!(
        a.admin("bogus", false),
        "ERR UNKNOWN_COMMAND Unknown+server+commandbogus\r\n"
    );
    assert_eq!(
        a.admin("a b c d e f g", false),
        "ERR TOO_MANY_ARGS Too+many+arguments+were+sent\r\n"
    );
    // The connection stays open after TOO_MANY_ARGS.
    assert_eq!(
        a.admin("version", false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    assert_eq!(
        a.admin("show other", false),
        "ERR UNKNOWN_SHOW_ARGUMENTS\r\n"
    );
    assert_eq!(a.admin("cancel x y", false), "ERR UNKNOWN_ERROR\r\n");
    assert_eq!(
        a.admin("create function", false),
        "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+create\r\n"
    );
    assert_eq!(
        a.admin("drop function", false),
        "ERR INVALID_ARGUMENTS An+incomplete+set+of+arguments+was+sent+to+this+command+drop\r\n"
    );
    assert_eq!(
        a.admin("", false),
        "ERR UNKNOWN_COMMAND Unknown+server+command\r\n"
    );
    assert_eq!(
        a.admin(" status", false),
        "ERR UNKNOWN_COMMAND Unknown+server+command\r\n"
    );
    assert_eq!(
        a.admin("show", false),
        "ERR UNKNOWN_COMMAND Unknown+server+commandshow\r\n"
    );
    assert_eq!(
        a.admin("cancel job", false),
        "ERR UNKNOWN_COMMAND Unknown+server+commandcancel\r\n"
    );
    // Extra words after a simple command are ignored.
    assert_eq!(
        a.admin("version please", false),
        concat!("OK ", env!("CARGO_PKG_VERSION"), "\n")
    );
    // Five words are still fine.
    assert_eq!(a.admin("maxqueue fz 1 2 3", false), "OK\r\n");
    sync(&mut a);
}

#[test]
fn shutdown_from_loopback_says_ok_and_exits_zero() {
    let mut s = server(&[]);
    let mut a = s.connect();
    assert_eq!(a.admin("shutdown", false), "OK\r\n");
    let st = s.wait_exit(5).expect("the server exits");
    assert_eq!(st.code(), Some(0));
}

/// This machine's first non-loopback IPv4 address, if any (no packet is sent).
fn non_loopback_ip() -> Option<std::net::IpAddr> {
    let u = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    u.connect("192.0.2.1:9").ok()?;
    let ip = u.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn shutdown_from_a_non_loopback_address_is_refused() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("SKIP: no non-loopback address on this machine");
        return;
    };
    let ip = ip.to_string();
    // Protected mode would refuse the peer before its line is read: this is about shutdown.
    let mut s = server(&["-L", &ip, "--protected-mode", "no"]);
    let mut a = s.connect();
    let reply = a.admin("shutdown", false);
    assert!(reply.starts_with("ERR "), "{reply:?}");
    assert!(reply.ends_with("\r\n"), "{reply:?}");
    assert!(s.child.try_wait().unwrap().is_none(), "still running");
    sync(&mut a);
}

#[test]
fn create_function_with_a_bare_newline_keeps_the_whole_name() {
    let s = server(&[]);
    let mut a = s.connect();
    a.send(b"create function newfn\n");
    assert_eq!(a.read_text(false), "OK\r\n");
    a.send(b"create function other\r\n");
    assert_eq!(a.read_text(false), "OK\r\n");
    assert_eq!(
        a.admin("status", true),
        "newfn\t0\t0\t0\nother\t0\t0\t0\n.\n"
    );
}

#[test]
fn ipv6_loopback_listener() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("SKIP: no IPv6 loopback");
        return;
    }
    let mut s = server(&["-L", "::1"]);
    assert!(s.addr.is_ipv6());
    let mut w = worker(&s, &["f6"]);
    let out = w.admin("workers", true);
    assert!(out.contains(" ::1 - : f6\n"), "{out:?}");
    assert_eq!(w.admin("shutdown", false), "OK\r\n");
    assert_eq!(s.wait_exit(3).expect("exits").code(), Some(0));
}
