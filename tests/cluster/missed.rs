//! Every time a cluster did not run is counted: a leader cut off from etcd for less than its
//! lease stays the leader, claims nothing meanwhile, and on the first time it claims again
//! counts the times between as missed (SKIPS, a WARNING line), so that the entry's SKIPS equal
//! the times no worker saw.

use crate::support;

use std::thread;
use std::time::Duration;

use support::cluster::{Cluster, Etcd, tempdir};
use support::etcd::ETCD;

#[test]
fn times_a_short_cut_kept_from_etcd_are_counted_missed() {
    if !support::need(ETCD) {
        return;
    }
    let dir = tempdir("missed");
    let etcd = Etcd::start();
    let relay = support::partition::Relay::start(etcd.addr().parse().unwrap());
    let mut cl = Cluster::new(&etcd, &dir, 0);
    // A lease long enough that the cut below never lets it lapse.
    let s = cl.start_at(&relay.url(), "6");
    cl.push(s);
    assert_eq!(cl.leader(15), 0);
    cl.wait_runs(None, "second ", std::time::Instant::now(), 2);
    // Shorter than the lease, around one whole second: the server stays the leader, but
    // reaches etcd for no claim of that second.
    let into_second = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_millis()
    };
    while into_second() < 850 {
        thread::sleep(Duration::from_millis(20));
    }
    relay.cut();
    thread::sleep(Duration::from_millis(1300));
    relay.heal();
    cl.wait_runs(None, "second ", std::time::Instant::now(), 3);
    let server = cl.servers[0].as_ref().unwrap();
    let secs = cl.seconds();
    let (first, last) = (secs[0], secs[secs.len() - 1]);
    let missed = (last - first + 1) as usize - secs.len();
    assert!(missed >= 1, "the cut kept no time from running: {secs:?}");
    server.wait_log("missed from", 10);
    let mut c = server.connect();
    support::wait_admin(&mut c, "show schedules", true, 10, |l| {
        l.starts_with("second\t") && l.split('\t').nth(9) == Some(missed.to_string().as_str())
    });
    cl.assert_no_time_twice();
}
