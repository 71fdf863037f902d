//! Several servers, one etcd, every scheduled run exactly once, against a real
//! etcd started here on loopback ports: three gearwheel servers load one schedules file
//! (`@every 1s` and `*/1 * * * *`, workloads naming `{time}`), workers take jobs from all of
//! them, and the leader is killed with -9 ten times at random moments. No scheduled time may
//! run twice; the times that never ran must sit inside a failover. Then: a leader frozen with
//! SIGSTOP past its lease must not fire when it wakes; a leader cut off from etcd (a relay that
//! drops its traffic) stops firing and the others take over; etcd stopped and started again.
//! A missing etcd skips (a failure under GEARWHEEL_REQUIRE_INTEROP=1).

use crate::support;

use std::thread;
use std::time::Duration;

use support::cluster::{Cluster, Etcd, TTL, gaps, next_rand, show_cluster, tempdir};
use support::etcd::ETCD;

fn have_etcd() -> bool {
    support::need(ETCD)
}

#[test]
#[ignore = "long: kills, freezes or cuts a real etcd cluster for tens of seconds; .ci/run runs it"]
fn killing_the_leader_ten_times_never_runs_a_time_twice() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("kill");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 3);
    cl.leader(15);
    thread::sleep(Duration::from_secs(3));
    let mut seed = 0x5eed_u64 ^ std::process::id() as u64;
    let mut kills = 0;
    // Ten kills, and more until the runs span two minute boundaries (ten random waits may
    // add up to less than two minutes).
    while kills < 10 || minute_boundaries(&cl.seconds()).len() < 2 {
        let l = cl.leader(15);
        // A random moment 1.5 to 13.5 s after the new leader settled, so that ten kills
        // take a few minutes (about two and a half) and cross minute boundaries.
        thread::sleep(Duration::from_millis(1500 + next_rand(&mut seed) % 12_000));
        cl.kill9(l);
        cl.restart(l, support::cluster::TTL);
        kills += 1;
    }
    // The times went on after the last kill before they are checked.
    cl.wait_runs_by_leader(std::time::Instant::now(), 3);
    cl.assert_no_time_twice();
    let secs = cl.seconds();
    assert!(secs.len() > 20, "the schedule went on: {secs:?}");
    // Missed seconds only around failovers: at most one gap per kill, each no wider than the
    // lease's TTL, etcd's half-second lease check and a second for the watch, the campaign
    // and the claim (catchup=last makes up the last missed second of each).
    let g = gaps(&secs);
    assert!(g.len() <= kills, "gaps {g:?} for {kills} kills");
    for (after, n) in &g {
        assert!(*n <= 5, "{n} seconds missed after {after}: gaps {g:?}");
    }
    let minutes: Vec<String> = cl
        .counts()
        .keys()
        .filter(|w| w.starts_with("minute "))
        .cloned()
        .collect();
    // Every minute boundary the test saw ran once: made up by catchup=last when it fell in
    // a failover (`*/1 * * * *`).
    let boundaries = minute_boundaries(&secs);
    assert!(boundaries.len() >= 2, "a few minutes: {secs:?}");
    for m in boundaries {
        let t = chrono::DateTime::from_timestamp(m, 0).unwrap();
        let w = format!(
            "minute {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        assert!(minutes.contains(&w), "{w} never ran: {minutes:?}");
    }
    eprintln!(
        "{} seconds run, gaps {g:?}; minute runs {minutes:?}",
        secs.len()
    );
}

/// The minute boundaries inside a run of `@every 1s` times (but the last three seconds,
/// which a minute's run may not have reached the worker yet).
fn minute_boundaries(secs: &[i64]) -> Vec<i64> {
    match (secs.first(), secs.last()) {
        (Some(&first), Some(&last)) => (first + 1..last - 3).filter(|s| s % 60 == 0).collect(),
        _ => Vec::new(),
    }
}

/// A scheduled time that falls inside a failover: `catchup=last` has the next leader make it
/// up once, `catchup=none` skips it; the times either side run once on both.
#[test]
#[ignore = "long: kills, freezes or cuts a real etcd cluster for tens of seconds; .ci/run runs it"]
fn a_time_missed_in_a_failover_is_made_up_once_or_skipped_as_configured() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("catchup");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    std::fs::write(
        &cl.file,
        "CRON_TZ=UTC\n\
         @every 10s tick id=last10 overlap=allow catchup=last -- last {time}\n\
         @every 10s tick id=none10 overlap=allow catchup=none -- none {time}\n",
    )
    .unwrap();
    for _ in 0..3 {
        let s = cl.start();
        cl.push(s);
    }
    cl.leader(15);
    let time_of = |w: &str| {
        chrono::DateTime::parse_from_rfc3339(w.split_once(' ').unwrap().1)
            .unwrap()
            .timestamp()
    };
    let name = |entry: &str, t: i64| {
        let t = chrono::DateTime::from_timestamp(t, 0).unwrap();
        format!(
            "{entry} {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    };
    // A run T seen, then the leader killed at T + 8.5 s: its lease (3 s, kept alive every
    // second) ends 2-3 s later and the next leader is in place after T + 10 and well before
    // T + 20 (failovers take 4-5 s: benches/failover.rs).
    let t = support::poll(25, "a first run", || {
        cl.counts()
            .keys()
            .filter(|w| w.starts_with("last "))
            .map(|w| time_of(w))
            .max()
            .ok_or_else(|| "none yet".to_string())
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let kill_at = t as f64 + 8.5;
    assert!(now < kill_at, "run {t} seen too late: {now}");
    thread::sleep(Duration::from_secs_f64(kill_at - now));
    let l = cl.leader(1);
    let killed = cl.generation_of(l);
    cl.kill9(l);
    let counts = support::poll(25, "the runs after the failover", || {
        let c = cl.counts();
        if c.contains_key(&name("last", t + 20)) && c.contains_key(&name("none", t + 20)) {
            Ok(c)
        } else {
            Err(format!("{:?}", c.keys().collect::<Vec<_>>()))
        }
    });
    cl.assert_no_time_twice();
    for entry in ["last", "none"] {
        for at in [t, t + 20] {
            assert_eq!(
                counts.get(&name(entry, at)),
                Some(&1),
                "{entry} {at}: {counts:?}"
            );
        }
    }
    assert_eq!(
        counts.get(&name("last", t + 10)),
        Some(&1),
        "catchup=last makes up the time missed in the failover once: {counts:?}"
    );
    assert_eq!(
        counts.get(&name("none", t + 10)),
        None,
        "catchup=none skips it: {counts:?}"
    );
    let seen = cl.seen.lock().unwrap();
    let (by, _, _) = seen
        .iter()
        .find(|(_, w, _)| *w == name("last", t + 10))
        .unwrap();
    assert_ne!(*by, killed, "the next leader made it up");
    drop(seen);
    for i in 0..3 {
        cl.kill9(i);
    }
}

#[test]
#[ignore = "long: kills, freezes or cuts a real etcd cluster for tens of seconds; .ci/run runs it"]
fn a_frozen_leader_does_not_fire_when_it_wakes() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("stop");
    let etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 2);
    let l = cl.leader(15);
    thread::sleep(Duration::from_secs(2));
    let frozen = cl.servers[l].as_ref().unwrap();
    frozen.signal(libc::SIGSTOP);
    // Past the lease (3 s): the other server takes over and fires.
    thread::sleep(Duration::from_secs(6));
    let other = 1 - l;
    assert_eq!(cl.leader(5), other);
    cl.servers[l].as_ref().unwrap().signal(libc::SIGCONT);
    // The woken leader says it stopped, and the other fires on past that.
    let log = support::poll(10, "the woken leader to say it stopped", || {
        let log = cl.servers[l].as_ref().unwrap().log();
        match log.contains("stops firing") || log.contains("no longer the leader") {
            true => Ok(log),
            false => Err(log),
        }
    });
    cl.wait_runs_by_leader(std::time::Instant::now(), 2);
    cl.assert_no_time_twice();
    // The times it slept through were the new leader's: the woken one counts none of them
    // as its own misses, though its timers were overdue when it woke.
    let woken = cl.servers[l].as_ref().unwrap().log();
    assert!(
        !woken.contains("runs missed after"),
        "the woken leader counted the times it slept through:\n{woken}"
    );
    // One gap, the failover; any other must be one the leader said it made: on a loaded
    // machine a keepalive answered late stops its firing until etcd confirms the lease again
    // (safety before liveness), which is allowed, but never silently.
    let g = gaps(&cl.seconds());
    let other_log = cl.servers[other].as_ref().unwrap().log();
    let safety_stops = other_log
        .matches("could not be renewed within its TTL")
        .count();
    assert!(
        g.len() <= 1 + safety_stops,
        "one failover and {safety_stops} logged safety stops, gaps {g:?}\n\
         the frozen server's log:\n{log}\nthe other's:\n{other_log}"
    );
    cl.kill9(0);
    cl.kill9(1);
}

#[test]
#[ignore = "long: kills, freezes or cuts a real etcd cluster for tens of seconds; .ci/run runs it"]
fn a_leader_cut_off_from_etcd_stops_firing_and_the_others_take_over() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("partition");
    let etcd = Etcd::start();
    let relay = support::partition::Relay::start(etcd.addr().parse().unwrap());
    // Server 0 reaches etcd only through the relay, and leads: it starts alone.
    let mut cl = Cluster::new(&etcd, &dir, 0);
    let cut_off = cl.start_at(&relay.url(), TTL);
    cl.push(cut_off);
    assert_eq!(cl.leader(15), 0);
    for _ in 0..2 {
        let s = cl.start();
        cl.push(s);
    }
    thread::sleep(Duration::from_secs(2));
    let its_runs = |cl: &Cluster, after| cl.runs_since(Some(cl.generation_of(0)), "", after);
    assert!(its_runs(&cl, std::time::Instant::now() - Duration::from_secs(2)) > 0);

    relay.cut();
    let cut_at = std::time::Instant::now();
    // It learns nothing more from etcd: within the TTL it stops trusting its lease, and one
    // of the two others is elected.
    support::wait_until(10, "the cut-off leader to stop and another to lead", || {
        let s0 = show_cluster(cl.servers[0].as_ref().unwrap());
        let others = (1..3).any(|i| {
            show_cluster(cl.servers[i].as_ref().unwrap())
                .is_some_and(|l| l.contains("role\tleader\n"))
        });
        s0.is_some_and(|l| !l.contains("role\tleader\n")) && others
    });
    // Gearman is served the whole time on the cut-off server.
    let mut c = cl.servers[0].as_ref().unwrap().connect();
    assert!(c.admin("status", true).contains("tick\t"));
    cl.servers[0]
        .as_ref()
        .unwrap()
        .wait_log("could not be renewed within its TTL", 10);
    // The times went on meanwhile: the new leader fired two of them since the cut-off one
    // stopped saying it led.
    let stopped_at = std::time::Instant::now();
    cl.wait_runs_by_leader(stopped_at, 2);
    // A job it queued just before the cut may still reach its worker; nothing after.
    assert_eq!(
        its_runs(&cl, cut_at + Duration::from_secs(1)),
        0,
        "the cut-off server fired after it lost etcd"
    );

    relay.heal();
    // Back in touch, it rejoins as a follower of the new leader, and fires nothing.
    let healed_at = std::time::Instant::now();
    support::wait_until(15, "the cut-off server to follow again", || {
        show_cluster(cl.servers[0].as_ref().unwrap())
            .is_some_and(|l| l.contains("role\tfollower\n"))
    });
    cl.wait_runs_by_leader(std::time::Instant::now(), 2);
    assert_eq!(its_runs(&cl, healed_at), 0, "a healed follower fired");
    cl.assert_no_time_twice();
    let g = gaps(&cl.seconds());
    let stops: usize = (1..3)
        .map(|i| {
            cl.servers[i]
                .as_ref()
                .unwrap()
                .log()
                .matches("could not be renewed within its TTL")
                .count()
        })
        .sum();
    assert!(
        g.len() <= 1 + stops,
        "one failover and {stops} logged safety stops, gaps {g:?}"
    );
    for i in 0..3 {
        cl.kill9(i);
    }
}

#[test]
#[ignore = "long: kills, freezes or cuts a real etcd cluster for tens of seconds; .ci/run runs it"]
fn etcd_stopped_and_started_again_stops_and_resumes_the_schedule() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("etcd");
    let mut etcd = Etcd::start();
    let mut cl = Cluster::new(&etcd, &dir, 0);
    // An HTTP listener on each, for /metrics.
    cl.flags = vec!["--http-port".into(), "0".into()];
    for _ in 0..2 {
        let s = cl.start();
        cl.push(s);
    }
    let l = cl.leader(15);
    let leader = cl.servers[l].as_ref().unwrap();
    cl.wait_runs_by_leader(std::time::Instant::now(), 2);
    etcd.stop();
    // The lease cannot be renewed: within the TTL the leader stops firing and says so.
    let stopped =
        |s: &support::Server| show_cluster(s).is_some_and(|l| l.contains("role\tstopped\n"));
    support::poll(10, "the leader to stop", || match stopped(leader) {
        true => Ok(()),
        false => Err(format!("{:?}", show_cluster(leader))),
    });
    let before = cl.seen.lock().unwrap().len();
    // Two seconds (two times of `@every 1s`) pass, and then it still says it is stopped:
    // it was stopped all along, and nothing fired meanwhile.
    thread::sleep(Duration::from_secs(2));
    let listing = show_cluster(leader).expect("show cluster answers");
    assert!(listing.contains("role\tstopped\n"), "{listing}");
    assert!(listing.contains("etcd\tunreachable\n"), "{listing}");
    for s in cl.servers.iter().flatten() {
        let listing = show_cluster(s).expect("show cluster answers");
        assert!(!listing.contains("role\tleader\n"), "{listing}");
    }
    assert_eq!(
        cl.seen.lock().unwrap().len(),
        before,
        "nothing fires while etcd is away"
    );
    let mut h = support::Http::connect(support::http_addr(leader));
    h.send(&support::request("GET", "/metrics", &[], b""));
    let metrics = support::prometheus_samples(&h.read().text());
    for name in ["gearwheel_cluster_leader", "gearwheel_etcd_reachable"] {
        assert_eq!(metrics.get(name), Some(&0.0), "{name} in /metrics");
    }
    // Gearman itself goes on meanwhile.
    let mut c = leader.connect();
    assert!(c.admin("status", true).contains("tick\t"));
    etcd.restart();
    cl.leader(20);
    cl.wait_runs_by_leader(std::time::Instant::now(), 2);
    cl.assert_no_time_twice();
}

#[test]
fn show_cluster_http_and_metrics_name_the_leader() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("view");
    let etcd = Etcd::start();
    let file = support::cluster::schedules(&dir);
    let s = support::HttpServer::start(&[
        "--etcd",
        &etcd.url(),
        "--cluster",
        "view",
        "--etcd-lease-ttl",
        support::cluster::TTL,
        "--schedules",
        file.to_str().unwrap(),
    ]);
    let me = s.server.addr.to_string();
    let end = std::time::Instant::now() + Duration::from_secs(15);
    let body = loop {
        let body = s.get("/cluster").text();
        if body.contains("\"role\":\"leader\"") {
            break body;
        }
        assert!(std::time::Instant::now() < end, "never the leader: {body}");
        thread::sleep(Duration::from_millis(50));
    };
    for part in [
        "\"cluster\":\"view\"".to_string(),
        format!("\"self\":\"{me}\""),
        format!("\"leader\":\"{me}\""),
        "\"etcd_reachable\":true".to_string(),
        format!("\"members\":[{{\"id\":\"{me}\",\"addr\":\"{me}\",\"leader\":true,"),
    ] {
        assert!(body.contains(&part), "{part} in {body}");
    }
    // The console's overview names the leader.
    let facts = s.get("/ui/api/server").text();
    assert!(facts.contains(&format!("\"leader\":\"{me}\"")), "{facts}");
    let metrics = s.get("/metrics").text();
    for line in [
        "gearwheel_cluster_leader 1\n",
        "gearwheel_etcd_reachable 1\n",
        "gearwheel_cluster_failovers_total 1\n",
        "gearwheel_cluster_fence_failures_total 0\n",
    ] {
        assert!(metrics.contains(line), "{line} in /metrics");
    }
    assert!(metrics.contains("gearwheel_etcd_request_seconds_count "));
    let mut c = s.gearman();
    let row = c.schedule_row("second");
    // The server that fires it, before the too_long and too_short counts added after it.
    assert_eq!(
        row.get(16).map(String::as_str),
        Some(me.as_str()),
        "{row:?}"
    );
    assert_eq!(row.len(), 19, "{row:?}");
    let listing = c.admin("show cluster", true);
    assert!(
        listing.contains(&format!("member\t{me}\tleader\t")),
        "{listing}"
    );
}

#[test]
fn a_follower_with_another_schedules_file_names_the_entries_that_differ() {
    if !have_etcd() {
        return;
    }
    let dir = tempdir("digest");
    let etcd = Etcd::start();
    let mine = support::cluster::schedules(&dir);
    let other = dir.join("other.cron");
    let text = std::fs::read_to_string(&mine).unwrap();
    std::fs::write(&other, text.replace("minute {time}", "minute at {time}")).unwrap();
    let start = |file: &std::path::Path| {
        support::Server::start(&[
            "--etcd",
            &etcd.url(),
            "--cluster",
            "digest",
            "--etcd-lease-ttl",
            support::cluster::TTL,
            "--schedules",
            file.to_str().unwrap(),
        ])
    };
    let leader = start(&mine);
    leader.wait_log("is the leader now", 15);
    let follower = start(&other);
    follower.wait_log("differs from the leader's", 15);
    let log = follower.log();
    let line = log
        .lines()
        .find(|l| l.contains("differs from the leader's"))
        .unwrap();
    assert!(line.ends_with(": minute"), "{line}");
    let listing = follower.connect().admin("show cluster", true);
    assert!(listing.contains("differing\tminute\n"), "{listing}");
    assert!(!leader.log().contains("differs from the leader's"));
}
