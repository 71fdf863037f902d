//! Failover time of a cluster: three servers on one etcd run `@every 1s` with
//! catchup=last; the leader is killed with -9 and the time from the kill to the first run
//! fired by the next leader (as a worker sees it) is measured, 20 times; the median and the
//! worst are printed with the command that produced them. The lease TTL is the default, 5 s
//! (GEARWHEEL_BENCH_TTL overrides it). Without `--bench` (a smoke run) it kills twice.
//! Needs /usr/bin/etcd (Debian etcd-server); without it, it says so and does nothing.

#[path = "../tests/support/mod.rs"]
mod support;

use std::thread;
use std::time::{Duration, Instant};

use support::cluster::{Cluster, Etcd, next_rand, tempdir};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    if support::etcd::etcd_binary().is_none() {
        println!("failover: skipped, etcd is not installed (apt-get install etcd-server)");
        return;
    }
    let ttl = std::env::var("GEARWHEEL_BENCH_TTL").unwrap_or_else(|_| "5".into());
    let kills = if full { 20 } else { 2 };
    let dir = tempdir("bench");
    let etcd = Etcd::start();
    let mut cl = Cluster::new_with(&etcd, &dir, 3, &ttl);
    let mut seed = 0x0fa1_u64 ^ std::process::id() as u64;
    let mut times = Vec::new();
    for _ in 0..kills {
        let l = cl.leader(30);
        thread::sleep(Duration::from_millis(1000 + next_rand(&mut seed) % 1000));
        let generation = cl.generation_of(l);
        let killed = Instant::now();
        cl.kill9(l);
        let end = killed + Duration::from_secs(60);
        let first = loop {
            let got = cl
                .seen
                .lock()
                .unwrap()
                .iter()
                .filter(|(g, _, at)| *g != generation && *at > killed)
                .map(|(_, _, at)| *at)
                .min();
            if let Some(at) = got {
                break at;
            }
            assert!(Instant::now() < end, "no run within 60 s of the kill");
            thread::sleep(Duration::from_millis(5));
        };
        times.push(first - killed);
        cl.restart(l, &ttl);
    }
    cl.assert_no_time_twice();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "failover (kill -9 of the leader to the first run by the next), {kills} kills, lease TTL {ttl} s: median {:.0} ms, worst {:.0} ms, best {:.0} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        ms(times[0])
    );
    println!("command: cargo bench --bench failover   (GEARWHEEL_BENCH_TTL={ttl})");
    for i in 0..cl.servers.len() {
        cl.kill9(i);
    }
}
