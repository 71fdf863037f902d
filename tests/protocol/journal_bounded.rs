//! Compaction under load keeps the journal bounded: submit/complete cycles over real sockets
//! while 10,000 future jobs wait the whole time. The directory stays under a stated bound,
//! although many times that much is written, kept results included. GEARWHEEL_SOAK=10 makes it
//! 1,000,000 cycles.

use crate::support;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use support::*;

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
#[ignore = "long: 100,000 submit and complete cycles beside 10,000 future jobs; .ci/run runs it"]
fn long_waiting_future_jobs_do_not_make_the_journal_grow() {
    let scale: u64 = std::env::var("GEARWHEEL_SOAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let cycles = 100_000 * scale;
    let dir = TempDir::new("bounded");
    let s = Server::start(&[
        "--data-dir",
        dir.to_str().unwrap(),
        "--fsync",
        "never",
        "--journal-segment-bytes",
        "1048576",
        "--journal-compact-min",
        "2097152",
        // Each completed job's result is kept (and journalled) within this bound: 1 MiB of
        // kept results, not the default 64 MiB, so that the bound below also shows that the
        // kept results' records are compacted away as they are dropped.
        "--keep-output-total",
        "1048576",
    ]);
    let mut c = s.connect();
    let later = (SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400)
        .to_string();
    let mut batch = Vec::new();
    for i in 0..10_000 {
        batch.extend_from_slice(&req(
            t::SUBMIT_JOB_EPOCH,
            &[
                b"later",
                format!("f{i}").as_bytes(),
                later.as_bytes(),
                &[b'w'; 64],
            ],
        ));
    }
    c.stream.write_all(&batch).unwrap();
    for _ in 0..10_000 {
        c.expect(t::JOB_CREATED);
    }
    let live = dir_bytes(&dir);
    let mut w = s.connect();
    w.can_do(&["churn"]);
    let mut max_seen = 0;
    let payload = [b'p'; 64];
    let chunk = 500;
    for round in 0..cycles / chunk {
        let mut batch = Vec::new();
        for _ in 0..chunk {
            batch.extend_from_slice(&req(t::SUBMIT_JOB_BG, &[b"churn", b"", &payload]));
        }
        c.stream.write_all(&batch).unwrap();
        for _ in 0..chunk {
            c.expect(t::JOB_CREATED);
        }
        // The worker takes and completes them, pipelined.
        let mut done = 0;
        while done < chunk {
            w.send_req(t::GRAB_JOB, &[]);
            let p = w.read_packet();
            assert_eq!(p.ptype, t::JOB_ASSIGN, "round {round}");
            let handle = p.body.split(|&b| b == 0).next().unwrap().to_vec();
            w.send_req(t::WORK_COMPLETE, &[&handle, b""]);
            done += 1;
        }
        if round % 20 == 0 {
            max_seen = max_seen.max(dir_bytes(&dir));
        }
    }
    max_seen = max_seen.max(dir_bytes(&dir));
    // What was written: each cycle is about 110 bytes of add and 21 of finish.
    let written = cycles * 130;
    let bound = 5 << 20;
    eprintln!(
        "live {live} B, largest {max_seen} B over {cycles} cycles (~{written} B written), bound {bound} B"
    );
    assert!(max_seen < bound, "journal reached {max_seen} bytes");
    assert!(written > 2 * bound);
    // The future jobs are all still there.
    let status = c.admin("status", true);
    assert!(status.contains("later\t10000\t0\t0"), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}
