//! Connections and the server's end: replies to gone connections, draining, late results.

use super::*;

#[test]
fn replies_to_a_gone_connection_are_not_made() {
    let mut w = World::new();
    let c = w.conn();
    w.e.disconnect(c, w.now, &mut w.out);
    assert!(w.req(c, Request::EchoReq { data: b("x") }).is_empty());
    // A reused slot with a new generation is a different connection.
    let again = ConnId {
        index: c.index,
        generation: c.generation + 1,
    };
    w.e.connect(
        again,
        ConnInfo {
            fd: 1,
            ip: [127, 0, 0, 1].into(),
        },
    );
    assert!(w.req(c, Request::EchoReq { data: b("x") }).is_empty());
    assert_eq!(w.req(again, Request::EchoReq { data: b("x") }).len(), 1);
}

#[test]
fn draining_hands_out_nothing_and_ends_when_jobs_finish_or_time_is_up() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "1", Priority::Normal, false);
    w.submit(c, "f", "", "2", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.e.begin_drain(w.now, 1000);
    assert!(!w.e.drain_done());
    assert_eq!(w.grab(wk), None, "no new jobs while draining");
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert!(w.e.drain_done());

    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.submit(c, "f", "", "1", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.e.begin_drain(w.now, 1000);
    assert_eq!(w.e.next_deadline(), Some(w.now + 1000));
    w.e.on_time(w.now + 999, &mut w.out);
    assert!(!w.e.drain_done());
    w.e.on_time(w.now + 1000, &mut w.out);
    assert!(w.e.drain_done());
}

#[test]
fn a_work_fail_right_after_the_same_jobs_exception_is_dropped_quietly() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h = w.submit(c, "f", "", "d", Priority::Normal, false);
    w.can_do(wk, "f");
    w.grab(wk).unwrap();
    w.req(
        wk,
        Request::WorkException {
            handle: h.clone(),
            data: b("died"),
        },
    );
    assert_eq!(
        w.req(
            wk,
            Request::WorkFail {
                handle: h.clone(),
                after_handle: b("")
            }
        ),
        vec![]
    );
    // Only once, and only for that handle.
    assert_eq!(
        w.req(
            wk,
            Request::WorkFail {
                handle: h,
                after_handle: b("")
            }
        )
        .len(),
        1
    );
}
