//! GET_STATUS_UNIQUE across many functions.

use super::*;

// ---- GET_STATUS_UNIQUE across many functions --------------------------------------------------

/// GET_STATUS_UNIQUE finds a unique among thousands of functions with one lookup, not one per
/// function; when several functions have a job with the unique it answers the newest (as
/// gearmand), and the unique index stays whole through submits, completions, cancels and a
/// client leaving.
#[test]
fn get_status_unique_is_one_lookup_whatever_the_number_of_functions() {
    let mut w = World::new();
    let (c, fg, wk) = (w.conn(), w.conn(), w.conn());
    let n = 2_000;
    let mut x = Vec::new();
    for i in 0..n {
        w.submit(
            c,
            &format!("f{i}"),
            &format!("u{i}"),
            "d",
            Priority::Normal,
            true,
        );
        if i + 1 < n {
            x.push(w.submit(c, &format!("f{i}"), "x", "d", Priority::Normal, true));
        }
    }
    // The newest job with unique x: a foreground one, so its client count tells it apart.
    x.push(w.submit(
        fg,
        &format!("f{}", n - 1),
        "x",
        "d",
        Priority::Normal,
        false,
    ));
    w.e.check_queues();
    let status = |w: &mut World, unique: &str| {
        w.e.by_unique.lookups.set(0);
        let r = w.req(c, Request::GetStatusUnique { unique: b(unique) });
        assert_eq!(w.e.by_unique.lookups.get(), 1, "lookups for {unique}");
        match &r[..] {
            [
                (
                    _,
                    Response::StatusResUnique {
                        known,
                        running,
                        numerator,
                        clients,
                        ..
                    },
                ),
            ] => (*known, *running, *numerator, *clients),
            other => panic!("{other:?}"),
        }
    };
    for u in ["u0", "u1234", &format!("u{}", n - 1)] {
        assert_eq!(status(&mut w, u), (true, false, 0, 0), "{u}");
    }
    for u in ["u99999", "", "-", "d"] {
        assert_eq!(status(&mut w, u), (false, false, 0, 0), "{u:?}");
    }
    assert_eq!(status(&mut w, "x"), (true, false, 0, 1));
    // The foreground client leaves: its job goes, the next newest answers.
    w.e.disconnect(fg, w.now, &mut w.out);
    w.out.replies.clear();
    w.e.check_queues();
    assert_eq!(status(&mut w, "x"), (true, false, 0, 0));
    // A worker runs the newest x job left (the only job of f{n-2} after u{n-2}).
    let f = format!("f{}", n - 2);
    w.can_do(wk, &f);
    assert_eq!(w.grab(wk).map(|j| j.1), Some(b("d")));
    let (h, _) = w.grab(wk).expect("the x job");
    assert_eq!(h, x[n - 2]);
    w.req(
        wk,
        Request::WorkStatus {
            handle: h.clone(),
            numerator: b("3"),
            denominator: b("4"),
        },
    );
    assert_eq!(status(&mut w, "x"), (true, true, 3, 0));
    w.e.check_queues();
    w.req(
        wk,
        Request::WorkComplete {
            handle: h,
            data: b(""),
        },
    );
    assert_eq!(status(&mut w, "x"), (true, false, 0, 0));
    // Cancel all but the oldest, newest first, then the oldest.
    for h in x[..n - 2].iter().rev() {
        let line = format!("cancel job {}", String::from_utf8_lossy(h));
        assert_eq!(w.admin(c, &line), "OK\r\n");
        if h == &x[0] || h == &x[1] || h == &x[n / 2] {
            w.e.check_queues();
            assert_eq!(status(&mut w, "x").0, h != &x[0]);
        }
    }
    assert_eq!(status(&mut w, "u7"), (true, false, 0, 0));
    w.e.check_queues();
}
