//! The server's log against its peers, over real sockets: whatever peers send, the lines they
//! cause are bounded (`--refusals-logged-per-second`, with one summary a second of what was
//! held back, by cause), and no byte of theirs reaches the log unescaped, so that no peer can
//! forge a line (a newline in a unique, a function name, a certificate's CN), rewrite one
//! (CR, ESC) or write bytes that are not UTF-8.

use crate::support;

use std::time::{Duration, Instant};

use support::*;

/// Lines of `log` that contain `needle`.
fn lines_with(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

/// The summary lines of `log`, and what they say was held back under `label`.
fn held(log: &str, label: &str) -> (usize, u64) {
    let summaries: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("more refusals not logged in the last"))
        .collect();
    let n = summaries
        .iter()
        .filter_map(|l| l.split_once("):").map(|(_, counts)| counts))
        .flat_map(|counts| counts.split(','))
        .filter_map(|c| c.trim().strip_prefix(label)?.trim().parse::<u64>().ok())
        .sum();
    (summaries.len(), n)
}

/// Wait until the lines logged under `needle` and those held back under `label` add up to
/// `total` (the last summary comes once its second is over, by the server's own deadline:
/// nothing more is sent to it); returns (logged, summaries).
fn wait_accounted(s: &Server, needle: &str, label: &str, total: u64) -> (usize, usize) {
    poll(10, &format!("{total} lines logged or summed up"), || {
        let log = s.log();
        let logged = lines_with(&log, needle);
        let (summaries, held) = held(&log, label);
        if logged as u64 + held == total {
            Ok((logged, summaries))
        } else {
            Err(format!("{logged} logged + {held} held != {total}\n{log}"))
        }
    })
}

/// At most `budget` lines in each second the flood touched (it began and ended within
/// `elapsed`, so it touched at most `elapsed` + 2 seconds of the clock), and a summary for
/// each but the first.
fn assert_bounded(logged: usize, summaries: usize, budget: usize, elapsed: Duration) {
    let seconds = elapsed.as_secs() as usize + 2;
    assert!(
        logged <= budget * seconds,
        "{logged} lines in {elapsed:?}: more than {budget} a second"
    );
    assert!(
        (1..=seconds).contains(&summaries),
        "{summaries} summaries in {elapsed:?}"
    );
}

#[test]
fn a_foreign_host_on_one_keep_alive_connection_is_logged_within_the_budget() {
    let s = HttpServer::start(&["--refusals-logged-per-second", "50"]);
    let mut h = s.connect();
    let started = Instant::now();
    for _ in 0..2000 {
        h.send(b"GET /status HTTP/1.1\r\nHost: evil.example\r\n\r\n");
        assert_eq!(h.read().status, 403);
    }
    let elapsed = started.elapsed();
    let (logged, summaries) = wait_accounted(
        &s.server,
        "403 (host): Host \"evil.example\"",
        "foreign host or site",
        2000,
    );
    assert_bounded(logged, summaries, 50, elapsed);
    // The connection was served all along, and still is.
    h.send(&request("GET", "/healthz", &[], b""));
    assert_eq!(h.read().status, 200);
}

#[test]
fn many_connections_with_denials_are_logged_within_the_budget() {
    let dir = TempDir::new("log-denials");
    let acl = dir.path("acl");
    std::fs::write(&acl, "addr:127.0.0.9 status *\n").unwrap();
    // The flag's former name, which still works.
    let s = Server::start(&[
        "--acl",
        acl.to_str().unwrap(),
        "--acl-denials-logged-per-second",
        "20",
    ]);
    let started = Instant::now();
    for _ in 0..200 {
        let mut c = s.connect();
        // Past --acl-denials-logged (10): a line that says so, and one at the close.
        for _ in 0..11 {
            c.send_req(t::SUBMIT_JOB_BG, &[b"f", b"", b"x"]);
            expect_error_code(&mut c, "PERMISSION_DENIED");
        }
    }
    let elapsed = started.elapsed();
    // Each connection: 10 denials, "more than 10 denials", "closed after 11 denials".
    let (logged, summaries) = poll(10, "2400 denial lines logged or summed up", || {
        let log = s.log();
        let logged = lines_with(&log, "denied: connection") + lines_with(&log, "closed after 11");
        let (summaries, held) = held(&log, "denied");
        if logged as u64 + held == 2400 {
            Ok((logged, summaries))
        } else {
            Err(format!("{logged} logged + {held} held != 2400\n{log}"))
        }
    });
    assert_bounded(logged, summaries, 20, elapsed);
}

/// What a hostile peer puts in every value: a line of its own, a carriage return and a
/// terminal escape that would rewrite the line on a terminal, DEL, bytes that are not UTF-8.
/// (A NUL ends an argument of a packet; it goes where a packet's last argument is.)
const HOSTILE: &[u8] = b"\nFORGED \r\x1b[2K\x7f\xff\xfe";

/// What a hostile function name may hold (the protocol refuses control characters in one):
/// a Unicode line separator, a right-to-left override, bytes that are not UTF-8.
const HOSTILE_NAME: &[u8] = b"\xe2\x80\xa8FORGED\xe2\x80\xae\xff\xfe";
const HOSTILE_NAME_SHOWN: &str = "\\xe2\\x80\\xa8FORGED\\xe2\\x80\\xae\\xff\\xfe";

fn hostile_name(prefix: &str) -> Vec<u8> {
    [prefix.as_bytes(), HOSTILE_NAME].concat()
}

fn hostile(prefix: &str) -> Vec<u8> {
    [prefix.as_bytes(), HOSTILE].concat()
}

/// No line of the log begins with what a peer wrote, and nothing in it is a control
/// character or a byte that is not UTF-8 (the log is read lossily: those would show as U+FFFD).
fn assert_unforged(log: &str) {
    for line in log.lines() {
        assert!(
            !line.starts_with("FORGED"),
            "forged line {line:?} in\n{log}"
        );
        assert!(
            !line.contains(|c: char| {
                c.is_control() || matches!(c, '\u{fffd}' | '\u{2028}' | '\u{202e}')
            }),
            "raw peer bytes in {line:?}"
        );
    }
}

#[test]
fn hostile_names_uniques_ids_hosts_and_paths_are_escaped_in_every_line() {
    let dir = TempDir::new("log-hostile");
    let acl = dir.path("acl");
    std::fs::write(&acl, "addr:127.0.0.0/8 submit,work ok*\n").unwrap();
    // At DEBUG, for the lines that show every request.
    let server = Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--http-port",
        "0",
        "--verbose",
        "DEBUG",
        "--acl",
        acl.to_str().unwrap(),
        "-j",
        "1",
    ]);
    let http = http_addr(&server);
    let s = HttpServer { server, http };
    let func = hostile_name("ok");
    let unique = hostile("u");
    // A worker with a hostile client id takes a job with a hostile unique and leaves with it:
    // under -j 1 the job is dropped, and the log names its unique.
    let mut w = s.gearman();
    w.send_req(
        t::SET_CLIENT_ID,
        &[&[&hostile("id")[..], b"\0\nFORGED"].concat()],
    );
    w.send_req(t::CAN_DO, &[&func]);
    let mut c = s.gearman();
    c.send_req(t::SUBMIT_JOB_BG, &[&func, &unique, b"x"]);
    c.expect(t::JOB_CREATED);
    w.send_req(t::GRAB_JOB_UNIQ, &[]);
    w.expect(t::JOB_ASSIGN_UNIQ);
    // A result for a job it does not run, with a hostile handle and what follows it.
    w.send_req(t::WORK_FAIL, &[&hostile("H:"), b"\0\nFORGED"]);
    expect_error_code(&mut w, "JOB_NOT_FOUND");
    drop(w);
    s.server.wait_log("Dropped job due to max retry count", 10);
    // A far-future job of a hostile function: accepted, logged, and past --future-horizon.
    let epoch = (now_secs() + 10 * 365 * 86400).to_string();
    c.send_req(t::SUBMIT_JOB_EPOCH, &[&func, b"", epoch.as_bytes(), b"x"]);
    c.expect(t::JOB_CREATED);
    // A denied function, as a packet and in an admin line.
    c.send_req(t::SUBMIT_JOB_BG, &[&hostile_name("no"), b"", b"x"]);
    expect_error_code(&mut c, "PERMISSION_DENIED");
    let line = b"maxqueue no\rFORGED\x1b[2K\xff 5\n";
    assert!(
        c.admin_bytes(line, false)
            .starts_with(b"ERR PERMISSION_DENIED")
    );
    // HTTP: a hostile Host (a header value may carry bytes that are not UTF-8, not a
    // newline), and hostile paths (raw, and percent-escaped control characters).
    let mut h = s.connect();
    let mut req = b"GET /status HTTP/1.1\r\nHost: evil\xff\xfe.example\r\n\r\n".to_vec();
    h.send(&req);
    assert_eq!(h.read().status, 403);
    for path in [&b"/job/ok%0AFORGED%1B%00"[..], b"/ok\xff\xfe%0aFORGED"] {
        req = [b"POST ", path, b" HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"].concat();
        h.send(&req);
        let r = h.read();
        assert!(r.status >= 400, "{}", r.status);
    }
    // Every line above was written, escaped. The server's stderr reaches the test through a
    // pipe, so the last lines may still be on their way: wait for them all, then look.
    let shown = [
        "Dropped job due to max retry count: H:".to_string(),
        "u\\x0aFORGED \\x0d\\x1b[2K\\x7f\\xff\\xfe".to_string(),
        "accepted future job".to_string(),
        format!("(ok{HOSTILE_NAME_SHOWN})"),
        "after the handle, 8 bytes \"\\x00\\x0aFORGED\"".to_string(),
        format!("submit on function no{HOSTILE_NAME_SHOWN} is not granted"),
        "result for \"H:\\x0aFORGED".to_string(),
        "Host \"evil\\xff\\xfe.example\"".to_string(),
        "/job/ok%0AFORGED%1B%00".to_string(),
    ];
    poll(10, "every escaped line in the log", || {
        let log = s.server.log();
        match shown.iter().find(|v| !log.contains(v.as_str())) {
            None => Ok(()),
            Some(v) => Err(format!("{v:?} not in\n{log}")),
        }
    });
    assert_unforged(&s.server.log());
}

#[cfg(feature = "tls")]
#[test]
fn a_certificate_name_with_a_newline_cannot_forge_a_denial_line() {
    use std::io::{Read, Write};

    let ca = TestCa::new("log-cn");
    let cert = ca.server("gearwheel");
    let s = TlsServer::start(&ca.ca(), &cert, &["cn:ops admin *"], Listen::Beside);
    let (cc, ck) = ca.issue("hostile", "web\nFORGED \r\x1b[2K", &[]);
    let tls = gearwheel::tls::ClientTls::from_flags(true, Some(&ca.ca()), Some(&cc), Some(&ck))
        .unwrap()
        .unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], s.tls));
    let tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut conn = tls.wrap("127.0.0.1", tcp).unwrap();
    conn.write_all(&req(t::SUBMIT_JOB_BG, &[b"f", b"", b"x"]))
        .unwrap();
    conn.flush().unwrap();
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).unwrap();
    assert_eq!(u32::from_be_bytes(head[4..8].try_into().unwrap()), t::ERROR);
    s.server.wait_log("is not granted to cn:web", 10);
    let log = s.server.log();
    assert_unforged(&log);
    assert!(
        log.contains("denied: connection") && log.contains("(cn:web\\x0aFORGED \\x0d\\x1b[2K,"),
        "{log}"
    );
}
