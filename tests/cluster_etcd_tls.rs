//! etcd over TLS with client certificates: a real etcd started here serves its
//! clients on `https://` with `--client-cert-auth`, its certificate and the clients' issued
//! by a throwaway CA (`TestCa`). Two gearwheel servers with a client certificate elect one
//! leader and fire an `@every 1s` entry once per time, across a kill -9 of the leader; a
//! server without a certificate, with one from another CA, or not trusting etcd's, never
//! leads and fires nothing, and logs and counts the failed handshake; `gearwheel schedules
//! push/show` reach the same etcd with the same flags. A missing etcd skips (a failure under
//! GEARWHEEL_REQUIRE_INTEROP=1).

#![cfg(feature = "tls")]

mod support;

use std::thread;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Etcd, show_cluster, tempdir};
use support::etcd::ETCD;
use support::*;

#[test]
fn two_servers_over_https_elect_one_leader_and_fire_each_time_once_across_a_kill() {
    if !need(ETCD) {
        return;
    }
    let ca = TestCa::new("etcd-tls-failover");
    let dir = tempdir("tls-failover");
    let etcd = Etcd::start_tls(&ca);
    assert!(etcd.url().starts_with("https://"));
    let mut cl = Cluster::new(&etcd, &dir, 2);
    let first = cl.leader(15);
    for s in cl.servers.iter().flatten() {
        s.wait_log("connected to etcd 127.0.0.1", 10);
        assert!(s.log().contains(" over TLS (Unary)"), "{}", s.log());
    }
    // Exactly one leader.
    let roles: Vec<String> = cl
        .servers
        .iter()
        .flatten()
        .map(|s| show_cluster(s).unwrap_or_default())
        .collect();
    let leaders = roles
        .iter()
        .filter(|r| r.contains("role\tleader\n"))
        .count();
    assert_eq!(leaders, 1, "{roles:?}");
    wait_until(15, "three runs fired over TLS", || cl.seconds().len() >= 3);
    let before = cl.seconds().len();
    cl.kill9(first);
    let next = cl.leader(15);
    assert_ne!(next, first);
    let took_over = Instant::now();
    // The schedule goes on under the next leader: two of its runs, and then no time ran
    // twice.
    let by_next = cl.generation_of(next);
    cl.wait_runs(Some(by_next), "second ", took_over, 2);
    cl.assert_no_time_twice();
    let after = cl.seconds().len();
    assert!(
        after >= before + 2,
        "the schedule went on: {before} -> {after}"
    );
}

/// `/metrics` of a server's HTTP listener.
fn metrics(s: &Server) -> String {
    let mut h = Http::connect(http_addr(s));
    h.send(&request("GET", "/metrics", &[], b""));
    h.read().text()
}

#[test]
fn servers_etcd_refuses_or_does_not_trust_never_lead_and_fire_nothing() {
    if !need(ETCD) {
        return;
    }
    let ca = TestCa::new("etcd-tls-refused");
    let other = TestCa::new("etcd-tls-other");
    let dir = tempdir("tls-refused");
    let etcd = Etcd::start_tls(&ca);
    let stranger = other.issue("stranger", "gearwheel", &[]);
    let ca_file = ca.ca().to_str().unwrap().to_string();
    let other_ca = other.ca().to_str().unwrap().to_string();
    let seen: support::cluster::Seen = Default::default();
    // (a label, its TLS flags, the failure etcd or this server sees)
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "no client certificate",
            vec!["--etcd-ca-file".into(), ca_file.clone()],
            "alert",
        ),
        (
            "a certificate from another CA",
            vec![
                "--etcd-ca-file".into(),
                ca_file.clone(),
                "--etcd-certificate".into(),
                stranger.0.to_str().unwrap().into(),
                "--etcd-key".into(),
                stranger.1.to_str().unwrap().into(),
            ],
            "alert",
        ),
        (
            "etcd's certificate not trusted",
            {
                let mut f = etcd.tls_flags();
                f[1] = other_ca.clone();
                f
            },
            "bad_certificate",
        ),
    ];
    let mut servers = Vec::new();
    for (i, (label, flags, reason)) in cases.iter().enumerate() {
        let s = server(&etcd.url(), &dir, flags);
        support::cluster::worker(s.addr, i, seen.clone());
        servers.push((label, s, reason));
    }
    for (label, s, reason) in &servers {
        s.wait_log(&format!("failed ({reason})"), 15);
        let log = s.log();
        assert!(
            log.contains("WARNING") && log.contains("cluster: TLS with etcd 127.0.0.1"),
            "{label}: {log}"
        );
        let counted = format!("gearwheel_etcd_tls_failures_total{{reason=\"{reason}\"}} ");
        poll(10, "the failure counted in /metrics", || {
            let m = metrics(s);
            match m.lines().find_map(|l| l.strip_prefix(counted.as_str())) {
                Some(n) if n.trim().parse::<u64>().unwrap() >= 1 => Ok(()),
                _ => Err(m),
            }
        });
        assert!(metrics(s).contains("gearwheel_cluster_leader 0"), "{label}");
    }
    // Past a lease's TTL and several retries: still nobody leads, nothing fired. The proof
    // that each server went on trying (and failing) through that time: two more failed
    // handshakes counted after it.
    thread::sleep(Duration::from_secs(4));
    for (label, s, reason) in &servers {
        let counted = format!("gearwheel_etcd_tls_failures_total{{reason=\"{reason}\"}}");
        let failures = || {
            prometheus_samples(&metrics(s))
                .get(&counted)
                .copied()
                .unwrap_or(0.0)
        };
        let then = failures();
        poll(10, &format!("{label}: two more failures counted"), || {
            let now = failures();
            match now >= then + 2.0 {
                true => Ok(()),
                false => Err(format!("{then} -> {now}")),
            }
        });
    }
    for (label, s, _) in &servers {
        let show = show_cluster(s).expect("show cluster answers");
        assert!(!show.contains("role\tleader\n"), "{label}: {show}");
        assert!(show.contains("etcd\tunreachable\n"), "{label}: {show}");
    }
    for (label, s, _) in &servers {
        assert!(
            !s.log().contains("connected to etcd"),
            "{label}: {}",
            s.log()
        );
    }
    let fired = seen.lock().unwrap().len();
    assert_eq!(fired, 0, "runs fired without etcd's consent");
    // Retries are counted, and not each one logged at WARNING.
    for (label, s, reason) in &servers {
        let warnings = s
            .log()
            .lines()
            .filter(|l| l.contains("WARNING") && l.contains(&format!("failed ({reason})")))
            .count();
        assert!((1..=4).contains(&warnings), "{label}: {warnings} warnings");
    }
}

#[test]
fn schedules_push_and_show_over_https_with_a_client_certificate() {
    if !need(ETCD) {
        return;
    }
    let ca = TestCa::new("etcd-tls-push");
    let dir = tempdir("tls-push");
    let etcd = Etcd::start_tls(&ca);
    let cl = Cluster::new(&etcd, &dir, 2);
    cl.leader(15);
    let pushed = support::cluster::pushed_file(&dir);
    let flags = etcd.tls_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let url = etcd.url();
    // Without its client certificate, etcd refuses the command: it cannot reach etcd (3).
    let refused = gw(
        &[
            &["schedules", "push", pushed.to_str().unwrap()][..],
            &["--etcd", &url, "--cluster", "test"],
            &flags[..2],
        ]
        .concat(),
        None,
        20,
    );
    assert_eq!(refused.code(), Some(3), "{refused:?}");
    let out = gw(
        &[
            &["schedules", "push", pushed.to_str().unwrap()][..],
            &["--etcd", &url, "--cluster", "test"],
            &flags,
        ]
        .concat(),
        None,
        20,
    );
    assert_eq!(out.code(), Some(0), "push: {out:?}");
    cl.wait_pushed_everywhere();
    let shown = gw(
        &[
            &["schedules", "show", "--etcd", &url, "--cluster", "test"][..],
            &flags,
        ]
        .concat(),
        None,
        20,
    );
    assert_eq!(shown.code(), Some(0), "show: {shown:?}");
    assert_eq!(
        shown.stdout,
        std::fs::read_to_string(&pushed).unwrap(),
        "show prints what push stored"
    );
}

/// A server with these extra flags on etcd at `url`, the schedules file in `dir`, and an HTTP
/// listener for /metrics.
fn server(url: &str, dir: &std::path::Path, flags: &[String]) -> Server {
    let file = support::cluster::schedules(dir);
    let mut args: Vec<String> = [
        "--etcd",
        url,
        "--cluster",
        "test",
        "--etcd-lease-ttl",
        support::cluster::TTL,
        "--etcd-request-timeout",
        "1000",
        "--schedules",
        file.to_str().unwrap(),
        "--http-port",
        "0",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    args.extend(flags.iter().cloned());
    Server::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_handshake_etcd_never_answers_ends_at_the_request_timeout() {
    // No etcd needed: a listener that takes the connection and says nothing (the kernel
    // completes the connect; nobody reads the ClientHello).
    let ca = TestCa::new("etcd-tls-silent");
    let dir = tempdir("tls-silent");
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", silent.local_addr().unwrap());
    let flags = vec!["--etcd-ca-file".into(), ca.ca().to_str().unwrap().into()];
    let s = server(&url, &dir, &flags);
    s.wait_log("failed (timeout): no TLS handshake within 1000 ms", 10);
    // The loop went on serving meanwhile.
    let m = metrics(&s);
    assert!(
        m.contains("gearwheel_etcd_tls_failures_total{reason=\"timeout\"} "),
        "{m}"
    );
    assert!(m.contains("gearwheel_etcd_reachable 0"), "{m}");
    drop(silent);
}

#[test]
fn sighup_reads_the_etcd_client_certificate_again() {
    if !need(ETCD) {
        return;
    }
    let ca = TestCa::new("etcd-tls-sighup");
    let other = TestCa::new("etcd-tls-sighup-other");
    let dir = tempdir("tls-sighup");
    let etcd = Etcd::start_tls(&ca);
    // The server's certificate files start as one etcd refuses.
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    let stranger = other.issue("stranger", "gearwheel", &[]);
    std::fs::copy(&stranger.0, &cert).unwrap();
    std::fs::copy(&stranger.1, &key).unwrap();
    let mut flags = etcd.tls_flags();
    flags[3] = cert.to_str().unwrap().into();
    flags[5] = key.to_str().unwrap().into();
    let s = server(&etcd.url(), &dir, &flags);
    s.wait_log("failed (alert)", 10);
    // Rotated: the right certificate under the same names, then SIGHUP.
    let good = &etcd.tls.as_ref().unwrap().client;
    std::fs::copy(&good.0, &cert).unwrap();
    std::fs::copy(&good.1, &key).unwrap();
    s.signal(libc::SIGHUP);
    s.wait_log(
        "etcd TLS files (--etcd-ca-file, --etcd-certificate, --etcd-key) read again",
        10,
    );
    poll(15, "the server to lead", || match show_cluster(&s) {
        Some(l) if l.contains("role\tleader\n") => Ok(()),
        other => Err(format!("{other:?}")),
    });
}
