//! A cluster on loopback for the tests and the failover bench: gearwheel servers joined to
//! one etcd (tests/support/etcd.rs), and a worker per server that records each `tick`
//! workload with the server and the moment it arrived.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub use super::etcd::Etcd;
use super::gearman::{Conn, t};
use super::server::Server;
pub use super::tempdir::TempDir;

/// etcd grants at least 3 s (three election timeouts), so ask for that.
pub const TTL: &str = "3";

/// A directory for a cluster test's files, removed when dropped.
pub fn tempdir(name: &str) -> TempDir {
    TempDir::new(&format!("cluster-{name}"))
}

/// What the workers saw: (server generation, workload, when it arrived).
pub type Seen = Arc<Mutex<Vec<(usize, String, Instant)>>>;

/// A worker on one server: takes `tick` jobs and records their workload, until the server
/// goes away.
pub fn worker(addr: std::net::SocketAddr, generation: usize, seen: Seen) {
    worker_for(addr, "tick", move |c, handle, data| {
        seen.lock()
            .unwrap()
            .push((generation, data, Instant::now()));
        c.send_req(t::WORK_COMPLETE, &[handle, b""]);
        true
    });
}

/// A worker for `function` on one server (its own thread): each job's handle and workload go
/// to `on_job`, which answers it (or holds it) and says whether to take more.
pub fn worker_for(
    addr: std::net::SocketAddr,
    function: &str,
    mut on_job: impl FnMut(&mut Conn, &[u8], String) -> bool + Send + 'static,
) {
    let function = function.as_bytes().to_vec();
    thread::spawn(move || {
        let Ok(stream) = std::net::TcpStream::connect(addr) else {
            return;
        };
        drop(stream);
        let mut c = Conn::connect(addr);
        c.send_req(t::CAN_DO, &[&function]);
        loop {
            c.send_req(t::GRAB_JOB, &[]);
            let p = match c.try_read_packet() {
                Ok(p) => p,
                Err(_) => return,
            };
            match p.ptype {
                t::NO_JOB => {
                    c.send_req(t::PRE_SLEEP, &[]);
                    loop {
                        match c.try_read_packet() {
                            Ok(p) if p.ptype == t::NOOP => break,
                            Ok(_) => {}
                            Err(e) if e == "EOF" || e.contains("reset") => return,
                            Err(_) => break, // the 5 s read timeout: grab again
                        }
                    }
                }
                t::JOB_ASSIGN => {
                    let args = p.args();
                    let handle = args[0].to_vec();
                    let data =
                        String::from_utf8_lossy(args.get(2).copied().unwrap_or(b"")).to_string();
                    if !on_job(&mut c, &handle, data) {
                        // Keep the connection: a closed worker would fail its jobs.
                        thread::sleep(Duration::from_secs(3600));
                        return;
                    }
                }
                _ => {}
            }
        }
    });
}

pub fn schedules(dir: &Path) -> PathBuf {
    let f = dir.join("schedules.cron");
    std::fs::write(
        &f,
        "CRON_TZ=UTC\n\
         @every 1s tick id=second overlap=allow catchup=last -- second {time}\n\
         */1 * * * * tick id=minute overlap=allow catchup=last -- minute {time}\n",
    )
    .unwrap();
    f
}

/// A schedules file with one `@every 1s` entry `pushed`, for `gearwheel schedules push`.
pub fn pushed_file(dir: &Path) -> PathBuf {
    let f = dir.join("pushed.cron");
    std::fs::write(
        &f,
        "CRON_TZ=UTC\n@every 1s tick id=pushed overlap=allow -- pushed {time}\n",
    )
    .unwrap();
    f
}

pub struct Cluster {
    pub url: String,
    /// `--etcd-ca-file/--etcd-certificate/--etcd-key` when etcd serves TLS.
    pub tls_flags: Vec<String>,
    /// More flags for each server started from now on (`--http-port 0`, say).
    pub flags: Vec<String>,
    pub file: PathBuf,
    pub servers: Vec<Option<Server>>,
    pub generations: usize,
    pub seen: Seen,
    /// The generation of the server in each slot.
    by_slot: Vec<usize>,
}

impl Cluster {
    pub fn new(etcd: &Etcd, dir: &Path, n: usize) -> Cluster {
        Cluster::new_with(etcd, dir, n, TTL)
    }

    /// `n` servers with HTTP (`--http-port 0`) that load the schedules file `text`.
    pub fn with_http(etcd: &Etcd, dir: &Path, text: &str, n: usize) -> Cluster {
        let mut c = Cluster::new(etcd, dir, 0);
        std::fs::write(&c.file, text).unwrap();
        c.flags = vec!["--http-port".into(), "0".into()];
        for _ in 0..n {
            let s = c.start();
            c.push(s);
        }
        c
    }

    /// `n` servers with this lease TTL.
    pub fn new_with(etcd: &Etcd, dir: &Path, n: usize, ttl: &str) -> Cluster {
        let mut c = Cluster {
            url: etcd.url(),
            tls_flags: match etcd.tls {
                Some(_) => etcd.tls_flags(),
                None => Vec::new(),
            },
            flags: Vec::new(),
            file: schedules(dir),
            servers: Vec::new(),
            generations: 0,
            seen: Arc::default(),
            by_slot: Vec::new(),
        };
        for _ in 0..n {
            let s = c.start_with(ttl);
            c.push(s);
        }
        c
    }

    /// Give a server just started (`start_at`, `start_with`) the next slot.
    pub fn push(&mut self, s: Server) {
        self.servers.push(Some(s));
        self.by_slot.push(self.generations);
    }

    /// Start a server again in slot `i` (after `kill9`).
    pub fn restart(&mut self, i: usize, ttl: &str) {
        let s = self.start_with(ttl);
        self.servers[i] = Some(s);
        self.by_slot[i] = self.generations;
    }

    /// The worker generation of the server in slot `i` (to tell its runs from others').
    pub fn generation_of(&self, i: usize) -> usize {
        self.by_slot[i]
    }

    pub fn start(&mut self) -> Server {
        self.start_with(TTL)
    }

    /// A server with this lease TTL.
    pub fn start_with(&mut self, ttl: &str) -> Server {
        let url = self.url.clone();
        self.start_at(&url, ttl)
    }

    /// A server that reaches etcd at `url` (a `partition::Relay` in front of it, say).
    pub fn start_at(&mut self, url: &str, ttl: &str) -> Server {
        let mut args = vec![
            "--etcd",
            url,
            "--cluster",
            "test",
            "--etcd-lease-ttl",
            ttl,
            "--etcd-request-timeout",
            "1000",
            "--schedules",
            self.file.to_str().unwrap(),
        ];
        args.extend(self.tls_flags.iter().map(String::as_str));
        args.extend(self.flags.iter().map(String::as_str));
        let s = Server::start(&args);
        self.generations += 1;
        worker(s.addr, self.generations, Arc::clone(&self.seen));
        s
    }

    /// The index of the server whose `show cluster` says it is the leader, waiting for one
    /// (a frozen server that does not answer is passed over).
    pub fn leader(&self, secs: u64) -> usize {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            for (i, s) in self.servers.iter().enumerate() {
                let Some(s) = s else { continue };
                if show_cluster(s).is_some_and(|l| l.contains("role\tleader\n")) {
                    return i;
                }
            }
            assert!(Instant::now() < end, "no leader within {secs} s");
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// A running server other than `leader` whose `show cluster` says it follows, waiting
    /// for one: an ask made of a server before it has reached etcd is refused (rightly).
    pub fn follower(&self, leader: usize, secs: u64) -> usize {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let found = (0..self.servers.len()).find(|&i| {
                i != leader
                    && self.servers[i]
                        .as_ref()
                        .and_then(show_cluster)
                        .is_some_and(|l| l.contains("role\tfollower\n"))
            });
            if let Some(i) = found {
                return i;
            }
            assert!(Instant::now() < end, "no follower within {secs} s");
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Each workload seen and how often.
    pub fn counts(&self) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for (_, w, _) in self.seen.lock().unwrap().iter() {
            *m.entry(w.clone()).or_insert(0) += 1;
        }
        m
    }

    /// Runs whose workload starts with `prefix` that reached a worker after `after`, by the
    /// server of worker generation `generation` (`None`: any server).
    pub fn runs_since(&self, generation: Option<usize>, prefix: &str, after: Instant) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(g, w, at)| {
                generation.is_none_or(|x| x == *g) && w.starts_with(prefix) && *at > after
            })
            .count()
    }

    /// Wait until `runs_since` reaches `n` (the schedule went on: the barrier before
    /// asserting that another server fired none).
    pub fn wait_runs(&self, generation: Option<usize>, prefix: &str, after: Instant, n: usize) {
        super::poll(
            15,
            &format!("{n} runs of {prefix:?} by {generation:?}"),
            || match self.runs_since(generation, prefix, after) {
                runs if runs >= n => Ok(()),
                runs => Err(format!("{runs} runs")),
            },
        );
    }

    /// Wait until the server leading now has fired `n` runs after `after`.
    pub fn wait_runs_by_leader(&self, after: Instant, n: usize) {
        let l = self.leader(10);
        self.wait_runs(Some(self.generation_of(l)), "", after, n);
    }

    pub fn assert_no_time_twice(&self) {
        let twice: Vec<(String, usize)> =
            self.counts().into_iter().filter(|(_, n)| *n > 1).collect();
        assert!(twice.is_empty(), "scheduled times run twice: {twice:?}");
    }

    /// The `@every 1s` times seen, as unix seconds, sorted.
    pub fn seconds(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self
            .counts()
            .keys()
            .filter_map(|w| w.strip_prefix("second "))
            .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp())
            .collect();
        v.sort();
        v
    }

    /// After a push of `pushed_file`: every server loaded it in place of its own file, and
    /// it ran (on the leader), each time once.
    pub fn wait_pushed_everywhere(&self) {
        for s in self.servers.iter().flatten() {
            s.wait_log("reloaded the schedules file pushed to etcd", 10);
            let mut c = s.connect();
            super::wait_admin(&mut c, "show schedules", true, 10, |l| {
                l.starts_with("pushed\t") && !l.contains("\nsecond\t") && !l.starts_with("second\t")
            });
        }
        super::wait_until(10, "a pushed run", || {
            self.counts().keys().any(|w| w.starts_with("pushed "))
        });
        self.assert_no_time_twice();
    }

    pub fn kill9(&mut self, i: usize) {
        self.kill9_kept(i);
    }

    /// `kill9`, keeping the dead server for what it logged.
    pub fn kill9_kept(&mut self, i: usize) -> Option<Server> {
        let mut s = self.servers[i].take()?;
        s.signal(libc::SIGKILL);
        s.wait_exit(5).expect("killed");
        Some(s)
    }
}

/// `show cluster` of one server, or `None` if it does not answer within a second.
pub fn show_cluster(s: &Server) -> Option<String> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect_timeout(&s.addr, Duration::from_secs(1)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    c.write_all(b"show cluster\n").ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b".\n") {
        let n = c.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).ok()
}

pub fn next_rand(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The gaps in a run of seconds: (after, missing count).
pub fn gaps(secs: &[i64]) -> Vec<(i64, i64)> {
    secs.windows(2)
        .filter(|w| w[1] - w[0] > 1)
        .map(|w| (w[0], w[1] - w[0] - 1))
        .collect()
}
