//! The etcd gateway codec (src/cluster/etcd/) against a real etcd started on loopback:
//! every request the cluster uses, its replies and errors, over blocking sockets.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use gearwheel::client::etcd::{Client, Error, Watch};
use gearwheel::cluster::etcd::{
    Compare, EtcdError, Kv, Op, Reply, Request, RequestKind, ResponseReader, Txn, WatchEvent,
    encode,
};
use support::etcd::Etcd;
use support::need;

const T: Duration = Duration::from_secs(10);

fn etcd() -> Option<(Etcd, Client)> {
    if !need("etcd (apt-get install etcd-server)") {
        return None;
    }
    let e = Etcd::start();
    let c = Client::new(vec![e.addr()], T);
    Some((e, c))
}

fn put(c: &mut Client, key: &[u8], value: &[u8], lease: i64) -> i64 {
    match c.call(&Request::Put {
        key: key.to_vec(),
        value: value.to_vec(),
        lease,
    }) {
        Ok(Reply::Put { revision }) => revision,
        other => panic!("put: {other:?}"),
    }
}

fn get(c: &mut Client, key: &[u8]) -> Vec<Kv> {
    match c.call(&Request::Get { key: key.to_vec() }) {
        Ok(Reply::Range { kvs, .. }) => kvs,
        other => panic!("get: {other:?}"),
    }
}

fn grant(c: &mut Client, ttl_secs: i64) -> i64 {
    match c.call(&Request::LeaseGrant { ttl_secs }) {
        Ok(Reply::LeaseGranted { lease, ttl_secs: t }) => {
            assert!(lease != 0 && t >= ttl_secs, "granted {lease} for {t}s");
            lease
        }
        other => panic!("grant: {other:?}"),
    }
}

#[test]
fn a_lease_is_granted_kept_alive_and_revoked() {
    let Some((_e, mut c)) = etcd() else { return };
    let lease = grant(&mut c, 5);
    assert_eq!(
        c.call(&Request::LeaseKeepAlive { lease }).unwrap(),
        Reply::LeaseKeptAlive { lease, ttl_secs: 5 }
    );
    assert_eq!(
        c.call(&Request::LeaseRevoke { lease }).unwrap(),
        Reply::LeaseRevoked
    );
    // A gone lease keeps alive with TTL 0, and cannot be revoked twice.
    assert_eq!(
        c.call(&Request::LeaseKeepAlive { lease }).unwrap(),
        Reply::LeaseKeptAlive { lease, ttl_secs: 0 }
    );
    match c.call(&Request::LeaseRevoke { lease }) {
        Err(Error::Etcd(EtcdError::Grpc { code: 5, message })) => {
            assert!(message.contains("lease not found"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // The connection is still good after an error reply.
    let other = grant(&mut c, 7);
    assert_ne!(other, lease);
}

#[test]
fn keys_are_put_read_by_key_and_prefix_and_deleted() {
    let Some((_e, mut c)) = etcd() else { return };
    let r1 = put(&mut c, b"a/1", b"one", 0);
    let r2 = put(&mut c, b"a/2", b"\x00two\xff", 0);
    put(&mut c, b"a0", b"not under a/", 0);
    put(&mut c, b"a/\xff", b"binary key", 0);
    assert!(r2 > r1);
    let kvs = get(&mut c, b"a/1");
    assert_eq!(kvs.len(), 1);
    assert_eq!(
        (kvs[0].value.as_slice(), kvs[0].create_revision),
        (&b"one"[..], r1)
    );
    assert_eq!(
        (kvs[0].mod_revision, kvs[0].version, kvs[0].lease),
        (r1, 1, 0)
    );
    assert!(get(&mut c, b"absent").is_empty());
    let under = match c
        .call(&Request::GetPrefix {
            prefix: b"a/".to_vec(),
        })
        .unwrap()
    {
        Reply::Range { kvs, revision } => {
            assert!(revision >= r2);
            kvs
        }
        other => panic!("{other:?}"),
    };
    let keys: Vec<&[u8]> = under.iter().map(|kv| kv.key.as_slice()).collect();
    assert_eq!(keys, [&b"a/1"[..], b"a/2", b"a/\xff"]);
    assert_eq!(under[1].value, b"\x00two\xff");
    match c
        .call(&Request::Delete {
            key: b"a/1".to_vec(),
        })
        .unwrap()
    {
        Reply::Deleted {
            deleted: 1,
            revision,
        } => assert!(revision > r2),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.call(&Request::Delete {
            key: b"a/1".to_vec()
        })
        .unwrap(),
        Reply::Deleted { deleted: 0, .. }
    ));
    assert!(get(&mut c, b"a/1").is_empty());
    // A bad request is etcd's error, named.
    match c.call(&Request::Put {
        key: Vec::new(),
        value: b"x".to_vec(),
        lease: 0,
    }) {
        Err(Error::Etcd(EtcdError::Grpc { code: 3, message })) => {
            assert!(message.contains("key is not provided"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_create_if_absent_txn_wins_once_and_then_reads_the_winner() {
    let Some((_e, mut c)) = etcd() else { return };
    let claim = |value: &[u8]| {
        Request::Txn(Txn {
            compare: vec![Compare::CreateRevision {
                key: b"leader".to_vec(),
                revision: 0,
            }],
            success: vec![Op::Put {
                key: b"leader".to_vec(),
                value: value.to_vec(),
                lease: 0,
            }],
            failure: vec![Op::Get {
                key: b"leader".to_vec(),
            }],
        })
    };
    let won = match c.call(&claim(b"first")).unwrap() {
        Reply::Txn {
            succeeded: true,
            revision,
            ranges,
        } => {
            assert!(ranges.is_empty(), "a Put branch reads nothing");
            revision
        }
        other => panic!("{other:?}"),
    };
    match c.call(&claim(b"second")).unwrap() {
        Reply::Txn {
            succeeded: false,
            revision,
            ranges,
        } => {
            assert_eq!(revision, won, "a failed txn writes nothing");
            assert_eq!(ranges.len(), 1);
            assert_eq!(ranges[0].len(), 1);
            assert_eq!(ranges[0][0].value, b"first");
            assert_eq!(ranges[0][0].create_revision, won);
        }
        other => panic!("{other:?}"),
    }
    // The fence: a guard on the winner's create revision and on a value.
    let fenced = |fence: i64| {
        Request::Txn(Txn {
            compare: vec![
                Compare::CreateRevision {
                    key: b"leader".to_vec(),
                    revision: fence,
                },
                Compare::Value {
                    key: b"leader".to_vec(),
                    value: b"first".to_vec(),
                },
                Compare::ModRevision {
                    key: b"runs/x".to_vec(),
                    revision: 0,
                },
            ],
            success: vec![
                Op::Put {
                    key: b"runs/x".to_vec(),
                    value: b"claimed".to_vec(),
                    lease: 0,
                },
                Op::GetPrefix {
                    prefix: b"runs/".to_vec(),
                },
            ],
            failure: vec![
                Op::Get {
                    key: b"leader".to_vec(),
                },
                Op::Get {
                    key: b"runs/x".to_vec(),
                },
            ],
        })
    };
    assert!(matches!(
        c.call(&fenced(won + 1)).unwrap(),
        Reply::Txn {
            succeeded: false,
            ..
        }
    ));
    match c.call(&fenced(won)).unwrap() {
        Reply::Txn {
            succeeded: true,
            ranges,
            ..
        } => {
            assert_eq!(ranges.len(), 1);
            assert_eq!(ranges[0][0].value, b"claimed");
        }
        other => panic!("{other:?}"),
    }
    match c.call(&fenced(won)).unwrap() {
        Reply::Txn {
            succeeded: false,
            ranges,
            ..
        } => {
            assert_eq!(ranges.len(), 2);
            assert_eq!(ranges[1][0].value, b"claimed");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lease_that_expires_deletes_its_key_and_the_watch_sees_it() {
    let Some((e, mut c)) = etcd() else { return };
    let lease = grant(&mut c, 2);
    let rev = put(&mut c, b"member/x", b"here", lease);
    assert_eq!(get(&mut c, b"member/x")[0].lease, lease);
    let watch = Request::Watch {
        key: b"member/".to_vec(),
        prefix: true,
        start_revision: rev,
    };
    let mut w = Watch::start(&[e.addr()], &watch, T).unwrap();
    assert!(matches!(w.next(T).unwrap(), Reply::WatchCreated { .. }));
    // From rev on: the put itself, then the delete when the lease runs out.
    let mut seen = Vec::new();
    let end = Instant::now() + Duration::from_secs(15);
    while seen.len() < 2 && Instant::now() < end {
        if let Reply::WatchEvents { events, .. } = w.next(T).unwrap() {
            seen.extend(events);
        }
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(!seen[0].deleted && seen[0].kv.value == b"here");
    assert!(seen[1].deleted && seen[1].kv.key == b"member/x");
    assert!(get(&mut c, b"member/x").is_empty());
    assert_eq!(
        c.call(&Request::LeaseKeepAlive { lease }).unwrap(),
        Reply::LeaseKeptAlive { lease, ttl_secs: 0 }
    );
}

/// etcd's compaction, as the leader sends it: done once, refused as done the second time.
fn compact(c: &mut Client, revision: i64) {
    let r = c.call(&Request::Compact { revision }).unwrap();
    assert!(
        matches!(r, Reply::Compacted { revision: now } if now >= revision),
        "{r:?}"
    );
    match c.call(&Request::Compact { revision }) {
        Err(Error::Etcd(EtcdError::Grpc { code: 11, message })) => {
            assert!(message.contains("has been compacted"), "{message}")
        }
        other => panic!("a second compaction: {other:?}"),
    }
}

#[test]
fn a_watch_streams_puts_and_deletes_and_reports_a_compacted_start() {
    let Some((e, mut c)) = etcd() else { return };
    let first = put(&mut c, b"s/0", b"old", 0);
    let watch = Request::Watch {
        key: b"s/".to_vec(),
        prefix: true,
        start_revision: 0,
    };
    let mut w = Watch::start(&[e.addr()], &watch, T).unwrap();
    let created = match w.next(T).unwrap() {
        Reply::WatchCreated { revision } => revision,
        other => panic!("{other:?}"),
    };
    assert!(created >= first);
    let r1 = put(&mut c, b"s/1", b"v1", 0);
    c.call(&Request::Delete {
        key: b"s/1".to_vec(),
    })
    .unwrap();
    put(&mut c, b"elsewhere", b"x", 0);
    let mut events: Vec<(i64, WatchEvent)> = Vec::new();
    while events.len() < 2 {
        match w.next(T).unwrap() {
            Reply::WatchEvents {
                revision,
                events: ev,
            } => events.extend(ev.into_iter().map(|e| (revision, e))),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(events[0].0, r1);
    assert_eq!(events[0].1.kv.key, b"s/1");
    assert!(!events[0].1.deleted);
    assert!(events[1].1.deleted);
    assert_eq!(events[1].1.kv.mod_revision, r1 + 1);
    // Nothing else under s/: the stream waits (a timeout is not an error of the watch).
    assert!(matches!(
        w.next(Duration::from_millis(300)),
        Err(Error::Timeout(_))
    ));

    // Compact past the first put: a watch from before it is cancelled with the compact
    // revision, and a watch from the compact revision on works.
    let now = put(&mut c, b"s/2", b"v2", 0);
    compact(&mut c, now);
    let stale = Request::Watch {
        key: b"s/".to_vec(),
        prefix: true,
        start_revision: first,
    };
    let mut w2 = Watch::start(&[e.addr()], &stale, T).unwrap();
    let mut canceled = None;
    while canceled.is_none() {
        match w2.next(T).unwrap() {
            Reply::WatchCreated { .. } => {}
            Reply::WatchCanceled {
                compact_revision, ..
            } => canceled = Some(compact_revision),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(canceled, Some(now));
    // The first watch lives on through the compaction.
    match w.next(T).unwrap() {
        Reply::WatchEvents { revision, events } => {
            assert_eq!(revision, now);
            assert_eq!(events[0].kv.value, b"v2");
        }
        other => panic!("{other:?}"),
    }
    let fresh = Request::Watch {
        key: b"s/".to_vec(),
        prefix: true,
        start_revision: now,
    };
    let mut w3 = Watch::start(&[e.addr()], &fresh, T).unwrap();
    assert!(matches!(w3.next(T).unwrap(), Reply::WatchCreated { .. }));
    match w3.next(T).unwrap() {
        Reply::WatchEvents { events, .. } => assert_eq!(events[0].kv.key, b"s/2"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_pipelined_on_one_connection_are_answered_in_order_byte_by_byte() {
    let Some((e, _c)) = etcd() else { return };
    let mut s = TcpStream::connect(e.addr()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let reqs = [
        Request::LeaseGrant { ttl_secs: 30 },
        Request::Put {
            key: b"p".to_vec(),
            value: b"1".to_vec(),
            lease: 0,
        },
        Request::LeaseRevoke { lease: 1 }, // an error in the middle
        Request::Get { key: b"p".to_vec() },
    ];
    let mut out = Vec::new();
    let mut r = ResponseReader::new(64 * 1024);
    for q in &reqs {
        encode(q, &e.addr(), &mut out);
        r.expect(q.kind());
    }
    s.write_all(&out).unwrap();
    let mut replies = Vec::new();
    let mut byte = [0u8; 1];
    while replies.len() < reqs.len() {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "etcd closed early");
        r.feed(&byte);
        while let Some(x) = r.next() {
            replies.push(x);
        }
    }
    assert!(matches!(
        replies[0],
        Ok(Reply::LeaseGranted { ttl_secs: 30, .. })
    ));
    assert!(matches!(replies[1], Ok(Reply::Put { .. })));
    assert!(matches!(replies[2], Err(EtcdError::Grpc { code: 5, .. })));
    match &replies[3] {
        Ok(Reply::Range { kvs, .. }) => assert_eq!(kvs[0].value, b"1"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_over_the_limit_is_refused() {
    let Some((e, mut c)) = etcd() else { return };
    put(&mut c, b"big", &vec![b'x'; 8192], 0);
    let mut s = TcpStream::connect(e.addr()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let mut out = Vec::new();
    let q = Request::Get {
        key: b"big".to_vec(),
    };
    encode(&q, &e.addr(), &mut out);
    let mut r = ResponseReader::new(4096);
    r.expect(RequestKind::Range);
    s.write_all(&out).unwrap();
    let mut buf = [0u8; 1024];
    let got = loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "etcd closed early");
        r.feed(&buf[..n]);
        if let Some(x) = r.next() {
            break x;
        }
    };
    assert_eq!(got, Err(EtcdError::TooLarge));
}

#[test]
fn an_unreachable_etcd_is_named_with_its_address() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = Client::new(vec![format!("127.0.0.1:{port}")], T);
    match c.call(&Request::Get { key: b"k".to_vec() }) {
        Err(e @ Error::Unreachable(_)) => {
            let text = e.to_string();
            assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
            assert!(text.contains("refused"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stopped_etcd_comes_back_on_restart_with_its_data() {
    let Some((mut e, mut c)) = etcd() else { return };
    put(&mut c, b"kept", b"yes", 0);
    e.stop();
    assert!(!e.healthy());
    assert!(
        c.call(&Request::Get {
            key: b"kept".to_vec()
        })
        .is_err()
    );
    e.restart();
    // The client reconnects after the failure above.
    assert_eq!(get(&mut c, b"kept")[0].value, b"yes");
}
