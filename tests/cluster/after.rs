//! `@after` in a cluster, against a real etcd: a parent runs on one leader, that leader is
//! killed (kill -9), the other parent runs on the next leader, and the child runs once, there,
//! with both parents' runs in `{after}`.

use crate::support;

use std::time::Instant;

use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

/// The child's set as `/schedules` on server `s` shows it (`after_pending`).
fn pending(s: &support::Server) -> String {
    let mut h = support::Http::connect(support::http_addr(s));
    h.send(&support::request("GET", "/schedules", &[], b""));
    let v: serde_json::Value = serde_json::from_str(&h.read().text()).unwrap();
    let entries = v.get("schedules").or(v.get("entries")).unwrap_or(&v);
    entries
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e.get("id").and_then(|i| i.as_str()) == Some("c"))
        .and_then(|e| e.get("after_pending"))
        .map(|p| p.to_string())
        .unwrap_or_default()
}

#[test]
#[ignore = "long: a real etcd cluster through a kill -9 of its leader; .ci/run runs it"]
fn a_child_runs_once_on_the_next_leader_when_its_parents_ran_on_two() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("after");
    let etcd = Etcd::start();
    let mut cl = Cluster::with_http(
        &etcd,
        &dir,
        "CRON_TZ=UTC\n\
         @every 1d tick id=a catchup=none -- pa\n\
         @every 1d tick id=b catchup=none -- pb\n\
         @after a,b tick id=c -- child {after}\n",
        3,
    );
    let start = Instant::now();
    let l = cl.leader(15);
    let mut c = cl.servers[l].as_ref().unwrap().connect();
    assert_eq!(c.admin("run schedule a", false), "OK\r\n");
    cl.wait_runs(Some(cl.generation_of(l)), "pa", start, 1);
    // a's run counts everywhere before its leader goes: the other servers hold the set.
    for (i, s) in cl.servers.iter().enumerate() {
        let s = s.as_ref().unwrap();
        support::wait_until(10, &format!("a in c's set on server {i}"), || {
            pending(s).contains("\"id\":\"a\"")
        });
    }

    cl.kill9(l);
    let nl = cl.leader(15);
    let ng = cl.generation_of(nl);
    let led_at = Instant::now();
    let mut c = cl.servers[nl].as_ref().unwrap().connect();
    assert_eq!(c.admin("run schedule b", false), "OK\r\n");
    cl.wait_runs(Some(ng), "child ", led_at, 1);
    let child: Vec<String> = cl
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, w, _)| w.starts_with("child "))
        .map(|(_, w, _)| w.clone())
        .collect();
    assert_eq!(child.len(), 1, "{child:?}");
    assert!(
        child[0].contains("\"id\":\"a\"") && child[0].contains("\"id\":\"b\""),
        "{{after}} names both parents' runs: {}",
        child[0]
    );

    // A barrier: b again, its run seen and the set b alone everywhere; the child ran once.
    let again = Instant::now();
    assert_eq!(c.admin("run schedule b", false), "OK\r\n");
    cl.wait_runs(Some(ng), "pb", again, 1);
    for s in cl.servers.iter().flatten() {
        support::wait_until(10, "b alone in c's set", || {
            let p = pending(s);
            p.contains("\"id\":\"b\"") && !p.contains("\"id\":\"a\"")
        });
    }
    assert_eq!(cl.runs_since(None, "child ", start), 1);
    drop(etcd);
}
