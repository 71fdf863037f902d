//! File descriptors: what `/metrics` says is open is what is open, counted by the server
//! rather than listed from /proc in the middle of a turn; and a server out of descriptors
//! (EMFILE) accepts the clients waiting in its backlog once some are free, without waiting
//! for another client to arrive.

use crate::support;

use support::*;

/// `process_open_fds` of one `/metrics` answer read on `h`.
fn open_fds_metric(h: &mut Http) -> usize {
    h.send(&request("GET", "/metrics", &[], b""));
    let r = h.read();
    assert_eq!(r.status, 200);
    let samples = prometheus_samples(&r.text());
    samples["process_open_fds"] as usize
}

#[test]
fn the_open_descriptors_in_metrics_are_the_open_descriptors() {
    let dir = TempDir::new("fds");
    let s = HttpServer::start(&["--data-dir", dir.to_str().unwrap()]);
    let mut h = s.connect();
    let before = open_fds_metric(&mut h);
    assert_eq!(before, s.server.open_fds(), "{}", s.server.log());
    // Connections, and a journal that writes a segment.
    let mut conns: Vec<Conn> = (0..5).map(|_| s.gearman()).collect();
    for c in &mut conns {
        sync(c);
    }
    conns[0].submit(t::SUBMIT_JOB_BG, "f", "u1", b"x");
    let during = open_fds_metric(&mut h);
    assert_eq!(during, s.server.open_fds(), "{}", s.server.log());
    assert!(during >= before + 5, "{before} then {during}");
    // They leave: the count comes back down.
    drop(conns);
    wait_until(5, "the count to come down to what is open", || {
        let m = open_fds_metric(&mut h);
        m < during && m == s.server.open_fds()
    });
}

/// How many of the descriptors 0..`limit` the server has open: RLIMIT_NOFILE bounds the
/// numbers, and what the server inherited may sit above them.
fn fds_below(s: &Server, limit: usize) -> usize {
    let dir = std::fs::read_dir(format!("/proc/{}/fd", s.pid())).unwrap();
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<usize>().ok())
        .filter(|&fd| fd < limit)
        .count()
}

/// Fill the server's descriptor table with clients, then one more waits in the listen
/// backlog. Under edge-triggered polling the listener's readiness came and went with the
/// failed accept: once clients leave, the server must try again on its own.
#[test]
fn a_backlogged_client_is_accepted_once_descriptors_are_free_without_a_new_client() {
    const LIMIT: usize = 32;
    // No idle trim: its read of /proc would take a descriptor for a moment.
    let s = Server::start_with_fd_limit(&["--idle-trim", "0"], LIMIT as u64);
    let mut held = Vec::new();
    while fds_below(&s, LIMIT) < LIMIT {
        assert!(held.len() < LIMIT, "{} clients and not full", held.len());
        let mut c = s.connect();
        sync(&mut c);
        held.push(c);
    }
    // After its last accept the server asked for the next client and was refused.
    s.wait_log("Too many open files", 5);
    let mut waiting = s.connect();
    waiting.send_req(t::ECHO_REQ, &[b"waiting"]);
    // The listener's event for it came before these bytes: once they are answered, the
    // server has tried to accept it, and failed.
    sync(&mut held[0]);
    // Three clients leave; nobody else connects.
    held.truncate(held.len() - 3);
    let p = waiting
        .try_read_packet()
        .unwrap_or_else(|e| panic!("the backlogged client was not served: {e}\n{}", s.log()));
    assert_eq!((p.ptype, p.body.as_slice()), (t::ECHO_RES, &b"waiting"[..]));
    for c in &mut held {
        sync(c);
    }
}

/// Clustered: the two connections to etcd are counted as well.
#[test]
fn the_sockets_to_etcd_are_counted() {
    if !need(support::etcd::ETCD) {
        return;
    }
    let etcd = support::etcd::Etcd::start();
    let url = etcd.url();
    let s = HttpServer::start(&["--etcd", &url, "--cluster", "fds"]);
    // A leader has its lease, its claim and its watch: both links are up.
    wait_until(10, "the server to lead", || {
        s.get("/cluster").text().contains("\"role\":\"leader\"")
    });
    let mut h = s.connect();
    // The /cluster request's connection may still be closing: wait for it.
    wait_until(5, "the count to be what is open", || {
        open_fds_metric(&mut h) == s.server.open_fds()
    });
}
