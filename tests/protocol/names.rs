//! Names in admin replies: function names are bytes end to end, so a name `status` shows can
//! be typed back into `drop function`, `maxqueue` and CAN_DO; and no name, unique or client id
//! can forge a line of a reply. Function names with CR, LF or NUL are refused where they enter
//! (ERROR, HTTP 400), every other byte is taken (a TAB too: Perl's `prefix` makes one); uniques
//! and client ids are accepted and shown with their control characters escaped.

use crate::support;

use support::*;

#[test]
fn a_name_that_is_not_utf8_is_shown_as_its_bytes_and_can_be_typed_back() {
    let s = Server::start(&[]);
    let name: &[u8] = b"caf\xe9-\xff";
    let mut w = s.connect();
    w.send_req(t::CAN_DO, &[name]);
    let mut c = s.connect();
    c.send_req(t::SUBMIT_JOB_BG, &[name, b"", b"x"]);
    c.expect(t::JOB_CREATED);
    let mut a = s.connect();
    let mut want = name.to_vec();
    want.extend_from_slice(b"\t1\t0\t1\n.\n");
    assert_eq!(a.admin_bytes(b"status", true), want);
    let workers = a.admin_bytes(b"workers", true);
    assert!(
        workers.ends_with(&[b" : ", name, b"\n.\n"].concat()),
        "{workers:?}"
    );
    // The name as shown works in admin commands.
    assert_eq!(
        a.admin_bytes(&[b"maxqueue ", name, b" 7"].concat(), false),
        b"OK\r\n"
    );
    assert_eq!(
        a.admin_bytes(&[b"maxqueue ", name].concat(), false),
        b"OK 7 7 7\n"
    );
    w.send_req(t::GRAB_JOB, &[]);
    let assigned = w.expect(t::JOB_ASSIGN);
    let handle = assigned.split(|&b| b == 0).next().unwrap().to_vec();
    w.send_req(t::WORK_COMPLETE, &[&handle, b""]);
    w.send_req(t::RESET_ABILITIES, &[]);
    w.send_req(t::ECHO_REQ, &[b"sync"]);
    w.expect(t::ECHO_RES);
    assert_eq!(
        a.admin_bytes(&[b"drop function ", name].concat(), false),
        b"OK\r\n"
    );
    assert_eq!(a.admin_bytes(b"status", true), b".\n");
}

#[test]
fn a_name_with_a_tab_is_submitted_worked_and_listed_as_gearmand_does() {
    // Perl's Gearman::Client with `prefix => "pre"` asks for "pre\tfn".
    let s = Server::start(&[]);
    let name: &[u8] = b"pre\tfn";
    let mut w = s.connect();
    w.send_req(t::CAN_DO, &[name]);
    let mut c = s.connect();
    c.send_req(t::SUBMIT_JOB, &[name, b"u1", b"ping"]);
    let handle = c.expect(t::JOB_CREATED);
    w.send_req(t::GRAB_JOB, &[]);
    let assigned = w.expect(t::JOB_ASSIGN);
    let mut args = assigned.splitn(3, |&b| b == 0);
    assert_eq!(args.next(), Some(&handle[..]));
    assert_eq!(args.next(), Some(name));
    assert_eq!(args.next(), Some(&b"ping"[..]));
    let mut a = s.connect();
    // Listed while it runs, as its bytes: gearmand 1.1.20 prints `pre\tfn\t1\t1\t1`.
    assert_eq!(a.admin_bytes(b"status", true), b"pre\tfn\t1\t1\t1\n.\n");
    assert_eq!(
        a.admin_bytes(b"prioritystatus", true),
        b"pre\tfn\t0\t0\t0\t1\n.\n"
    );
    let workers = a.admin_bytes(b"workers", true);
    assert!(workers.ends_with(b" : pre\tfn\n.\n"), "{workers:?}");
    w.send_req(t::WORK_COMPLETE, &[&handle, b"pong"]);
    assert_eq!(
        c.expect(t::WORK_COMPLETE),
        [&handle[..], b"\0pong"].concat()
    );
    // An admin line takes the name back (words are split on spaces only).
    assert_eq!(
        a.admin_bytes(&[b"maxqueue ", name, b" 3"].concat(), false),
        b"OK\r\n"
    );
    assert_eq!(a.admin_bytes(b"status", true), b"pre\tfn\t0\t0\t1\n.\n");
}

#[test]
fn a_function_name_with_a_line_break_or_nul_is_refused_at_the_door() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    for func in [&b"evil\r\nshutdown"[..], b"cr\rhere", b"lf\nhere"] {
        c.send_req(t::SUBMIT_JOB_BG, &[func, b"", b"x"]);
        let e = c.expect(t::ERROR);
        assert!(e.starts_with(b"INVALID_FUNCTION_NAME\0"), "{e:?}");
        c.send_req(t::CAN_DO, &[func]);
        assert!(c.expect(t::ERROR).starts_with(b"INVALID_FUNCTION_NAME\0"));
    }
    // The connection goes on; nothing was made.
    assert_eq!(c.admin("status", true), ".\n");
    assert_eq!(
        c.admin_bytes(b"create function a\0b", false),
        b"ERR INVALID_FUNCTION_NAME A+function+name+cannot+contain+CR,+LF+or+NUL\r\n"
    );
    assert_eq!(c.admin("status", true), ".\n");
    // Other control bytes are the name's, as gearmand takes them.
    c.send_req(t::SUBMIT_JOB_BG, &[b"bell\x07", b"", b"x"]);
    c.expect(t::JOB_CREATED);
    assert_eq!(c.admin_bytes(b"status", true), b"bell\x07\t1\t0\t0\n.\n");
}

#[test]
fn uniques_and_client_ids_cannot_forge_reply_lines() {
    let s = Server::start(&[]);
    let mut w = s.connect();
    w.send_req(t::SET_CLIENT_ID, &[b"me\nfake-worker : x"]);
    w.send_req(t::CAN_DO, &[b"f"]);
    let mut c = s.connect();
    c.send_req(t::SUBMIT_JOB_BG, &[b"f", b"u\r\n.\r\nx\ty", b"data"]);
    c.expect(t::JOB_CREATED);
    let mut a = s.connect();
    assert_eq!(
        a.admin_bytes(b"show unique jobs", true),
        b"u\\x0d\\x0a.\\x0d\\x0ax\\x09y\n.\n"
    );
    let workers = a.admin_bytes(b"workers", true);
    assert_eq!(
        workers.iter().filter(|&&b| b == b'\n').count(),
        2,
        "{workers:?}"
    );
    assert!(
        workers.ends_with(b" me\\x0afake-worker : x : f\n.\n"),
        "{}",
        workers.escape_ascii()
    );
}

#[test]
fn over_http_a_url_cannot_make_a_name_with_a_line_break() {
    let s = HttpServer::start(&[]);
    let bg = [("X-Gearman-Background", "true")];
    for path in ["/status%0d%0ashutdown", "/a%0ab", "/nul%00here"] {
        let r = s.call("GET", path, &bg, b"");
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    // A plain name still works, and so does one with a TAB.
    assert_eq!(s.call("GET", "/plain", &bg, b"").status / 100, 2);
    assert_eq!(s.call("GET", "/pre%09fn", &bg, b"").status / 100, 2);
    let mut a = s.gearman();
    let status = a.admin("status", true);
    assert!(status.contains("plain\t1\t0\t0\n"), "{status:?}");
    assert!(status.contains("pre\tfn\t1\t0\t0\n"), "{status:?}");
}
