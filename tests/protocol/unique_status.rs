//! GET_STATUS_UNIQUE over a real socket when many functions hold jobs: a unique is found
//! across all of them (by unique alone, as gearmand), pipelined requests are answered in
//! order, and several functions sharing a unique answer the newest job. Its time per request
//! is measured in benches/engine.rs (`get_status_unique`), not here.

use crate::support;

use std::io::Write;

use support::*;

/// Write `bytes` from another thread while the caller reads, so neither side's socket buffer
/// fills up and stalls a long pipeline.
fn send_in_background(c: &Conn, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let mut out = c.stream.try_clone().expect("clone the socket");
    std::thread::spawn(move || out.write_all(&bytes).expect("send the pipeline"))
}

fn status_unique(unique: &str, known: bool, clients: u32) -> Vec<u8> {
    let k = if known { "1" } else { "0" };
    format!("{unique}\0{k}\00\00\00\0{clients}").into_bytes()
}

#[test]
fn pipelined_get_status_unique_across_20000_functions() {
    let s = server(&[]);
    let mut c = s.connect();
    let n = 20_000;
    // One background job in each of n functions, unique u<i>; all of them also share "x".
    let mut submits = Vec::new();
    for i in 0..n {
        let (f, u) = (format!("f{i}"), format!("u{i}"));
        submits.extend(req(t::SUBMIT_JOB_BG, &[f.as_bytes(), u.as_bytes(), b"d"]));
        submits.extend(req(t::SUBMIT_JOB_BG, &[f.as_bytes(), b"x", b"d"]));
    }
    let writer = send_in_background(&c, submits);
    for _ in 0..2 * n {
        c.expect(t::JOB_CREATED);
    }
    writer.join().unwrap();
    // The newest job with unique x: a foreground one, in a function of its own.
    let mut fg = s.connect();
    fg.submit(t::SUBMIT_JOB, "f-new", "x", b"d");

    // Known uniques spread over the functions, unknown ones, the shared one, and the empty
    // and `-` uniques (never indexed under themselves).
    let asks: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| match i % 4 {
            0 | 1 => {
                let u = format!("u{}", (i * 7919) % n);
                let want = status_unique(&u, true, 0);
                (u, want)
            }
            2 => {
                let u = format!("missing{i}");
                let want = status_unique(&u, false, 0);
                (u, want)
            }
            _ => match i % 3 {
                0 => ("x".into(), status_unique("x", true, 1)),
                1 => (String::new(), status_unique("", false, 0)),
                _ => ("-".into(), status_unique("-", false, 0)),
            },
        })
        .collect();
    let pipeline: Vec<u8> = asks
        .iter()
        .flat_map(|(u, _)| req(t::GET_STATUS_UNIQUE, &[u.as_bytes()]))
        .collect();
    let writer = send_in_background(&c, pipeline);
    for (u, want) in &asks {
        let got = c.expect(t::STATUS_RES_UNIQUE);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "GET_STATUS_UNIQUE {u:?}"
        );
    }
    writer.join().unwrap();

    // Once the foreground client leaves, its job goes and x is still known (another
    // function's job), with no client waiting.
    drop(fg);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        c.send_req(t::GET_STATUS_UNIQUE, &[b"x"]);
        let got = c.expect(t::STATUS_RES_UNIQUE);
        if got == status_unique("x", true, 0) {
            break;
        }
        assert_eq!(got, status_unique("x", true, 1));
        assert!(
            std::time::Instant::now() < deadline,
            "the client never left"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
