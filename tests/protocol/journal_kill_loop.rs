//! The journal's promise under repeated kill -9: several clients submit 10,000 background jobs
//! while the server is killed at random moments and restarted each time; then workers drain
//! the queue, with one more kill in the middle. Every job whose JOB_CREATED reached a client
//! runs at least once, no job completed (and acknowledged by a later reply) runs again, and no
//! job appears that was never submitted. GEARWHEEL_SOAK=N runs N times as many jobs.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use support::*;

const CLIENTS: usize = 4;
const WINDOW: usize = 32;

fn start(dir: &Path) -> Server {
    Server::start(&[
        "--data-dir",
        dir.to_str().unwrap(),
        "--job-handle-prefix",
        "H:k",
    ])
}

fn kill9(mut s: Server) {
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("server killed");
}

/// A tiny deterministic generator for the kill moments.
fn next_rand(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Submit this client's jobs from `next` on, WINDOW in flight, until all are sent or the
/// connection breaks. Uniques name the jobs; acknowledged ones are recorded.
fn submit_some(
    mut c: Conn,
    me: usize,
    next: &mut usize,
    total: usize,
    acked: &Mutex<HashSet<String>>,
) {
    let mut in_flight: Vec<String> = Vec::new();
    loop {
        let mut batch = Vec::new();
        while in_flight.len() < WINDOW && *next < total {
            let u = format!("c{me}-{}", *next);
            batch.extend_from_slice(&req(
                t::SUBMIT_JOB_BG,
                &[b"soak", u.as_bytes(), u.as_bytes()],
            ));
            in_flight.push(u);
            *next += 1;
        }
        if in_flight.is_empty() {
            return;
        }
        if c.stream.write_all(&batch).is_err() {
            return;
        }
        // Replies come in order; each JOB_CREATED acknowledges the oldest in flight.
        for _ in 0..in_flight.len() {
            match c.try_read_packet() {
                Ok(p) if p.ptype == t::JOB_CREATED => {
                    let u = in_flight.remove(0);
                    acked.lock().unwrap().insert(u);
                }
                Ok(p) => panic!("unexpected reply {p:?}"),
                Err(_) => return,
            }
        }
    }
}

fn data_dir() -> TempDir {
    TempDir::new("killloop")
}

#[test]
#[ignore = "long: kill -9 at random moments for half a minute; .ci/run runs it"]
fn acknowledged_jobs_survive_kill_9_at_random_moments() {
    let scale: usize = std::env::var("GEARWHEEL_SOAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let per_client = 2_500 * scale;
    let total = per_client * CLIENTS;
    let dir = data_dir();
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let mut next = [0usize; CLIENTS];
    let mut seed = 0x2545_F491_4F6C_DD1D_u64;
    let started = Instant::now();
    let mut kills = 0;
    // Submit with kills until every job was sent.
    while next.iter().any(|&n| n < per_client) {
        let s = start(&dir);
        let handles: Vec<_> = (0..CLIENTS)
            .map(|me| {
                let c = s.connect();
                let acked = Arc::clone(&acked);
                let mut n = next[me];
                thread::spawn(move || {
                    submit_some(c, me, &mut n, per_client, &acked);
                    n
                })
            })
            .collect();
        // Wall time on purpose: a random 5-45 ms of real submitting, so the kill lands anywhere.
        thread::sleep(Duration::from_millis(5 + next_rand(&mut seed) % 40));
        kill9(s);
        kills += 1;
        for (me, h) in handles.into_iter().enumerate() {
            next[me] = h.join().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(50), "took too long");
    }
    let sent: HashSet<String> = (0..CLIENTS)
        .flat_map(|me| (0..per_client).map(move |i| format!("c{me}-{i}")))
        .collect();
    assert_eq!(sent.len(), total);
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > total / 2,
        "too few acknowledged to mean anything: {}",
        acked.len()
    );

    // Drain with one worker; kill once half-way. A job counts as completed once the reply to
    // the worker's next request arrived (the journal committed its finish before that reply).
    let mut runs: HashMap<String, u32> = HashMap::new();
    let mut completed: HashSet<String> = HashSet::new();
    let mut killed_mid_drain = false;
    loop {
        let s = start(&dir);
        let mut w = s.connect();
        w.can_do(&["soak"]);
        let mut pending: Option<String> = None;
        let mut done_round = false;
        loop {
            let got = w.grab_uniq();
            if let Some(u) = pending.take() {
                completed.insert(u);
            }
            let Some((h, _, u, data)) = got else {
                done_round = true;
                break;
            };
            assert_eq!(data, u.as_bytes(), "the data of {u} came back changed");
            assert!(
                !completed.contains(&u),
                "{u} was completed and acknowledged, yet ran again"
            );
            *runs.entry(u.clone()).or_default() += 1;
            w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
            pending = Some(u);
            if !killed_mid_drain && runs.len() >= acked.len() / 2 {
                break;
            }
        }
        if done_round {
            // Nothing comes back after a last kill either.
            kill9(s);
            let s = start(&dir);
            let mut w = s.connect();
            w.can_do(&["soak"]);
            assert!(
                w.grab_uniq().is_none(),
                "a completed job came back after a restart"
            );
            break;
        }
        killed_mid_drain = true;
        kill9(s);
        kills += 1;
    }
    for u in runs.keys() {
        assert!(sent.contains(u), "{u} was never submitted");
    }
    for u in &acked {
        assert!(runs.contains_key(u), "{u} got JOB_CREATED but never ran");
    }
    eprintln!(
        "{total} submitted, {} acknowledged, {} ran ({} more than once), {kills} kills, {:?}",
        acked.len(),
        runs.len(),
        runs.values().filter(|&&n| n > 1).count(),
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
