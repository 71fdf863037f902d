//! The machine against a scripted etcd: an in-memory key space with revisions, leases that
//! expire on the test's clock, transactions and a prefix watch, driving several machines at
//! once. No sockets, no sleeps: time is a number the test moves. The tests are in
//! election.rs (leadership, leases, the watch, clocks), runs.rs (claims' records, overlap,
//! pushed files, compaction) and ops.rs (operators' asks and entries' accounts).

use std::collections::{BTreeMap, HashMap};

use super::etcd::{Compare, EtcdError, Kv, Op, Reply, Request, WatchEvent};
use super::machine::Machine;
use super::records::RunRecord;
use super::types::*;

mod election;
mod ops;
mod runs;

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
    /// Granted claims the machine said to skip (an operator's `skip schedule`).
    skipped: Vec<(String, u64)>,
    /// Operators' records handed on: entry, paused, skip pending.
    ops: Vec<(String, bool, bool)>,
    /// Runs asked by an operator that this node won the right to fire.
    run_now: Vec<String>,
    /// Other servers' accounts handed on.
    accounts: Vec<(String, Vec<u8>)>,
    /// Operators' asks answered: ticket, and etcd's word.
    answers: Vec<(u64, Result<(), String>)>,
    /// `@after` sets this node's write met, handed on to merge.
    after_conflicts: Vec<(String, Vec<u8>)>,
    out: Output,
}

struct Net {
    etcd: Etcd,
    nodes: Vec<Node>,
    now: u64,
    /// The last ticket of an operator's ask (ops.rs).
    tickets: u64,
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
            tickets: 0,
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
                skipped: Vec::new(),
                ops: Vec::new(),
                run_now: Vec::new(),
                accounts: Vec::new(),
                answers: Vec::new(),
                after_conflicts: Vec::new(),
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
                n.ops
                    .extend(out.ops.into_iter().map(|(e, r, p)| (e, r.paused, p)));
                n.run_now.extend(out.run_now);
                n.accounts.extend(out.history);
                n.answers.extend(out.ops_done);
                n.after_conflicts.extend(out.after_conflicts);
                for d in out.decisions {
                    if d.skip {
                        n.skipped.push((d.ask.entry.clone(), d.ask.nominal_ms));
                    }
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
