//! The leader compacts etcd's history (`--etcd-compaction-interval`), against a real etcd:
//! every claim is a new revision that etcd keeps until a client compacts it, so without this
//! a busy schedule fills etcd's space quota. Checked: the leader compacts, again and again,
//! up to a revision one interval old (etcd then refuses that revision as compacted); a
//! follower never does; the schedule and a failover go on over the compacted store.
//! A missing etcd skips (a failure under GEARWHEEL_REQUIRE_INTEROP=1).

use crate::support;

use std::time::Duration;

use gearwheel::client::etcd::{Client, Error};
use gearwheel::cluster::etcd::{EtcdError, Request};
use support::cluster::{Cluster, Etcd, tempdir};

fn compacted_revisions(log: &str) -> Vec<i64> {
    log.lines()
        .filter_map(|l| l.split("compacted etcd's history before revision ").nth(1))
        .filter_map(|r| r.trim().parse().ok())
        .collect()
}

#[test]
fn the_leader_compacts_etcds_history_and_the_cluster_goes_on() {
    if !support::need(support::etcd::ETCD) {
        return;
    }
    let dir = tempdir("compaction");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    cl.flags = vec!["--etcd-compaction-interval".into(), "1".into()];
    for _ in 0..2 {
        let s = cl.start();
        cl.push(s);
    }
    let l = cl.leader(15);
    let leader = cl.servers[l].as_ref().unwrap();
    support::wait_until(15, "two compactions by the leader", || {
        compacted_revisions(&leader.log()).len() >= 2
    });
    let revs = compacted_revisions(&leader.log());
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    // etcd agrees: the history before the last one is gone.
    let last = *revs.last().unwrap();
    let mut c = Client::new(vec![etcd.addr()], Duration::from_secs(5));
    match c.call(&Request::Compact { revision: last }) {
        Err(Error::Etcd(EtcdError::Grpc { code: 11, message })) => {
            assert!(message.contains("has been compacted"), "{message}")
        }
        other => panic!("etcd did not compact to {last}: {other:?}"),
    }
    let follower = cl.servers[1 - l].as_ref().unwrap();
    assert!(
        compacted_revisions(&follower.log()).is_empty(),
        "a follower compacted: {}",
        follower.log()
    );
    // The follower's watch and the claims go on over the compacted store: kill the leader,
    // the other takes over and fires.
    let fired = cl.seconds().len();
    cl.kill9(l);
    assert_eq!(cl.leader(15), 1 - l);
    support::wait_until(10, "runs by the new leader", || {
        cl.seconds().len() >= fired + 2
    });
    cl.assert_no_time_twice();
    cl.kill9(1 - l);
}
