//! The webhook queue's rules with the manual clock: due alerts handed out once, the doubling
//! backoff, giving up by attempts and by age, the bound, and the journal's records.

use super::*;
use crate::engine::{HookAttempt, HookLimits, PingKind};
use crate::schedule::file::parse;
use crate::store::Record;

const T0: u64 = 1_795_329_450_000;
const FILE: &str = "@hourly beat expect=ping on_failure=https://hooks.example.com/s/x\n";

fn world(limits: HookLimits) -> World {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        durable: true,
        webhooks: limits,
        ..EngineConfig::default()
    });
    w.now = T0;
    w.e.load_schedules(parse(FILE, &Zone::Utc).unwrap(), T0, true, &mut w.out);
    w
}

fn fail(w: &mut World) {
    w.e.ping(b"beat", PingKind::Fail, b"", w.now, &mut w.out)
        .unwrap();
}

fn records(w: &mut World) -> Vec<Record> {
    w.e.take_durable().collect()
}

#[test]
fn an_alert_is_handed_out_once_and_done_at_its_2xx() {
    let mut w = world(HookLimits::default());
    records(&mut w);
    fail(&mut w);
    let r = records(&mut w);
    let Some(Record::HookQueued(q)) = r.iter().find(|r| matches!(r, Record::HookQueued(_))) else {
        panic!("{r:?}")
    };
    assert_eq!(q.url.as_ref(), b"https://hooks.example.com/s/x");
    let due = w.e.hooks_due(w.now, 4);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].key, format!("H:t:hook:{T0}:{}", q.id));
    assert!(w.e.hooks_due(w.now, 4).is_empty(), "in flight: not again");
    w.e.hook_attempt(due[0].id, HookAttempt::Status(204), w.now);
    assert_eq!(records(&mut w), [Record::HookDone { id: q.id }]);
    assert_eq!(
        (w.e.hook_status().queued, w.e.hook_status().delivered),
        (0, 1)
    );
}

#[test]
fn a_failed_try_waits_its_doubling_backoff_then_is_given_up() {
    let mut w = world(HookLimits {
        attempts: 3,
        ..HookLimits::default()
    });
    fail(&mut w);
    let id = w.e.hooks_due(w.now, 4)[0].id;
    w.e.hook_attempt(id, HookAttempt::Failed("refused".into()), w.now);
    assert!(w.e.hooks_due(w.now + 999, 4).is_empty(), "1s first");
    assert_eq!(
        w.e.next_deadline(),
        Some(T0 + 1000),
        "the wheel wakes the loop"
    );
    w.now += 1000;
    assert_eq!(w.e.hooks_due(w.now, 4).len(), 1);
    w.e.hook_attempt(id, HookAttempt::Status(500), w.now);
    assert!(w.e.hooks_due(w.now + 1999, 4).is_empty(), "then 2s");
    w.now += 2000;
    assert_eq!(w.e.hooks_due(w.now, 4).len(), 1);
    records(&mut w);
    w.e.hook_attempt(id, HookAttempt::Status(503), w.now);
    assert_eq!(records(&mut w), [Record::HookDone { id }], "given up, done");
    let s = w.e.hook_status();
    assert_eq!((s.queued, s.retried, s.given_up), (0, 2, 1));
    assert_eq!(
        s.last,
        [(
            "https://hooks.example.com".to_string(),
            w.now,
            "given up: answered 503".to_string()
        )]
    );
}

#[test]
fn an_alert_past_its_max_age_is_given_up() {
    let mut w = world(HookLimits {
        max_age_ms: 1500,
        ..HookLimits::default()
    });
    fail(&mut w);
    let id = w.e.hooks_due(w.now, 4)[0].id;
    w.e.hook_attempt(id, HookAttempt::Status(500), w.now);
    w.now += 1000;
    w.e.hooks_due(w.now, 4);
    // The next wait (2s) would end past its age.
    w.e.hook_attempt(id, HookAttempt::Status(500), w.now);
    assert_eq!(w.e.hook_status().given_up, 1);
}

#[test]
fn the_queue_is_bounded_and_counts_what_it_drops() {
    let mut w = world(HookLimits {
        max_queue: 2,
        ..HookLimits::default()
    });
    for _ in 0..5 {
        fail(&mut w);
    }
    let s = w.e.hook_status();
    assert_eq!((s.queued, s.dropped), (2, 3));
    assert_eq!(w.e.hooks_due(w.now, 1).len(), 1, "at most the room asked");
}

#[test]
fn a_queued_alert_comes_back_from_the_journal_with_its_key() {
    let mut w = world(HookLimits::default());
    fail(&mut w);
    let key = w.e.hooks_due(w.now, 4)[0].key.clone();
    let queued: Vec<_> = records(&mut w)
        .into_iter()
        .filter_map(|r| match r {
            Record::HookQueued(q) => Some(q),
            _ => None,
        })
        .collect();
    let mut next = world(HookLimits::default());
    next.now = T0 + 60_000;
    let replayed = crate::store::Replayed {
        hooks: queued,
        ..Default::default()
    };
    next.e.restore(replayed, next.now, &mut next.out);
    assert!(!next.e.has_durable(), "restoring writes nothing again");
    let due = next.e.hooks_due(next.now, 4);
    assert_eq!(due.len(), 1, "due at once after a restart");
    assert_eq!(
        due[0].key, key,
        "the same key: the receiver can tell a repeat"
    );
    assert!(
        due[0]
            .body
            .ends_with(format!("\"idempotency_key\":\"{key}\"}}").as_bytes())
    );
    // A new alert after the restart gets another id and key.
    fail(&mut next);
    let more = next.e.hooks_due(next.now, 4);
    assert_eq!(more.len(), 1);
    assert_ne!(more[0].key, key);
}
