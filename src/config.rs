//! The serve command's flags (gearmand's names where gearmand has one) and the validated
//! settings the server runs with. The command line's top level is in cli/args.rs, which uses
//! this module (config never imports cli).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::engine::EngineConfig;
use crate::logger::{self, LogTarget};
use crate::proto::frame::Limits;
use crate::schedule::Zone;

mod cluster;
mod http;
mod tls;
pub use crate::client::etcd::EtcdTls;
use cluster::cluster_config;
pub use cluster::{ClusterConfig, etcd_tls};
pub use http::HttpConfig;
use http::http_config;
pub use tls::TlsConfig;

#[derive(FromArgs, Debug, Default)]
/// Run the job server.
#[argh(subcommand, name = "serve")]
pub struct ServeArgs {
    /// address to listen on, IPv4 or IPv6, optionally with :port (repeatable; default 127.0.0.1)
    #[argh(option, short = 'L')]
    pub listen: Vec<String>,
    /// port to listen on (default 4730, or $GEARMAND_PORT; 0 picks a free port)
    #[argh(option, short = 'p', from_str_fn(listen_port))]
    pub port: Option<u16>,
    /// log file path, or "stderr", or "none" (default stderr)
    #[argh(option, short = 'l')]
    pub log_file: Option<String>,
    /// log level: ERROR, WARNING, NOTICE, INFO or DEBUG (default ERROR)
    #[argh(option)]
    pub verbose: Option<String>,
    /// write the process id to this file, removed at exit
    #[argh(option, short = 'P')]
    pub pid_file: Option<PathBuf>,
    /// fail a job after it was given back this many times (0 = unlimited, as gearmand)
    #[argh(option, short = 'j', default = "0")]
    pub job_retries: u32,
    /// sleeping workers woken per new job (0 = all; default 1)
    #[argh(option, short = 'w', default = "1")]
    pub worker_wakeup: u32,
    /// ms a woken worker has to ask for its job before the next sleeping worker is woken for
    /// it too (0 = never; default 5)
    #[argh(option, default = "5")]
    pub worker_wakeup_next: u64,
    /// ms a worker's GRAB right after it ended a job may wait for the next job before NO_JOB
    /// (0 = answer at once, as gearmand; default 1)
    #[argh(option, default = "1")]
    pub grab_wait: u64,
    /// seconds without a single event after which the server gives back memory it mapped
    /// or freed (code and constants, free heap); also done once after start-up (0 = never;
    /// default 10)
    #[argh(option, default = "10")]
    pub idle_trim: u64,
    /// serve a worker's functions in turn instead of oldest job first within a priority
    #[argh(switch, short = 'R')]
    pub round_robin: bool,
    /// job handle prefix (default "H:<hostname>")
    #[argh(option)]
    pub job_handle_prefix: Option<String>,
    /// send WORK_EXCEPTION to every client, as if each had sent OPTION_REQ exceptions
    #[argh(switch)]
    pub exceptions: bool,
    /// listen backlog (default 1024)
    #[argh(option, short = 'b', default = "1024")]
    pub backlog: i32,
    /// TCP keepalive on accepted connections (on by default; kept for gearmand command lines)
    #[argh(switch)]
    pub keepalive: bool,
    /// turn TCP keepalive off
    #[argh(switch)]
    pub no_keepalive: bool,
    /// seconds of silence before the first keepalive probe (default 60)
    #[argh(option, default = "60")]
    pub keepalive_idle: u32,
    /// seconds between keepalive probes (default 10)
    #[argh(option, default = "10")]
    pub keepalive_interval: u32,
    /// unanswered probes before the connection is dropped (default 6)
    #[argh(option, default = "6")]
    pub keepalive_count: u32,
    /// largest packet body accepted, in bytes (default 64 MiB)
    #[argh(option, default = "64 << 20")]
    pub max_packet_size: usize,
    /// most connections at once; more are accepted and closed at once (default 65536)
    #[argh(option, default = "65536")]
    pub max_connections: usize,
    /// connections from one address beyond loopback not yet served (no complete first request,
    /// or no TLS handshake done); more are accepted and closed at once (default 64)
    #[argh(option, default = "64")]
    pub max_connections_per_address: usize,
    /// connections from beyond loopback not yet served, all addresses together; the rest of
    /// --max-connections stays for loopback peers and served ones (default: half of
    /// --max-connections)
    #[argh(option)]
    pub max_unserved_connections: Option<usize>,
    /// unsent reply bytes one connection may pile up before it is closed (default 64 MiB)
    #[argh(option, default = "64 << 20")]
    pub max_output_buffer: usize,
    /// unsent reply bytes all connections together may hold: past it, connections holding over
    /// 64 KiB of it are not read until their peer reads; past twice it, the largest are closed
    /// (default 256 MiB)
    #[argh(option, default = "256 << 20")]
    pub max_total_output: usize,
    /// default cap on each function's jobs (0 = unlimited); `maxqueue` changes it per function
    #[argh(option, default = "0")]
    pub max_queue: u32,
    /// CAN_DOs one worker connection may make; past it, ERROR and nothing registered
    /// (default 10000, 0 = unlimited)
    #[argh(option, default = "10_000")]
    pub max_functions_per_worker: u32,
    /// functions with no job, worker or operator's setting kept listed (status, /metrics);
    /// past it the least recently used are forgotten (default 10000, 0 = none kept)
    #[argh(option, default = "10_000")]
    pub max_idle_functions: usize,
    /// seconds a graceful shutdown waits for running jobs (default 30)
    #[argh(option, default = "30")]
    pub graceful_timeout: u64,
    /// time zone of SUBMIT_JOB_SCHED fields: "local" (default), "UTC" or an IANA name
    #[argh(option)]
    pub timezone: Option<String>,
    /// log a WARNING for a SUBMIT_JOB_SCHED or SUBMIT_JOB_EPOCH job due further ahead than
    /// this (30s, 12h, 31d; 0 = never; default 31d), so a misread time field is seen
    #[argh(option)]
    pub future_horizon: Option<String>,
    /// background jobs that failed for good kept in the failed list (`show failed`), oldest
    /// dropped first (default 1000, 0 = keep none)
    #[argh(option, default = "1000")]
    pub keep_failed: usize,
    /// bytes of function, unique, workload and error text the failed list may hold, oldest
    /// dropped first (default 64 MiB, 0 = no byte bound)
    #[argh(option, default = "64 << 20")]
    pub keep_failed_bytes: usize,
    /// the last bytes kept of what each background job and schedule run printed (WORK_DATA,
    /// WORK_WARNING, the result or exception; default 64 KiB)
    #[argh(option, default = "64 << 10")]
    pub keep_output: usize,
    /// bytes all kept outputs and results may hold, oldest dropped first (default 64 MiB)
    #[argh(option, default = "64 << 20")]
    pub keep_output_total: usize,
    /// how long an ended job's output and result are kept (30m, 24h, 7d; default 24h; 0 =
    /// none but each schedule entry's last runs)
    #[argh(option)]
    pub keep_results: Option<String>,
    /// keep foreground jobs' outputs and results too (their clients got them)
    #[argh(switch)]
    pub keep_results_foreground: bool,
    /// operators' actions kept in the audit trail (`show audit`), oldest dropped first
    /// (default 10000, 0 = keep none; each is still logged)
    #[argh(option, default = "10_000")]
    pub keep_audit: usize,
    /// webhook alerts (`on_failure=https://...`) waiting for delivery; past it an alert is
    /// dropped, logged and counted (default 1000)
    #[argh(option, default = "1000")]
    pub max_webhook_queue: usize,
    /// tries to deliver a webhook alert before it is given up (default 10)
    #[argh(option, default = "10")]
    pub webhook_attempts: u32,
    /// a webhook alert not delivered this long after it was queued is given up (default 24h)
    #[argh(option)]
    pub webhook_max_age: Option<String>,
    /// how long a webhook delivery may take, connect to answer (default 10s)
    #[argh(option)]
    pub webhook_timeout: Option<String>,
    /// CA file to verify https:// webhooks with, instead of the system's CA bundle
    #[argh(option)]
    pub webhook_ca_file: Option<PathBuf>,
    /// times a failed background job is queued again, after its backoff, before it fails for
    /// good (default 0, as gearmand); `retry FUNCTION N BACKOFF` sets it per function
    #[argh(option, default = "0")]
    pub retry: u32,
    /// wait before the first retry, doubling for each next one, capped at MAX: DURATION or
    /// DURATION..MAX (default 30s..1h)
    #[argh(option)]
    pub retry_backoff: Option<String>,
    /// functions that may have each kind of operator's setting: a lease (`timeout FUNCTION`),
    /// a retry policy (`retry FUNCTION`), limits (`limit`, `rate`, `pause function`,
    /// `expire`); a new function past it is refused (default 10000)
    #[argh(option, default = "10_000")]
    pub max_function_settings: usize,
    /// largest N of `rate FUNCTION N/DURATION`: a rate keeps the time of each of its last N
    /// handouts (default 10000)
    #[argh(option, default = "10_000")]
    pub max_rate_count: u32,
    /// most runs one backfill of a schedule entry may make, counting those of the entry
    /// still waiting from an earlier one (default 10000)
    #[argh(option, default = "10_000")]
    pub max_backfill: usize,
    /// keep background and future jobs and schedule runs in a journal in this directory
    /// (created if missing), so that they survive a crash or a restart
    #[argh(option)]
    pub data_dir: Option<PathBuf>,
    /// when the journal fsyncs: "always" (before JOB_CREATED is sent; default), a number of
    /// milliseconds (at most that often, replies not held), or "never" (the OS decides)
    #[argh(option)]
    pub fsync: Option<String>,
    /// with --data-dir: drop damaged journal records (keeping every intact one), report, go on
    #[argh(switch)]
    pub repair: bool,
    /// journal segment size in bytes before a new one is started (default 64 MiB)
    #[argh(option, default = "64 << 20")]
    pub journal_segment_bytes: u64,
    /// compact the journal once it is this large and mostly dead records (default 16 MiB)
    #[argh(option, default = "16 << 20")]
    pub journal_compact_min: u64,
    /// a schedules file (crontab lines that inject jobs); reloaded on SIGHUP
    #[argh(option)]
    pub schedules: Option<PathBuf>,
    /// serve HTTP (job submission, /status, /metrics) on this port too (0 picks a free port)
    #[argh(option, from_str_fn(listen_port))]
    pub http_port: Option<u16>,
    /// address for the HTTP listener, optionally ADDR:PORT (repeatable; default the --listen
    /// addresses, port --http-port or 8080)
    #[argh(option)]
    pub http_listen: Vec<String>,
    /// seconds a client has to send a request head (and between body reads) before 408
    /// (default 10)
    #[argh(option)]
    pub http_header_timeout: Option<u64>,
    /// seconds an idle HTTP keep-alive connection is kept open (default 60)
    #[argh(option)]
    pub http_idle_timeout: Option<u64>,
    /// a host name HTTP requests may carry in Host besides the listen addresses, localhost and
    /// this machine's name (repeatable); others get 403 (DNS rebinding)
    #[argh(option)]
    pub http_allowed_host: Vec<String>,
    /// do not serve the console (the page at / and /ui/ on the HTTP listener): 404 instead
    #[argh(switch)]
    pub no_console: bool,
    /// the access list: which identities may submit, work, read status or administer which
    /// functions; without it everything is allowed; re-read on SIGHUP and `reload acl`
    #[argh(option)]
    pub acl: Option<PathBuf>,
    /// yes (default) refuses peers beyond loopback on a plaintext listener while no --acl is
    /// given; no serves them (a trusted network)
    #[argh(option)]
    pub protected_mode: Option<String>,
    /// denials logged per connection; later ones are counted in /metrics only (default 10)
    #[argh(option, default = "10")]
    pub acl_denials_logged: u32,
    /// log lines the whole server writes per second about what peers cause (denials,
    /// refusals, protocol and connection errors); the rest are counted and summed up in one
    /// line a second (default 100)
    #[argh(option)]
    pub refusals_logged_per_second: Option<u32>,
    /// the former name of --refusals-logged-per-second
    #[argh(option, hidden_help)]
    pub acl_denials_logged_per_second: Option<u32>,
    /// identities counted by name in gearman_access_denied_total; others count as "other"
    /// (default 100)
    #[argh(option, default = "100")]
    pub acl_metric_identities: usize,
    /// join a cluster through etcd: its client URLs, http://HOST:PORT or https://HOST:PORT
    /// (all alike), comma-separated or repeated; every server loads the schedules file and
    /// only the elected leader fires it
    #[argh(option)]
    pub etcd: Vec<String>,
    /// the cluster's name: its keys live under gearwheel/NAME/ in etcd (default gearwheel)
    #[argh(option)]
    pub cluster: Option<String>,
    /// seconds of the etcd lease that keeps this server a member (and the leader): a dead
    /// leader is replaced this long after it stopped (default 5)
    #[argh(option, default = "5")]
    pub etcd_lease_ttl: u64,
    /// milliseconds an etcd request may go unanswered before the connection is dropped and
    /// made again (default 2000)
    #[argh(option, default = "2000")]
    pub etcd_request_timeout: u64,
    /// seconds between the leader's compactions of etcd's history, up to what it had seen
    /// one interval before; 0 when etcd compacts itself (default 300)
    #[argh(option, default = "300")]
    pub etcd_compaction_interval: u64,
    /// largest etcd reply (or watch message) accepted, in bytes (default 4 MiB)
    #[argh(option, default = "4 << 20")]
    pub etcd_max_message: usize,
    /// PEM file of the CA that signed etcd's server certificate, for https:// --etcd URLs
    /// (default the system's CA bundle; re-read on SIGHUP)
    #[argh(option)]
    pub etcd_ca_file: Option<PathBuf>,
    /// PEM file of the client certificate presented to etcd (its --client-cert-auth), with
    /// --etcd-key (re-read on SIGHUP)
    #[argh(option)]
    pub etcd_certificate: Option<PathBuf>,
    /// PEM file of the private key of --etcd-certificate (re-read on SIGHUP)
    #[argh(option)]
    pub etcd_key: Option<PathBuf>,
    /// every listener, Gearman and HTTP, speaks TLS (needs --ssl-certificate and --ssl-key)
    #[argh(switch)]
    pub ssl: bool,
    /// PEM file of the server's TLS certificate chain, leaf first (re-read on SIGHUP)
    #[argh(option)]
    pub ssl_certificate: Option<PathBuf>,
    /// PEM file of the private key of --ssl-certificate (re-read on SIGHUP)
    #[argh(option)]
    pub ssl_key: Option<PathBuf>,
    /// PEM file of a CA: TLS clients must present a certificate it signed (mutual TLS)
    #[argh(option)]
    pub ssl_ca_file: Option<PathBuf>,
    /// a TLS Gearman listener beside the plaintext ones, ADDR or ADDR:PORT (repeatable; port
    /// --port when not given)
    #[argh(option)]
    pub ssl_listen: Vec<String>,
    /// seconds a TLS client has to finish its handshake before it is closed (default 10)
    #[argh(option)]
    pub ssl_handshake_timeout: Option<u64>,
    /// accepted and ignored: gearwheel runs one thread
    #[argh(option, short = 't')]
    pub threads: Option<String>,
    /// accepted for "builtin" only: the queue is in memory
    #[argh(option, short = 'q')]
    pub queue_type: Option<String>,
    /// detach: fork, start a new session, chdir to /, stdin and stdout (and stderr unless
    /// --log-file stderr is given) to /dev/null; returns once the listeners are bound
    #[argh(switch, short = 'd')]
    pub daemon: bool,
    /// after binding the listeners, switch to this user (its group and supplementary groups)
    #[argh(option, short = 'u')]
    pub user: Option<String>,
}

/// Validated settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: Vec<SocketAddr>,
    pub log_target: LogTarget,
    pub log_level: logger::Verbosity,
    pub log_level_name: String,
    pub pid_file: Option<PathBuf>,
    pub backlog: i32,
    pub keepalive: Option<Keepalive>,
    pub limits: Limits,
    pub max_connections: usize,
    /// `--max-connections-per-address` and `--max-unserved-connections` (reactor/door.rs).
    pub max_connections_per_address: usize,
    pub max_unserved_connections: usize,
    pub max_output_buffer: usize,
    /// `--max-total-output`: unsent bytes of all connections together.
    pub max_total_output: usize,
    pub graceful_timeout: Duration,
    /// `--idle-trim`, in ms (0 = never).
    pub idle_trim_ms: u64,
    pub engine: EngineConfig,
    /// `--webhook-timeout` in ms and `--webhook-ca-file`: the reactor's webhook client.
    pub webhook_timeout_ms: u64,
    pub webhook_ca_file: Option<PathBuf>,
    /// Notices about flags that were accepted but ignored, logged once logging is up.
    pub notices: Vec<String>,
    /// `--schedules FILE`.
    pub schedules: Option<PathBuf>,
    /// `--data-dir DIR`.
    pub data_dir: Option<PathBuf>,
    /// `--fsync`.
    pub fsync: Fsync,
    /// `--repair`.
    pub repair: bool,
    /// `--journal-segment-bytes` and `--journal-compact-min`.
    pub journal_segment_bytes: u64,
    pub journal_compact_min: u64,
    /// `-d`: detach from the terminal once the listeners are bound.
    pub daemon: bool,
    /// `-u`: the user to switch to after binding.
    pub user: Option<RunAs>,
    /// `--http-port` / `--http-listen`: the HTTP listener, if any.
    pub http: Option<HttpConfig>,
    /// `--acl`, `--protected-mode` and the denial bounds.
    /// `--refusals-logged-per-second` (`crate::log_budget`).
    pub refusals_logged_per_second: u32,
    pub access: crate::access::AccessConfig,
    /// `--ssl` / `--ssl-listen` and the certificate files, if TLS is on.
    pub tls: Option<TlsConfig>,
    /// `--etcd` and friends: the cluster this server joins, if any.
    pub cluster: Option<ClusterConfig>,
}

/// The account `-u USER` names, looked up when the flags are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// Look a user up in the password database (getpwnam_r).
pub fn lookup_user(name: &str) -> Result<RunAs, String> {
    let cname =
        std::ffi::CString::new(name).map_err(|_| format!("--user {name:?}: contains NUL"))?;
    let mut buf = vec![0u8; 16384];
    // SAFETY: passwd is plain data; getpwnam_r writes only into `pw` and `buf` (whose length
    // it is given) and sets `result` to null or to `pw`.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 {
        return Err(format!(
            "--user {name:?}: cannot read the user database: {}",
            std::io::Error::from_raw_os_error(rc)
        ));
    }
    if result.is_null() {
        return Err(format!("--user {name:?}: no such user"));
    }
    Ok(RunAs {
        name: name.to_string(),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
    })
}

/// `--fsync`: when the journal's writes reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    EveryMs(u64),
    Never,
}

#[derive(Clone, Copy, Debug)]
pub struct Keepalive {
    pub idle: Duration,
    pub interval: Duration,
    pub count: u32,
}

/// gearmand accepts `--flag=value`; argh takes only `--flag value`, so split the first form.
pub fn split_equals(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = false;
    for a in args {
        if rest {
            out.push(a);
            continue;
        }
        if a == "--" {
            rest = true;
            out.push(a);
        } else if let (true, Some((flag, value))) = (a.starts_with("--"), a.split_once('=')) {
            out.push(flag.to_string());
            out.push(value.to_string());
        } else {
            out.push(a);
        }
    }
    out
}

pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length and gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A port to listen on (0: any free port), or what is wrong with it, in words.
fn listen_port(text: &str) -> Result<u16, String> {
    text.parse::<u16>()
        .map_err(|_| format!("{text} is not a port (1-65535, or 0 for any free port)"))
}

fn resolve(addr: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(vec![sa]);
    }
    let bare = addr.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (host, port) = match addr.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            (h, listen_port(p).map_err(|e| format!("{addr:?}: {e}"))?)
        }
        _ => (addr, port),
    };
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve listen address {addr:?}: {e}"))?
        .collect();
    if found.is_empty() {
        return Err(format!("listen address {addr:?} resolves to nothing"));
    }
    Ok(found)
}

impl Config {
    /// Check the serve flags; `env_port` is $GEARMAND_PORT.
    pub fn from_args(a: ServeArgs, env_port: Option<String>) -> Result<Config, String> {
        let mut notices = Vec::new();
        let port = match (a.port, env_port) {
            (Some(p), _) => p,
            (None, Some(p)) => listen_port(&p).map_err(|e| format!("GEARMAND_PORT={p:?}: {e}"))?,
            (None, None) => 4730,
        };
        let mut listen = Vec::new();
        let addrs = if a.listen.is_empty() {
            vec!["127.0.0.1".to_string()]
        } else {
            a.listen.clone()
        };
        for l in &addrs {
            for sa in resolve(l, port)? {
                if !listen.contains(&sa) {
                    listen.push(sa);
                }
            }
        }
        let level_name = a
            .verbose
            .clone()
            .unwrap_or_else(|| "ERROR".into())
            .to_ascii_uppercase();
        let log_level = logger::parse_level(&level_name).ok_or_else(|| {
            format!(
                "--verbose {:?}: use ERROR, WARNING, NOTICE, INFO or DEBUG",
                a.verbose.as_deref().unwrap_or("")
            )
        })?;
        if let Some(t) = &a.threads {
            notices.push(format!("--threads {t} ignored: gearwheel runs one thread"));
        }
        if let Some(q) = &a.queue_type {
            if !q.eq_ignore_ascii_case("builtin") {
                return Err(format!(
                    "--queue-type {q:?} is not supported: the queue is built in"
                ));
            }
            notices.push("--queue-type builtin ignored: the queue is built in".into());
        }
        if a.max_packet_size < 1024 {
            return Err("--max-packet-size must be at least 1024 bytes".into());
        }
        if a.max_connections == 0 {
            return Err("--max-connections must be at least 1".into());
        }
        if a.max_connections_per_address == 0 {
            return Err("--max-connections-per-address must be at least 1".into());
        }
        if a.max_unserved_connections == Some(0) {
            return Err("--max-unserved-connections must be at least 1".into());
        }
        let max_unserved_connections = a
            .max_unserved_connections
            .unwrap_or(a.max_connections / 2)
            .max(1);
        if a.max_total_output < 64 * 1024 {
            return Err("--max-total-output must be at least 65536 bytes".into());
        }
        if a.max_output_buffer < 4096 {
            return Err("--max-output-buffer must be at least 4096 bytes".into());
        }
        if a.max_rate_count == 0 {
            return Err("--max-rate-count must be at least 1".into());
        }
        if a.backlog <= 0 {
            return Err("--backlog must be positive".into());
        }
        if a.grab_wait > 1000 {
            // A worker blocks in its GRAB meanwhile; longer would starve its other servers.
            return Err("--grab-wait must be at most 1000 ms".into());
        }
        let keepalive = if a.no_keepalive {
            None
        } else {
            if a.keepalive_idle == 0 || a.keepalive_interval == 0 || a.keepalive_count == 0 {
                return Err(
                    "--keepalive-idle, --keepalive-interval and --keepalive-count must be positive"
                        .into(),
                );
            }
            Some(Keepalive {
                idle: Duration::from_secs(a.keepalive_idle.into()),
                interval: Duration::from_secs(a.keepalive_interval.into()),
                count: a.keepalive_count,
            })
        };
        let handle_prefix = a
            .job_handle_prefix
            .clone()
            .unwrap_or_else(|| format!("H:{}", hostname()));
        if handle_prefix.is_empty()
            || handle_prefix.len() > 48
            || handle_prefix.bytes().any(|b| b == 0 || b == b' ')
        {
            return Err("--job-handle-prefix must be 1 to 48 bytes without spaces".into());
        }
        let zone = Zone::parse(a.timezone.as_deref().unwrap_or("local"))
            .map_err(|e| format!("--timezone: {e}"))?;
        let retry = crate::schedule::backoff::RetryPolicy {
            retries: crate::schedule::backoff::parse_retries(&a.retry.to_string())
                .map_err(|e| format!("--retry: {e}"))?,
            backoff: match a.retry_backoff.as_deref() {
                None => Default::default(),
                Some(b) => crate::schedule::backoff::Backoff::parse(b)
                    .map_err(|e| format!("--retry-backoff: {e}"))?,
            },
        };
        let future_horizon_ms = match a.future_horizon.as_deref() {
            None => 31 * 86_400_000,
            Some("0") => 0,
            Some(d) => crate::schedule::duration::parse_duration(d)
                .map_err(|e| format!("--future-horizon: {e}"))?,
        };
        let duration_flag = |v: Option<&str>, default: u64, flag: &str| match v {
            None => Ok(default),
            Some(d) => crate::schedule::duration::parse_duration(d)
                .map_err(|e| format!("{flag}: {e}"))
                .and_then(|ms| match ms {
                    0 => Err(format!("{flag}: must be more than 0")),
                    ms => Ok(ms),
                }),
        };
        if a.webhook_attempts == 0 {
            return Err("--webhook-attempts: at least 1".into());
        }
        let webhooks = crate::engine::HookLimits {
            max_queue: a.max_webhook_queue,
            attempts: a.webhook_attempts,
            max_age_ms: duration_flag(
                a.webhook_max_age.as_deref(),
                24 * 3_600_000,
                "--webhook-max-age",
            )?,
        };
        let webhook_timeout_ms =
            duration_flag(a.webhook_timeout.as_deref(), 10_000, "--webhook-timeout")?;
        let keep_results_ms = match a.keep_results.as_deref() {
            None => 24 * 3_600_000,
            Some("0") => 0,
            Some(d) => crate::schedule::duration::parse_duration(d)
                .map_err(|e| format!("--keep-results: {e}"))?,
        };
        let user = a.user.as_deref().map(lookup_user).transpose()?;
        let fsync = match a.fsync.as_deref().unwrap_or("always") {
            "always" => Fsync::Always,
            "never" => Fsync::Never,
            ms => match ms.parse::<u64>() {
                Ok(n) if n > 0 => Fsync::EveryMs(n),
                _ => {
                    return Err(format!(
                        "--fsync {ms:?}: use always, never or a number of milliseconds"
                    ));
                }
            },
        };
        let http = http_config(&a, &listen)?;
        let cluster = cluster_config(&a)?;
        let tls = tls::tls_config(&a, port, &listen)?;
        if a.repair && a.data_dir.is_none() {
            return Err("--repair needs --data-dir".into());
        }
        // The old name, from when only the ACL's denials were bounded, still works.
        let refusals_logged_per_second = match (
            a.refusals_logged_per_second,
            a.acl_denials_logged_per_second,
        ) {
            (Some(_), Some(_)) => {
                return Err("--acl-denials-logged-per-second is the former name of --refusals-logged-per-second: give one".into());
            }
            (n, old) => n.or(old).unwrap_or(crate::log_budget::DEFAULT_PER_SECOND),
        };
        Ok(Config {
            listen,
            log_target: LogTarget::parse(a.log_file.as_deref().unwrap_or("stderr")),
            log_level,
            log_level_name: level_name.clone(),
            pid_file: a.pid_file,
            backlog: a.backlog,
            keepalive,
            limits: Limits {
                max_packet: a.max_packet_size,
                max_admin_line: 8192,
            },
            max_connections: a.max_connections,
            max_connections_per_address: a.max_connections_per_address,
            max_unserved_connections,
            max_output_buffer: a.max_output_buffer,
            max_total_output: a.max_total_output,
            graceful_timeout: Duration::from_secs(a.graceful_timeout),
            idle_trim_ms: a.idle_trim.saturating_mul(1000),
            engine: EngineConfig {
                handle_prefix,
                job_retries: a.job_retries,
                worker_wakeup: a.worker_wakeup,
                wakeup_next_ms: a.worker_wakeup_next,
                round_robin: a.round_robin,
                exceptions: a.exceptions,
                max_queue: a.max_queue,
                verbose: level_name,
                pid: std::process::id(),
                zone,
                durable: a.data_dir.is_some(),
                grab_wait_ms: a.grab_wait,
                max_functions_per_worker: a.max_functions_per_worker,
                max_idle_functions: a.max_idle_functions,
                future_horizon_ms,
                keep_failed: a.keep_failed,
                keep_failed_bytes: a.keep_failed_bytes,
                keep_audit: a.keep_audit,
                retry,
                keep_output: a.keep_output,
                keep_output_total: a.keep_output_total,
                keep_results_ms,
                keep_results_foreground: a.keep_results_foreground,
                max_function_settings: a.max_function_settings,
                max_rate_count: a.max_rate_count,
                max_backfill: a.max_backfill,
                webhooks,
            },
            webhook_timeout_ms,
            webhook_ca_file: a.webhook_ca_file.clone(),
            notices,
            schedules: a.schedules.clone(),
            data_dir: a.data_dir.clone(),
            fsync,
            repair: a.repair,
            journal_segment_bytes: a.journal_segment_bytes.max(64 << 10),
            journal_compact_min: a.journal_compact_min.max(64 << 10),
            daemon: a.daemon,
            user,
            http,
            access: crate::access::AccessConfig {
                acl: a.acl.clone(),
                protected_mode: match a.protected_mode.as_deref() {
                    None | Some("yes") => true,
                    Some("no") => false,
                    Some(v) => return Err(format!("--protected-mode {v:?}: use yes or no")),
                },
                denials_logged: a.acl_denials_logged,
                metric_identities: a.acl_metric_identities,
            },
            refusals_logged_per_second,
            cluster,
            tls,
        })
    }
}

#[cfg(test)]
mod tests;
