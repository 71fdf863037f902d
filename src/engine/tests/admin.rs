//! Admin commands: listings, cancel, shutdown.

use super::*;

#[test]
fn admin_listings() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.req(wk, Request::SetClientId { id: b("worker A") });
    w.can_do(wk, "fnB");
    w.can_do(wk, "fnA");
    w.submit(c, "fnA", "uq", "d", Priority::High, true);
    w.submit(c, "fnA", "", "d", Priority::Low, false);
    assert_eq!(w.admin(c, "status"), "fnB\t0\t0\t1\nfnA\t2\t0\t1\n.\n");
    assert_eq!(
        w.admin(c, "prioritystatus"),
        "fnB\t0\t0\t0\t1\nfnA\t1\t0\t1\t1\n.\n"
    );
    assert_eq!(
        w.admin(c, "workers"),
        "11 127.0.0.1 worker A : fnA fnB\n.\n"
    );
    assert_eq!(
        w.admin(c, "show jobs"),
        "H:t:1\t0\t0\t1\nH:t:2\t0\t0\t0\n.\n"
    );
    assert_eq!(w.admin(c, "show unique jobs"), "uq\n\n.\n");
    assert_eq!(w.admin(c, "create function newfn"), "OK\r\n");
    assert_eq!(
        w.admin(c, "drop function FNA"),
        "ERR there are still connected workers or executing clients\r\n"
    );
    assert_eq!(
        w.admin(c, "drop function nosuch"),
        "ERR function not found\r\n"
    );
    assert_eq!(w.admin(c, "drop function NEWFN"), "OK\r\n");
    assert_eq!(
        w.admin(c, "version"),
        format!("OK {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(w.admin(c, "verbose"), "OK ERROR\n");
    assert_eq!(
        w.admin(c, "bogus"),
        "ERR UNKNOWN_COMMAND Unknown+server+commandbogus\r\n"
    );
}

#[test]
fn cancel_job() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    let h1 = w.submit(c, "f", "", "1", Priority::Normal, false);
    let h2 = w.submit(c, "f", "", "2", Priority::Normal, false);
    assert_eq!(w.admin(wk, "cancel job H:t:99"), "ERR UNKNOWN_JOB\r\n");
    w.e.admin(wk, AdminCommand::CancelJob(h2.clone()), w.now, &mut w.out);
    let r = std::mem::take(&mut w.out.replies);
    assert_eq!(
        r,
        vec![
            (c, Response::WorkFail { handle: h2.into() }),
            (wk, Response::text("OK\r\n"))
        ]
    );
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().0, h1);
    assert_eq!(
        w.admin(c, &format!("cancel job {}", String::from_utf8_lossy(&h1))),
        "ERR JOB_RUNNING The+job+is+running+on+a+worker\r\n"
    );
    assert_eq!(
        w.grab(wk),
        None,
        "the cancelled job left no live queue entry"
    );
}

#[test]
fn cancels_from_the_middle_and_give_backs_to_the_head_keep_queue_order() {
    let mut w = World::new();
    let (c, wk, wk2) = (w.conn(), w.conn(), w.conn());
    let h: Vec<Bytes> = (1..=5)
        .map(|i| w.submit(c, "f", "", &i.to_string(), Priority::Normal, true))
        .collect();
    for i in [1, 3] {
        let line = format!("cancel job {}", String::from_utf8_lossy(&h[i]));
        assert_eq!(w.admin(wk, &line), "OK\r\n");
        w.e.check_queues();
    }
    w.can_do(wk, "f");
    assert_eq!(w.grab(wk).unwrap().1, b("1"));
    assert_eq!(w.grab(wk).unwrap().1, b("3"));
    w.e.check_queues();
    // Both go back to the head, in the order they were taken.
    w.e.disconnect(wk, w.now, &mut w.out);
    w.e.check_queues();
    w.can_do(wk2, "f");
    let got: Vec<Bytes> = std::iter::from_fn(|| w.grab(wk2).map(|(_, d)| d)).collect();
    assert_eq!(got, vec![b("1"), b("3"), b("5")]);
    w.e.check_queues();
}

/// Who may shut down is the reactor's gate's question (tests/protocol/access.rs); the engine
/// does what the line says.
#[test]
fn shutdown_asks_the_loop_to_stop() {
    let mut w = World::new();
    let c = w.conn();
    assert_eq!(w.admin(c, "shutdown"), "OK\r\n");
    assert_eq!(w.out.shutdown, Some(Shutdown::Immediate));
    assert_eq!(w.admin(c, "shutdown graceful"), "OK\r\n");
    assert_eq!(w.out.shutdown, Some(Shutdown::Graceful));
}
