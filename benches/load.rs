//! End-to-end load generator for any Gearman server (gearwheel, gearmand, ...): N client and
//! M worker connections over real sockets, speaking the binary protocol. They are driven by
//! one mio event loop (`--threads` spreads them over more), so that the generator costs
//! little CPU on a small machine: a thread per connection spends more on wake-ups than the
//! server under test. Given the server's PID it reads the server's CPU time and RSS from
//! /proc.
//!
//! ```text
//! cargo bench --bench load -- --mode bg --clients 4 --workers 4 --jobs 200000 --port 4730 --pid PID
//! ```
//!
//! Modes:
//! - `bg`: clients submit SUBMIT_JOB_BG (pipelined up to `--window`), workers GRAB_JOB_UNIQ /
//!   WORK_COMPLETE with PRE_SLEEP/NOOP; jobs/s end to end and server CPU per job.
//! - `sync`: each client keeps `--window` (default 1) foreground SUBMIT_JOBs in flight;
//!   round-trip latency from the submit to its WORK_COMPLETE.
//! - `fill`: submit `--jobs` background jobs with no worker connected; submits/s per tenth
//!   of the fill (flat or not as the queue grows) and RSS per queued job; then the queue is
//!   drained by `--workers` workers (`--no-drain` skips that) and RSS is read again.
//! - `drain`: only the drain half: workers take `--jobs` jobs already queued.
//! - `idle`: open `--connections` connections (one ECHO each), RSS per connection, and the
//!   server's CPU time and context switches over `--idle-secs`.
//! - `echo`: ECHO_REQ round trips.
//! - `future`: `--jobs` SUBMIT_JOB_EPOCH jobs due in the same second (or spread over
//!   `--spread` seconds), sleeping workers; lateness = when a worker got a job minus its due
//!   time. Workers re-grab after `--regrab-ms` without a NOOP, as libgearman workers do.
//! - `future-idle`: hold `--jobs` (default 1,000,000) future jobs due an hour or more ahead;
//!   RSS per future job and the server's CPU time over `--idle-secs` (default 10) of idleness.
//! - `stalls`: no server; one thread spins on the clock for `--idle-secs` (default 2) and
//!   counts the times it was stopped (timer ticks, the hypervisor): the machine's own floor
//!   under every latency measured here.
//!
//! Without `--port` (plain `cargo bench`) it starts the gearwheel built with it on a free
//! loopback port and runs a short suite. Run without `--bench` and without flags (as
//! `cargo test --benches` does) it prints its usage and exits at once.
//!
//! Every flag can also be given as an environment variable `LOAD_<FLAG>` (`LOAD_MODE=sync`).
//! Each run ends with one `RESULT key=value ...` line for scripts (benches/compare.sh).

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

// Packet types (the Gearman protocol's numbers; kept here so that the load generator does
// not depend on the server's code).
const CAN_DO: u32 = 1;
const PRE_SLEEP: u32 = 4;
const NOOP: u32 = 6;
const SUBMIT_JOB: u32 = 7;
const JOB_CREATED: u32 = 8;
const NO_JOB: u32 = 10;
const JOB_ASSIGN: u32 = 11;
const WORK_COMPLETE: u32 = 13;
const WORK_FAIL: u32 = 14;
const ECHO_REQ: u32 = 16;
const ECHO_RES: u32 = 17;
const SUBMIT_JOB_BG: u32 = 18;
const ERROR: u32 = 19;
const WORK_EXCEPTION: u32 = 25;
const GRAB_JOB_UNIQ: u32 = 30;
const JOB_ASSIGN_UNIQ: u32 = 31;
const SUBMIT_JOB_EPOCH: u32 = 36;

const USAGE: &str = "\
usage: cargo bench --bench load -- [--mode MODE] [flags]
  --mode bg|sync|fill|drain|idle|echo|future|future-idle|stalls   (default bg)
  --host H (127.0.0.1) --port P (4730; without it a gearwheel is started)
  --pid PID        server process, for CPU and RSS from /proc
  --label NAME     name printed in the RESULT line (default: server)
  --clients N (4) --workers M (4) --jobs J (mode dependent) --window W (bg/fill/future 64, else 1)
  --threads T (1: event-loop threads of the load generator)
  --payload BYTES (64) --functions F (1) --unique seq|none (seq)
  --connections C (idle: 1000) --idle-secs S (idle 2, future-idle 10)
  --spread S (future: 0 = all due in one second) --lead S (future: auto)
  --regrab-ms MS (10000: a sleeping worker grabs again after this without NOOP)
  --grace S (future: wait this long after the last due time; 15)
  --no-drain (fill) --timeout S (per run, 300)
Every flag may also come from the environment as LOAD_<FLAG> (LOAD_MODE=sync).";

// ---- options --------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Opts {
    mode: String,
    host: String,
    port: Option<u16>,
    pid: Option<u32>,
    label: String,
    /// Prefix of this run's unique keys, so that runs against one server never coalesce.
    run_id: String,
    threads: usize,
    clients: usize,
    workers: usize,
    jobs: Option<u64>,
    window: Option<usize>,
    payload: usize,
    functions: usize,
    unique: bool,
    connections: usize,
    idle_secs: Option<f64>,
    spread: u64,
    lead: Option<u64>,
    regrab: Duration,
    grace: u64,
    drain: bool,
    timeout: Duration,
}

const FLAGS: &[&str] = &[
    "mode",
    "host",
    "port",
    "pid",
    "label",
    "threads",
    "clients",
    "workers",
    "jobs",
    "window",
    "payload",
    "functions",
    "unique",
    "connections",
    "idle-secs",
    "spread",
    "lead",
    "regrab-ms",
    "grace",
    "no-drain",
    "timeout",
];

fn parse_opts(args: &[String]) -> Result<Opts, String> {
    let mut m: HashMap<String, String> = HashMap::new();
    for f in FLAGS {
        let env = format!("LOAD_{}", f.to_uppercase().replace('-', "_"));
        if let Ok(v) = std::env::var(&env) {
            m.insert(f.to_string(), v);
        }
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--bench" {
            continue;
        }
        let Some(flag) = a.strip_prefix("--") else {
            return Err(format!("unexpected argument {a:?}"));
        };
        let (k, v) = match flag.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (flag.to_string(), None),
        };
        if !FLAGS.contains(&k.as_str()) {
            return Err(format!("unknown flag --{k}"));
        }
        let v = match (k.as_str(), v) {
            ("no-drain", None) => "1".to_string(),
            (_, Some(v)) => v,
            (_, None) => it
                .next()
                .cloned()
                .ok_or_else(|| format!("--{k} needs a value"))?,
        };
        m.insert(k, v);
    }
    fn num<T: std::str::FromStr>(
        m: &HashMap<String, String>,
        k: &str,
    ) -> Result<Option<T>, String> {
        m.get(k)
            .map(|v| v.parse().map_err(|_| format!("--{k}: not a number: {v:?}")))
            .transpose()
    }
    let mode = m.get("mode").cloned().unwrap_or_else(|| "bg".into());
    if !matches!(
        mode.as_str(),
        "bg" | "sync" | "fill" | "drain" | "idle" | "echo" | "future" | "future-idle" | "stalls"
    ) {
        return Err(format!("unknown mode {mode:?}"));
    }
    Ok(Opts {
        mode,
        host: m.get("host").cloned().unwrap_or_else(|| "127.0.0.1".into()),
        port: num(&m, "port")?,
        pid: num(&m, "pid")?,
        label: m.get("label").cloned().unwrap_or_else(|| "server".into()),
        run_id: format!(
            "{:x}",
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ u64::from(std::process::id())
        ),
        threads: num(&m, "threads")?.unwrap_or(1).max(1),
        clients: num(&m, "clients")?.unwrap_or(4).max(1),
        workers: num(&m, "workers")?.unwrap_or(4),
        jobs: num(&m, "jobs")?,
        window: num(&m, "window")?,
        payload: num(&m, "payload")?.unwrap_or(64),
        functions: num(&m, "functions")?.unwrap_or(1).max(1),
        unique: m.get("unique").is_none_or(|u| u != "none"),
        connections: num(&m, "connections")?.unwrap_or(1000),
        idle_secs: num(&m, "idle-secs")?,
        spread: num(&m, "spread")?.unwrap_or(0),
        lead: num(&m, "lead")?,
        regrab: Duration::from_millis(num(&m, "regrab-ms")?.unwrap_or(10_000)),
        grace: num(&m, "grace")?.unwrap_or(15),
        drain: m.get("no-drain").is_none_or(|v| v == "0"),
        timeout: Duration::from_secs(num(&m, "timeout")?.unwrap_or(300)),
    })
}

impl Opts {
    fn jobs_or(&self, d: u64) -> u64 {
        self.jobs.unwrap_or(d).max(1)
    }

    fn window_or(&self, d: usize) -> usize {
        self.window.unwrap_or(d).max(1)
    }

    fn addr(&self) -> io::Result<SocketAddr> {
        let port = self.port.unwrap_or(4730);
        (self.host.as_str(), port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("address did not resolve"))
    }

    fn func(&self, i: u64) -> String {
        if self.functions == 1 {
            "bench".to_string()
        } else {
            format!("bench{}", i % self.functions as u64)
        }
    }

    fn funcs(&self) -> Vec<String> {
        (0..self.functions as u64).map(|i| self.func(i)).collect()
    }
}

// ---- the server under test, from /proc ----------------------------------------------------

#[derive(Clone, Copy, Debug, Default)]
struct ProcSnap {
    /// utime + stime of all threads, in seconds.
    cpu: f64,
    rss_kb: u64,
    /// RssAnon: the process's own memory. Costs per job and per connection are differences
    /// of this, because VmRSS also counts code pages that a first request maps again (a
    /// server that unmaps idle code, as gearwheel does, would be charged for them).
    anon_kb: u64,
    threads: u64,
    /// Voluntary and involuntary context switches of all threads: a wake-up count.
    ctxt: u64,
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn proc_snap(pid: Option<u32>) -> Option<ProcSnap> {
    let pid = pid?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14 and stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let mut ctxt = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("status")) {
                for l in s.lines() {
                    if let Some(v) = l
                        .strip_prefix("voluntary_ctxt_switches:")
                        .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                    {
                        ctxt += v.trim().parse::<u64>().unwrap_or(0);
                    }
                }
            }
        }
    }
    Some(ProcSnap {
        cpu: (utime + stime) as f64 / clock_ticks(),
        rss_kb: field("VmRSS:"),
        anon_kb: field("RssAnon:"),
        threads: field("Threads:"),
        ctxt,
    })
}

/// CPU time of this process (the load generator), in seconds.
fn self_cpu() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Raise the soft open-files limit to the hard one (idle mode opens many sockets).
fn raise_nofile() -> u64 {
    // SAFETY: plain getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            return r.rlim_cur as u64;
        }
    }
    0
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

// ---- results --------------------------------------------------------------------------

struct Report {
    mode: String,
    label: String,
    pairs: Vec<(String, String)>,
}

impl Report {
    fn new(o: &Opts) -> Report {
        Report {
            mode: o.mode.clone(),
            label: o.label.clone(),
            pairs: Vec::new(),
        }
    }

    fn put(&mut self, k: &str, v: impl std::fmt::Display) {
        self.pairs.push((k.to_string(), v.to_string()));
    }

    fn putf(&mut self, k: &str, v: f64, decimals: usize) {
        self.put(k, format!("{v:.decimals$}"));
    }

    fn print(&self) {
        println!("{} against {}:", self.mode, self.label);
        for (k, v) in &self.pairs {
            println!("  {k:<28} {v}");
        }
        let mut line = format!("RESULT mode={} label={}", self.mode, self.label);
        for (k, v) in &self.pairs {
            line.push_str(&format!(" {k}={v}"));
        }
        println!("{line}");
    }
}

/// Percentile of sorted values.
fn pct<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Some(sorted[i.min(sorted.len() - 1)])
}

fn put_server(r: &mut Report, before: Option<ProcSnap>, after: Option<ProcSnap>, jobs: u64) {
    if let (Some(b), Some(a)) = (before, after) {
        let cpu = a.cpu - b.cpu;
        r.putf("server_cpu_s", cpu, 2);
        r.putf("server_cpu_us_per_job", cpu * 1e6 / jobs.max(1) as f64, 2);
        r.putf(
            "server_wakeups_per_job",
            a.ctxt.saturating_sub(b.ctxt) as f64 / jobs.max(1) as f64,
            2,
        );
        r.put("server_rss_kb_before", b.rss_kb);
        r.put("server_rss_kb_after", a.rss_kb);
        r.put("server_threads", a.threads);
    }
}

fn put_latency_us(r: &mut Report, mut lat: Vec<u32>) {
    lat.sort_unstable();
    for (k, p) in [
        ("p10_us", 0.1),
        ("p50_us", 0.5),
        ("p90_us", 0.9),
        ("p95_us", 0.95),
        ("p99_us", 0.99),
        ("p999_us", 0.999),
    ] {
        if let Some(v) = pct(&lat, p) {
            r.put(k, v);
        }
    }
    if let Some(m) = lat.last() {
        r.put("max_us", m);
    }
}

// ---- packets ----------------------------------------------------------------------------

/// Append a request packet whose body is written by `body`.
fn put_with(out: &mut Vec<u8>, ptype: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(b"\0REQ");
    out.extend_from_slice(&ptype.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - at - 12) as u32;
    out[at + 8..at + 12].copy_from_slice(&len.to_be_bytes());
}

fn put(out: &mut Vec<u8>, ptype: u32, parts: &[&[u8]]) {
    put_with(out, ptype, |o| {
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                o.push(0);
            }
            o.extend_from_slice(p);
        }
    });
}

/// The `n`-th of `of` NUL-separated arguments; the last one runs to the end of the body.
fn arg(body: &[u8], n: usize, of: usize) -> &[u8] {
    let mut rest = body;
    for _ in 0..n {
        match rest.iter().position(|&b| b == 0) {
            Some(p) => rest = &rest[p + 1..],
            None => return &[],
        }
    }
    if n + 1 < of {
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        &rest[..end]
    } else {
        rest
    }
}

fn error_text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).replace('\0', " ")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- clients and workers as state machines -----------------------------------------------

/// Counters shared by the event-loop threads and the main thread, which watches and measures.
struct Shared {
    /// Clients may start submitting.
    go: AtomicBool,
    stop: AtomicBool,
    /// When the first loop saw `go`.
    started: Mutex<Option<Instant>>,
    /// Jobs the workers are to complete before the run is over.
    job_target: u64,
    jobs_done: AtomicU64,
    jobs_end: Mutex<Option<Instant>>,
    workers_ready: AtomicUsize,
    /// Client requests answered (JOB_CREATED, ECHO_RES, ERROR).
    acked: AtomicU64,
    clients_done: AtomicUsize,
    clients_end: Mutex<Option<Instant>>,
    sent: AtomicU64,
    errors: AtomicU64,
    latencies_us: Mutex<Vec<u32>>,
    lateness_us: Mutex<Vec<i64>>,
}

impl Shared {
    fn new(job_target: u64) -> Arc<Shared> {
        Arc::new(Shared {
            go: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            started: Mutex::new(None),
            job_target,
            jobs_done: AtomicU64::new(0),
            jobs_end: Mutex::new(None),
            workers_ready: AtomicUsize::new(0),
            acked: AtomicU64::new(0),
            clients_done: AtomicUsize::new(0),
            clients_end: Mutex::new(None),
            sent: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latencies_us: Mutex::new(Vec::new()),
            lateness_us: Mutex::new(Vec::new()),
        })
    }

    fn error(&self, what: &str) {
        if self.errors.fetch_add(1, SeqCst) < 3 {
            eprintln!("load: {what}");
        }
    }

    fn job_done(&self) {
        if self.jobs_done.fetch_add(1, SeqCst) + 1 == self.job_target {
            *lock(&self.jobs_end) = Some(Instant::now());
        }
    }

    fn client_done(&self) {
        let now = Instant::now();
        let mut end = lock(&self.clients_end);
        *end = Some(end.map_or(now, |e| e.max(now)));
        drop(end);
        self.clients_done.fetch_add(1, SeqCst);
    }
}

/// What one client connection sends.
#[derive(Clone, Copy, PartialEq)]
enum Submit {
    Background,
    Foreground,
    Echo,
    /// SUBMIT_JOB_EPOCH due at base + i * spread / total (whole seconds).
    Epoch {
        base: u64,
        spread: u64,
        total: u64,
    },
}

/// A client's share of the run: requests `first`, `first + stride`, ..., `n` of them, at most
/// `window` unanswered (for foreground jobs: not yet completed).
struct Client {
    what: Submit,
    first: u64,
    stride: u64,
    n: u64,
    window: u64,
    sent: u64,
    done: u64,
    in_flight: VecDeque<Instant>,
    by_handle: HashMap<Vec<u8>, Instant>,
    latencies_us: Vec<u32>,
    finished: bool,
}

impl Client {
    fn new(what: Submit, first: u64, stride: u64, n: u64, window: usize) -> Client {
        Client {
            what,
            first,
            stride,
            n,
            window: window as u64,
            sent: 0,
            done: 0,
            in_flight: VecDeque::new(),
            by_handle: HashMap::new(),
            latencies_us: Vec::new(),
            finished: n == 0,
        }
    }

    fn top_up(&mut self, out: &mut Vec<u8>, o: &Opts, payload: &[u8], sh: &Shared) {
        let stamp = matches!(self.what, Submit::Foreground | Submit::Echo);
        let before = self.sent;
        while self.sent < self.n && self.sent - self.done < self.window {
            let i = self.first + self.sent * self.stride;
            let func = o.func(i);
            match self.what {
                Submit::Echo => put(out, ECHO_REQ, &[payload]),
                Submit::Background | Submit::Foreground => {
                    let t = if self.what == Submit::Foreground {
                        SUBMIT_JOB
                    } else {
                        SUBMIT_JOB_BG
                    };
                    put_with(out, t, |b| {
                        b.extend_from_slice(func.as_bytes());
                        b.push(0);
                        if o.unique {
                            let _ = write!(b, "{}-{i}", o.run_id);
                        }
                        b.push(0);
                        b.extend_from_slice(payload);
                    });
                }
                Submit::Epoch {
                    base,
                    spread,
                    total,
                } => {
                    let due = base + i * spread / total.max(1);
                    put_with(out, SUBMIT_JOB_EPOCH, |b| {
                        b.extend_from_slice(func.as_bytes());
                        b.push(0);
                        if o.unique {
                            let _ = write!(b, "{}-{i}", o.run_id);
                        }
                        b.push(0);
                        let _ = write!(b, "{due}");
                        b.push(0);
                        // The data starts with the due time, for the worker to measure by.
                        let at = b.len();
                        let _ = write!(b, "{due}:");
                        let used = b.len() - at;
                        b.extend_from_slice(&payload[..payload.len().saturating_sub(used)]);
                    });
                }
            }
            if stamp {
                self.in_flight.push_back(Instant::now());
            }
            self.sent += 1;
        }
        sh.sent.fetch_add(self.sent - before, SeqCst);
    }

    fn on_packet(&mut self, ptype: u32, body: &[u8], sh: &Shared) {
        let us = |t: Instant| t.elapsed().as_micros().min(u32::MAX as u128) as u32;
        match ptype {
            JOB_CREATED => {
                sh.acked.fetch_add(1, SeqCst);
                if self.what == Submit::Foreground {
                    let t = self.in_flight.pop_front().unwrap_or_else(Instant::now);
                    self.by_handle.insert(body.to_vec(), t);
                } else {
                    self.done += 1;
                }
            }
            ECHO_RES => {
                sh.acked.fetch_add(1, SeqCst);
                let t = self.in_flight.pop_front().unwrap_or_else(Instant::now);
                self.latencies_us.push(us(t));
                self.done += 1;
            }
            WORK_COMPLETE | WORK_FAIL | WORK_EXCEPTION => {
                if let Some(t) = self.by_handle.remove(arg(body, 0, 2)) {
                    self.latencies_us.push(us(t));
                    self.done += 1;
                }
                if ptype != WORK_COMPLETE {
                    sh.error("client: a job failed");
                }
            }
            ERROR => {
                sh.acked.fetch_add(1, SeqCst);
                sh.error(&format!("client: ERROR {}", error_text(body)));
                // The request was refused; count it answered so that the run ends.
                self.in_flight.pop_front();
                self.done += 1;
            }
            _ => {}
        }
        if self.done >= self.n && !self.finished {
            self.finished = true;
            sh.client_done();
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum WorkerKind {
    /// WORK_COMPLETE with empty data (background jobs).
    Plain,
    /// WORK_COMPLETE with the job's data (foreground: the client gets it back).
    Echo,
    /// Record lateness against the due time at the front of the data.
    Future,
}

/// A worker: CAN_DO each function, then GRAB_JOB_UNIQ / WORK_COMPLETE, and PRE_SLEEP when
/// there is nothing; without a NOOP it grabs again after `--regrab-ms`, as libgearman does.
struct Worker {
    kind: WorkerKind,
    sleeping_since: Option<Instant>,
    ready: bool,
    lateness_us: Vec<i64>,
}

impl Worker {
    fn start(&mut self, out: &mut Vec<u8>, o: &Opts) {
        for f in o.funcs() {
            put(out, CAN_DO, &[f.as_bytes()]);
        }
        put(out, GRAB_JOB_UNIQ, &[]);
    }

    fn on_packet(&mut self, ptype: u32, body: &[u8], out: &mut Vec<u8>, sh: &Shared) {
        match ptype {
            JOB_ASSIGN_UNIQ | JOB_ASSIGN => {
                let (handle, data) = if ptype == JOB_ASSIGN_UNIQ {
                    (arg(body, 0, 4), arg(body, 3, 4))
                } else {
                    (arg(body, 0, 3), arg(body, 2, 3))
                };
                if self.kind == WorkerKind::Future {
                    let got = unix_ms();
                    let due: f64 = std::str::from_utf8(data)
                        .ok()
                        .and_then(|s| s.split(':').next()?.parse::<f64>().ok())
                        .unwrap_or(0.0);
                    self.lateness_us.push(((got - due * 1e3) * 1e3) as i64);
                }
                let reply: &[u8] = if self.kind == WorkerKind::Echo {
                    data
                } else {
                    b""
                };
                put(out, WORK_COMPLETE, &[handle, reply]);
                put(out, GRAB_JOB_UNIQ, &[]);
                self.sleeping_since = None;
                sh.job_done();
            }
            NO_JOB => {
                put(out, PRE_SLEEP, &[]);
                self.sleeping_since = Some(Instant::now());
                if !self.ready {
                    self.ready = true;
                    sh.workers_ready.fetch_add(1, SeqCst);
                }
            }
            NOOP => {
                put(out, GRAB_JOB_UNIQ, &[]);
                self.sleeping_since = None;
            }
            ERROR => sh.error(&format!("worker: ERROR {}", error_text(body))),
            _ => {}
        }
    }

    fn tick(&mut self, out: &mut Vec<u8>, regrab: Duration) {
        if self.sleeping_since.is_some_and(|t| t.elapsed() >= regrab) {
            put(out, GRAB_JOB_UNIQ, &[]);
            self.sleeping_since = None;
        }
    }
}

enum Role {
    Client(Client),
    Worker(Worker),
}

/// One non-blocking connection driven by an event loop.
struct Peer {
    s: mio::net::TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
    opos: usize,
    role: Role,
    dead: bool,
}

impl Peer {
    fn connect(addr: SocketAddr, role: Role) -> io::Result<Peer> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        Ok(Peer {
            s: mio::net::TcpStream::from_std(s),
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            out: Vec::with_capacity(16 * 1024),
            opos: 0,
            role,
            dead: false,
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        while self.opos < self.out.len() {
            match self.s.write(&self.out[self.opos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.opos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.opos = 0;
        Ok(())
    }

    /// Read until the socket is dry, serving every complete packet as it comes.
    fn serve(&mut self, sh: &Shared) -> io::Result<()> {
        loop {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            } else if self.end == self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.end == self.buf.len() {
                    let n = self.buf.len() * 2;
                    self.buf.resize(n, 0);
                }
            }
            let room = self.buf.len() - self.end;
            let short = match self.s.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.end += n;
                    n < room
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            while self.end - self.start >= 12 {
                let h = &self.buf[self.start..self.start + 12];
                let ptype = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
                let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
                if self.end - self.start < 12 + len {
                    if 12 + len > self.buf.len() {
                        self.buf.resize(12 + len, 0);
                    }
                    break;
                }
                let body = &self.buf[self.start + 12..self.start + 12 + len];
                match &mut self.role {
                    Role::Client(c) => c.on_packet(ptype, body, sh),
                    Role::Worker(w) => w.on_packet(ptype, body, &mut self.out, sh),
                }
                self.start += 12 + len;
            }
            // A short read emptied the socket: bytes that come later raise a new
            // (edge-triggered) event, so the read that would only say EAGAIN is saved, as
            // libgearman and the servers do; the generator's own cost is not the servers'.
            if short {
                return Ok(());
            }
        }
    }
}

/// Drive `peers` until told to stop; then hand the measurements to `sh`.
fn event_loop(mut peers: Vec<Peer>, sh: Arc<Shared>, o: Opts) -> io::Result<()> {
    let mut poll = mio::Poll::new()?;
    let mut events = mio::Events::with_capacity(1024);
    for (i, p) in peers.iter_mut().enumerate() {
        poll.registry().register(
            &mut p.s,
            mio::Token(i),
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )?;
        if let Role::Worker(w) = &mut p.role {
            w.start(&mut p.out, &o);
        }
    }
    let payload = vec![b'x'; o.payload];
    let has_clients = peers.iter().any(|p| matches!(p.role, Role::Client(_)));
    let mut started = false;
    let mut last_tick = Instant::now();
    while !sh.stop.load(SeqCst) {
        if !started && sh.go.load(SeqCst) {
            started = true;
            lock(&sh.started).get_or_insert_with(Instant::now);
            for p in peers.iter_mut() {
                if let Role::Client(c) = &mut p.role {
                    c.top_up(&mut p.out, &o, &payload, &sh);
                }
            }
        }
        for p in peers.iter_mut().filter(|p| !p.dead && p.opos < p.out.len()) {
            if let Err(e) = p.flush() {
                p.dead = true;
                sh.error(&format!("write: {e}"));
            }
        }
        let timeout = if has_clients && !started {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(20)
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in events.iter() {
            let Some(p) = peers.get_mut(ev.token().0) else {
                continue;
            };
            if p.dead || !(ev.is_readable() || ev.is_read_closed() || ev.is_error()) {
                continue;
            }
            let r = p.serve(&sh);
            if let Role::Client(c) = &mut p.role {
                if started {
                    c.top_up(&mut p.out, &o, &payload, &sh);
                }
            }
            // Write at once, as an independent client or worker would: holding every peer's
            // output until the whole batch of events is read would add the generator's own
            // reading time to every job's latency, for every server alike.
            if r.is_ok() && p.opos < p.out.len() {
                if let Err(e) = p.flush() {
                    p.dead = true;
                    sh.error(&format!("write: {e}"));
                    continue;
                }
            }
            if let Err(e) = r {
                p.dead = true;
                if !sh.stop.load(SeqCst) {
                    sh.error(&format!("read: {e}"));
                    if let Role::Client(c) = &mut p.role {
                        if !c.finished {
                            c.finished = true;
                            sh.client_done();
                        }
                    }
                }
            }
        }
        if last_tick.elapsed() >= Duration::from_millis(20) {
            last_tick = Instant::now();
            for p in peers.iter_mut() {
                if let Role::Worker(w) = &mut p.role {
                    w.tick(&mut p.out, o.regrab);
                }
            }
        }
    }
    let mut lat = Vec::new();
    let mut late = Vec::new();
    for p in peers {
        match p.role {
            Role::Client(c) => lat.extend(c.latencies_us),
            Role::Worker(w) => late.extend(w.lateness_us),
        }
    }
    lock(&sh.latencies_us).extend(lat);
    lock(&sh.lateness_us).extend(late);
    Ok(())
}

/// Who connects for a run.
struct Plan {
    /// Jobs the workers must complete for the run to be over.
    job_target: u64,
    workers: usize,
    kind: WorkerKind,
    clients: usize,
    what: Submit,
    /// Client requests in all, shared among the clients.
    total: u64,
    window: usize,
}

/// A run in progress: event-loop threads over the peers.
struct Run {
    sh: Arc<Shared>,
    threads: Vec<thread::JoinHandle<io::Result<()>>>,
}

impl Run {
    /// Connect the plan's workers and clients, spread over `--threads` event loops; wait
    /// until every worker has registered and gone to sleep.
    fn start(o: &Opts, plan: Plan) -> io::Result<Run> {
        let Plan {
            job_target,
            workers,
            kind,
            clients,
            what,
            total,
            window,
        } = plan;
        let addr = o.addr()?;
        let sh = Shared::new(job_target);
        let mut peers = Vec::new();
        for _ in 0..workers {
            let w = Worker {
                kind,
                sleeping_since: None,
                ready: false,
                lateness_us: Vec::new(),
            };
            peers.push(Peer::connect(addr, Role::Worker(w))?);
        }
        let n = clients as u64;
        for k in 0..n {
            let share = total / n + u64::from(k < total % n);
            let c = Client::new(what, k, n, share, window);
            peers.push(Peer::connect(addr, Role::Client(c))?);
        }
        let t = o.threads.max(1).min(peers.len().max(1));
        let mut groups: Vec<Vec<Peer>> = (0..t).map(|_| Vec::new()).collect();
        for (i, p) in peers.into_iter().enumerate() {
            groups[i % t].push(p);
        }
        let threads = groups
            .into_iter()
            .map(|g| {
                let sh = sh.clone();
                let o = o.clone();
                thread::spawn(move || event_loop(g, sh, o))
            })
            .collect();
        let t0 = Instant::now();
        while sh.workers_ready.load(SeqCst) < workers && t0.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(1));
        }
        Ok(Run { sh, threads })
    }

    /// Let the clients go; the run's start time.
    fn go(&self) -> Instant {
        self.sh.go.store(true, SeqCst);
        loop {
            if let Some(t) = *lock(&self.sh.started) {
                return t;
            }
            thread::sleep(Duration::from_micros(100));
        }
    }

    /// Wait until `done` holds or `deadline` passes, noting when each tenth of `acks`
    /// client requests had been answered.
    fn watch(
        &self,
        acks: u64,
        deadline: Instant,
        done: impl Fn(&Shared) -> bool,
    ) -> (bool, Vec<Instant>) {
        let mut tenths = Vec::new();
        loop {
            let a = self.sh.acked.load(SeqCst);
            while acks > 0 && tenths.len() < 10 && a * 10 >= acks * (tenths.len() as u64 + 1) {
                tenths.push(Instant::now());
            }
            if done(&self.sh) {
                return (true, tenths);
            }
            if Instant::now() > deadline {
                eprintln!("load: timed out");
                return (false, tenths);
            }
            thread::sleep(Duration::from_micros(500));
        }
    }

    fn stop(self) -> Arc<Shared> {
        self.sh.stop.store(true, SeqCst);
        for t in self.threads {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => self.sh.error(&format!("event loop: {e}")),
                Err(_) => self.sh.error("event loop panicked"),
            }
        }
        self.sh
    }
}

fn clients_finished(n: usize) -> impl Fn(&Shared) -> bool {
    move |sh: &Shared| sh.clients_done.load(SeqCst) >= n
}

fn jobs_finished(sh: &Shared) -> bool {
    sh.jobs_done.load(SeqCst) >= sh.job_target
}

// ---- modes --------------------------------------------------------------------------------

fn put_tenths(r: &mut Report, start: Instant, tenths: &[Instant], total: u64) {
    // Submits per second in each tenth of the fill: flat, or falling as the queue grows.
    let mut prev = start;
    let mut rates = Vec::new();
    for t in tenths {
        let dt = t.duration_since(prev).as_secs_f64();
        rates.push(format!("{:.0}", (total as f64 / 10.0) / dt.max(1e-9)));
        prev = *t;
    }
    if !rates.is_empty() {
        r.put("submits_per_s_by_tenth", rates.join(","));
    }
}

fn mode_bg_or_sync(o: &Opts, fg: bool) -> io::Result<Report> {
    let jobs = o.jobs_or(if fg { 50_000 } else { 200_000 });
    let window = o.window_or(if fg { 1 } else { 64 });
    let (kind, what) = if fg {
        (WorkerKind::Echo, Submit::Foreground)
    } else {
        (WorkerKind::Plain, Submit::Background)
    };
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = proc_snap(o.pid);
    let c0 = self_cpu();
    let start = run.go();
    let deadline = start + o.timeout;
    let (ok, _) = if fg {
        run.watch(jobs, deadline, clients_finished(o.clients))
    } else {
        run.watch(jobs, deadline, jobs_finished)
    };
    let end = if fg {
        *lock(&run.sh.clients_end)
    } else {
        *lock(&run.sh.jobs_end)
    };
    let end = end.unwrap_or_else(Instant::now);
    thread::sleep(Duration::from_millis(20));
    let s1 = proc_snap(o.pid);
    let c1 = self_cpu();
    let submit_end = *lock(&run.sh.clients_end);
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("workers", o.workers);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("jobs", jobs);
    r.put("completed", sh.jobs_done.load(SeqCst));
    r.put("ok", ok);
    r.putf("secs", secs, 3);
    r.putf("jobs_per_s", jobs as f64 / secs, 0);
    if let (false, Some(e)) = (fg, submit_end) {
        r.putf(
            "submits_per_s",
            jobs as f64 / e.duration_since(start).as_secs_f64(),
            0,
        );
    }
    put_latency_us(&mut r, std::mem::take(&mut *lock(&sh.latencies_us)));
    put_server(&mut r, s0, s1, jobs);
    r.putf("loadgen_cpu_s", c1 - c0, 2);
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

fn mode_echo(o: &Opts) -> io::Result<Report> {
    let n = o.jobs_or(200_000);
    let window = o.window_or(1);
    let run = Run::start(
        o,
        Plan {
            job_target: 0,
            workers: 0,
            kind: WorkerKind::Plain,
            clients: o.clients,
            what: Submit::Echo,
            total: n,
            window,
        },
    )?;
    let s0 = proc_snap(o.pid);
    let c0 = self_cpu();
    let start = run.go();
    let (ok, _) = run.watch(n, start + o.timeout, clients_finished(o.clients));
    let end = lock(&run.sh.clients_end).unwrap_or_else(Instant::now);
    let s1 = proc_snap(o.pid);
    let c1 = self_cpu();
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("echoes", n);
    r.put("ok", ok);
    r.putf("secs", secs, 3);
    r.putf("echoes_per_s", n as f64 / secs, 0);
    put_latency_us(&mut r, std::mem::take(&mut *lock(&sh.latencies_us)));
    put_server(&mut r, s0, s1, n);
    r.putf("loadgen_cpu_s", c1 - c0, 2);
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

/// Workers take `jobs` queued jobs; (jobs/s, CPU seconds of the server, ok).
fn drain(o: &Opts, jobs: u64, r: &mut Report) -> io::Result<()> {
    let s0 = proc_snap(o.pid);
    let t0 = Instant::now();
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind: WorkerKind::Plain,
            clients: 0,
            what: Submit::Background,
            total: 0,
            window: 1,
        },
    )?;
    let (ok, _) = run.watch(0, t0 + o.timeout, jobs_finished);
    let end = lock(&run.sh.jobs_end).unwrap_or_else(Instant::now);
    let sh = run.stop();
    let s1 = proc_snap(o.pid);
    let done = sh.jobs_done.load(SeqCst);
    r.put("drained", done);
    r.put("drain_ok", ok);
    r.putf(
        "drain_jobs_per_s",
        done as f64 / end.duration_since(t0).as_secs_f64(),
        0,
    );
    if let (Some(a), Some(b)) = (s0, s1) {
        r.putf(
            "drain_cpu_us_per_job",
            (b.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    Ok(())
}

fn mode_fill(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let window = o.window_or(64);
    let run = Run::start(
        o,
        Plan {
            job_target: 0,
            workers: 0,
            kind: WorkerKind::Plain,
            clients: o.clients,
            what: Submit::Background,
            total: jobs,
            window,
        },
    )?;
    let s0 = proc_snap(o.pid);
    let start = run.go();
    let (ok, tenths) = run.watch(jobs, start + o.timeout, clients_finished(o.clients));
    // A run that timed out ends now, and counts only what was answered.
    let end = match *lock(&run.sh.clients_end) {
        Some(e) if ok => e,
        _ => Instant::now(),
    };
    let jobs_in = if ok { jobs } else { run.sh.acked.load(SeqCst) };
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    thread::sleep(Duration::from_millis(200));
    let s1 = proc_snap(o.pid);
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("jobs", jobs);
    r.put("ok", ok);
    r.putf("fill_secs", secs, 3);
    r.putf("submits_per_s", jobs_in as f64 / secs, 0);
    put_tenths(&mut r, start, &tenths, jobs);
    if let (Some(a), Some(b)) = (s0, s1) {
        let per = (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs as f64;
        r.put("server_rss_kb_empty", a.rss_kb);
        r.put("server_rss_kb_full", b.rss_kb);
        r.putf("bytes_per_queued_job", per, 0);
        r.putf(
            "bytes_per_queued_job_over_payload",
            per - o.payload as f64,
            0,
        );
        r.putf(
            "fill_cpu_us_per_job",
            (b.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    if o.drain && o.workers > 0 {
        drain(o, jobs, &mut r)?;
        thread::sleep(Duration::from_millis(500));
        if let (Some(a), Some(b), Some(c)) = (s0, s1, proc_snap(o.pid)) {
            r.put("server_rss_kb_drained", c.rss_kb);
            let held = b.anon_kb.saturating_sub(a.anon_kb).max(1) as f64;
            let kept = c.anon_kb.saturating_sub(a.anon_kb) as f64;
            r.putf("rss_returned_pct", 100.0 * (1.0 - kept / held), 0);
        }
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

fn mode_drain(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let mut r = Report::new(o);
    r.put("workers", o.workers);
    r.put("jobs", jobs);
    drain(o, jobs, &mut r)?;
    Ok(r)
}

/// A blocking ECHO round trip on a fresh connection (idle mode).
fn echo_once(addr: SocketAddr) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut out = Vec::new();
    put(&mut out, ECHO_REQ, &[b"x"]);
    s.write_all(&out)?;
    let mut h = [0u8; 12];
    s.read_exact(&mut h)?;
    let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let mut body = vec![0; len];
    s.read_exact(&mut body)?;
    if u32::from_be_bytes([h[4], h[5], h[6], h[7]]) != ECHO_RES {
        return Err(io::Error::other("no ECHO_RES"));
    }
    Ok(s)
}

fn mode_idle(o: &Opts) -> io::Result<Report> {
    let n = o.connections;
    let limit = raise_nofile();
    if (limit as usize) < n + 64 {
        eprintln!("idle: open-files limit {limit} is low for {n} connections");
    }
    let addr = o.addr()?;
    let s0 = proc_snap(o.pid);
    let conns = (0..n)
        .map(|_| echo_once(addr))
        .collect::<io::Result<Vec<_>>>()?;
    thread::sleep(Duration::from_millis(500));
    let s1 = proc_snap(o.pid);
    let idle = Duration::from_secs_f64(o.idle_secs.unwrap_or(2.0));
    thread::sleep(idle);
    let s2 = proc_snap(o.pid);
    drop(conns);
    thread::sleep(Duration::from_millis(500));
    let s3 = proc_snap(o.pid);
    let mut r = Report::new(o);
    r.put("connections", n);
    if let (Some(a), Some(b), Some(c), Some(d)) = (s0, s1, s2, s3) {
        r.put("server_rss_kb_idle", a.rss_kb);
        r.put("server_anon_kb_idle", a.anon_kb);
        r.put("server_rss_kb_connected", b.rss_kb);
        r.putf(
            "bytes_per_connection",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / n as f64,
            0,
        );
        r.putf("idle_secs", idle.as_secs_f64(), 1);
        r.putf("idle_cpu_ms", (c.cpu - b.cpu) * 1e3, 1);
        r.put("idle_wakeups", c.ctxt.saturating_sub(b.ctxt));
        r.put("server_rss_kb_closed", d.rss_kb);
        r.put("server_threads", a.threads);
    }
    Ok(r)
}

fn mode_future(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let window = o.window_or(64);
    // Due far enough ahead that every submit is in before the first job is due.
    let lead = o.lead.unwrap_or(2 + jobs / 40_000);
    let base = (unix_ms() / 1e3).ceil() as u64 + lead;
    let what = Submit::Epoch {
        base,
        spread: o.spread,
        total: jobs,
    };
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind: WorkerKind::Future,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = proc_snap(o.pid);
    let start = run.go();
    let (sub_ok, _) = run.watch(jobs, start + o.timeout, clients_finished(o.clients));
    let submitted_at = unix_ms();
    let sub_end = lock(&run.sh.clients_end).unwrap_or_else(Instant::now);
    let s1 = proc_snap(o.pid);
    let last_due_ms = (base + o.spread) as f64 * 1e3;
    let wait = (last_due_ms - unix_ms()).max(0.0) / 1e3 + o.grace as f64;
    let (ok, _) = run.watch(
        0,
        Instant::now() + Duration::from_secs_f64(wait),
        jobs_finished,
    );
    thread::sleep(Duration::from_millis(20));
    let s2 = proc_snap(o.pid);
    let sh = run.stop();
    let mut late = std::mem::take(&mut *lock(&sh.lateness_us));
    late.sort_unstable();
    let sub_secs = sub_end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("jobs", jobs);
    r.put("spread_s", o.spread);
    r.put("workers", o.workers);
    r.put("received", late.len());
    r.put("ok", ok && sub_ok);
    r.putf("submit_secs", sub_secs, 3);
    r.putf("submits_per_s", jobs as f64 / sub_secs, 0);
    r.putf(
        "submit_margin_s",
        (base as f64 * 1e3 - submitted_at) / 1e3,
        2,
    );
    let ms = |us: i64| format!("{:.1}", us as f64 / 1e3);
    if let (Some(min), Some(p50), Some(p99), Some(max)) =
        (late.first(), pct(&late, 0.5), pct(&late, 0.99), late.last())
    {
        r.put("lateness_min_ms", ms(*min));
        r.put("lateness_p50_ms", ms(p50));
        r.put("lateness_p99_ms", ms(p99));
        r.put("lateness_max_ms", ms(*max));
        r.put("early", late.iter().filter(|&&l| l < 0).count());
    }
    if let (Some(a), Some(b), Some(c)) = (s0, s1, s2) {
        r.putf(
            "bytes_per_future_job",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs as f64,
            0,
        );
        r.putf("server_cpu_s", c.cpu - a.cpu, 2);
        r.putf(
            "server_cpu_us_per_job",
            (c.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

fn mode_future_idle(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(1_000_000);
    let window = o.window_or(64);
    // An hour ahead, spread over a day: nothing comes due during the measurement.
    let base = (unix_ms() / 1e3) as u64 + 3600;
    let what = Submit::Epoch {
        base,
        spread: 86_400,
        total: jobs,
    };
    let run = Run::start(
        o,
        Plan {
            job_target: 0,
            workers: 0,
            kind: WorkerKind::Plain,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = proc_snap(o.pid);
    let start = run.go();
    let (ok, tenths) = run.watch(jobs, start + o.timeout, clients_finished(o.clients));
    // A run that timed out ends now, and counts only what was answered.
    let end = match *lock(&run.sh.clients_end) {
        Some(e) if ok => e,
        _ => Instant::now(),
    };
    let jobs_in = if ok { jobs } else { run.sh.acked.load(SeqCst) };
    let sh = run.stop();
    let sub_secs = end.duration_since(start).as_secs_f64();
    thread::sleep(Duration::from_millis(200));
    let s1 = proc_snap(o.pid);
    let idle = Duration::from_secs_f64(o.idle_secs.unwrap_or(10.0));
    thread::sleep(idle);
    let s2 = proc_snap(o.pid);
    let mut r = Report::new(o);
    r.put("jobs", jobs);
    r.put("ok", ok);
    r.putf("submit_secs", sub_secs, 3);
    r.putf("submits_per_s", jobs_in as f64 / sub_secs, 0);
    r.put("submitted", jobs_in);
    put_tenths(&mut r, start, &tenths, jobs);
    if let (Some(a), Some(b), Some(c)) = (s0, s1, s2) {
        r.putf(
            "bytes_per_future_job",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs_in.max(1) as f64,
            0,
        );
        r.put("server_rss_kb_full", b.rss_kb);
        r.putf("idle_secs", idle.as_secs_f64(), 1);
        r.putf("idle_cpu_ms", (c.cpu - b.cpu) * 1e3, 1);
        r.put("idle_wakeups", c.ctxt.saturating_sub(b.ctxt));
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

fn run_mode(o: &Opts) -> io::Result<Report> {
    match o.mode.as_str() {
        "bg" => mode_bg_or_sync(o, false),
        "sync" => mode_bg_or_sync(o, true),
        "echo" => mode_echo(o),
        "fill" => mode_fill(o),
        "drain" => mode_drain(o),
        "idle" => mode_idle(o),
        "future" => mode_future(o),
        "stalls" => Ok(mode_stalls(o)),
        _ => mode_future_idle(o),
    }
}

/// How often this machine stops a running thread, whatever the server: the gaps between
/// successive clock readings of a thread that does nothing else. A round trip that meets
/// one is that much later, with any server; the faster the server, the larger the share of
/// its p99 they make.
fn mode_stalls(o: &Opts) -> Report {
    let span = Duration::from_secs_f64(o.idle_secs.unwrap_or(2.0));
    const AT_LEAST_US: [u64; 4] = [20, 50, 100, 500];
    let mut counts = [0u64; 4];
    let mut stalled = Duration::ZERO;
    let start = Instant::now();
    let mut prev = start;
    while prev.duration_since(start) < span {
        let now = Instant::now();
        let gap = now.duration_since(prev);
        prev = now;
        if gap >= Duration::from_micros(AT_LEAST_US[0]) {
            stalled += gap;
            for (n, &us) in counts.iter_mut().zip(&AT_LEAST_US) {
                *n += u64::from(gap >= Duration::from_micros(us));
            }
        }
    }
    let secs = prev.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.putf("secs", secs, 1);
    for (n, us) in counts.iter().zip(AT_LEAST_US) {
        r.putf(&format!("stalls_{us}us_per_s"), *n as f64 / secs, 0);
    }
    r.putf("stalled_pct", 100.0 * stalled.as_secs_f64() / secs, 2);
    r
}

// ---- a server of our own, for plain `cargo bench` ---------------------------------------

struct Spawned(Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start the gearwheel built alongside this bench on a free loopback port.
fn spawn_gearwheel() -> io::Result<(Spawned, u16)> {
    let exe = env!("CARGO_BIN_EXE_gearwheel");
    let mut child = Command::new(exe)
        .args(["serve", "-L", "127.0.0.1", "-p", "0", "-l", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("no stderr"))?;
    let guard = Spawned(child);
    let mut lines = BufReader::new(stderr).lines();
    while let Some(line) = lines.next().transpose()? {
        if let Some(addr) = line.split("Listening on ").nth(1) {
            let port = addr
                .trim()
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| io::Error::other(format!("cannot read the port from {line:?}")))?;
            // Keep draining stderr so the server never blocks on a full pipe.
            thread::spawn(move || for _ in lines.by_ref() {});
            return Ok((guard, port));
        }
    }
    Err(io::Error::other("gearwheel exited before listening"))
}

fn self_contained_suite(base: &Opts) -> io::Result<()> {
    println!("no --port given: starting the gearwheel built with this bench for a short suite");
    println!("(compare against gearmand with benches/compare.sh)\n");
    let suite: [(&str, u64); 6] = [
        ("bg", 100_000),
        ("sync", 20_000),
        ("echo", 50_000),
        ("fill", 100_000),
        ("idle", 0),
        ("future", 20_000),
    ];
    for (mode, jobs) in suite {
        let (server, port) = spawn_gearwheel()?;
        let mut o = base.clone();
        o.mode = mode.to_string();
        o.port = Some(port);
        o.pid = Some(server.0.id());
        o.label = "gearwheel".into();
        if o.jobs.is_none() && jobs > 0 {
            o.jobs = Some(jobs);
        }
        run_mode(&o)?.print();
        println!();
        drop(server);
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    if args
        .iter()
        .any(|a| a == "--test" || a == "--help" || a == "-h")
        || (!bench && args.is_empty() && std::env::var("LOAD_PORT").is_err())
    {
        // `cargo test --benches` and friends: nothing to measure without a server.
        println!("{USAGE}");
        return;
    }
    let o = match parse_opts(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let result = if o.port.is_none() && o.mode != "stalls" {
        self_contained_suite(&o)
    } else {
        run_mode(&o).map(|r| r.print())
    };
    if let Err(e) = result {
        eprintln!("load: {e}");
        std::process::exit(1);
    }
}
