//! The one wait-until: poll a condition until it holds or the test fails, and the waits built
//! on it (an admin reply, the `status` table).

use std::time::{Duration, Instant};

use super::gearman::Conn;
use super::server::Server;

/// The one poll: call `f` every `every` until it gives `Ok(value)`; `Err(last)` (what was
/// seen instead) if that has not happened after `within`.
pub fn poll_for<T>(
    within: Duration,
    every: Duration,
    mut f: impl FnMut() -> Result<T, String>,
) -> Result<T, String> {
    let end = Instant::now() + within;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(seen) if Instant::now() >= end => return Err(seen),
            Err(_) => std::thread::sleep(every),
        }
    }
}

/// `poll_for` every 10 ms for `secs`, and a timeout fails the test with `what` and the last
/// thing seen.
pub fn poll<T>(secs: u64, what: &str, f: impl FnMut() -> Result<T, String>) -> T {
    poll_for(Duration::from_secs(secs), Duration::from_millis(10), f)
        .unwrap_or_else(|seen| panic!("timed out waiting for {what}; last seen: {seen}"))
}

/// Poll `f` until it returns true, or panic with `what` after `secs`.
pub fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    poll(
        secs,
        what,
        || if f() { Ok(()) } else { Err("false".into()) },
    )
}

/// Poll an admin command on `c` until its reply satisfies `pred`; returns that reply (panics
/// with the last one after `secs`).
pub fn wait_admin(
    c: &mut Conn,
    cmd: &str,
    list: bool,
    secs: u64,
    pred: impl Fn(&str) -> bool,
) -> String {
    poll(secs, &format!("`{cmd}` to match"), || {
        let reply = c.admin(cmd, list);
        if pred(&reply) {
            Ok(reply)
        } else {
            Err(format!("{reply:?}"))
        }
    })
}

/// The one status reader: `func`'s row of an admin `status` reply as (total, running,
/// workers), if listed.
pub fn status_row(status: &str, func: &str) -> Option<(u64, u64, u64)> {
    status.lines().find_map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() == 4 && f[0] == func {
            Some((f[1].parse().ok()?, f[2].parse().ok()?, f[3].parse().ok()?))
        } else {
            None
        }
    })
}

/// `func`'s `status` row on the server now.
pub fn status_of(s: &Server, func: &str) -> Option<(u64, u64, u64)> {
    status_row(&s.connect().admin("status", true), func)
}

/// Wait until `status` shows `func` with this many total and running jobs.
pub fn wait_status(c: &mut Conn, func: &str, total: u64, running: u64) {
    wait_admin(c, "status", true, 4, |s| {
        status_row(s, func).is_some_and(|(t, r, _)| (t, r) == (total, running))
    });
}

/// Wait until `func` has at least `n` workers registered.
pub fn wait_workers(s: &Server, func: &str, n: u64) {
    let mut c = s.connect();
    wait_admin(&mut c, "status", true, 10, |st| {
        status_row(st, func).is_some_and(|(_, _, w)| w >= n)
    });
}
