//! `overlap=skip` without `timeout=` across a leader change, against a real etcd
//! (docs/cluster.md "overlap=skip across servers"): a run still going on a server that is a
//! live member of the cluster blocks the new leader's runs of that entry until it ends (the
//! owner marks its record done), and a run whose server is no longer a live member (killed
//! with -9) never blocks one. A missing etcd skips (a failure under
//! GEARWHEEL_REQUIRE_INTEROP=1).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use support::cluster::{Etcd, TTL, show_cluster, tempdir};
use support::etcd::ETCD;
use support::*;

/// A worker for `slow` on one server: takes one job, records its workload, and holds it
/// (the run goes on) until `release`, then completes it and takes no more.
struct Holder {
    seen: Arc<Mutex<Vec<String>>>,
    release: Arc<AtomicBool>,
}

impl Holder {
    fn start(addr: std::net::SocketAddr) -> Holder {
        let h = Holder {
            seen: Arc::default(),
            release: Arc::default(),
        };
        let (seen, release) = (h.seen.clone(), h.release.clone());
        support::cluster::worker_for(addr, "slow", move |c, handle, data| {
            seen.lock().unwrap().push(data);
            while !release.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
            c.send_req(t::WORK_COMPLETE, &[handle, b""]);
            false
        });
        h
    }

    fn runs(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn is_leader(s: &Server) -> bool {
    show_cluster(s).is_some_and(|l| l.contains("role\tleader\n"))
}

#[test]
fn overlap_skip_without_timeout_waits_for_a_live_members_run_and_not_for_a_dead_ones() {
    if !need(ETCD) {
        return;
    }
    let dir = tempdir("overlap");
    let etcd = Etcd::start();
    let file = dir.join("schedules.cron");
    std::fs::write(
        &file,
        "CRON_TZ=UTC\n@every 1s slow id=slow overlap=skip -- slow {time}\n",
    )
    .unwrap();
    let url = etcd.url();
    let start = || {
        Server::start(&[
            "--etcd",
            &url,
            "--cluster",
            "test",
            "--etcd-lease-ttl",
            TTL,
            "--etcd-request-timeout",
            "1000",
            "--schedules",
            file.to_str().unwrap(),
        ])
    };
    let mut servers = [Some(start()), Some(start())];
    let holders: Vec<Holder> = servers
        .iter()
        .map(|s| Holder::start(s.as_ref().unwrap().addr))
        .collect();
    let leader = poll(15, "a leader", || {
        (0..2)
            .find(|&i| is_leader(servers[i].as_ref().unwrap()))
            .ok_or_else(|| "none yet".to_string())
    });
    let other = 1 - leader;
    wait_until(10, "the leader's first run, held by its worker", || {
        !holders[leader].runs().is_empty()
    });

    // The leadership moves while the old leader lives on: it is held still (well inside its
    // lease) while its leader key is deleted, so that the other server wins the campaign.
    let l = servers[leader].take().unwrap();
    let mut o = servers[other].take().unwrap();
    l.signal(libc::SIGSTOP);
    let mut etcd_client =
        gearwheel::client::etcd::Client::new(vec![etcd.addr()], Duration::from_secs(2));
    etcd_client
        .call(&gearwheel::cluster::etcd::Request::Delete {
            key: b"gearwheel/test/leader".to_vec(),
        })
        .expect("the leader key deleted");
    poll(5, "the other server to lead", || match is_leader(&o) {
        true => Ok(()),
        false => Err(show_cluster(&o).unwrap_or_default()),
    });
    l.signal(libc::SIGCONT);
    // Still a live member (its lease never ended) and its run still going: the new leader
    // skips every time of `slow` meanwhile.
    let show = show_cluster(&o).unwrap();
    assert!(
        show.contains(&format!("member\t{}\t", l.addr)),
        "the old leader is a live member: {show}"
    );
    // The proof that its times came and were skipped: three of them refused, in its log
    // (one line per time, `schedule slow: run at T not made: WHY`).
    let why = format!(
        "not made: its last run is still going on {} (overlap=skip across the cluster)",
        l.addr
    );
    poll(15, "three times of slow skipped by the new leader", || {
        let log = o.log();
        match log.matches(why.as_str()).count() {
            n if n >= 3 => Ok(()),
            n => Err(format!("{n} skipped:\n{log}")),
        }
    });
    assert!(is_leader(&o), "{:?}", show_cluster(&o));
    assert_eq!(
        holders[other].runs(),
        Vec::<String>::new(),
        "the new leader ran slow while a live member's run went on"
    );
    // The run ends: its server marks the record done, and the next time runs.
    holders[leader].release.store(true, Ordering::SeqCst);
    wait_until(10, "the new leader's run once the old one ended", || {
        !holders[other].runs().is_empty()
    });

    // Now the run goes on on the new leader, which is killed: a dead member's run never
    // blocks, so the survivor runs the next time (after the lease's TTL) with that run
    // never ended.
    let survivor = Holder::start(l.addr);
    o.signal(libc::SIGKILL);
    o.wait_exit(5).expect("killed");
    poll(15, "the survivor to lead", || match is_leader(&l) {
        true => Ok(()),
        false => Err(show_cluster(&l).unwrap_or_default()),
    });
    wait_until(10, "a run on the survivor past the dead server's", || {
        !survivor.runs().is_empty()
    });

    // Each time ran once, whoever ran it.
    let mut all: Vec<String> = holders
        .iter()
        .chain([&survivor])
        .flat_map(|h| h.runs())
        .collect();
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "a time ran twice: {all:?}");
}
