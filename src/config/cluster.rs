//! The serve command's cluster flags (`--etcd`, `--cluster`, `--etcd-lease-ttl`, ...) checked
//! into `ClusterConfig`: etcd's addresses are resolved here, at start, never in a turn, and
//! the TLS files of `https://` URLs (`--etcd-ca-file`, `--etcd-certificate`, `--etcd-key`)
//! are read once to refuse a bad one at start.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{ServeArgs, resolve};
use crate::client::etcd::EtcdTls;

/// `--etcd`, `--cluster`, `--etcd-lease-ttl`, ...: resolved at start (no DNS in a turn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Each etcd endpoint: its `host:port` (the Host header) and address, in the order given.
    pub endpoints: Vec<(String, SocketAddr)>,
    pub name: String,
    pub lease_ttl_secs: u64,
    pub request_timeout_ms: u64,
    /// `--etcd-compaction-interval` in ms (0: the leader never compacts).
    pub compaction_interval_ms: u64,
    pub max_message: usize,
    /// `https://` URLs: the files of the TLS client (`None` for `http://`).
    pub tls: Option<EtcdTls>,
}

/// Built without the cargo feature `tls`.
const NO_TLS: &str = "this gearwheel was built without TLS (cargo feature tls): https:// --etcd URLs, --etcd-ca-file, --etcd-certificate and --etcd-key cannot be used";

/// The TLS files for `--etcd` URLs (`tls`: they are `https://`), checked: the flags go with
/// https:// only, the certificate with its key, and every file is read now so that a missing
/// or bad one stops the start rather than the first connection. Shared with `gearwheel
/// schedules push/show`.
pub fn etcd_tls(
    tls: bool,
    ca_file: Option<&PathBuf>,
    certificate: Option<&PathBuf>,
    key: Option<&PathBuf>,
) -> Result<Option<EtcdTls>, String> {
    let given = ca_file.is_some() || certificate.is_some() || key.is_some();
    if !cfg!(feature = "tls") && (tls || given) {
        return Err(NO_TLS.into());
    }
    if !tls {
        if given {
            return Err(
                "--etcd-ca-file, --etcd-certificate and --etcd-key need https:// --etcd URLs"
                    .into(),
            );
        }
        return Ok(None);
    }
    let identity = match (certificate, key) {
        (Some(c), Some(k)) => Some((c.clone(), k.clone())),
        (None, None) => None,
        _ => return Err("--etcd-certificate and --etcd-key go together".into()),
    };
    let files = EtcdTls {
        ca_file: ca_file.cloned(),
        identity,
    };
    crate::client::etcd::client_tls(&files).map_err(|e| {
        let flags = "--etcd-ca-file, --etcd-certificate or --etcd-key";
        match &files.ca_file {
            Some(_) => format!("{flags}: {e}"),
            None => format!(
                "{flags}: {e} (https:// without --etcd-ca-file trusts the system's CA bundle)"
            ),
        }
    })?;
    Ok(Some(files))
}

/// The cluster settings from the serve flags (`None` without `--etcd`).
pub(super) fn cluster_config(a: &ServeArgs) -> Result<Option<ClusterConfig>, String> {
    if a.etcd.is_empty() {
        if a.cluster.is_some() {
            return Err("--cluster needs --etcd".into());
        }
        if a.etcd_ca_file.is_some() || a.etcd_certificate.is_some() || a.etcd_key.is_some() {
            return Err(
                "--etcd-ca-file, --etcd-certificate and --etcd-key need https:// --etcd URLs"
                    .into(),
            );
        }
        return Ok(None);
    }
    let urls = crate::cluster::etcd::endpoints(&a.etcd)?;
    let tls = etcd_tls(
        urls.tls,
        a.etcd_ca_file.as_ref(),
        a.etcd_certificate.as_ref(),
        a.etcd_key.as_ref(),
    )?;
    let mut endpoints = Vec::new();
    for hostport in urls.hosts {
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
        compaction_interval_ms: a.etcd_compaction_interval.saturating_mul(1000),
        max_message: a.etcd_max_message,
        tls,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use argh::FromArgs;

    fn parse(args: &[&str]) -> Result<Option<ClusterConfig>, String> {
        let a = ServeArgs::from_args(&["serve"], args).map_err(|e| e.output)?;
        cluster_config(&a)
    }

    #[test]
    fn the_etcd_tls_flags_go_with_https_urls_only() {
        let plain = parse(&["--etcd", "http://127.0.0.1:2379"])
            .unwrap()
            .unwrap();
        assert_eq!(plain.tls, None);
        // (With http:// URLs a build without TLS says it has none: see below.)
        #[cfg(feature = "tls")]
        {
            let args = ["--etcd", "http://127.0.0.1:1", "--etcd-ca-file", "ca.pem"];
            let e = parse(&args).unwrap_err();
            assert!(e.contains("need https://"), "{e}");
        }
        for (args, said) in [
            (vec!["--etcd-key", "k.pem"], "need https://"),
            (
                vec!["--etcd", "http://127.0.0.1:1,https://127.0.0.1:2"],
                "same scheme",
            ),
        ] {
            let e = parse(&args).unwrap_err();
            assert!(e.contains(said), "{args:?}: {e}");
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn https_files_are_read_at_start() {
        let ca = crate::tls::tls_support::TestCa::new("config-etcd");
        let (cert, key) = ca.issue("client", "gearwheel", &[]);
        let (ca_file, cert, key) = (
            ca.ca().to_str().unwrap().to_string(),
            cert.to_str().unwrap().to_string(),
            key.to_str().unwrap().to_string(),
        );
        let url = ["--etcd", "https://127.0.0.1:2379"];
        let c = parse(
            &[
                &url[..],
                &[
                    "--etcd-ca-file",
                    &ca_file,
                    "--etcd-certificate",
                    &cert,
                    "--etcd-key",
                    &key,
                ],
            ]
            .concat(),
        )
        .unwrap()
        .unwrap();
        let tls = c.tls.unwrap();
        assert_eq!(tls.ca_file.as_deref(), Some(std::path::Path::new(&ca_file)));
        assert!(tls.identity.is_some());
        for (args, said) in [
            (vec!["--etcd-certificate", cert.as_str()], "go together"),
            (
                vec!["--etcd-ca-file", "/nonexistent/ca.pem"],
                "/nonexistent/ca.pem",
            ),
            // A key where the CA should be: no certificate in it.
            (vec!["--etcd-ca-file", key.as_str()], "no PEM certificate"),
            (
                vec![
                    "--etcd-ca-file",
                    &ca_file,
                    "--etcd-certificate",
                    &cert,
                    "--etcd-key",
                    &ca_file,
                ],
                "private key",
            ),
        ] {
            let e = parse(&[&url[..], &args].concat()).unwrap_err();
            assert!(e.contains(said), "{args:?}: {e}");
        }
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn a_build_without_tls_refuses_https_and_the_files() {
        for args in [
            vec!["--etcd", "https://127.0.0.1:2379"],
            vec![
                "--etcd",
                "http://127.0.0.1:2379",
                "--etcd-ca-file",
                "ca.pem",
            ],
        ] {
            let e = parse(&args).unwrap_err();
            assert!(e.contains("built without TLS"), "{args:?}: {e}");
        }
    }
}
