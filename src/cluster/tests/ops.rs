//! Operators' asks kept in etcd for the whole cluster, against the scripted etcd: a pause, a
//! skip and a run asked of a follower are obeyed by the leader and by the next one, each once;
//! an ask is refused while etcd is away; an ask (an operation or a backfill) is answered when
//! etcd has answered; an entry's account reaches the other servers.

use super::*;

impl Net {
    /// Node `i` asks `op` of `entry`: Err when refused at once; else etcd's answer, given
    /// while the net settles.
    fn operate(&mut self, i: usize, entry: &str, op: EntryOp) -> Result<(), String> {
        let ticket = self.ask(i, entry, op)?;
        let answer = self.nodes[i].answers.iter().find(|(t, _)| *t == ticket);
        answer.expect("an answer").1.clone()
    }

    /// Node `i` asks `op` of `entry`: its ticket, or why it was refused at once.
    fn ask(&mut self, i: usize, entry: &str, op: EntryOp) -> Result<u64, String> {
        let now = self.now;
        self.tickets += 1;
        let ticket = self.tickets;
        let n = &mut self.nodes[i];
        let r = n.m.operate(ticket, entry.into(), op, now, &mut n.out);
        self.settle();
        r.map(|()| ticket)
    }

    /// Node `i` asks a backfill of three times of `entry`: its ticket, or why it was refused
    /// at once.
    fn ask_backfill(&mut self, i: usize, entry: &str) -> Result<u64, String> {
        let now = self.now;
        self.tickets += 1;
        let ticket = self.tickets;
        let span = crate::cluster::records::BackfillSpan {
            after_ms: WALL - 3_000,
            to_ms: WALL,
            left: 3,
        };
        let n = &mut self.nodes[i];
        let r = n.m.backfill(ticket, entry.into(), span, now, &mut n.out);
        self.settle();
        r.map(|()| ticket)
    }

    /// Whether etcd holds a backfill record of `entry`.
    fn has_backfill(&self, entry: &str) -> bool {
        let tail = format!("backfill/{entry}");
        self.etcd.kv.keys().any(|k| k.ends_with(tail.as_bytes()))
    }

    /// The leader and a follower, once one leads.
    fn roles(&mut self) -> (usize, usize) {
        self.run_for(2_000, 100);
        let l = self.leaders();
        assert_eq!(l.len(), 1, "one leader");
        (l[0], 1 - l[0])
    }

    /// Node `i` dies (kill -9) and another takes over.
    fn failover(&mut self, i: usize) -> usize {
        self.kill(i);
        self.run_for(8_000, 200);
        let l = self.leaders();
        assert_eq!(l.len(), 1, "a new leader");
        l[0]
    }
}

#[test]
fn a_pause_asked_of_a_follower_holds_on_the_leader_and_the_next_one() {
    let mut net = Net::new(3);
    let (l, f) = net.roles();
    net.operate(f, "e", EntryOp::Pause).unwrap();
    for n in &net.nodes {
        assert_eq!(n.ops.last(), Some(&("e".to_string(), true, false)));
    }
    net.claim(l, "e", WALL);
    assert_eq!(net.nodes[l].refused.last().unwrap().2, Refusal::Paused);
    let next = net.failover(l);
    net.claim(next, "e", WALL + 1000);
    assert_eq!(net.nodes[next].refused.last().unwrap().2, Refusal::Paused);
    net.operate(next, "e", EntryOp::Resume).unwrap();
    net.claim(next, "e", WALL + 2000);
    assert_eq!(
        net.nodes[next].granted,
        vec![("e".to_string(), WALL + 2000)]
    );
}

#[test]
fn a_skip_is_spent_by_the_first_run_claimed_after_it_and_only_once() {
    let mut net = Net::new(3);
    let (l, f) = net.roles();
    net.claim(l, "e", WALL);
    net.operate(
        f,
        "e",
        EntryOp::Skip {
            after_ms: WALL + 500,
        },
    )
    .unwrap();
    assert_eq!(
        net.nodes[f].ops.last(),
        Some(&("e".to_string(), false, true))
    );
    net.claim(l, "e", WALL + 1000);
    assert_eq!(net.nodes[l].skipped, vec![("e".to_string(), WALL + 1000)]);
    // Spent: every server says no skip is pending any more.
    for i in 0..3 {
        assert_eq!(
            net.nodes[i].ops.last(),
            Some(&("e".to_string(), false, false)),
            "node {i}"
        );
    }
    net.claim(l, "e", WALL + 2000);
    let next = net.failover(l);
    net.claim(next, "e", WALL + 3000);
    assert!(net.nodes[next].skipped.is_empty(), "never skipped twice");
    assert_eq!(net.nodes[l].skipped.len(), 1);
}

#[test]
fn a_run_asked_of_a_follower_is_fired_once_by_the_leader_not_again_by_the_next() {
    let mut net = Net::new(3);
    let (l, f) = net.roles();
    // The leader fires only entries of its file.
    net.nodes[l]
        .m
        .set_schedules("d".into(), "e=1".into(), vec!["e".into()]);
    net.operate(f, "e", EntryOp::Run).unwrap();
    net.run_for(1_000, 100);
    assert_eq!(net.nodes[l].run_now, vec!["e".to_string()]);
    assert!(net.nodes[f].run_now.is_empty());
    for i in 0..3 {
        if i != l {
            net.nodes[i]
                .m
                .set_schedules("d".into(), "e=1".into(), vec!["e".into()]);
        }
    }
    let next = net.failover(l);
    net.run_for(1_000, 100);
    assert!(
        net.nodes[next].run_now.is_empty(),
        "fired once in the cluster"
    );
    // Two more asks, two more runs.
    let other = (0..3).find(|&i| i != l && i != next).unwrap();
    net.operate(other, "e", EntryOp::Run).unwrap();
    net.operate(other, "e", EntryOp::Run).unwrap();
    net.run_for(1_000, 100);
    assert_eq!(net.nodes[next].run_now.len(), 2);
}

#[test]
fn an_ask_is_refused_while_etcd_is_away() {
    let mut net = Net::new(2);
    let (_, f) = net.roles();
    net.etcd.down = true;
    net.nodes[f]
        .m
        .link(Link::Unary, false, net.now, &mut Output::default());
    net.nodes[f].unary = false;
    let e = net.operate(f, "e", EntryOp::Pause).unwrap_err();
    assert!(e.contains("etcd cannot be reached"), "{e}");
}

/// An ask is answered when etcd answers, once: while etcd is silent there is no answer, then
/// the answer says the connection was lost first (the ask is sent again, and taken, when etcd
/// is back) and no second answer follows.
#[test]
fn an_asks_answer_waits_for_etcds() {
    let mut net = Net::new(2);
    let (l, f) = net.roles();
    net.etcd.down = true;
    let ticket = net.ask(f, "e", EntryOp::Pause).unwrap();
    assert!(net.nodes[f].answers.is_empty(), "no answer before etcd's");
    net.run_for(3_000, 100);
    let answers = std::mem::take(&mut net.nodes[f].answers);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].0, ticket);
    let why = answers[0].1.clone().unwrap_err();
    assert!(why.contains("lost before etcd answered"), "{why}");
    net.etcd.down = false;
    net.run_for(3_000, 100);
    assert!(net.nodes[f].answers.is_empty(), "answered once");
    let paused = ("e".to_string(), true, false);
    assert!(
        net.nodes[l].ops.contains(&paused),
        "taken when etcd was back"
    );
}

/// An ask still queued on this server when the connection drops was never sent: it is
/// answered as not taken, and dropped (asking again is the operator's, as the answer says).
#[test]
fn an_ask_never_sent_is_answered_as_not_taken_and_dropped() {
    let mut net = Net::new(2);
    let (l, f) = net.roles();
    net.etcd.down = true;
    let first = net.ask(f, "e", EntryOp::Pause).unwrap();
    let second = net.ask(f, "g", EntryOp::Pause).unwrap();
    net.run_for(3_000, 100);
    let answers = std::mem::take(&mut net.nodes[f].answers);
    assert_eq!(answers.len(), 2, "{answers:?}");
    let why = |t: u64| {
        answers
            .iter()
            .find(|(x, _)| *x == t)
            .and_then(|(_, r)| r.clone().err())
            .unwrap_or_default()
    };
    assert!(
        why(first).contains("lost before etcd answered"),
        "{answers:?}"
    );
    assert!(
        why(second).contains("before the ask was sent") && why(second).contains("did not take it"),
        "{answers:?}"
    );
    net.etcd.down = false;
    net.run_for(3_000, 100);
    assert!(net.nodes[f].answers.is_empty(), "answered once");
    assert!(
        net.nodes[l].ops.contains(&("e".to_string(), true, false)),
        "the one sent is asked again"
    );
    assert!(
        !net.nodes[l].ops.iter().any(|(e, _, _)| e == "g"),
        "the one never sent was sent later: {:?}",
        net.nodes[l].ops
    );
}

/// A backfill's answer waits for etcd's, as an operation's: `Ok` once etcd took the write.
/// A write lost with the connection is answered once, saying etcd may have taken it, and is
/// not sent again when etcd is back: twice would run each time twice.
#[test]
fn a_backfills_answer_waits_for_etcds_and_a_lost_one_is_not_sent_again() {
    let mut net = Net::new(2);
    let (_, f) = net.roles();
    let ticket = net.ask_backfill(f, "e").unwrap();
    let answers = std::mem::take(&mut net.nodes[f].answers);
    assert_eq!(answers, vec![(ticket, Ok(()))]);
    assert!(net.has_backfill("e"), "taken means etcd has it");

    net.etcd.down = true;
    let ticket = net.ask_backfill(f, "g").unwrap();
    assert!(net.nodes[f].answers.is_empty(), "no answer before etcd's");
    net.run_for(3_000, 100);
    let answers = std::mem::take(&mut net.nodes[f].answers);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].0, ticket);
    let why = answers[0].1.clone().unwrap_err();
    assert!(
        why.contains("lost before etcd answered") && why.contains("not asked again"),
        "{why}"
    );
    net.etcd.down = false;
    net.run_for(3_000, 100);
    assert!(net.nodes[f].answers.is_empty(), "answered once");
    assert!(!net.has_backfill("g"), "a lost backfill was sent again");
}

#[test]
fn an_entrys_account_reaches_the_other_servers_not_its_writer() {
    let mut net = Net::new(2);
    let (l, f) = net.roles();
    let now = net.now;
    let n = &mut net.nodes[l];
    n.m.history("e".into(), b"{\"runs\":3}".to_vec(), now, &mut n.out);
    net.settle();
    assert_eq!(
        net.nodes[f].accounts,
        vec![("e".to_string(), b"{\"runs\":3}".to_vec())]
    );
    assert!(net.nodes[l].accounts.is_empty(), "its own echo is not news");
}

#[test]
fn two_writers_of_an_after_set_lose_neither_parents_run() {
    let mut net = Net::new(2);
    let (l, f) = net.roles();
    let now = net.now;
    let (a, b, both) = (&b"[a]"[..], &b"[b]"[..], &b"[a,b]"[..]);
    // Both write at once, each over the revision it knows (around a failover: the old leader
    // saw parent a end, the new one parent b).
    for (i, set) in [(l, a), (f, b)] {
        let n = &mut net.nodes[i];
        n.m.after_set("c".into(), set.to_vec(), now, &mut n.out);
    }
    net.settle();
    let key = b"gearwheel/t/after/c".to_vec();
    let stored = net.etcd.kv.get(&key).unwrap().value.clone();
    let (first, second) = if stored == a { (l, f) } else { (f, l) };
    // The second write met the first: its node is handed that set to merge, not written over.
    assert_eq!(
        net.nodes[second].after_conflicts,
        vec![("c".to_string(), stored.clone())]
    );
    assert!(net.nodes[first].after_conflicts.is_empty());
    // Its merge goes over the set it met.
    let n = &mut net.nodes[second];
    n.m.after_set("c".into(), both.to_vec(), now, &mut n.out);
    net.settle();
    assert_eq!(net.etcd.kv.get(&key).unwrap().value, both);
    assert_eq!(
        net.nodes[second].after_conflicts.len(),
        1,
        "no second conflict"
    );
    // The first writer's next write is over the merge it saw by the watch, not against it.
    let n = &mut net.nodes[first];
    n.m.after_set("c".into(), b"[]".to_vec(), now, &mut n.out);
    net.settle();
    assert_eq!(net.etcd.kv.get(&key).unwrap().value, b"[]");
    assert!(net.nodes[first].after_conflicts.is_empty());
}
