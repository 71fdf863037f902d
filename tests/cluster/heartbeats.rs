//! Heartbeats (`expect=ping`) in a cluster, against a real etcd: pings sent to any server
//! reach the leader's judgement, so pings sent alternately to a follower and the leader
//! (never to the third server) raise no missed alert anywhere and every server shows the same
//! history; a `/start` on one server and the end on another make one run with its duration;
//! pings withheld raise exactly one missed alert in the whole cluster. A missing
//! etcd skips (a failure under GEARWHEEL_REQUIRE_INTEROP=1).

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

/// A loopback webhook receiver: each alert's body, answered 204.
fn receiver() -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let g = Arc::clone(&got);
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = Vec::new();
            let mut b = [0u8; 4096];
            let body = loop {
                let Ok(n) = s.read(&mut b) else { break None };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&b[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                let Some((head, body)) = text.split_once("\r\n\r\n") else {
                    continue;
                };
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(0);
                if body.len() >= len {
                    break Some(body.to_string());
                }
            };
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            if let Some(body) = body {
                g.lock().unwrap().push(body);
            }
        }
    });
    (port, got)
}

fn ping(s: &support::Server, id: &str) {
    let mut h = support::Http::connect(support::http_addr(s));
    h.send(&support::request("POST", &format!("/ping/{id}"), &[], b""));
    let r = h.read();
    assert_eq!(r.status, 200, "{}", r.text());
}

/// runs, failures, skips, last run, its outcome, its duration and the recent runs of `id`'s
/// row of `show schedules`.
fn history(s: &support::Server, id: &str) -> Vec<String> {
    let mut c = s.connect();
    let listing = c.admin("show schedules", true);
    let r: Vec<String> = listing
        .lines()
        .find(|l| l.starts_with(&format!("{id}\t")))
        .unwrap_or_else(|| panic!("no row {id} in {listing}"))
        .split('\t')
        .map(str::to_string)
        .collect();
    [7, 8, 9, 4, 5, 6, 14]
        .iter()
        .map(|&i| r[i].clone())
        .collect()
}

fn missed(got: &Arc<Mutex<Vec<String>>>) -> usize {
    got.lock()
        .unwrap()
        .iter()
        .filter(|b| b.contains("\"outcome\":\"missed\""))
        .count()
}

#[test]
#[ignore = "long: three servers and a real etcd for half a minute; .ci/run runs it"]
fn pings_to_any_server_reach_the_leader_which_alone_alerts_a_missed_run() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("heartbeats");
    let etcd = Etcd::start();
    let (port, alerts) = receiver();
    let cl = Cluster::with_http(
        &etcd,
        &dir,
        &format!(
            "CRON_TZ=UTC\n@every 1s beat expect=ping grace=4s on_failure=http://127.0.0.1:{port}/hook\n"
        ),
        3,
    );
    let l = cl.leader(15);
    let f = cl.follower(l, 15);
    let leader = cl.servers[l].as_ref().unwrap();
    let follower = cl.servers[f].as_ref().unwrap();

    // Twelve seconds of pings, one a second, to the follower and the leader in turn; the
    // third server gets none. None of them is missed, on any server.
    let until = Instant::now() + Duration::from_secs(12);
    let mut i = 0;
    while Instant::now() < until {
        ping(if i % 2 == 0 { follower } else { leader }, "beat");
        i += 1;
        thread::sleep(Duration::from_millis(1000));
    }
    assert_eq!(missed(&alerts), 0, "{:?}", alerts.lock().unwrap());
    let all = |cl: &Cluster| -> Vec<Vec<String>> {
        cl.servers
            .iter()
            .flatten()
            .map(|s| history(s, "beat"))
            .collect()
    };
    support::wait_until(10, "every server shows the leader's history", || {
        let rows = all(&cl);
        rows.iter().all(|r| *r == rows[0]) && rows[0][2] == "0"
    });
    let runs: u64 = all(&cl)[0][0].parse().unwrap();
    assert!(runs >= 10, "each ping a run: {:?}", all(&cl));

    // A run's `/start` on the follower and its end on the leader: one run, whose duration
    // the leader measured from the follower's start.
    ping(follower, "beat/start");
    thread::sleep(Duration::from_millis(1500));
    ping(leader, "beat");
    support::wait_until(10, "the run with its duration on every server", || {
        let rows = all(&cl);
        let d: u64 = rows[0][5].parse().unwrap_or(0);
        rows.iter().all(|r| *r == rows[0]) && rows[0][0] == (runs + 1).to_string() && d >= 1400
    });

    // Pings withheld: one missed alert in the whole cluster (the first of the streak), from
    // the leader, and every server counts the same misses.
    support::wait_until(20, "one missed alert", || missed(&alerts) >= 1);
    thread::sleep(Duration::from_secs(6));
    assert_eq!(missed(&alerts), 1, "{:?}", alerts.lock().unwrap());
    support::wait_until(10, "every server shows the misses", || {
        let rows = all(&cl);
        rows.iter().all(|r| *r == rows[0]) && rows[0][2] != "0"
    });
}
