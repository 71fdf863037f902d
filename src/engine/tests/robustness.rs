//! Memory given back after a drained queue, and random traffic that must never panic.

use super::*;

#[test]
fn a_drained_queue_gives_its_tables_back() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    for i in 0..20_000 {
        w.submit(c, "f", &format!("u{i}"), "d", Priority::Normal, true);
    }
    let cap = w.e.jobs.capacity();
    assert!(cap >= 20_000);
    w.can_do(wk, "f");
    while let Some((h, _)) = w.grab(wk) {
        w.req(
            wk,
            Request::WorkComplete {
                handle: h,
                data: b(""),
            },
        );
    }
    assert_eq!(w.e.job_count(), 0);
    assert!(
        w.e.jobs.capacity() < cap / 4,
        "{} of {cap}",
        w.e.jobs.capacity()
    );
    assert!(w.e.by_handle.capacity() < 20_000 / 4);
}

/// Random traffic from many connections (random packet types and bodies, real handles mixed
/// with made-up ones, connects and disconnects, admin lines, time jumps) must never panic, and
/// the counters must stay consistent with the jobs held.
#[test]
fn random_traffic_never_panics_and_keeps_counts_consistent() {
    use crate::proto::frame::{Incoming, Limits, decode};
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut w = World::new();
    let mut conns: Vec<ConnId> = (0..8).map(|_| w.conn()).collect();
    let mut handles: Vec<Bytes> = vec![b("H:t:1"), b("nonsense")];
    let funcs = ["a", "b", "c"];
    let words = [
        "status",
        "workers",
        "show jobs",
        "show unique jobs",
        "show scheduled",
        "maxqueue a 2",
        "cancel job H:t:3",
        "drop function c",
        "create function d",
        "prioritystatus",
        "show schedules",
        "bogus x y z",
    ];
    for step in 0..60_000u64 {
        let c = conns[rnd(conns.len() as u64) as usize];
        match rnd(100) {
            0 => {
                w.e.disconnect(c, w.now, &mut w.out);
                let pos = conns.iter().position(|x| *x == c).unwrap();
                conns[pos] = w.conn();
            }
            1 => w.now += rnd(5_000),
            2 => w.e.on_time(w.now, &mut w.out),
            3 => {
                let line = words[rnd(words.len() as u64) as usize];
                w.e.admin(c, AdminCommand::parse(&b(line)), w.now, &mut w.out);
            }
            _ => {
                // A packet: a random type with arguments drawn from things that matter.
                let t = 1 + rnd(42) as u32;
                let mut body = Vec::new();
                for i in 0..rnd(8) {
                    if i > 0 {
                        body.push(0);
                    }
                    match rnd(6) {
                        0 => body.extend_from_slice(&handles[rnd(handles.len() as u64) as usize]),
                        1 => body.extend_from_slice(funcs[rnd(3) as usize].as_bytes()),
                        2 => {
                            body.extend_from_slice((w.now / 1000 + rnd(10)).to_string().as_bytes())
                        }
                        3 => body.extend_from_slice(if rnd(2) == 0 { b"-" } else { b"" }),
                        4 => body.extend_from_slice(rnd(100).to_string().as_bytes()),
                        _ => {
                            for _ in 0..rnd(20) {
                                body.push(rnd(256) as u8);
                            }
                        }
                    }
                }
                let mut wire = bytes::BytesMut::new();
                wire.extend_from_slice(if rnd(50) == 0 { b"\0RES" } else { b"\0REQ" });
                wire.extend_from_slice(&t.to_be_bytes());
                wire.extend_from_slice(&(body.len() as u32).to_be_bytes());
                wire.extend_from_slice(&body);
                if let Ok(Some(Incoming::Packet(frame))) = decode(&mut wire, &Limits::default()) {
                    match Request::parse(&frame) {
                        Ok(req) => w.e.handle(c, req, w.now, &mut w.out),
                        Err(e) => w.e.reject(c, e, &mut w.out),
                    }
                }
            }
        }
        for (_, r) in w.out.replies.drain(..) {
            if let Response::JobCreated { handle } = r {
                if handles.len() < 64 {
                    handles.push(handle.to_bytes());
                } else {
                    let i = rnd(64) as usize;
                    handles[i] = handle.to_bytes();
                }
            }
        }
        if step % 1000 == 0 {
            let queued: u32 = w.e.functions.iter().map(|(_, f)| f.queued_total()).sum();
            let running: u32 = w.e.functions.iter().map(|(_, f)| f.running).sum();
            let future: u32 = w.e.functions.iter().map(|(_, f)| f.future).sum();
            assert_eq!(
                (queued + running + future) as usize,
                w.e.job_count(),
                "step {step}"
            );
            assert_eq!(running as usize, w.e.running_jobs(), "step {step}");
            w.e.check_queues();
        }
    }
}
