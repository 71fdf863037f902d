//! The flags (and their `LOAD_<FLAG>` environment twins), parsed into `Opts`.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::tls::Tls;

pub(crate) const USAGE: &str = "\
usage: cargo bench --bench load -- [--mode MODE] [flags]
  --mode bg|sync|fill|drain|idle|echo|future|future-idle|handshake|stalls   (default bg)
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
  --tls-ca CA --tls-cert CERT --tls-key KEY: every connection over (mutual) TLS
  --tls-name NAME (localhost) --tls-version 1.2|1.3 (both offered)
  --also-pid P,Q   more processes whose CPU counts as the server's (stunnel in front of it)
Every flag may also come from the environment as LOAD_<FLAG> (LOAD_MODE=sync).";

#[derive(Clone, Debug)]
pub(crate) struct Opts {
    pub(crate) mode: String,
    host: String,
    pub(crate) port: Option<u16>,
    pub(crate) pid: Option<u32>,
    pub(crate) label: String,
    /// Prefix of this run's unique keys, so that runs against one server never coalesce.
    pub(crate) run_id: String,
    pub(crate) threads: usize,
    pub(crate) clients: usize,
    pub(crate) workers: usize,
    pub(crate) jobs: Option<u64>,
    window: Option<usize>,
    pub(crate) payload: usize,
    functions: usize,
    pub(crate) unique: bool,
    pub(crate) connections: usize,
    pub(crate) idle_secs: Option<f64>,
    pub(crate) spread: u64,
    pub(crate) lead: Option<u64>,
    pub(crate) regrab: Duration,
    pub(crate) grace: u64,
    pub(crate) drain: bool,
    pub(crate) timeout: Duration,
    /// Every connection's TLS client settings (`--tls-ca`...), or plaintext.
    pub(crate) tls: Option<Tls>,
    /// `--also-pid`: processes whose CPU time adds to the server's.
    pub(crate) also_pids: Vec<u32>,
}

pub(crate) const FLAGS: &[&str] = &[
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
    "tls-ca",
    "tls-cert",
    "tls-key",
    "tls-name",
    "tls-version",
    "also-pid",
];

pub(crate) fn parse_opts(args: &[String]) -> Result<Opts, String> {
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
        "bg" | "sync"
            | "fill"
            | "drain"
            | "idle"
            | "echo"
            | "future"
            | "future-idle"
            | "handshake"
            | "stalls"
    ) {
        return Err(format!("unknown mode {mode:?}"));
    }
    let tls = match (m.get("tls-ca"), m.get("tls-cert"), m.get("tls-key")) {
        (None, None, None) => None,
        (Some(ca), Some(cert), Some(key)) => Some(Tls::new(
            Path::new(ca),
            (Path::new(cert), Path::new(key)),
            m.get("tls-name").map_or("localhost", String::as_str),
            m.get("tls-version").map(String::as_str),
        )?),
        _ => return Err("--tls-ca, --tls-cert and --tls-key go together".into()),
    };
    let also_pids = match m.get("also-pid") {
        None => Vec::new(),
        Some(v) => v
            .split(',')
            .map(|p| {
                p.parse()
                    .map_err(|_| format!("--also-pid: not a pid: {p:?}"))
            })
            .collect::<Result<_, _>>()?,
    };
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
        tls,
        also_pids,
    })
}

impl Opts {
    pub(crate) fn jobs_or(&self, d: u64) -> u64 {
        self.jobs.unwrap_or(d).max(1)
    }

    pub(crate) fn window_or(&self, d: usize) -> usize {
        self.window.unwrap_or(d).max(1)
    }

    pub(crate) fn addr(&self) -> io::Result<SocketAddr> {
        let port = self.port.unwrap_or(4730);
        (self.host.as_str(), port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("address did not resolve"))
    }

    pub(crate) fn func(&self, i: u64) -> String {
        if self.functions == 1 {
            "bench".to_string()
        } else {
            format!("bench{}", i % self.functions as u64)
        }
    }

    pub(crate) fn funcs(&self) -> Vec<String> {
        (0..self.functions as u64).map(|i| self.func(i)).collect()
    }
}
