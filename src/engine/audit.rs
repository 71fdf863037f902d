//! The audit trail: operators' actions (who, from where, which command, with what outcome),
//! kept newest last up to `--keep-audit`, journalled as `store::Audit` records and listed by
//! `show audit [N]`, `GET /audit` and the console. The reactor says who acted (the engine
//! never sees an identity); this keeps, bounds, journals and lists.

use std::collections::VecDeque;
use std::fmt::Write as _;

use bytes::Bytes;

use super::Engine;
use crate::store::{Audit, Record};

/// The most bytes of one field an action keeps (an outcome's error text, a certificate name).
const FIELD_MAX: usize = 256;

/// One operator's action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// Its number in the trail, from 1; it goes on across restarts.
    pub seq: u64,
    pub at_ms: u64,
    /// `cn:NAME`, `token:NAME`, `addr:IP`, or `etcd` for a schedules file pushed to the cluster.
    pub identity: String,
    /// The peer's address, `-` when there is none.
    pub peer: String,
    /// The command, already escaped as log text.
    pub command: String,
    /// `OK`, or the error it was answered with.
    pub outcome: String,
}

/// The kept actions, oldest first, at most `keep`.
#[derive(Debug)]
pub struct AuditTrail {
    keep: usize,
    next: u64,
    kept: VecDeque<Action>,
}

/// `s` cut to `FIELD_MAX` bytes on a character boundary.
fn bounded(mut s: String) -> String {
    if s.len() > FIELD_MAX {
        let mut end = FIELD_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

impl AuditTrail {
    pub fn new(keep: usize) -> AuditTrail {
        AuditTrail {
            keep,
            next: 1,
            kept: VecDeque::new(),
        }
    }

    /// Keep `a` under the next number (the oldest kept goes past `keep`); returns it as kept
    /// (`None` when `keep` is 0).
    fn push(&mut self, mut a: Action) -> Option<&Action> {
        if self.keep == 0 {
            return None;
        }
        a.seq = self.next;
        self.next += 1;
        for f in [&mut a.identity, &mut a.peer, &mut a.command, &mut a.outcome] {
            *f = bounded(std::mem::take(f));
        }
        self.kept.push_back(a);
        while self.kept.len() > self.keep {
            self.kept.pop_front();
        }
        self.kept.back()
    }

    /// The oldest number still kept once the newest is: what a record's `floor` says.
    fn floor(&self) -> u64 {
        self.kept.front().map_or(self.next, |a| a.seq)
    }

    /// An action from the journal, oldest first: kept as it was numbered.
    fn restore(&mut self, a: Action) {
        self.next = self.next.max(a.seq + 1);
        self.kept.push_back(a);
        while self.kept.len() > self.keep {
            self.kept.pop_front();
        }
    }

    /// The newest `n` actions, oldest first.
    pub fn newest(&self, n: usize) -> impl Iterator<Item = &Action> {
        self.kept.iter().skip(self.kept.len().saturating_sub(n))
    }

    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// The listing of `show audit [N]`: one action a line, tab-separated (seq, time, identity,
/// peer, command, outcome), oldest first, ending with `.`.
pub fn listing<'a>(actions: impl Iterator<Item = &'a Action>) -> String {
    let mut s = String::new();
    for a in actions {
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{}\t{}",
            a.seq,
            super::rfc3339(a.at_ms),
            a.identity,
            a.peer,
            a.command,
            a.outcome
        );
    }
    s.push_str(".\n");
    s
}

impl Engine {
    /// An operator's action happened: keep it, and journal it. Returns its number (0 when
    /// `--keep-audit 0` keeps none).
    pub fn record_action(&mut self, action: Action) -> u64 {
        let Some(a) = self.audit.push(action) else {
            return 0;
        };
        let seq = a.seq;
        if self.config.durable {
            let rec = Audit {
                seq,
                floor: 0,
                at_ms: a.at_ms,
                identity: Bytes::copy_from_slice(a.identity.as_bytes()),
                peer: Bytes::copy_from_slice(a.peer.as_bytes()),
                command: Bytes::copy_from_slice(a.command.as_bytes()),
                outcome: Bytes::copy_from_slice(a.outcome.as_bytes()),
            };
            let floor = self.audit.floor();
            self.durable.push(Record::Audit(Audit { floor, ..rec }));
        }
        seq
    }

    /// The audit trail, for its views.
    pub fn audit_trail(&self) -> &AuditTrail {
        &self.audit
    }

    /// Put back the actions the journal kept, oldest first.
    pub(super) fn restore_audit(&mut self, kept: Vec<Audit>) {
        let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        for a in kept {
            self.audit.restore(Action {
                seq: a.seq,
                at_ms: a.at_ms,
                identity: text(&a.identity),
                peer: text(&a.peer),
                command: text(&a.command),
                outcome: text(&a.outcome),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(command: &str) -> Action {
        Action {
            seq: 0,
            at_ms: 1_000,
            identity: "addr:127.0.0.1".into(),
            peer: "127.0.0.1".into(),
            command: command.into(),
            outcome: "OK".into(),
        }
    }

    #[test]
    fn the_trail_keeps_the_newest_and_numbers_on() {
        let mut t = AuditTrail::new(3);
        for i in 0..5 {
            t.push(act(&format!("maxqueue f {i}")));
        }
        assert_eq!(t.len(), 3);
        let seqs: Vec<u64> = t.newest(10).map(|a| a.seq).collect();
        assert_eq!(seqs, [3, 4, 5]);
        assert_eq!(t.floor(), 3);
        let two: Vec<&str> = t.newest(2).map(|a| a.command.as_str()).collect();
        assert_eq!(two, ["maxqueue f 3", "maxqueue f 4"]);
        // Numbers go on after a restore.
        let mut r = AuditTrail::new(2);
        for a in t.newest(10).cloned() {
            r.restore(a);
        }
        assert_eq!(r.len(), 2);
        assert_eq!(r.push(act("x")).map(|a| a.seq), Some(6));
    }

    #[test]
    fn keeping_none_keeps_none_and_fields_are_bounded() {
        let mut t = AuditTrail::new(0);
        assert_eq!(t.push(act("x")), None);
        assert!(t.is_empty());
        let mut t = AuditTrail::new(1);
        let long = "é".repeat(FIELD_MAX);
        let a = t.push(Action {
            outcome: long,
            ..act("x")
        });
        assert!(a.is_some_and(|a| a.outcome.len() <= FIELD_MAX));
        assert_eq!(listing(t.newest(1)).lines().count(), 2);
    }
}
