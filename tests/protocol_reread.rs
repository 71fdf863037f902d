//! Files the server reads again while it runs (`--acl`, `--schedules`, the TLS files) are
//! regular files only: a FIFO at the path is refused at once, at start and on a reload, the
//! rules in force stay, and the server goes on answering (it used to wait in `open` for a
//! writer, and with it the whole loop).

mod support;

use std::path::Path;
use std::time::Duration;

use support::*;

/// Replace the file at `path` with a FIFO that nothing writes to.
fn fifo_at(path: &Path) {
    std::fs::remove_file(path).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// The reply to an admin line, which must come within 3 s (a blocked loop answers nothing).
fn admin_promptly(c: &mut Conn, line: &str) -> String {
    c.stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    c.admin(line, false)
}

/// ECHO answered on a new connection: the loop is not stuck.
fn echo_answered(s: &Server) {
    let mut c = s.connect();
    c.send_req(t::ECHO_REQ, &[b"still here"]);
    assert_eq!(c.expect(t::ECHO_RES), b"still here");
}

#[test]
fn a_fifo_at_the_acl_path_is_refused_and_the_rules_in_force_stay() {
    let dir = TempDir::new("reread-acl");
    let path = dir.path("acl");
    std::fs::write(&path, "addr:127.0.0.1 admin *\n").unwrap();
    let acl = path.to_str().unwrap();
    let s = Server::start(&["--acl", acl]);
    let mut c = s.connect();
    fifo_at(&path);
    let reply = admin_promptly(&mut c, "reload acl");
    assert!(
        reply.starts_with("ERR ACL_ERROR ") && reply.contains("not+a+regular+file+(a+FIFO)"),
        "{reply:?}"
    );
    s.wait_log("the access list in force is unchanged", 5);
    echo_answered(&s);
    assert_eq!(
        c.admin("maxqueue f 3", false),
        "OK\r\n",
        "admin is still granted"
    );
    // SIGHUP reads it too: refused the same way.
    s.signal(libc::SIGHUP);
    poll(5, "a second refusal", || {
        let n = s.log().matches("not a regular file (a FIFO)").count();
        if n >= 2 { Ok(()) } else { Err(n.to_string()) }
    });
    echo_answered(&s);
    // At start: exit 2 at once, saying why.
    let o = gw(&["serve", "-p", "0", "--acl", acl], None, 10);
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(
        o.stderr.contains("acl: not a regular file (a FIFO)"),
        "{o:?}"
    );
}

#[test]
fn a_fifo_at_the_schedules_path_is_refused_and_the_schedule_stays() {
    let dir = TempDir::new("reread-schedules");
    let path = dir.path("schedules.cron");
    std::fs::write(&path, "@every 1h tick\n").unwrap();
    let s = Server::start(&["--schedules", path.to_str().unwrap()]);
    let mut c = s.connect();
    fifo_at(&path);
    let reply = admin_promptly(&mut c, "reload schedules");
    assert!(
        reply.starts_with("ERR SCHEDULE_ERROR ") && reply.contains("not+a+regular+file+(a+FIFO)"),
        "{reply:?}"
    );
    s.wait_log("the running schedule is unchanged", 5);
    echo_answered(&s);
    assert_eq!(c.schedule_row("tick")[0], "tick");
}

#[cfg(feature = "tls")]
#[test]
fn a_fifo_at_a_certificate_path_keeps_the_current_certificate_on_sighup() {
    use std::io::{Read, Write};
    let ca = TestCa::new("reread-tls");
    let cert = ca.server("gearwheel");
    let s = start_tls(&cert, &["-L", "127.0.0.1", "--ssl-listen", "127.0.0.1:0"]);
    let tls_addr = s.listener("TLS listening on ");
    fifo_at(Path::new(&cert.cert));
    s.signal(libc::SIGHUP);
    let line = s.log_line("TLS files not reloaded", 5);
    assert!(line.contains("not a regular file (a FIFO)"), "{line}");
    echo_answered(&s);
    // A new TLS connection gets the certificate in force.
    let tls = gearwheel::tls::ClientTls::from_flags(true, Some(&ca.ca()), None, None)
        .unwrap()
        .unwrap();
    let tcp = std::net::TcpStream::connect(tls_addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut conn = tls.wrap("127.0.0.1", tcp).unwrap();
    conn.write_all(&req(t::ECHO_REQ, &[b"over tls"])).unwrap();
    conn.flush().unwrap();
    let mut reply = [0u8; 12 + 8];
    conn.read_exact(&mut reply).unwrap();
    assert_eq!(&reply[12..], b"over tls");
}
