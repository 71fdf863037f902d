//! The etcd conversation as a pure state machine: a lease kept alive, a member key, the
//! election, the watch, and the claim of each schedule run. Events in (replies, a tick with
//! `now`, links up and down), requests out; it never sees a socket or a job.
//!
//! Time here is the loop's monotonic milliseconds (`now`), never the wall clock: the lease is
//! judged by how long ago etcd last confirmed it, and a wall clock that steps must not make an
//! expired lease look alive. Wall time appears only inside claims (scheduled times).
//!
//! This file: the machine, its requests in flight (`Purpose`) and the lease. Beside it:
//!
//! - `claims`: claims of schedule runs and their fenced transactions.
//! - `watch`: the watch on the cluster's keys (leader, members, runs, a pushed file), and
//!   the leadership it tells of (a campaign's outcome, a lost fence).
//! - `compaction`: the leader's compaction of etcd's history.
//! - `requests`: the etcd request each purpose sends, built when it is sent.
//! - `replies`: etcd's answer to each (a reply, an error, or none ever: lost).
//! - `ops`: operators' asks on entries (pause, skip, run now) and the entries' accounts of
//!   their runs, kept in etcd for the whole cluster.
//! - `backfill`: backfills asked on any server, each time run once by the leader.
//! - `status`: what the machine tells of itself (`show cluster`, its lease and leader,
//!   whether etcd is unreachable).

use std::collections::{BTreeMap, HashMap, VecDeque};

mod backfill;
mod claims;
mod compaction;
mod ops;
mod replies;
mod requests;
mod status;
mod watch;

use super::etcd::{self, Compare, EtcdError, Kv, Op, Reply, Request, Txn};
use super::outage::Outage;
use super::records::{self, Member, RunRecord};
use super::types::*;
use ops::CachedOps;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Purpose {
    Grant,
    KeepAlive {
        lease: i64,
    },
    PutMember,
    Campaign,
    /// The new leader reads every entry's last claimed run.
    LoadRuns,
    /// The leader rewrites its key's value (a new digest), fenced.
    PublishLeader,
    /// After the watch starts: the leader, the members and the pushed schedules file.
    ReadState,
    Claim {
        ask: ClaimAsk,
        tries: u8,
    },
    /// The leader forgets the record of an entry no longer in its file.
    DeleteRun,
    /// This server's overlap=skip run of the entry ended: mark its record done.
    FinishRun {
        entry: String,
    },
    /// The leader drops etcd's history before `revision` (compaction.rs).
    Compact {
        revision: i64,
    },
    /// An operator's ask on an entry, written to its ops record (ops.rs).
    Operate {
        entry: String,
        op: EntryOp,
        tries: u8,
        /// Whose answer waits for etcd's (`Output::ops_done`).
        ticket: u64,
    },
    /// The leader counts one asked run fired, fenced; it fires it when etcd says yes.
    FireRun {
        entry: String,
    },
    /// This server's account of an entry's runs or set of an `@after` child; `entry` is
    /// the key under the prefix (`history/{entry}`, `after/{child}`).
    PutHistory {
        entry: String,
    },
    /// A backfill asked on this server, added to the entry's record (backfill.rs).
    Backfill {
        entry: String,
        span: records::BackfillSpan,
        tries: u8,
        /// Whose answer waits for etcd's (`Output::ops_done`), as an operation's.
        ticket: u64,
    },
    /// The leader takes the next time of the entry's backfill off its record, fenced.
    BackfillRun {
        entry: String,
        front: records::BackfillSpan,
        nominal: Option<u64>,
    },
}

struct InFlight {
    purpose: Purpose,
    sent: u64,
    /// The clock epoch it was sent in (see `observe`).
    epoch: u32,
}

/// Who holds the leader key.
#[derive(Clone, Debug)]
struct LeaderView {
    member: Member,
    create_revision: i64,
    /// The key's last write: the leader publishes its digests after every load.
    mod_revision: i64,
}

#[derive(Clone, Debug)]
struct CachedRun {
    record: RunRecord,
    mod_revision: i64,
}

/// An overlap=skip run this server claimed and queued, until its record is marked done.
#[derive(Clone, Debug)]
struct OwnRun {
    record: RunRecord,
    /// The record's revision as this server wrote it: the mark is written only over it.
    revision: i64,
    /// Its jobs all ended (the engine said so): the mark is owed.
    ended: bool,
}

pub struct Machine {
    s: Settings,
    prefix: String,
    unary_up: bool,
    watch_up: bool,
    queue: VecDeque<Purpose>,
    in_flight: Option<InFlight>,
    lease: Option<i64>,
    /// The lease is taken as alive until this (monotonic ms): etcd's TTL counted from when
    /// the last successful keepalive was SENT, minus a margin.
    valid_until: u64,
    /// The latest `now` seen: a clock that went back makes the lease unsure.
    last_now: u64,
    next_keepalive: u64,
    member_put: bool,
    want_campaign: bool,
    next_campaign: u64,
    leader: Option<LeaderView>,
    /// Some while this server is the leader and may claim runs: its key's create revision.
    fence: Option<i64>,
    /// The runs were read since this server became the leader (claims wait for it).
    runs_loaded: bool,
    runs: HashMap<String, CachedRun>,
    /// This server's overlap=skip runs not yet marked done in etcd, by entry.
    own: HashMap<String, OwnRun>,
    members: BTreeMap<String, Member>,
    /// This server's schedules file: its digest and per-entry digests.
    me: Member,
    entry_ids: Vec<String>,
    /// The `P/schedules` revision last handed on.
    schedules_revision: i64,
    /// Run keys to delete (entries not in the leader's file).
    stale_runs: Vec<String>,
    /// Whether the lease was valid at the last tick (to log the change once).
    was_valid: bool,
    /// This server stopped firing as the leader because its lease went unconfirmed: its
    /// refusals say so (a follower's are quiet) until the lease is confirmed or another
    /// server leads.
    safety_stopped: bool,
    differing: Vec<String>,
    /// The scheduled time claimed before the claim in flight (see `skips`).
    claim_previous: u64,
    /// Every entry's operators' record (`P/ops/{entry}`), as read or watched.
    ops: HashMap<String, CachedOps>,
    /// The ops record of the request in flight, cached when etcd takes it.
    ops_sent: Option<(String, records::OpsRecord)>,
    /// Operators' asks whose request was lost with the connection, asked again when it is back.
    ops_retry: Vec<Purpose>,
    /// Operators' asks whose answer waits for etcd's, by ticket: when they are given up
    /// (monotonic ms). One answer each: it leaves this map when given.
    op_waits: BTreeMap<u64, u64>,
    /// This server's accounts of entries' runs waiting to be written (the newest per entry),
    /// and the last written (its echo from the watch is not news).
    history_out: BTreeMap<String, Vec<u8>>,
    history_written: HashMap<String, Vec<u8>>,
    /// Every entry's backfill record (`P/backfill/{entry}`), as read or watched, and the one
    /// in flight, cached when etcd takes it.
    backfills: HashMap<String, backfill::CachedBackfill>,
    backfill_sent: Option<(String, records::BackfillRecord)>,
    /// The revision of each `after/{child}` key as this server knows it (its sets are written
    /// over it), and the merges tried for the write in progress.
    after_revs: HashMap<String, i64>,
    after_tries: HashMap<String, u8>,
    /// Bumped when the clock goes back: replies to requests sent before do not confirm the
    /// lease.
    epoch: u32,
    compaction: compaction::Compaction,
    /// etcd unreachable: what the log says of it.
    outage: Outage,
    /// The leader last logged (id and term), so a change is said once.
    leader_logged: Option<(String, i64)>,
    /// A file pushed to etcd was handed on at this `P/schedules` revision and the leader has
    /// not yet published its digests since: a difference is the push on its way, not news.
    push_unconfirmed: Option<i64>,
    /// A pushed file was handed on and this server has not loaded it yet (`push_loaded`).
    push_loading: bool,
    stats: Stats,
}

impl Machine {
    pub fn new(s: Settings) -> Machine {
        let prefix = format!("gearwheel/{}/", s.cluster);
        let me = Member {
            id: s.id.clone(),
            addr: s.id.clone(),
            boot: s.boot.clone(),
            ..Member::default()
        };
        let compaction = compaction::Compaction::new(s.compaction_interval_ms);
        Machine {
            s,
            prefix,
            unary_up: false,
            watch_up: false,
            queue: VecDeque::new(),
            in_flight: None,
            lease: None,
            valid_until: 0,
            last_now: 0,
            next_keepalive: 0,
            member_put: false,
            want_campaign: false,
            next_campaign: 0,
            leader: None,
            fence: None,
            runs_loaded: false,
            runs: HashMap::new(),
            own: HashMap::new(),
            members: BTreeMap::new(),
            me,
            entry_ids: Vec::new(),
            schedules_revision: 0,
            stale_runs: Vec::new(),
            was_valid: false,
            safety_stopped: false,
            differing: Vec::new(),
            ops: HashMap::new(),
            claim_previous: 0,
            ops_sent: None,
            ops_retry: Vec::new(),
            op_waits: BTreeMap::new(),
            history_out: BTreeMap::new(),
            history_written: HashMap::new(),
            backfills: HashMap::new(),
            backfill_sent: None,
            after_revs: HashMap::new(),
            after_tries: HashMap::new(),
            epoch: 0,
            compaction,
            outage: Outage::default(),
            leader_logged: None,
            push_unconfirmed: None,
            push_loading: false,
            stats: Stats::default(),
        }
    }

    fn key(&self, rest: &str) -> Vec<u8> {
        format!("{}{rest}", self.prefix).into_bytes()
    }

    fn run_key(&self, entry: &str) -> Vec<u8> {
        self.key(&format!("runs/{entry}"))
    }

    fn ttl_ms(&self) -> u64 {
        self.s.ttl_secs.max(1) as u64 * 1000
    }

    /// The lease is confirmed well enough to act as the leader.
    fn lease_ok(&self, now: u64) -> bool {
        self.lease.is_some() && now < self.valid_until
    }

    /// Whether this server may fire runs now.
    pub fn is_leader(&self, now: u64) -> bool {
        self.fence.is_some() && self.runs_loaded && self.lease_ok(now)
    }

    /// This server's schedules file changed: its digests (published in its member key and,
    /// when leader, in the leader key) and its entry ids (the leader forgets other records).
    pub fn set_schedules(&mut self, digest: String, entries: String, ids: Vec<String>) {
        self.me.digest = digest;
        self.me.entries = entries;
        self.entry_ids = ids;
        self.compare_with_leader();
        if self.member_put {
            self.member_put = false;
        }
        if self.fence.is_some() {
            self.enqueue(Purpose::PublishLeader);
            self.collect_stale_runs();
        }
    }

    /// The earliest time the machine wants a tick.
    pub fn next_deadline(&self) -> Option<u64> {
        let mut d: Option<u64> = None;
        let mut at = |t: u64| d = Some(d.map_or(t, |x| x.min(t)));
        if let Some(f) = &self.in_flight {
            at(f.sent + self.s.request_timeout_ms);
        }
        // Only times that lead to an action: a deadline in the past that acts on nothing
        // would spin the loop.
        if self.unary_up && self.lease.is_some() {
            if !self.pending(|p| matches!(p, Purpose::KeepAlive { .. })) {
                at(self.next_keepalive);
            }
            if self.fence.is_none()
                && self.member_put
                && self.lease_ok(self.last_now)
                && !self.pending(|p| *p == Purpose::Campaign)
            {
                at(self.next_campaign);
            }
        }
        if self.lease.is_some() && self.was_valid {
            at(self.valid_until);
        }
        if self.fence.is_some() {
            if let Some(t) = self.compaction.next_at() {
                at(t);
            }
        }
        if let Some(t) = self.outage.next_summary() {
            at(t);
        }
        if let Some(&t) = self.op_waits.values().min() {
            at(t);
        }
        d
    }

    /// A link came up (connected) or went down (closed, failed).
    pub fn link(&mut self, link: Link, up: bool, now: u64, out: &mut Output) {
        self.observe(now, out);
        match (link, up) {
            (Link::Unary, true) => {
                self.unary_up = true;
                // Confirm the lease at once: how long we were away is unknown.
                self.next_keepalive = now;
            }
            (Link::Unary, false) => {
                self.unary_up = false;
                if let Some(f) = self.in_flight.take() {
                    self.stats.request_errors += 1;
                    self.lost(f.purpose, "the connection to etcd closed", true, out);
                }
                for p in std::mem::take(&mut self.queue) {
                    self.lost(p, "no connection to etcd", false, out);
                }
            }
            (Link::Watch, true) => {
                self.watch_up = true;
                out.send.push((
                    Link::Watch,
                    Request::Watch {
                        key: self.prefix.clone().into_bytes(),
                        prefix: true,
                        start_revision: 0,
                    },
                ));
            }
            (Link::Watch, false) => self.watch_up = false,
        }
        self.advance(now, out);
    }

    /// The loop's timer: keepalives, campaigns, request timeouts, the lease's validity.
    pub fn tick(&mut self, now: u64, out: &mut Output) {
        self.observe(now, out);
        if let Some(say) = self.outage.tick(now) {
            say.log();
        }
        if let Some(f) = &self.in_flight {
            if now >= f.sent + self.s.request_timeout_ms {
                let why = format!(
                    "etcd did not answer within {} ms (--etcd-request-timeout)",
                    self.s.request_timeout_ms
                );
                self.unreachable(now, &why);
                out.reset.push(Link::Unary);
                self.link(Link::Unary, false, now, out);
                return;
            }
        }
        self.ops_overdue(now, out);
        self.advance(now, out);
    }

    /// Check the lease against the clock: stop firing the moment it can no longer be
    /// trusted (its TTL ran out by the local clock, or the clock went back).
    fn observe(&mut self, now: u64, _out: &mut Output) {
        if now < self.last_now && self.lease.is_some() {
            log::warn!(
                "cluster: the clock went back {} ms; the lease counts as unconfirmed until etcd renews it",
                self.last_now - now
            );
            self.valid_until = 0;
            self.next_keepalive = now;
            self.next_campaign = now;
            // A request sent before the step says nothing in the new time base.
            self.epoch += 1;
            if let Some(f) = &mut self.in_flight {
                f.sent = now;
            }
        }
        if now < self.last_now {
            self.last_now = now;
        }
        self.last_now = self.last_now.max(now);
        let valid = self.lease_ok(now);
        if self.was_valid && !valid {
            if self.fence.is_some() {
                self.stats.safety_stops += 1;
                self.safety_stopped = true;
                log::error!(
                    "cluster: the etcd lease could not be renewed within its TTL ({} s); this server stops firing schedules until etcd confirms it (safety before liveness)",
                    self.s.ttl_secs
                );
            } else {
                log::warn!("cluster: the etcd lease could not be renewed in time");
            }
            self.step_down();
        }
        self.was_valid = valid;
    }

    fn step_down(&mut self) {
        self.fence = None;
        self.runs_loaded = false;
        self.compaction.reset();
    }

    /// Queue what the state calls for, then send the next unary request if none is in flight.
    fn advance(&mut self, now: u64, out: &mut Output) {
        if !self.unary_up {
            return;
        }
        self.enqueue_finishes();
        self.enqueue_ops(now);
        match self.lease {
            None => {
                if !self.pending(|p| *p == Purpose::Grant) {
                    self.member_put = false;
                    self.enqueue(Purpose::Grant);
                }
            }
            Some(lease) => {
                if now >= self.next_keepalive
                    && !self.pending(|p| matches!(p, Purpose::KeepAlive { .. }))
                {
                    self.enqueue(Purpose::KeepAlive { lease });
                    self.next_keepalive = now + (self.ttl_ms() / 3).max(1);
                }
                if self.lease_ok(now) {
                    if !self.member_put && !self.pending(|p| *p == Purpose::PutMember) {
                        self.enqueue(Purpose::PutMember);
                    }
                    if self.fence.is_none() && now >= self.next_campaign {
                        self.want_campaign = true;
                    }
                    if self.member_put
                        && self.fence.is_none()
                        && self.want_campaign
                        && !self.pending(|p| *p == Purpose::Campaign)
                    {
                        self.want_campaign = false;
                        self.next_campaign = now + (self.ttl_ms() / 3).max(1);
                        self.enqueue(Purpose::Campaign);
                    }
                    if self.fence.is_some()
                        && !self.runs_loaded
                        && !self.pending(|p| *p == Purpose::LoadRuns)
                    {
                        self.enqueue(Purpose::LoadRuns);
                    }
                    if self.fence.is_some() && self.runs_loaded {
                        self.plan_compaction(now);
                    }
                }
            }
        }
        self.send_next(now, out);
    }

    fn pending(&self, f: impl Fn(&Purpose) -> bool) -> bool {
        self.in_flight.as_ref().is_some_and(|x| f(&x.purpose)) || self.queue.iter().any(f)
    }

    fn enqueue(&mut self, p: Purpose) {
        // Lease upkeep goes before claims: a keepalive stuck behind claims could let the
        // lease lapse.
        if matches!(p, Purpose::KeepAlive { .. } | Purpose::Grant) {
            self.queue.push_front(p);
        } else {
            self.queue.push_back(p);
        }
    }

    fn send_next(&mut self, now: u64, out: &mut Output) {
        while self.in_flight.is_none() && self.unary_up {
            let Some(p) = self.queue.pop_front() else {
                return;
            };
            if let Some(req) = self.request_for(&p, now, out) {
                out.send.push((Link::Unary, req));
                self.in_flight = Some(InFlight {
                    purpose: p,
                    sent: now,
                    epoch: self.epoch,
                });
            }
        }
    }

    /// A reply (or an error) on a link.
    pub fn reply(
        &mut self,
        link: Link,
        reply: Result<Reply, EtcdError>,
        now: u64,
        out: &mut Output,
    ) {
        self.observe(now, out);
        match link {
            Link::Watch => self.watch_reply(reply, out),
            Link::Unary => {
                let Some(f) = self.in_flight.take() else {
                    log::warn!("cluster: an etcd reply nobody asked for; reconnecting");
                    out.reset.push(Link::Unary);
                    self.link(Link::Unary, false, now, out);
                    return;
                };
                if let Some(say) = self.outage.answered(now) {
                    say.log();
                }
                let took = now.saturating_sub(f.sent);
                self.stats.requests += 1;
                self.stats.latency_sum_ms += took;
                self.stats.latency_max_ms = self.stats.latency_max_ms.max(took);
                match reply {
                    Ok(r) => {
                        self.compaction.saw(&r);
                        self.unary_reply(f, r, now, out)
                    }
                    Err(e) => self.unary_error(f.purpose, e, out),
                }
            }
        }
        self.advance(now, out);
    }

    /// etcd says the lease ended: so did the member key and any leader key it held.
    fn lease_gone(&mut self) {
        self.lease = None;
        self.valid_until = 0;
        self.member_put = false;
        if self.fence.is_some() {
            log::error!("cluster: this server's lease ended; it is no longer the leader");
        }
        self.step_down();
        self.was_valid = false;
    }

    fn valid_ms(&self, ttl_secs: i64) -> u64 {
        // The margin covers a local clock running slower than etcd's and the time the
        // keepalive took to reach etcd: a tenth of the TTL, at least 300 ms.
        let ttl = ttl_secs.max(1) as u64 * 1000;
        ttl - (ttl / 10).max(300).min(ttl / 2)
    }
}
