//! A schedules file pushed through etcd (docs/cluster.md), against a real etcd
//! started here: `gearwheel schedules push` stores a file every server loads in place of its
//! own; a file with errors written straight into etcd (push itself refuses one) is refused by
//! every server, which keeps firing the schedule it runs (its own file, or the last pushed
//! one it loaded). A missing etcd skips (a failure under GEARWHEEL_REQUIRE_INTEROP=1).

use crate::support;

use std::time::{Duration, Instant};

use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

/// What every server logs when it refuses a pushed file.
const REFUSED: &str =
    "reload of the schedules file pushed to etcd refused; the running schedule is unchanged";

/// A schedules file with an error (minute 61) after a valid entry, so that a server that
/// took part of it would run `bad`.
const INVALID: &str = "CRON_TZ=UTC\n\
    @every 1s tick id=bad overlap=allow -- bad {time}\n\
    61 * * * * tick id=worse -- worse {time}\n";

fn push(etcd: &Etcd, file: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args(["schedules", "push", file.to_str().unwrap()])
        .args(["--etcd", &etcd.url(), "--cluster", "test"])
        .output()
        .unwrap();
    assert!(out.status.success(), "push: {out:?}");
}

/// Store `text` at the cluster's pushed-schedules key directly, as `schedules push` would
/// without its check.
fn put_unchecked(etcd: &Etcd, text: &str) {
    use gearwheel::cluster::etcd::{Reply, Request, schedules_key};
    let mut c = gearwheel::client::etcd::Client::new(vec![etcd.addr()], Duration::from_secs(2));
    let reply = c.call(&Request::Put {
        key: schedules_key("test"),
        value: text.as_bytes().to_vec(),
        lease: 0,
    });
    assert!(matches!(reply, Ok(Reply::Put { .. })), "{reply:?}");
}

/// Every server logged its `n`th refusal of a pushed file, with the error that refused it.
fn refused_everywhere(cl: &Cluster, n: usize) {
    for s in cl.servers.iter().flatten() {
        support::poll(10, &format!("refusal {n} of the pushed file"), || {
            let log = s.log();
            match log.matches(REFUSED).count() >= n {
                true => Ok(()),
                false => Err(log),
            }
        });
        let log = s.log();
        assert!(
            log.contains("pushed schedules:3:1: minute: 61 is out of range 0-59"),
            "{log}"
        );
    }
}

/// The entry ids of a `show schedules` listing.
fn entries(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .filter(|l| *l != ".")
        .filter_map(|l| l.split('\t').next())
        .collect()
}

#[test]
fn a_pushed_schedules_file_is_loaded_by_every_server() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("push");
    let etcd = Etcd::start();
    let cl = Cluster::new(&etcd, &dir, 2);
    cl.leader(15);
    push(&etcd, &support::cluster::pushed_file(&dir));
    cl.wait_pushed_everywhere();
    // An action on every server that loaded it, in its audit trail.
    for s in cl.servers.iter().flatten() {
        let trail = s.connect().admin("show audit", true);
        assert!(
            trail.contains("\tetcd\t-\tschedules push\tOK 1\n"),
            "{trail}"
        );
    }
}

#[test]
fn a_pushed_file_with_errors_is_refused_by_every_server_which_keeps_its_schedule() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("push-invalid");
    let etcd = Etcd::start();
    let cl = Cluster::new(&etcd, &dir, 2);
    cl.leader(15);
    cl.wait_runs(None, "second ", Instant::now(), 2);

    // Over the servers' own files: refused, and their `second` goes on.
    put_unchecked(&etcd, INVALID);
    refused_everywhere(&cl, 1);
    cl.wait_runs(None, "second ", Instant::now(), 2);
    for s in cl.servers.iter().flatten() {
        let listing = s.connect().admin("show schedules", true);
        assert_eq!(entries(&listing), ["second", "minute"], "{listing}");
    }

    // Over a pushed file: refused, and the pushed file goes on, also across a reload (which
    // reads the last pushed file loaded, not the refused one).
    push(&etcd, &support::cluster::pushed_file(&dir));
    cl.wait_pushed_everywhere();
    put_unchecked(&etcd, INVALID);
    refused_everywhere(&cl, 2);
    cl.wait_runs(None, "pushed ", Instant::now(), 2);
    for s in cl.servers.iter().flatten() {
        let mut c = s.connect();
        assert_eq!(c.admin("reload schedules", false), "OK 1\n");
        let listing = c.admin("show schedules", true);
        assert_eq!(entries(&listing), ["pushed"], "{listing}");
    }
    cl.wait_runs(None, "pushed ", Instant::now(), 2);
    assert!(
        !cl.counts().keys().any(|w| w.starts_with("bad ")),
        "a refused file ran: {:?}",
        cl.counts()
    );
    cl.assert_no_time_twice();
}
