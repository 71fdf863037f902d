//! What a cluster says of itself (docs/cluster.md, "Watching the cluster"), against a real
//! etcd: a follower logs who leads and at which term at NOTICE, also after a failover; an
//! unreachable etcd is one ERROR, not a line per attempt, and a NOTICE when it is back; a
//! pushed file is logged by followers as a push, with no WARNING that their file differs
//! from the leader's on the way; the console's header data names this server's role and
//! the leader. A missing etcd skips (a failure under GEARWHEEL_REQUIRE_INTEROP=1).

use crate::support;

use std::time::Instant;

use support::cluster::{Cluster, Etcd, show_cluster, tempdir};
use support::etcd::ETCD;
use support::server::Server;

/// A `show cluster` field of one server.
fn field(s: &Server, key: &str) -> String {
    let text = show_cluster(s).expect("show cluster");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}\t")))
        .unwrap_or_else(|| panic!("{key} in {text}"))
        .to_string()
}

/// The console's facts (`/ui/api/server`) of a server started with `--http-port 0`.
fn console_facts(s: &Server) -> String {
    let mut h = support::http::Http::connect(support::http::http_addr(s));
    h.send(&support::http::request("GET", "/ui/api/server", &[], b""));
    h.read().text()
}

/// Log lines that contain `needle`.
fn lines_with(log: &str, needle: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

#[test]
fn followers_say_who_leads_at_which_term_and_the_console_header_names_both() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("logs-leader");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    cl.flags = vec!["--http-port".into(), "0".into()];
    for _ in 0..3 {
        let s = cl.start();
        cl.push(s);
    }
    let l = cl.leader(15);
    let leader = cl.servers[l].as_ref().unwrap();
    let (id, term) = (field(leader, "self"), field(leader, "fence"));
    let said = " NOTICE ";
    let leads = format!("cluster: {id} leads now (term {term})");
    for (i, s) in cl.servers.iter().enumerate() {
        let s = s.as_ref().unwrap();
        let role = if i == l { "leader" } else { "follower" };
        let want = format!("\"leader\":\"{id}\",\"role\":\"{role}\"");
        support::poll(10, &want, || {
            let facts = console_facts(s);
            match facts.contains(&want) {
                true => Ok(()),
                false => Err(facts),
            }
        });
        if i != l {
            let line = s.log_line(&leads, 10);
            assert!(line.contains(said), "at NOTICE: {line}");
        }
    }

    // After a kill -9 of the leader, the follower that does not take over says the old
    // leader is gone and who leads now, at a later term.
    cl.kill9(l);
    let n = cl.leader(15);
    let next = cl.servers[n].as_ref().unwrap();
    let (next_id, next_term) = (field(next, "self"), field(next, "fence"));
    assert!(next_term.parse::<i64>().unwrap() > term.parse::<i64>().unwrap());
    let other = (0..3).find(|&i| i != l && i != n).unwrap();
    let s = cl.servers[other].as_ref().unwrap();
    let gone = s.log_line(
        &format!("cluster: the leader {id} (term {term}) is gone"),
        10,
    );
    assert!(gone.contains(said), "{gone}");
    let line = s.log_line(
        &format!("cluster: {next_id} leads now (term {next_term})"),
        10,
    );
    assert!(line.contains(said), "{line}");
    support::poll(10, "the console to name the next leader", || {
        let facts = console_facts(s);
        match facts.contains(&format!("\"leader\":\"{next_id}\",\"role\":\"follower\"")) {
            true => Ok(()),
            false => Err(facts),
        }
    });
    // Said once per leadership, not at every watch event or campaign.
    assert_eq!(
        lines_with(&s.log(), &format!("{next_id} leads now")).len(),
        1
    );
}

#[test]
fn an_unreachable_etcd_is_one_error_and_a_notice_when_it_is_back() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("logs-outage");
    let mut etcd = Etcd::start();
    let file = support::cluster::schedules(&dir);
    let url = etcd.url();
    // The attempts in between are DEBUG lines: the barrier that several were made.
    let s = Server::start_args(&[
        "serve",
        "-p",
        "0",
        "--verbose",
        "DEBUG",
        "--etcd",
        &url,
        "--etcd-lease-ttl",
        support::cluster::TTL,
        "--etcd-request-timeout",
        "1000",
        "--schedules",
        file.to_str().unwrap(),
    ]);
    support::poll(15, "the leader", || match field(&s, "role").as_str() {
        "leader" => Ok(()),
        other => Err(other.to_string()),
    });
    etcd.stop();
    support::poll(20, "five failed attempts", || {
        let log = s.log();
        match lines_with(&log, "cluster: etcd is still unreachable: ").len() >= 5 {
            true => Ok(()),
            false => Err(log),
        }
    });
    etcd.restart();
    let back = s.log_line("cluster: etcd is reachable again after ", 20);
    assert!(back.contains(" NOTICE "), "{back}");
    let log = s.log();
    let first = lines_with(&log, "cluster: etcd is unreachable: ");
    assert_eq!(first.len(), 1, "one ERROR for the outage: {log}");
    assert!(first[0].contains("  ERROR "), "{}", first[0]);
    let attempts: u64 = back
        .split(" (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the attempts in {back}"));
    assert!(attempts >= 6, "{back}");
    // No line per attempt above DEBUG.
    let loud: Vec<String> = log
        .lines()
        .filter(|l| l.starts_with("WARNING") || l.starts_with("  ERROR"))
        .filter(|l| l.contains("connect to etcd") || l.contains("did not answer"))
        .filter(|l| !l.contains("cluster: etcd is unreachable: "))
        .map(str::to_string)
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
}

#[test]
fn followers_log_a_push_as_a_push_not_as_a_difference_from_the_leader() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("logs-push");
    let etcd = Etcd::start();
    let cl = Cluster::new(&etcd, &dir, 3);
    let l = cl.leader(15);
    cl.wait_runs(None, "second ", Instant::now(), 2);
    for n in 1..=2 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
            .args(["schedules", "push"])
            .arg(support::cluster::pushed_file(&dir))
            .args(["--etcd", &etcd.url(), "--cluster", "test"])
            .output()
            .unwrap();
        assert!(out.status.success(), "push: {out:?}");
        for s in cl.servers.iter().flatten() {
            support::poll(10, &format!("push {n} loaded"), || {
                let log = s.log();
                match lines_with(&log, "reloaded the schedules file pushed to etcd").len() >= n {
                    true => Ok(()),
                    false => Err(log),
                }
            });
        }
        cl.wait_pushed_everywhere();
        // A second push, of a file that differs only in a comment.
        std::fs::write(
            support::cluster::pushed_file(&dir),
            "CRON_TZ=UTC\n@every 1s tick id=pushed overlap=allow -- pushed {time}\n# again\n",
        )
        .unwrap();
    }
    for (i, s) in cl.servers.iter().enumerate() {
        let log = s.as_ref().unwrap().log();
        if i != l {
            assert!(
                lines_with(&log, "differs from the leader's").is_empty(),
                "server {i}: {log}"
            );
        }
    }
}
