//! A backfill asked on a follower is answered when etcd has answered, as an operation is
//! (op_answer.rs), against a real etcd frozen with SIGSTOP: no reply while etcd is silent (an
//! admin line, and the line pipelined behind it; an HTTP request; the console's), then `OK N` (HTTP 200) once
//! etcd took the record, and the leader runs each time once. Frozen past
//! `--etcd-request-timeout`, the reply is the error; the write is not sent again, so its times
//! run once if etcd took it before the connection was dropped, else not at all, never twice.

use crate::support;

use super::op_answer::silent;
use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

const DAY: i64 = 86_400;

/// The entry's time `i` days before its latest (daily at 03:17 UTC), as RFC 3339.
fn day(i: i64) -> String {
    let now = chrono::Utc::now().timestamp();
    let last = (now - 3 * 3600 - 17 * 60).div_euclid(DAY) * DAY + 3 * 3600 + 17 * 60;
    chrono::DateTime::from_timestamp(last - i * DAY, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The follower's log line of the backfill of three times from `from` days back, handed to
/// the cluster in the same turn.
fn asked(from: i64) -> String {
    format!("schedule b: backfill of 3 runs from {}", day(from))
}

/// How often the backfilled times `from..=to` days back ran, each.
fn ran(cl: &Cluster, from: i64, to: i64) -> Vec<usize> {
    let counts = cl.counts();
    (to..=from)
        .rev()
        .map(|i| counts.get(&format!("b {}", day(i))).copied().unwrap_or(0))
        .collect()
}

#[test]
#[ignore = "long: freezes a real etcd under a cluster of two; .ci/run runs it"]
fn a_backfill_on_a_follower_is_answered_when_etcd_has_answered() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("backfill-answer");
    let etcd = Etcd::start();
    // Daily at 03:17: no run of its own comes during the test.
    let text = "CRON_TZ=UTC\n17 3 * * * tick id=b catchup=none -- b {time}\n";
    let cl = Cluster::with_http(&etcd, &dir, text, 2);
    let l = cl.leader(15);
    let follower = cl.servers[cl.follower(l, 15)].as_ref().unwrap();

    // An admin line with another pipelined behind it, while etcd is frozen: neither is
    // answered until etcd has taken the backfill; then both are, in order, and the leader
    // runs each time once.
    let mut c = follower.connect();
    etcd.pause();
    c.send(format!("backfill schedule b {} {}\nstatus\n", day(3), day(1)).as_bytes());
    follower.wait_log(&asked(3), 5);
    silent(&mut c, 200);
    etcd.resume();
    assert_eq!(c.read_text(false), "OK 3\n");
    let status = c.read_text(true);
    assert!(status.contains("tick\t"), "status after OK: {status}");
    support::wait_until(15, "the admin backfill's runs", || {
        ran(&cl, 3, 1) == [1, 1, 1]
    });

    // The same over HTTP: no response while etcd is frozen, then 200 with the times.
    let mut h = support::Http::connect(support::http_addr(follower));
    etcd.pause();
    let path = format!("/schedules/b/backfill?from={}&to={}", day(6), day(4));
    h.send(&support::request("POST", &path, &[], b""));
    follower.wait_log(&asked(6), 5);
    h.expect_silence(200);
    etcd.resume();
    let r = h.read();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"runs\":3"), "{}", r.text());
    support::wait_until(15, "the HTTP backfill's runs", || {
        ran(&cl, 6, 4) == [1, 1, 1]
    });

    // The console's Backfill too: its 200 comes once etcd took the backfill.
    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    let mut h = support::Http::connect(support::http_addr(follower));
    etcd.pause();
    let body = format!("b {} {}", day(15), day(13));
    h.send(&support::request(
        "POST",
        "/ui/api/backfill",
        &page,
        body.as_bytes(),
    ));
    follower.wait_log(&asked(15), 5);
    h.expect_silence(200);
    etcd.resume();
    let r = h.read();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"runs\":3"), "{}", r.text());
    support::wait_until(15, "the console backfill's runs", || {
        ran(&cl, 15, 13) == [1, 1, 1]
    });

    // Frozen past --etcd-request-timeout (1 s here): the reply is the error, which says
    // whether etcd may have taken the backfill; it is not sent again.
    etcd.pause();
    c.send(format!("backfill schedule b {} {}\n", day(9), day(7)).as_bytes());
    follower.wait_log(&asked(9), 5);
    let reply = c.read_text(false);
    etcd.resume();
    assert!(reply.starts_with("ERR CLUSTER_UNREACHABLE "), "{reply}");
    let maybe = reply.contains("may+have+taken+the+backfill") && reply.contains("not+asked+again");
    let not_sent =
        reply.contains("before+the+backfill+was+sent") && reply.contains("nothing+changed");
    assert!(maybe || not_sent, "{reply}");
    // A backfill asked once etcd is back runs after the lost one's times, had etcd taken
    // them (the leader runs the record's spans in order): the barrier.
    support::poll(
        15,
        "a backfill taken once etcd is back",
        || match follower.connect().admin(
            &format!("backfill schedule b {} {}", day(12), day(10)),
            false,
        ) {
            r if r == "OK 3\n" => Ok(()),
            r if r.contains("etcd+cannot+be+reached") => Err(r),
            r => panic!("{r}"),
        },
    );
    support::wait_until(15, "the last backfill's runs", || {
        ran(&cl, 12, 10) == [1, 1, 1]
    });
    let lost = ran(&cl, 9, 7);
    match not_sent {
        true => assert_eq!(lost, [0, 0, 0], "a backfill never sent ran"),
        false => assert!(lost == [0, 0, 0] || lost == [1, 1, 1], "{lost:?}"),
    }
    cl.assert_no_time_twice();
}
