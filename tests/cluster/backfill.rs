//! Waiting runs in a cluster, against a real etcd: a backfill asked on a follower runs each
//! time once, in order, with `{time}` filled, even when its leader is killed (kill -9) in the
//! middle of it; `catchup=all` makes up each time missed while the cluster had no leader,
//! once, and its cap holds.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use support::cluster::{Cluster, Etcd, TTL, tempdir, worker_for};
use support::etcd::ETCD;

const DAY: i64 = 86_400;

fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The cells of entry `id`'s row of `show schedules` on server `s`.
fn row(s: &support::Server, id: &str) -> Vec<String> {
    let mut c = s.connect();
    let listing = c.admin("show schedules", true);
    listing
        .lines()
        .find(|l| l.starts_with(&format!("{id}\t")))
        .unwrap_or_else(|| panic!("no row {id} in {listing}"))
        .split('\t')
        .map(str::to_string)
        .collect()
}

/// A `bf` worker on server `s` (worker generation `generation`): it records each workload it
/// completed, after a little work so that a backfill takes a while; the job given out when
/// four have been completed is held (once, by whoever gets it) until its server dies.
fn bf_worker(
    s: &support::Server,
    generation: usize,
    done: &Arc<Mutex<Vec<(usize, String)>>>,
    held: &Arc<AtomicBool>,
) {
    let (done, held) = (Arc::clone(done), Arc::clone(held));
    worker_for(s.addr, "bf", move |c, handle, data| {
        if done.lock().unwrap().len() == 4 && !held.swap(true, Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        c.send_req(support::t::WORK_COMPLETE, &[handle, b""]);
        // Counted once the server has the result: an ECHO behind it came back.
        c.send_req(support::t::ECHO_REQ, &[b"x"]);
        while let Ok(p) = c.try_read_packet() {
            if p.ptype == support::t::ECHO_RES {
                done.lock().unwrap().push((generation, data));
                break;
            }
        }
        true
    });
}

#[test]
#[ignore = "long: a real etcd cluster through a kill -9 of its leader; .ci/run runs it"]
fn a_backfill_asked_on_a_follower_runs_each_time_once_through_a_failover() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("backfill");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    // Daily at 03:17: no run of its own comes during the test.
    std::fs::write(
        &cl.file,
        "CRON_TZ=UTC\n17 3 * * * bf id=bf catchup=none -- bf {time}\n",
    )
    .unwrap();
    let done: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let held = Arc::new(AtomicBool::new(false));
    let data: Vec<support::TempDir> = (0..3)
        .map(|i| tempdir(&format!("backfill-data-{i}")))
        .collect();
    for d in &data {
        cl.flags = vec!["--data-dir".into(), d.to_str().unwrap().into()];
        let s = cl.start();
        bf_worker(&s, cl.generations, &done, &held);
        cl.push(s);
    }
    let l = cl.leader(15);
    let f = cl.follower(l, 15);
    let now = chrono::Utc::now().timestamp();
    let last = (now - 3 * 3600 - 17 * 60).div_euclid(DAY) * DAY + 3 * 3600 + 17 * 60;
    let times: Vec<String> = (0..10).rev().map(|i| rfc3339(last - i * DAY)).collect();
    let mut c = cl.servers[f].as_ref().unwrap().connect();
    assert_eq!(
        c.admin(
            &format!("backfill schedule bf {} {}", times[0], times[9]),
            false
        ),
        "OK 10\n"
    );

    // The leader runs them; the fifth is held by its worker when the leader is killed.
    support::wait_until(20, "a backfill run held on the leader", || {
        held.load(Ordering::SeqCst)
    });
    let first_gen = cl.generation_of(l);
    cl.kill9(l);
    let nl = cl.leader(15);
    // The next leader goes on from the record: times 6 to 10, none of the first four again.
    // On a timeout, the servers' logs say where the backfill stopped.
    support::poll(30, "the other backfill runs", || {
        let n = done.lock().unwrap().len();
        if n >= 9 {
            return Ok(());
        }
        let logs: Vec<String> = cl.servers.iter().flatten().map(|s| s.log()).collect();
        Err(format!("{n} runs done\n{}", logs.join("\n----\n")))
    });
    // The killed server comes back with its journal: the run it held is made there.
    cl.flags = vec!["--data-dir".into(), data[l].to_str().unwrap().into()];
    cl.restart(l, TTL);
    bf_worker(
        cl.servers[l].as_ref().unwrap(),
        cl.generation_of(l),
        &done,
        &held,
    );
    support::wait_until(30, "all ten backfill runs", || {
        done.lock().unwrap().len() >= 10
    });

    let done = done.lock().unwrap().clone();
    let mut all: Vec<String> = done.iter().map(|(_, w)| w.clone()).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), done.len(), "a time ran twice: {done:?}");
    let want: Vec<String> = times.iter().map(|t| format!("bf {t}")).collect();
    assert_eq!(all, want, "each time once, {{time}} filled: {done:?}");
    let by = |g: usize| -> Vec<String> {
        done.iter()
            .filter(|(x, _)| *x == g)
            .map(|(_, w)| w.clone())
            .collect()
    };
    assert_eq!(by(first_gen), want[..4], "the first leader's, in order");
    assert_eq!(
        by(cl.generation_of(nl)),
        want[5..],
        "the next leader's, in order"
    );
    // Marked backfill in the cluster's history.
    let recent = &row(cl.servers[nl].as_ref().unwrap(), "bf")[14];
    assert!(recent.contains(" backfill"), "{recent}");
    drop(etcd);
}

/// The times of the `@every 1s` workloads starting with `prefix`, as unix seconds, sorted.
fn seconds_of(cl: &Cluster, prefix: &str) -> Vec<i64> {
    let mut v: Vec<i64> = cl
        .counts()
        .keys()
        .filter_map(|w| w.strip_prefix(prefix))
        .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp())
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "long: a real etcd cluster through a kill -9 of its leader; .ci/run runs it"]
fn catchup_all_makes_up_each_time_missed_without_a_leader_once_within_its_cap() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("catchup-all");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    std::fs::write(
        &cl.file,
        "CRON_TZ=UTC\n\
         @every 1s tick id=cu overlap=allow catchup=all -- second {time}\n\
         @every 1s tick id=cap overlap=allow catchup=all catchup_max=1 -- cap {time}\n",
    )
    .unwrap();
    let data: Vec<support::TempDir> = (0..2)
        .map(|i| tempdir(&format!("catchup-data-{i}")))
        .collect();
    for d in &data {
        cl.flags = vec!["--data-dir".into(), d.to_str().unwrap().into()];
        let s = cl.start();
        cl.push(s);
    }
    let l = cl.leader(15);
    cl.wait_runs(Some(cl.generation_of(l)), "second ", Instant::now(), 2);
    // Killed in the middle of a second: each second's claims are won in its first
    // milliseconds, so none is in flight (a claim etcd granted to a leader that died before
    // it heard so is a run lost, by design, rather than one made twice).
    let into = u64::from(chrono::Utc::now().timestamp_subsec_millis());
    std::thread::sleep(std::time::Duration::from_millis((1500 - into) % 1000));
    let killed_at = chrono::Utc::now().timestamp();
    let dead = cl.kill9_kept(l).expect("the leader");
    // On a loaded machine a claim can still be in flight at the kill: granted by etcd, never
    // heard by the dead leader, so neither run nor counted anywhere. Only a second just
    // before the kill can be such a one.
    let in_flight = |missing_from: i64, n: i64| {
        missing_from + 1 >= killed_at - 2 && missing_from + n <= killed_at && n == 1
    };
    let nl = cl.leader(15);
    let ng = cl.generation_of(nl);
    // The next leader's own runs go on.
    cl.wait_runs(Some(ng), "second ", Instant::now(), 3);
    // The killed server comes back with its journal: a run it had claimed and queued, not yet
    // handed to its worker, is made there (else it would look like a second not made up).
    cl.flags = vec!["--data-dir".into(), data[l].to_str().unwrap().into()];
    cl.restart(l, TTL);
    // On a loaded machine a keepalive answered late stops the leader's firing until etcd
    // confirms its lease again (safety before liveness): the times then are not made, which
    // is allowed, but never silently.
    let nls = cl.servers[nl].as_ref().unwrap();
    // The dead leader's own stops count too: the times it could not fire then were its.
    let safety_stops = || {
        [nls.log(), dead.log()]
            .iter()
            .map(|l| l.matches("could not be renewed within its TTL").count())
            .sum::<usize>()
    };
    // Every second of `cu` runs once: those without a leader made up by the next one.
    support::poll(15, "every second of cu", || {
        let g: Vec<(i64, i64)> = support::cluster::gaps(&seconds_of(&cl, "second "))
            .into_iter()
            .filter(|&(after, n)| !in_flight(after, n))
            .collect();
        match g {
            g if g.len() <= safety_stops() => Ok(()),
            g => Err(format!("gaps {g:?}\n{}", nls.log())),
        }
    });
    cl.assert_no_time_twice();
    // `cap` makes up the newest one only: the older ones are missed, counted as skips.
    support::poll(15, "cap's missed times counted", || {
        let gaps = support::cluster::gaps(&seconds_of(&cl, "cap "));
        let missing: i64 = gaps.iter().map(|g| g.1).sum();
        let lost = gaps.iter().any(|&(after, _)| in_flight(after, 1));
        let skips: i64 = row(nls, "cap")[9].parse().unwrap();
        match (missing, skips) {
            (m, s) if m >= 1 && m == s => Ok(()),
            (m, s) if lost && m == s + 1 && s >= 1 => Ok(()),
            (m, s) if safety_stops() > 0 && m > s && s >= 1 => Ok(()),
            (m, s) => {
                let mut logs: Vec<String> = cl.servers.iter().flatten().map(|s| s.log()).collect();
                logs.push(format!("the leader killed:\n{}", dead.log()));
                Err(format!(
                    "{m} missing ({gaps:?}, killed in {killed_at}), {s} counted as skipped\n{}",
                    logs.join("\n----\n")
                ))
            }
        }
    });
    drop(etcd);
}
