//! The serve command's cluster flags (`--etcd`, `--cluster`, `--etcd-lease-ttl`, ...) checked
//! into `ClusterConfig`: etcd's addresses are resolved here, at start, never in a turn.

use std::net::SocketAddr;

use super::{ServeArgs, resolve};

/// `--etcd`, `--cluster`, `--etcd-lease-ttl`, ...: resolved at start (no DNS in a turn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Each etcd endpoint: its `host:port` (the Host header) and address, in the order given.
    pub endpoints: Vec<(String, SocketAddr)>,
    pub name: String,
    pub lease_ttl_secs: u64,
    pub request_timeout_ms: u64,
    pub max_message: usize,
}

/// The cluster settings from the serve flags (`None` without `--etcd`).
pub(super) fn cluster_config(a: &ServeArgs) -> Result<Option<ClusterConfig>, String> {
    if a.etcd.is_empty() {
        if a.cluster.is_some() {
            return Err("--cluster needs --etcd".into());
        }
        return Ok(None);
    }
    let mut endpoints = Vec::new();
    for hostport in crate::cluster::etcd::endpoints(&a.etcd)? {
        let addr = resolve(&hostport, 2379)
            .map_err(|e| format!("--etcd {hostport}: {e}"))?
            .into_iter()
            .next()
            .ok_or_else(|| format!("--etcd {hostport}: resolves to nothing"))?;
        endpoints.push((hostport, addr));
    }
    let name = a.cluster.clone().unwrap_or_else(|| "gearwheel".into());
    crate::cluster::etcd::check_cluster_name(&name)?;
    if !(1..=3600).contains(&a.etcd_lease_ttl) {
        return Err("--etcd-lease-ttl must be 1 to 3600 seconds".into());
    }
    if a.etcd_request_timeout < 100 {
        return Err("--etcd-request-timeout must be at least 100 ms".into());
    }
    if a.etcd_max_message < 64 << 10 {
        return Err("--etcd-max-message must be at least 65536 bytes".into());
    }
    Ok(Some(ClusterConfig {
        endpoints,
        name,
        lease_ttl_secs: a.etcd_lease_ttl,
        request_timeout_ms: a.etcd_request_timeout,
        max_message: a.etcd_max_message,
    }))
}
