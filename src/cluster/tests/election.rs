//! The machine's leadership against the scripted etcd: election, failover, leases lost or
//! unsure, fences, the watch, request timeouts and clock steps.

use super::*;

#[test]
fn one_leader_is_elected_and_only_it_claims() {
    let mut net = Net::new(3);
    assert_eq!(net.leaders(), vec![0], "the first to campaign wins");
    assert_eq!(net.nodes[0].takeovers, vec![vec![]]);
    for i in 0..3 {
        net.claim(i, "tick", WALL);
    }
    assert_eq!(net.nodes[0].granted, vec![("tick".to_string(), WALL)]);
    assert_eq!(net.nodes[1].refused[0].2, Refusal::NotLeader);
    assert_eq!(net.nodes[2].refused[0].2, Refusal::NotLeader);
    // The same time twice: refused without asking etcd.
    net.claim(0, "tick", WALL);
    assert!(matches!(
        net.nodes[0].refused[0].2,
        Refusal::AlreadyClaimed { .. }
    ));
    // Keepalives hold it for a long time.
    net.run_for(60_000, 100);
    assert_eq!(net.leaders(), vec![0]);
    let st = net.nodes[1].m.status(net.now);
    assert_eq!(st.leader.as_deref(), Some("127.0.0.1:4730"));
    assert_eq!(st.members.len(), 3);
}

#[test]
fn a_killed_leader_is_replaced_within_the_ttl_and_no_time_is_claimed_twice() {
    let mut net = Net::new(3);
    net.claim(0, "tick", WALL);
    net.kill(0);
    // etcd ends the lease 5 s after its last keepalive; the watch tells the others.
    net.run_for(5_100, 100);
    let leaders = net.leaders();
    assert_eq!(leaders.len(), 1, "{leaders:?}");
    let l = leaders[0];
    assert_ne!(l, 0);
    assert_eq!(
        net.nodes[l].takeovers.last().unwrap(),
        &vec![("tick".to_string(), WALL)],
        "the new leader read the last claimed run"
    );
    net.claim(l, "tick", WALL);
    assert!(matches!(
        net.nodes[l].refused.last().unwrap().2,
        Refusal::AlreadyClaimed { recorded_ms: WALL }
    ));
    net.claim(l, "tick", WALL + 1000);
    assert_eq!(
        net.nodes[l].granted.last(),
        Some(&("tick".to_string(), WALL + 1000))
    );
    assert_eq!(net.nodes[l].m.status(net.now).stats.leaderships, 1);
}

#[test]
fn etcd_unreachable_stops_the_leader_before_its_lease_can_end_and_it_resumes_after() {
    let mut net = Net::new(2);
    net.claim(0, "tick", WALL);
    net.etcd.down = true;
    // Still within the lease (4.5 s of 5 s after the last keepalive): it may go on.
    net.run_for(1_000, 100);
    net.claim(0, "tick", WALL + 1000);
    assert!(net.nodes[0].refused.is_empty(), "waiting for etcd");
    // No answer: the claim cannot be confirmed either way, and it is not granted.
    net.run_for(2_000, 100);
    let refused = net.nodes[0].refused.last().map(|r| r.2.clone());
    assert!(matches!(refused, Some(Refusal::Unknown(_))), "{refused:?}");
    assert_eq!(net.nodes[0].granted.len(), 1);
    net.run_for(3_000, 100);
    assert!(net.leaders().is_empty());
    net.claim(0, "tick", WALL + 2000);
    assert_eq!(net.nodes[0].refused.last().unwrap().2, Refusal::LeaseUnsure);
    assert_eq!(net.nodes[0].m.status(net.now).stats.safety_stops, 1);
    // An outage: the machine wants its tick for the minute's summary line.
    assert!(net.nodes[0].m.etcd_unreachable());
    let summary = net.nodes[0].m.next_deadline().unwrap();
    assert!(summary <= net.now + 60_000, "{summary} {}", net.now);
    // A follower's refusal stays the quiet one: only the leader that stopped says why.
    net.claim(1, "tick", WALL + 2000);
    assert_eq!(net.nodes[1].refused.last().unwrap().2, Refusal::NotLeader);
    assert!(!net.nodes[0].m.status(net.now).reachable);
    // etcd comes back before it expired the lease (it was down too: its clock for the lease
    // is as good as ours here, so extend it as a restarted etcd does).
    for (_, at) in net.etcd.leases.values_mut() {
        *at = net.now + 5_000;
    }
    net.etcd.down = false;
    net.run_for(3_000, 100);
    assert!(
        !net.nodes[0].m.etcd_unreachable(),
        "etcd answered: the outage ended"
    );
    assert_eq!(net.leaders(), vec![0], "the same leader resumes");
    assert_eq!(net.nodes[0].m.status(net.now).stats.leaderships, 2);
    net.claim(0, "tick", WALL + 3000);
    assert_eq!(
        net.nodes[0].granted.last(),
        Some(&("tick".to_string(), WALL + 3000))
    );
}

#[test]
fn a_lease_lost_mid_run_gives_a_new_lease_and_a_new_election() {
    let mut net = Net::new(2);
    let lease = net.nodes[0].m.lease().unwrap();
    // etcd forgets the leader's lease (it was down past the TTL): keys gone, node 1 wins.
    net.etcd.revoke(lease);
    net.settle();
    net.run_for(2_000, 100);
    assert_eq!(net.leaders(), vec![1]);
    // Node 0 learns at its next keepalive, takes a new lease and stays a member.
    assert_ne!(net.nodes[0].m.lease(), Some(lease));
    assert_eq!(net.nodes[1].m.status(net.now).members.len(), 2);
}

#[test]
fn a_claim_with_a_stale_fence_is_rejected_by_etcd() {
    let mut net = Net::new(2);
    // Node 0 hears nothing on its watch, and etcd ends its lease although node 0 still
    // thinks it valid (a partition of the watch, a lease revoked by an operator).
    net.nodes[0].deaf = true;
    let lease = net.nodes[0].m.lease().unwrap();
    net.etcd.revoke(lease);
    net.settle();
    let n = &mut net.nodes[1];
    n.m.tick(net.now, &mut n.out);
    net.settle();
    assert!(net.nodes[1].m.is_leader(net.now));
    assert!(net.nodes[0].m.is_leader(net.now), "it does not know yet");
    net.claim(0, "tick", WALL);
    assert_eq!(
        net.nodes[0].refused.last().unwrap().2,
        Refusal::FenceRejected
    );
    assert!(net.nodes[0].granted.is_empty());
    assert_eq!(net.nodes[0].m.status(net.now).stats.fence_failures, 1);
    assert!(!net.nodes[0].m.is_leader(net.now));
    net.claim(1, "tick", WALL);
    assert_eq!(net.nodes[1].granted, vec![("tick".to_string(), WALL)]);
}

#[test]
fn a_frozen_leader_does_not_fire_when_it_wakes() {
    let mut net = Net::new(2);
    net.claim(0, "tick", WALL);
    net.nodes[0].frozen = true;
    net.run_for(8_000, 100);
    assert_eq!(net.leaders(), vec![1]);
    net.claim(1, "tick", WALL + 7000);
    // Node 0 wakes 8 s later: its first act is a due run, before any keepalive answer.
    net.nodes[0].frozen = false;
    net.claim(0, "tick", WALL + 8000);
    assert_eq!(net.nodes[0].refused.last().unwrap().2, Refusal::LeaseUnsure);
    assert_eq!(net.nodes[0].granted.len(), 1);
    net.run_for(3_000, 100);
    assert_eq!(net.leaders(), vec![1]);
}

#[test]
fn clock_steps_forward_and_back_make_the_lease_unsure_until_etcd_confirms_it() {
    let mut net = Net::new(1);
    assert_eq!(net.leaders(), vec![0]);
    // Forward 10 s at once (a VM stall or a step): no run fires on the old confirmation.
    net.now += 10_000;
    net.claim(0, "tick", WALL);
    assert_eq!(net.nodes[0].refused.last().unwrap().2, Refusal::LeaseUnsure);
    // etcd still has the lease (its clock did not move): the next keepalive brings it back.
    for (_, at) in net.etcd.leases.values_mut() {
        *at = net.now + 5_000;
    }
    net.run_for(500, 100);
    assert_eq!(net.leaders(), vec![0]);
    net.claim(0, "tick", WALL + 1000);
    assert_eq!(net.nodes[0].granted.len(), 1);
    // Back 3 s: the lease is unconfirmed until the keepalive that follows.
    net.now -= 3_000;
    net.claim(0, "tick", WALL + 2000);
    assert_eq!(net.nodes[0].refused.last().unwrap().2, Refusal::LeaseUnsure);
    net.run_for(2_000, 100);
    net.claim(0, "tick", WALL + 3000);
    assert_eq!(net.nodes[0].granted.len(), 2);
}

#[test]
fn the_watch_reconnects_after_a_cancel_and_reads_the_state_again() {
    let mut net = Net::new(2);
    let n = &mut net.nodes[1];
    n.m.reply(
        Link::Watch,
        Ok(Reply::WatchCanceled {
            compact_revision: 3,
            reason: "compacted".into(),
        }),
        net.now,
        &mut n.out,
    );
    net.settle();
    assert!(net.nodes[1].watch, "watching again");
    // It hears the failover through the new watch.
    net.kill(0);
    net.run_for(5_100, 100);
    assert_eq!(net.leaders(), vec![1]);
}

#[test]
fn a_request_without_answer_times_out_and_reconnects() {
    let mut net = Net::new(1);
    net.etcd.down = true;
    net.run_for(2_000, 100);
    net.etcd.down = false;
    net.run_for(2_100, 100);
    assert!(net.nodes[0].unary, "reconnected");
    assert!(net.nodes[0].m.status(net.now).stats.request_errors >= 1);
    assert_eq!(net.leaders(), vec![0]);
}

#[test]
fn no_deadline_in_the_past_while_etcd_is_silent() {
    // A deadline that acts on nothing would make the loop spin.
    let mut net = Net::new(2);
    net.etcd.down = true;
    for _ in 0..100 {
        net.now += 37;
        for n in &mut net.nodes {
            n.m.tick(net.now, &mut n.out);
            if let Some(d) = n.m.next_deadline() {
                assert!(d > net.now, "deadline {d} not after now {}", net.now);
            }
        }
        net.settle();
    }
}

#[test]
fn a_new_leader_reads_the_entries_accounts_with_the_claims_it_takes_over() {
    let mut net = Net::new(2);
    net.claim(0, "tick", WALL);
    net.kill(0);
    // The dead leader's last account reached etcd, but its watch event has not reached the
    // follower (the watch and the unary link are not ordered).
    let key = b"gearwheel/t/history/tick".to_vec();
    net.etcd.rev += 1;
    let kv = Kv {
        key: key.clone(),
        value: b"{\"skips\":3}".to_vec(),
        create_revision: net.etcd.rev,
        mod_revision: net.etcd.rev,
        version: 1,
        lease: 0,
    };
    net.etcd.kv.insert(key, kv);
    net.run_for(5_100, 100);
    assert_eq!(net.leaders(), vec![1]);
    assert_eq!(
        net.nodes[1].accounts,
        vec![("tick".to_string(), b"{\"skips\":3}".to_vec())],
        "handed on with the takeover, so the counts go on from it"
    );
    assert_eq!(net.nodes[1].takeovers.len(), 1);
}
