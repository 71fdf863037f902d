//! An operator's ask on a follower is answered when etcd has answered, against a real etcd
//! frozen with SIGSTOP: no reply while etcd is silent (the lines pipelined behind the ask wait
//! too, and an HTTP request gets no response), then `OK` (HTTP 200) once etcd took it, and the
//! leader obeys; a client that leaves meanwhile leaves its ask behind; frozen past `--etcd-request-timeout`, the reply is the error, which says the
//! ask is sent again when etcd is back (and it is).

use crate::support;

use std::io::Read;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

/// Entry `id`'s paused cell in `show schedules` (`paused` or `active`).
fn state(s: &support::Server, id: &str) -> String {
    s.connect().schedule_row(id)[10].clone()
}

/// Nothing arrives on `c` within `ms` (looked at after a positive barrier).
pub(super) fn silent(c: &mut support::Conn, ms: u64) {
    c.stream
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .unwrap();
    let mut b = [0u8; 256];
    match c.stream.read(&mut b) {
        Ok(0) => panic!("the server closed the connection"),
        Ok(n) => panic!(
            "answered before etcd did: {:?}",
            String::from_utf8_lossy(&b[..n])
        ),
        Err(_) => {}
    }
    c.stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
}

#[test]
#[ignore = "long: freezes a real etcd under a cluster of two; .ci/run runs it"]
fn an_ask_on_a_follower_is_answered_when_etcd_has_answered() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("op-answer");
    let etcd = Etcd::start();
    let cl = Cluster::with_http(
        &etcd,
        &dir,
        "CRON_TZ=UTC\n\
         @every 1s tick id=p overlap=allow catchup=none -- p {time}\n\
         @every 1s tick id=q overlap=allow catchup=none -- q {time}\n\
         @every 1s tick id=s overlap=allow catchup=none -- s {time}\n",
        2,
    );
    let l = cl.leader(15);
    let f = cl.follower(l, 15);
    let lg = cl.generation_of(l);
    cl.wait_runs(Some(lg), "p ", Instant::now(), 2);
    let follower = cl.servers[f].as_ref().unwrap();

    // An admin line with another pipelined behind it, while etcd is frozen: neither is
    // answered until etcd has taken the ask; then both are, in order.
    let mut c = follower.connect();
    etcd.pause();
    c.send(b"pause schedule p\nstatus\n");
    follower.wait_log("schedule p: pause schedule handed to the cluster", 5);
    silent(&mut c, 200);
    etcd.resume();
    assert_eq!(c.read_text(false), "OK\r\n");
    let status = c.read_text(true);
    assert!(status.contains("tick\t"), "status after OK: {status}");
    // Taken means the cluster has it: every server shows it, and the leader obeys.
    for s in cl.servers.iter().flatten() {
        support::wait_until(10, "p paused everywhere", || state(s, "p") == "paused");
    }
    let paused_at = Instant::now();
    cl.wait_runs(Some(lg), "s ", paused_at, 3);
    assert_eq!(
        cl.runs_since(None, "p ", paused_at),
        0,
        "the leader fired p"
    );

    // The same over HTTP: no response while etcd is frozen, then 200 with the entry paused.
    let mut h = support::Http::connect(support::http_addr(follower));
    etcd.pause();
    h.send(&support::request("POST", "/schedules/q/pause", &[], b""));
    follower.wait_log("schedule q: pause schedule handed to the cluster", 5);
    h.expect_silence(200);
    etcd.resume();
    let r = h.read();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"paused\":true"), "{}", r.text());
    let leader = cl.servers[l].as_ref().unwrap();
    support::wait_until(10, "q paused on the leader", || {
        state(leader, "q") == "paused"
    });

    // The console's action too: its 200 comes once etcd took the ask.
    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    let mut h = support::Http::connect(support::http_addr(follower));
    etcd.pause();
    h.send(&support::request(
        "POST",
        "/ui/api/schedule",
        &page,
        b"resume q",
    ));
    follower.wait_log("schedule q: resume schedule handed to the cluster", 5);
    h.expect_silence(200);
    etcd.resume();
    let r = h.read();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"schedule\":\"q\""), "{}", r.text());
    support::wait_until(10, "q resumed on the leader", || {
        state(leader, "q") == "active"
    });

    // A client that leaves while its ask waits gives up the answer, not the ask.
    let mut gone = support::Http::connect(support::http_addr(follower));
    etcd.pause();
    gone.send(&support::request("POST", "/schedules/s/skip", &[], b""));
    follower.wait_log("schedule s: skip schedule handed to the cluster", 5);
    drop(gone);
    follower.wait_log("closed while waiting for the cluster's answer", 5);
    etcd.resume();
    follower.wait_log("schedule s: skip schedule taken by the cluster", 5);

    // Frozen past --etcd-request-timeout (1 s here): the reply is the error, which says the
    // ask goes again when etcd is back; and it does.
    etcd.pause();
    let asked = Instant::now();
    c.send(b"resume schedule p\n");
    follower.wait_log("schedule p: resume schedule handed to the cluster", 5);
    let reply = c.read_text(false);
    let waited = asked.elapsed();
    etcd.resume();
    assert!(
        reply.starts_with("ERR CLUSTER_UNREACHABLE ")
            && reply.contains("lost+before+etcd+answered")
            && reply.contains("sent+again"),
        "{reply}"
    );
    assert!(
        waited >= Duration::from_millis(500),
        "answered in {waited:?}"
    );
    for s in cl.servers.iter().flatten() {
        support::wait_until(15, "p resumed everywhere", || state(s, "p") == "active");
    }
    let l = cl.leader(15);
    cl.wait_runs(Some(cl.generation_of(l)), "p ", Instant::now(), 2);
}
