//! The serve command's HTTP listener flags (`--http-port`, `--http-listen`, its limits)
//! checked into `HttpConfig`.

use std::net::SocketAddr;
use std::time::Duration;

use super::{ServeArgs, hostname, resolve};

/// The HTTP listener's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    pub listen: Vec<SocketAddr>,
    /// A request head (and each stretch of its body) must arrive within this.
    pub header_timeout: Duration,
    /// An idle keep-alive connection is closed after this.
    pub idle_timeout: Duration,
    /// Names a request's Host may give besides the listen addresses (`--http-allowed-host`,
    /// names in `--http-listen`, the machine's name).
    pub allowed_hosts: Vec<String>,
    /// Serve the console at `/` and `/ui/` (not `--no-console`).
    pub console: bool,
}

/// The HTTP listener from `--http-port`, `--http-listen` and the Gearman `listen` addresses.
pub(super) fn http_config(
    a: &ServeArgs,
    listen: &[SocketAddr],
) -> Result<Option<HttpConfig>, String> {
    if a.http_port.is_none() && a.http_listen.is_empty() {
        return Ok(None);
    }
    // gearmand's HTTP plugin defaults to 8080 as well.
    let port = a.http_port.unwrap_or(8080);
    let mut addrs = Vec::new();
    if a.http_listen.is_empty() {
        for l in listen {
            let sa = SocketAddr::new(l.ip(), port);
            if !addrs.contains(&sa) {
                addrs.push(sa);
            }
        }
    } else {
        for l in &a.http_listen {
            for sa in resolve(l, port)? {
                if !addrs.contains(&sa) {
                    addrs.push(sa);
                }
            }
        }
    }
    if let Some(same) = addrs.iter().find(|h| h.port() != 0 && listen.contains(h)) {
        return Err(format!(
            "the HTTP listener {same} is also a Gearman listener; use another --http-port"
        ));
    }
    let secs = |v: Option<u64>, default: u64, flag: &str| match v.unwrap_or(default) {
        0 => Err(format!("{flag} must be at least 1 second")),
        n => Ok(Duration::from_secs(n)),
    };
    let mut allowed_hosts = vec![hostname()];
    for n in &a.http_allowed_host {
        if crate::http::guard::normal_name(n).is_none() {
            return Err(format!(
                "--http-allowed-host {n:?}: not a host name (letters, digits, '-', '.', '_')"
            ));
        }
        allowed_hosts.push(n.clone());
    }
    for l in &a.http_listen {
        let name = l.rsplit_once(':').map_or(l.as_str(), |(n, _)| n);
        if name.parse::<std::net::IpAddr>().is_err() && !name.starts_with('[') {
            allowed_hosts.push(name.to_string());
        }
    }
    Ok(Some(HttpConfig {
        listen: addrs,
        allowed_hosts,
        header_timeout: secs(a.http_header_timeout, 10, "--http-header-timeout")?,
        idle_timeout: secs(a.http_idle_timeout, 60, "--http-idle-timeout")?,
        console: !a.no_console,
    }))
}
