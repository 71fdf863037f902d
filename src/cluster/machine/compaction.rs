//! Compacting etcd's history: every claim and every done-mark is a new etcd revision, and
//! etcd keeps every past version of every key until a client compacts it (3.4 has no
//! default auto-compaction), so an `@every 1s` entry alone would add 86,400 revisions a
//! day until etcd hits its space quota and refuses all writes. The leader compacts, every
//! `--etcd-compaction-interval`, up to the revision it had seen one interval before: a
//! watch or a read that is less than an interval behind never meets a compacted revision
//! (and the servers' watches start from "now" and re-read on reconnect anyway).

use super::super::etcd::Reply;
use super::{Machine, Purpose};

pub(super) struct Compaction {
    /// 0: never (etcd compacts itself: `--auto-compaction-retention`).
    interval_ms: u64,
    /// When the next compaction is due (monotonic ms); None until this server leads.
    next_at: Option<u64>,
    /// The newest revision seen when the last interval began: the next compaction's target.
    mark: i64,
    /// The newest revision seen in any reply.
    latest: i64,
    /// The newest revision compacted (by this server, or found compacted already).
    done: i64,
}

impl Compaction {
    pub(super) fn new(interval_ms: u64) -> Compaction {
        Compaction {
            interval_ms,
            next_at: None,
            mark: 0,
            latest: 0,
            done: 0,
        }
    }

    /// Note the store's revision a reply carries.
    pub(super) fn saw(&mut self, r: &Reply) {
        let rev = match r {
            Reply::Range { revision, .. }
            | Reply::Put { revision }
            | Reply::Deleted { revision, .. }
            | Reply::Txn { revision, .. }
            | Reply::Compacted { revision } => *revision,
            // The lease's replies carry no store revision; the watch's come on the other link
            // and never reach here (`saw` is called on the unary link's replies).
            Reply::LeaseGranted { .. }
            | Reply::LeaseKeptAlive { .. }
            | Reply::LeaseRevoked
            | Reply::WatchCreated { .. }
            | Reply::WatchEvents { .. }
            | Reply::WatchCanceled { .. } => return,
        };
        self.latest = self.latest.max(rev);
    }

    /// For the leader: the revision to compact up to, when one is due. The first call only
    /// starts the first interval.
    pub(super) fn due(&mut self, now: u64) -> Option<i64> {
        if self.interval_ms == 0 {
            return None;
        }
        match self.next_at {
            None => {
                self.next_at = Some(now + self.interval_ms);
                self.mark = self.latest;
                None
            }
            Some(t) if now >= t => {
                let to = self.mark;
                self.mark = self.latest;
                self.next_at = Some(now + self.interval_ms);
                (to > self.done).then_some(to)
            }
            Some(_) => None,
        }
    }

    /// When the leader next wants a tick for it (never set while compaction is off).
    pub(super) fn next_at(&self) -> Option<u64> {
        self.next_at
    }

    /// etcd's history is compacted up to `revision` (by us, or before us).
    pub(super) fn compacted(&mut self, revision: i64) {
        self.done = self.done.max(revision);
    }

    /// No longer the leader: a later leadership starts a fresh interval.
    pub(super) fn reset(&mut self) {
        self.next_at = None;
        self.mark = 0;
    }
}

impl Machine {
    /// The leader queues a compaction when one is due (one at a time).
    pub(super) fn plan_compaction(&mut self, now: u64) {
        if self.pending(|p| matches!(p, Purpose::Compact { .. })) {
            return;
        }
        if let Some(revision) = self.compaction.due(now) {
            self.enqueue(Purpose::Compact { revision });
        }
    }

    pub(super) fn compacted(&mut self, revision: i64) {
        self.compaction.compacted(revision);
        self.stats.compactions += 1;
        log::info!("cluster: compacted etcd's history before revision {revision}");
    }

    /// etcd refuses a compaction to a revision it has compacted past already (its own
    /// auto-compaction, or another leader's): that is the goal reached, not an error.
    pub(super) fn already_compacted(&mut self, p: &Purpose, error: &str) -> bool {
        let Purpose::Compact { revision } = p else {
            return false;
        };
        if !error.contains("required revision has been compacted") {
            return false;
        }
        log::debug!("cluster: etcd's history was compacted past revision {revision} already");
        self.compaction.compacted(*revision);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(revision: i64) -> Reply {
        Reply::Txn {
            succeeded: true,
            revision,
            ranges: vec![],
        }
    }

    #[test]
    fn compacts_to_what_was_seen_one_interval_before() {
        let mut c = Compaction::new(1000);
        c.saw(&txn(10));
        assert_eq!(c.due(0), None, "the first call starts the interval");
        c.saw(&txn(50));
        assert_eq!(c.due(999), None);
        assert_eq!(c.due(1000), Some(10));
        c.compacted(10);
        c.saw(&txn(80));
        assert_eq!(c.due(2000), Some(50));
        c.compacted(50);
        assert_eq!(c.due(3000), Some(80));
        c.compacted(80);
        // Nothing new since: nothing to compact.
        assert_eq!(c.due(4000), None);
        assert_eq!(c.next_at(), Some(5000));
    }

    #[test]
    fn off_and_reset() {
        let mut c = Compaction::new(0);
        c.saw(&txn(10));
        assert_eq!(c.due(0), None);
        assert_eq!(c.due(1_000_000), None);
        assert_eq!(c.next_at(), None);
        let mut c = Compaction::new(1000);
        c.saw(&txn(10));
        c.due(0);
        c.reset();
        assert_eq!(c.next_at(), None);
        assert_eq!(c.due(5000), None, "a new leadership starts a new interval");
        assert_eq!(c.due(6000), Some(10));
    }
}
