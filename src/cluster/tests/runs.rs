//! What the leader records in etcd against the scripted etcd: run records and their marks,
//! overlap=skip across servers, pushed schedules files, stale records and compaction.

use super::*;

#[test]
fn overlap_skip_holds_across_servers_until_the_runs_time_limit() {
    let mut net = Net::new(2);
    let mut a = ask("sync", WALL);
    a.overlap_skip = true;
    a.unique = "sync".into();
    a.until_ms = WALL + 60_000;
    let now = net.now;
    let n = &mut net.nodes[0];
    n.m.claim(a.clone(), now, &mut n.out);
    net.settle();
    // Node 0 steps down (its lease ends) but restarts at once: it is a live member again.
    let lease = net.nodes[0].m.lease().unwrap();
    net.etcd.revoke(lease);
    net.run_for(2_000, 100);
    assert_eq!(net.leaders(), vec![1]);
    assert_eq!(net.nodes[1].m.status(net.now).members.len(), 2);
    let mut b = a.clone();
    b.nominal_ms = WALL + 10_000;
    b.wall_ms = WALL + 10_000;
    let now = net.now;
    let n = &mut net.nodes[1];
    n.m.claim(b.clone(), now, &mut n.out);
    net.settle();
    assert!(matches!(
        net.nodes[1].refused.last().unwrap().2,
        Refusal::Busy { .. }
    ));
    // Past the run's time limit it no longer blocks.
    b.nominal_ms = WALL + 61_000;
    b.wall_ms = WALL + 61_000;
    let n = &mut net.nodes[1];
    n.m.claim(b, now, &mut n.out);
    net.settle();
    assert_eq!(net.nodes[1].granted.len(), 1);
}

fn skip_ask(entry: &str, nominal: u64) -> ClaimAsk {
    ClaimAsk {
        overlap_skip: true,
        unique: entry.into(),
        ..ask(entry, nominal)
    }
}

impl Net {
    fn claim_ask(&mut self, i: usize, a: ClaimAsk) {
        let now = self.now;
        let n = &mut self.nodes[i];
        n.m.claim(a, now, &mut n.out);
        self.settle();
    }

    fn run_ended(&mut self, i: usize, entry: &str, nominal: u64) {
        let now = self.now;
        let n = &mut self.nodes[i];
        n.m.run_ended(entry, nominal, now, &mut n.out);
        self.settle();
    }

    fn record(&self, entry: &str) -> RunRecord {
        let key = format!("gearwheel/t/runs/{entry}").into_bytes();
        RunRecord::parse(&self.etcd.kv[&key].value).unwrap()
    }
}

#[test]
fn overlap_skip_without_time_limit_holds_until_the_run_is_marked_done_or_its_server_is_gone() {
    let mut net = Net::new(2);
    // No timeout=: `until` is 0, the record alone says the run goes on.
    net.claim_ask(0, skip_ask("sync", WALL));
    assert_eq!(net.nodes[0].granted, vec![("sync".to_string(), WALL)]);
    assert_eq!(net.record("sync").done, Some(false));
    // Node 0 loses the leadership (its lease ends) but lives on, its run still going.
    let lease = net.nodes[0].m.lease().unwrap();
    net.etcd.revoke(lease);
    net.run_for(2_000, 100);
    assert_eq!(net.leaders(), vec![1]);
    assert_eq!(net.nodes[1].m.status(net.now).members.len(), 2);
    // Hours later the old run still blocks the new leader.
    net.claim_ask(1, skip_ask("sync", WALL + 3_600_000));
    assert_eq!(
        net.nodes[1].refused.last().unwrap().2,
        Refusal::Busy {
            server: "127.0.0.1:4730".into()
        }
    );
    // The end of another run (an older time) marks nothing.
    net.run_ended(0, "sync", WALL - 1000);
    assert_eq!(net.record("sync").done, Some(false));
    // Node 0's jobs end: it marks its record done, though it no longer leads.
    net.run_ended(0, "sync", WALL);
    let r = net.record("sync");
    assert_eq!((r.done, r.nominal_ms), (Some(true), WALL));
    net.claim_ask(1, skip_ask("sync", WALL + 3_600_000));
    assert_eq!(
        net.nodes[1].granted,
        vec![("sync".to_string(), WALL + 3_600_000)]
    );
    assert_eq!(net.record("sync").server, "127.0.0.1:4731");
    // Node 1 dies with its run going: once its member key is gone, it blocks no one.
    net.kill(1);
    net.run_for(5_100, 100);
    assert_eq!(net.leaders(), vec![0]);
    net.claim_ask(0, skip_ask("sync", WALL + 7_200_000));
    assert_eq!(
        net.nodes[0].granted.last(),
        Some(&("sync".to_string(), WALL + 7_200_000))
    );
}

#[test]
fn a_late_mark_never_overwrites_a_newer_claim() {
    let mut net = Net::new(2);
    let mut a = skip_ask("sync", WALL);
    a.until_ms = WALL + 60_000;
    net.claim_ask(0, a);
    let lease = net.nodes[0].m.lease().unwrap();
    net.etcd.revoke(lease);
    net.run_for(2_000, 100);
    assert_eq!(net.leaders(), vec![1]);
    // Past the old run's time limit the new leader claims; the old run then ends.
    net.claim_ask(1, skip_ask("sync", WALL + 61_000));
    assert_eq!(net.nodes[1].granted.len(), 1);
    net.run_ended(0, "sync", WALL);
    let r = net.record("sync");
    assert_eq!(
        (r.server.as_str(), r.nominal_ms, r.done),
        ("127.0.0.1:4731", WALL + 61_000, Some(false))
    );
}

#[test]
fn a_mark_owed_while_etcd_is_away_is_sent_when_it_is_back() {
    let mut net = Net::new(2);
    net.claim_ask(0, skip_ask("sync", WALL));
    net.etcd.down = true;
    net.run_for(1_000, 100);
    net.run_ended(0, "sync", WALL);
    net.etcd.down = false;
    net.run_for(3_000, 100);
    assert_eq!(net.record("sync").done, Some(true));
}

#[test]
fn a_pushed_schedules_file_is_handed_on_once() {
    let mut net = Net::new(2);
    net.etcd.rev += 1;
    net.etcd
        .put(b"gearwheel/t/schedules", b"@every 1s tick\n", 0);
    net.settle();
    assert_eq!(net.nodes[0].pushed, vec!["@every 1s tick\n".to_string()]);
    assert_eq!(net.nodes[1].pushed.len(), 1);
}

/// Every claim is a revision etcd keeps until compacted: the leader compacts, one interval
/// behind what it has seen; followers never do; a new leader starts its own interval.
#[test]
fn the_leader_compacts_etcds_history_one_interval_behind() {
    let mut net = Net::with_compaction(2, 10_000);
    assert_eq!(net.leaders(), vec![0]);
    let mut nominal = WALL;
    let mut claim_for = |net: &mut Net, ms: u64| {
        for _ in 0..ms / 1000 {
            nominal += 1000;
            net.claim(0, "tick", nominal);
            net.run_for(1000, 250);
        }
    };
    claim_for(&mut net, 2000);
    let seen_at_start = net.etcd.rev;
    claim_for(&mut net, 10_000);
    assert_eq!(net.etcd.compactions.len(), 1, "{:?}", net.etcd.compactions);
    let first = net.etcd.compactions[0];
    assert!(
        first > 0 && first <= seen_at_start,
        "{first} vs {seen_at_start}"
    );
    assert!(first < net.etcd.rev, "history of the last interval kept");
    claim_for(&mut net, 10_000);
    assert_eq!(net.etcd.compactions.len(), 2);
    assert!(net.etcd.compactions[1] > first);
    let status = |net: &Net, i: usize| net.nodes[i].m.status(net.now).stats;
    assert_eq!(status(&net, 0).compactions, 2);
    assert_eq!(status(&net, 1).compactions, 0, "a follower never compacts");
    assert_eq!(status(&net, 0).request_errors, 0);

    net.kill(0);
    net.run_for(8000, 250);
    assert_eq!(net.leaders(), vec![1]);
    let before = net.etcd.compactions.len();
    for _ in 0..12 {
        nominal += 1000;
        net.claim(1, "tick", nominal);
        net.run_for(1000, 250);
    }
    assert_eq!(
        net.etcd.compactions.len(),
        before + 1,
        "the new leader's first interval"
    );
    assert_eq!(net.nodes[1].m.status(net.now).stats.compactions, 1);
}

/// etcd compacted past the revision already (its own auto-compaction): the goal is
/// reached, nothing is counted as an error, and the same revision is not asked again.
#[test]
fn a_compaction_etcd_made_already_is_not_an_error() {
    let mut net = Net::with_compaction(1, 10_000);
    net.claim(0, "tick", WALL);
    net.run_for(1000, 250);
    net.etcd.compacted = net.etcd.rev + 100;
    net.etcd.rev += 200;
    net.run_for(25_000, 250);
    let s = net.nodes[0].m.status(net.now).stats;
    assert!(net.etcd.compactions.is_empty());
    assert_eq!(s.compactions, 0);
    assert_eq!(s.request_errors, 0);
}

/// The leader forgets the run record of an entry no longer in its file: the key is
/// deleted in etcd, the others' stay.
#[test]
fn a_leader_deletes_the_run_records_of_entries_gone_from_its_file() {
    let mut net = Net::new(2);
    assert_eq!(net.leaders(), vec![0]);
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    net.nodes[0]
        .m
        .set_schedules("d1".into(), "a=1 b=1".into(), ids(&["a", "b"]));
    net.run_for(250, 250);
    net.claim(0, "a", WALL);
    net.claim(0, "b", WALL);
    let key = |id: &str| format!("gearwheel/t/runs/{id}").into_bytes();
    let keys: Vec<String> = net
        .etcd
        .kv
        .keys()
        .map(|k| String::from_utf8_lossy(k).into())
        .collect();
    assert!(
        net.etcd.kv.contains_key(&key("a")) && net.etcd.kv.contains_key(&key("b")),
        "{keys:?} {:?} {:?}",
        net.nodes[0].granted,
        net.nodes[0].refused
    );
    net.nodes[0]
        .m
        .set_schedules("d2".into(), "a=1".into(), ids(&["a"]));
    net.run_for(500, 250);
    assert!(
        net.etcd.kv.contains_key(&key("a")),
        "a is still in the file"
    );
    assert!(!net.etcd.kv.contains_key(&key("b")), "b's record is gone");
    // A follower's file says nothing about records.
    net.nodes[1]
        .m
        .set_schedules("d3".into(), String::new(), ids(&["z"]));
    net.run_for(500, 250);
    assert!(net.etcd.kv.contains_key(&key("a")));
}
