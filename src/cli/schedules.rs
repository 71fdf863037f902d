//! `gearwheel schedules push FILE --etcd URL` and `gearwheel schedules show --etcd URL`: the
//! schedules file of a whole cluster, stored in etcd where every server of the cluster loads
//! it (docs/cluster.md). The file is checked exactly as a reload checks it before it is
//! stored, so a file a server would refuse never reaches the fleet. And `gearwheel schedules
//! backfill ID --from --to`: a server's admin line `backfill schedule`, with flags.

use std::path::PathBuf;

use argh::FromArgs;

use super::{EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, say};
use crate::client::duration::parse_duration;
use crate::client::etcd::{Client, Error, client_tls};
use crate::cluster::etcd::{self as etcd, Reply, Request};
use crate::config::etcd_tls;
use crate::schedule::{Zone, check};

/// The largest file pushed: etcd refuses a request over 1.5 MiB by default.
pub const MAX_FILE: usize = 1 << 20;

#[derive(FromArgs, Debug, PartialEq)]
/// The schedules file of a cluster of servers, stored in etcd.
#[argh(
    subcommand,
    name = "schedules",
    example = "gearwheel schedules push /etc/gearwheel/schedules.cron --etcd http://10.0.0.1:2379",
    example = "gearwheel schedules show --etcd http://10.0.0.1:2379,http://10.0.0.2:2379",
    example = "gearwheel schedules backfill backup.db --from 2026-11-01 --to 2026-11-07 --dry-run",
    note = "Exit codes: 0 done, 1 etcd (or the server, for backfill) refused the request (or \
            nothing was pushed yet, for show), 2 bad flags or an invalid file (its errors as \
            FILE:LINE:COL: message), 3 etcd (or the server) could not be reached."
)]
pub struct SchedulesArgs {
    #[argh(subcommand)]
    pub command: SchedulesCommand,
}

#[derive(FromArgs, Debug, PartialEq)]
#[argh(subcommand)]
pub enum SchedulesCommand {
    Push(PushArgs),
    Show(ShowArgs),
    Backfill(BackfillArgs),
}

#[derive(FromArgs, Debug, PartialEq)]
/// Run an entry's times from --from to --to again, in order, as manual runs (each with
/// {time} the time it stands for); --dry-run lists them.
#[argh(subcommand, name = "backfill")]
pub struct BackfillArgs {
    /// the schedule entry's id
    #[argh(positional)]
    pub id: String,
    /// the first time: RFC 3339 (2026-11-01T03:00:00Z) or a date (its whole day, UTC)
    #[argh(option)]
    pub from: String,
    /// the last time, included: RFC 3339 or a date (its whole day, UTC)
    #[argh(option)]
    pub to: String,
    /// list the times it would run, and run nothing
    #[argh(switch)]
    pub dry_run: bool,
    /// server HOST[:PORT] (default as gearwheel admin: $GEARMAN_SERVERS, $GEARMAN_SERVER,
    /// else 127.0.0.1:4730)
    #[argh(option, short = 's')]
    pub server: Option<String>,
    /// speak TLS to the server
    #[argh(switch)]
    pub ssl: bool,
    /// PEM file of the CA that signed the server's certificate (with --ssl)
    #[argh(option)]
    pub ssl_ca_file: Option<String>,
    /// PEM file of this client's certificate (with --ssl)
    #[argh(option)]
    pub ssl_certificate: Option<String>,
    /// PEM file of the private key of --ssl-certificate
    #[argh(option)]
    pub ssl_key: Option<String>,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Check a schedules file as a reload would and store it in etcd: every server of the
/// cluster loads it.
#[argh(subcommand, name = "push")]
pub struct PushArgs {
    /// the schedules file
    #[argh(positional)]
    pub file: PathBuf,
    /// etcd client URLs, http://HOST:PORT or https://HOST:PORT (comma-separated or
    /// repeated; the first that answers is used)
    #[argh(option)]
    pub etcd: Vec<String>,
    /// PEM file of the CA that signed etcd's server certificate, for https:// URLs
    /// (default the system's CA bundle)
    #[argh(option)]
    pub etcd_ca_file: Option<PathBuf>,
    /// PEM file of the client certificate presented to etcd (its --client-cert-auth), with
    /// --etcd-key
    #[argh(option)]
    pub etcd_certificate: Option<PathBuf>,
    /// PEM file of the private key of --etcd-certificate
    #[argh(option)]
    pub etcd_key: Option<PathBuf>,
    /// the cluster's name, as the servers' --cluster (default gearwheel)
    #[argh(option, default = "String::from(\"gearwheel\")")]
    pub cluster: String,
    /// the default time zone of the entries, as the servers' --timezone (default local)
    #[argh(option)]
    pub tz: Option<String>,
    /// give up on etcd after this long (default 5s)
    #[argh(option, default = "String::from(\"5s\")")]
    pub timeout: String,
}

#[derive(FromArgs, Debug, PartialEq)]
/// Print the schedules file stored in etcd for the cluster.
#[argh(subcommand, name = "show")]
pub struct ShowArgs {
    /// etcd client URLs, http://HOST:PORT or https://HOST:PORT (comma-separated or
    /// repeated)
    #[argh(option)]
    pub etcd: Vec<String>,
    /// PEM file of the CA that signed etcd's server certificate, for https:// URLs
    /// (default the system's CA bundle)
    #[argh(option)]
    pub etcd_ca_file: Option<PathBuf>,
    /// PEM file of the client certificate presented to etcd (its --client-cert-auth), with
    /// --etcd-key
    #[argh(option)]
    pub etcd_certificate: Option<PathBuf>,
    /// PEM file of the private key of --etcd-certificate
    #[argh(option)]
    pub etcd_key: Option<PathBuf>,
    /// the cluster's name, as the servers' --cluster (default gearwheel)
    #[argh(option, default = "String::from(\"gearwheel\")")]
    pub cluster: String,
    /// give up on etcd after this long (default 5s)
    #[argh(option, default = "String::from(\"5s\")")]
    pub timeout: String,
}

pub fn run(a: SchedulesArgs) -> u8 {
    match a.command {
        SchedulesCommand::Push(p) => push(p),
        SchedulesCommand::Show(s) => show(s),
        SchedulesCommand::Backfill(b) => backfill(b),
    }
}

/// The admin line `backfill schedule ID FROM TO [dry-run]`, sent as `gearwheel admin` sends
/// it (same server flags, exit codes and output).
fn backfill(b: BackfillArgs) -> u8 {
    let mut command = vec!["backfill".into(), "schedule".into(), b.id, b.from, b.to];
    if b.dry_run {
        command.push("dry-run".into());
    }
    super::admin::run(super::AdminArgs {
        server: b.server,
        raw: false,
        ssl: b.ssl,
        ssl_ca_file: b.ssl_ca_file,
        ssl_certificate: b.ssl_certificate,
        ssl_key: b.ssl_key,
        command,
    })
}

/// The flags that say how to reach etcd, common to `push` and `show`.
struct Reach<'a> {
    urls: &'a [String],
    cluster: &'a str,
    timeout: &'a str,
    ca_file: Option<&'a PathBuf>,
    certificate: Option<&'a PathBuf>,
    key: Option<&'a PathBuf>,
}

/// The etcd client the flags describe, or the exit code of a bad flag.
fn client(cmd: &str, r: Reach<'_>) -> Result<Client, u8> {
    let usage = |e: String| {
        say(cmd, e);
        EXIT_USAGE
    };
    if r.urls.is_empty() {
        return Err(usage("--etcd URL is required".into()));
    }
    let endpoints = etcd::endpoints(r.urls).map_err(usage)?;
    etcd::check_cluster_name(r.cluster).map_err(usage)?;
    let timeout = parse_duration(r.timeout).map_err(|e| usage(format!("--timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(usage("--timeout must be more than zero".into()));
    }
    let tls = match etcd_tls(endpoints.tls, r.ca_file, r.certificate, r.key).map_err(usage)? {
        Some(files) => Some(client_tls(&files).map_err(usage)?),
        None => None,
    };
    Ok(Client::new(endpoints.hosts, timeout).with_tls(tls))
}

fn failed(cmd: &str, e: Error) -> u8 {
    say(cmd, &e);
    match e {
        Error::Unreachable(_) | Error::Io(_) | Error::Timeout(_) => EXIT_UNREACHABLE,
        Error::Etcd(_) => EXIT_FAILED,
    }
}

fn push(a: PushArgs) -> u8 {
    const CMD: &str = "schedules push";
    let mut c = match client(
        CMD,
        Reach {
            urls: &a.etcd,
            cluster: &a.cluster,
            timeout: &a.timeout,
            ca_file: a.etcd_ca_file.as_ref(),
            certificate: a.etcd_certificate.as_ref(),
            key: a.etcd_key.as_ref(),
        },
    ) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let zone = match Zone::parse(a.tz.as_deref().unwrap_or("local")) {
        Ok(z) => z,
        Err(e) => {
            say(CMD, format!("--tz: {e}"));
            return EXIT_USAGE;
        }
    };
    let name = a.file.display().to_string();
    let text = match read_bounded(&a.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: {e}");
            return EXIT_USAGE;
        }
    };
    let (report, ok) = check::check(&name, &text, &zone, 0, chrono::Utc::now());
    if !ok {
        eprint!("{report}");
        say(CMD, "not pushed: the file has errors");
        return EXIT_USAGE;
    }
    let key = etcd::schedules_key(&a.cluster);
    let req = Request::Put {
        key: key.clone(),
        value: text.into_bytes(),
        lease: 0,
    };
    match c.call(&req) {
        Ok(Reply::Put { revision }) => {
            print!("{report}");
            println!(
                "pushed to {} at revision {revision}",
                String::from_utf8_lossy(&key)
            );
            0
        }
        Ok(other) => failed(CMD, Error::Etcd(unexpected(other))),
        Err(e) => failed(CMD, e),
    }
}

fn show(a: ShowArgs) -> u8 {
    const CMD: &str = "schedules show";
    let mut c = match client(
        CMD,
        Reach {
            urls: &a.etcd,
            cluster: &a.cluster,
            timeout: &a.timeout,
            ca_file: a.etcd_ca_file.as_ref(),
            certificate: a.etcd_certificate.as_ref(),
            key: a.etcd_key.as_ref(),
        },
    ) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let key = etcd::schedules_key(&a.cluster);
    match c.call(&Request::Get { key: key.clone() }) {
        Ok(Reply::Range { kvs, .. }) => match kvs.into_iter().next() {
            Some(kv) => {
                print!("{}", String::from_utf8_lossy(&kv.value));
                0
            }
            None => {
                say(
                    CMD,
                    format!(
                        "nothing pushed for cluster {:?} ({} is absent)",
                        a.cluster,
                        String::from_utf8_lossy(&key)
                    ),
                );
                EXIT_FAILED
            }
        },
        Ok(other) => failed(CMD, Error::Etcd(unexpected(other))),
        Err(e) => failed(CMD, e),
    }
}

fn unexpected(r: Reply) -> etcd::EtcdError {
    etcd::EtcdError::Malformed(format!("an unexpected reply: {r:?}"))
}

/// The file as UTF-8 text, refused past [`MAX_FILE`] without reading it all.
fn read_bounded(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > MAX_FILE {
        return Err(format!(
            "larger than {} KiB, more than etcd takes in one request",
            MAX_FILE >> 10
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".into())
}
