//! The machine against a scripted etcd: an in-memory key space with revisions, leases that
//! expire on the test's clock, transactions and a prefix watch, driving several machines at
//! once. No sockets, no sleeps: time is a number the test moves.

use std::collections::{BTreeMap, HashMap};

use super::etcd::{Compare, EtcdError, Kv, Op, Reply, Request, WatchEvent};
use super::machine::Machine;
use super::records::RunRecord;
use super::types::*;

const T0: u64 = 1_000_000;
const WALL: u64 = 1_700_000_000_000;

#[derive(Default)]
struct Etcd {
    rev: i64,
    kv: BTreeMap<Vec<u8>, Kv>,
    /// lease -> (ttl secs, expires at)
    leases: HashMap<i64, (i64, u64)>,
    next_lease: i64,
    /// (node, prefix) of each watch.
    watchers: Vec<(usize, Vec<u8>)>,
    /// Events waiting for delivery, per node.
    events: Vec<(usize, WatchEvent)>,
    down: bool,
    /// History compacted up to this revision, and each compaction asked for.
    compacted: i64,
    compactions: Vec<i64>,
}

impl Etcd {
    fn emit(&mut self, deleted: bool, kv: Kv) {
        for (n, p) in &self.watchers {
            if kv.key.starts_with(p) {
                self.events.push((
                    *n,
                    WatchEvent {
                        deleted,
                        kv: kv.clone(),
                    },
                ));
            }
        }
    }

    fn expire(&mut self, now: u64) {
        let dead: Vec<i64> = self
            .leases
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(l, _)| *l)
            .collect();
        for l in dead {
            self.revoke(l);
        }
    }

    fn revoke(&mut self, lease: i64) {
        self.leases.remove(&lease);
        let keys: Vec<Vec<u8>> = self
            .kv
            .values()
            .filter(|kv| kv.lease == lease)
            .map(|kv| kv.key.clone())
            .collect();
        if !keys.is_empty() {
            self.rev += 1;
        }
        for k in keys {
            if let Some(mut kv) = self.kv.remove(&k) {
                kv.mod_revision = self.rev;
                self.emit(true, kv);
            }
        }
    }

    fn compare(&self, c: &Compare) -> bool {
        match c {
            Compare::CreateRevision { key, revision } => {
                self.kv.get(key).map_or(0, |kv| kv.create_revision) == *revision
            }
            Compare::ModRevision { key, revision } => {
                self.kv.get(key).map_or(0, |kv| kv.mod_revision) == *revision
            }
            Compare::Value { key, value } => self.kv.get(key).is_some_and(|kv| kv.value == *value),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8], lease: i64) {
        let (create, version) = self
            .kv
            .get(key)
            .map_or((self.rev, 0), |kv| (kv.create_revision, kv.version));
        let kv = Kv {
            key: key.to_vec(),
            value: value.to_vec(),
            create_revision: create,
            mod_revision: self.rev,
            version: version + 1,
            lease,
        };
        self.kv.insert(key.to_vec(), kv.clone());
        self.emit(false, kv);
    }

    fn range(&self, prefix: &[u8], exact: bool) -> Vec<Kv> {
        self.kv
            .values()
            .filter(|kv| {
                if exact {
                    kv.key == prefix
                } else {
                    kv.key.starts_with(prefix)
                }
            })
            .cloned()
            .collect()
    }

    fn lease_missing(&self, lease: i64) -> bool {
        lease != 0 && !self.leases.contains_key(&lease)
    }

    fn exec(&mut self, req: &Request, now: u64) -> Result<Reply, EtcdError> {
        self.expire(now);
        let lost = || EtcdError::Grpc {
            code: 5,
            message: "etcdserver: requested lease not found".into(),
        };
        Ok(match req {
            Request::LeaseGrant { ttl_secs } => {
                self.next_lease += 1;
                self.leases
                    .insert(self.next_lease, (*ttl_secs, now + *ttl_secs as u64 * 1000));
                Reply::LeaseGranted {
                    lease: self.next_lease,
                    ttl_secs: *ttl_secs,
                }
            }
            Request::LeaseKeepAlive { lease } => match self.leases.get_mut(lease) {
                Some((ttl, at)) => {
                    *at = now + *ttl as u64 * 1000;
                    Reply::LeaseKeptAlive {
                        lease: *lease,
                        ttl_secs: *ttl,
                    }
                }
                None => Reply::LeaseKeptAlive {
                    lease: *lease,
                    ttl_secs: 0,
                },
            },
            Request::LeaseRevoke { lease } => {
                self.revoke(*lease);
                Reply::LeaseRevoked
            }
            Request::Put { key, value, lease } => {
                if self.lease_missing(*lease) {
                    return Err(lost());
                }
                self.rev += 1;
                self.put(key, value, *lease);
                Reply::Put { revision: self.rev }
            }
            Request::Get { key } => Reply::Range {
                revision: self.rev,
                kvs: self.range(key, true),
            },
            Request::GetPrefix { prefix } => Reply::Range {
                revision: self.rev,
                kvs: self.range(prefix, false),
            },
            Request::Delete { key } => {
                self.rev += 1;
                let n = self.kv.remove(key).map_or(0, |kv| {
                    self.emit(true, kv);
                    1
                });
                Reply::Deleted {
                    revision: self.rev,
                    deleted: n,
                }
            }
            Request::Txn(t) => {
                let ok = t.compare.iter().all(|c| self.compare(c));
                let ops = if ok { &t.success } else { &t.failure };
                for op in ops {
                    if let Op::Put { lease, .. } = op {
                        if self.lease_missing(*lease) {
                            return Err(lost());
                        }
                    }
                }
                if ops
                    .iter()
                    .any(|op| matches!(op, Op::Put { .. } | Op::Delete { .. }))
                {
                    self.rev += 1;
                }
                let mut ranges = Vec::new();
                for op in ops {
                    match op {
                        Op::Put { key, value, lease } => self.put(key, value, *lease),
                        Op::Get { key } => ranges.push(self.range(key, true)),
                        Op::GetPrefix { prefix } => ranges.push(self.range(prefix, false)),
                        Op::Delete { key } => {
                            if let Some(kv) = self.kv.remove(key) {
                                self.emit(true, kv);
                            }
                        }
                    }
                }
                Reply::Txn {
                    succeeded: ok,
                    revision: self.rev,
                    ranges,
                }
            }
            Request::Compact { revision } => {
                let refused = |m: &str| EtcdError::Grpc {
                    code: 11,
                    message: format!("etcdserver: mvcc: required revision {m}"),
                };
                if *revision <= self.compacted {
                    return Err(refused("has been compacted"));
                }
                if *revision > self.rev {
                    return Err(refused("is a future revision"));
                }
                self.compacted = *revision;
                self.compactions.push(*revision);
                Reply::Compacted { revision: self.rev }
            }
            Request::Watch { .. } => unreachable!("watches are set up by the net"),
        })
    }
}

struct Node {
    m: Machine,
    unary: bool,
    watch: bool,
    /// Frozen: gets no ticks, no replies (SIGSTOP); its requests are not sent either.
    frozen: bool,
    /// Its watch gets no events (a partition of the watch only).
    deaf: bool,
    granted: Vec<(String, u64)>,
    refused: Vec<(String, u64, Refusal)>,
    takeovers: Vec<Vec<(String, u64)>>,
    pushed: Vec<String>,
    out: Output,
}

struct Net {
    etcd: Etcd,
    nodes: Vec<Node>,
    now: u64,
}

impl Net {
    fn new(n: usize) -> Net {
        Net::with_compaction(n, 0)
    }

    /// `n` machines whose leader compacts etcd every `compaction_ms` (0: never).
    fn with_compaction(n: usize, compaction_ms: u64) -> Net {
        let mut net = Net {
            etcd: Etcd::default(),
            nodes: Vec::new(),
            now: T0,
        };
        for i in 0..n {
            net.nodes.push(Node {
                m: Machine::new(Settings {
                    cluster: "t".into(),
                    id: format!("127.0.0.1:{}", 4730 + i),
                    ttl_secs: 5,
                    request_timeout_ms: 2000,
                    max_pending_claims: 16,
                    boot: format!("boot{i}"),
                    compaction_interval_ms: compaction_ms,
                }),
                unary: false,
                watch: false,
                frozen: false,
                deaf: false,
                granted: Vec::new(),
                refused: Vec::new(),
                takeovers: Vec::new(),
                pushed: Vec::new(),
                out: Output::default(),
            });
        }
        net.settle();
        net
    }

    /// Connect what can connect, deliver requests, replies and watch events until quiet.
    fn settle(&mut self) {
        for _ in 0..1000 {
            let mut busy = false;
            let now = self.now;
            if !self.etcd.down {
                self.etcd.expire(now);
            }
            for i in 0..self.nodes.len() {
                let n = &mut self.nodes[i];
                if n.frozen {
                    continue;
                }
                if !self.etcd.down && !n.unary {
                    n.unary = true;
                    n.m.link(Link::Unary, true, now, &mut n.out);
                }
                if !self.etcd.down && !n.watch {
                    n.watch = true;
                    n.m.link(Link::Watch, true, now, &mut n.out);
                }
                let out = std::mem::take(&mut n.out);
                for l in out.reset {
                    match l {
                        Link::Unary => n.unary = false,
                        Link::Watch => {
                            n.watch = false;
                            self.etcd.watchers.retain(|(w, _)| *w != i);
                        }
                    }
                    busy = true;
                }
                for d in out.decisions {
                    match d.result {
                        Ok(()) => n.granted.push((d.ask.entry, d.ask.nominal_ms)),
                        Err(r) => n.refused.push((d.ask.entry, d.ask.nominal_ms, r)),
                    }
                }
                if let Some(t) = out.takeover {
                    n.takeovers.push(t);
                }
                if let Some(t) = out.schedules_text {
                    n.pushed.push(t);
                }
                for (link, req) in out.send {
                    busy = true;
                    if self.etcd.down {
                        continue; // lost: the request timeout notices
                    }
                    match (link, &req) {
                        (Link::Watch, Request::Watch { key, .. }) => {
                            self.etcd.watchers.push((i, key.clone()));
                            n.m.reply(
                                Link::Watch,
                                Ok(Reply::WatchCreated {
                                    revision: self.etcd.rev,
                                }),
                                now,
                                &mut n.out,
                            );
                        }
                        (Link::Unary, r) if n.unary => {
                            let reply = self.etcd.exec(r, now);
                            n.m.reply(Link::Unary, reply, now, &mut n.out);
                        }
                        _ => {}
                    }
                }
            }
            if !self.etcd.down {
                for (i, ev) in std::mem::take(&mut self.etcd.events) {
                    let n = &mut self.nodes[i];
                    if n.frozen || n.deaf || !n.watch {
                        continue;
                    }
                    busy = true;
                    n.m.reply(
                        Link::Watch,
                        Ok(Reply::WatchEvents {
                            revision: self.etcd.rev,
                            events: vec![ev],
                        }),
                        self.now,
                        &mut n.out,
                    );
                }
            }
            if !busy {
                return;
            }
        }
        panic!("the net never settled");
    }

    /// Move time on in steps of `step` ms, ticking every machine.
    fn run_for(&mut self, ms: u64, step: u64) {
        let end = self.now + ms;
        while self.now < end {
            self.now = (self.now + step).min(end);
            for n in &mut self.nodes {
                if !n.frozen {
                    n.m.tick(self.now, &mut n.out);
                }
            }
            self.settle();
        }
    }

    fn leaders(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].m.is_leader(self.now))
            .collect()
    }

    fn claim(&mut self, i: usize, entry: &str, nominal: u64) {
        let now = self.now;
        let n = &mut self.nodes[i];
        n.m.claim(ask(entry, nominal), now, &mut n.out);
        self.settle();
    }

    fn kill(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        n.frozen = true;
        self.etcd.watchers.retain(|(w, _)| *w != i);
    }
}

fn ask(entry: &str, nominal: u64) -> ClaimAsk {
    ClaimAsk {
        entry: entry.into(),
        nominal_ms: nominal,
        overlap_skip: false,
        unique: String::new(),
        until_ms: 0,
        wall_ms: nominal,
    }
}

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
