//! What the machine tells of itself: the state for `show cluster`, `/cluster` and /metrics,
//! its lease and the leader it knows, and whether etcd is unreachable.

use super::*;

impl Machine {
    /// A copy of the state for `show cluster`, `/cluster` and /metrics.
    pub fn status(&self, now: u64) -> Status {
        Status {
            cluster: self.s.cluster.clone(),
            id: self.s.id.clone(),
            leader: self.leader.as_ref().map(|l| l.member.id.clone()),
            is_leader: self.is_leader(now),
            fence: self.fence,
            leader_revision: self.leader.as_ref().map(|l| l.create_revision),
            lease_left_ms: self.lease.map(|_| self.valid_until.saturating_sub(now)),
            reachable: self.unary_up && self.lease_ok(now),
            members: self.members.values().cloned().collect(),
            differing: self.differing.clone(),
            stats: self.stats.clone(),
        }
    }

    /// The leader's lease id, for a graceful shutdown's revoke.
    pub fn lease(&self) -> Option<i64> {
        self.lease
    }

    /// The leader's id, if known.
    pub fn leader_id(&self) -> Option<&str> {
        self.leader.as_ref().map(|l| l.member.id.as_str())
    }

    /// An attempt to reach etcd failed (the link's connect, or a request unanswered): the
    /// first of an outage is an ERROR, the rest are summed up once a minute.
    pub fn unreachable(&mut self, now: u64, why: &str) {
        self.outage.failed(now, why).log();
    }

    /// An outage is going on (attempts fail and etcd has not answered since).
    pub fn etcd_unreachable(&self) -> bool {
        self.outage.next_summary().is_some()
    }
}
