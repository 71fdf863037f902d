//! A connection's slot is reused by the next connection accepted, maybe in the same batch of
//! events: an event the old connection left in that batch must not reach the new one.

use crate::support;

use support::*;

/// The server, stopped, collects three events in order: a client's submission (which wakes
/// the one sleeping worker), an HTTP client's connect, and that worker's reset. On SIGCONT
/// one batch holds them: the wake-up's write to the reset worker fails and frees its slot,
/// the accept puts the HTTP connection in it, and the worker's hang-up comes last. Applied to
/// the HTTP connection, it would give up the foreground job posted on it ("the client closed
/// while waiting").
#[test]
fn a_closed_connections_last_event_does_not_reach_the_next_tenant_of_its_slot() {
    let s = HttpServer::start(&[]);
    let mut sleeper = worker(&s.server, &["f"]);
    sleeper.send_req(t::PRE_SLEEP, &[]);
    sync(&mut sleeper);
    let mut client = s.gearman();
    sync(&mut client);

    s.server.pause();
    client.send_req(t::SUBMIT_JOB_BG, &[b"f", b"", b"bg"]);
    let mut h = s.connect();
    let reset = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    set_socket_option(&sleeper.stream, libc::SO_LINGER, &reset);
    drop(sleeper);
    s.server.resume();

    client.expect(t::JOB_CREATED);
    h.send(&request("POST", "/f", &[], b"fg"));
    let mut w = worker(&s.server, &["f"]);
    let mut seen = Vec::new();
    poll(10, "both jobs to reach a worker", || {
        if let Some((handle, _, data)) = grab_plain(&mut w) {
            work(&mut w, t::WORK_COMPLETE, &handle, &[b"done"]);
            seen.push(String::from_utf8_lossy(&data).into_owned());
        }
        match seen.len() {
            2 => Ok(()),
            _ => Err(format!("jobs {seen:?}; log:\n{}", s.server.log())),
        }
    });
    seen.sort();
    assert_eq!(seen, ["bg", "fg"]);
    let r = h
        .try_read()
        .unwrap_or_else(|e| panic!("no answer to the POST: {e}\n{}", s.server.log()));
    assert_eq!((r.status, r.text().as_str()), (200, "done"));
    assert!(!s.server.log().contains("closed while waiting"));
}
