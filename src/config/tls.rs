//! The serve command's TLS flags (gearmand's names: `--ssl`, `--ssl-certificate`, `--ssl-key`,
//! `--ssl-ca-file`; and `--ssl-listen`, `--ssl-handshake-timeout`) checked into `TlsConfig`.
//! The files themselves are read by `crate::tls` when the server starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{ServeArgs, resolve};

/// The TLS settings: which listeners speak TLS, with which files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// `--ssl-certificate`: the server's certificate chain, leaf first (PEM).
    pub certificate: PathBuf,
    /// `--ssl-key`: its private key (PEM).
    pub key: PathBuf,
    /// `--ssl-ca-file`: a client certificate signed by this CA is required (mutual TLS).
    pub ca_file: Option<PathBuf>,
    /// `--ssl`: every listener, Gearman and HTTP, speaks TLS.
    pub everywhere: bool,
    /// `--ssl-listen`: TLS Gearman listeners beside the plaintext `--listen` ones.
    pub listen: Vec<SocketAddr>,
    /// `--ssl-handshake-timeout`: a client that has not finished its handshake is closed.
    pub handshake_timeout: Duration,
}

/// Built without the cargo feature `tls`.
const NO_TLS: &str = "this gearwheel was built without TLS (cargo feature tls): --ssl, --ssl-listen, --ssl-certificate, --ssl-key and --ssl-ca-file cannot be used";

/// The TLS settings from the flags (`None` without `--ssl` or `--ssl-listen`); `port` is the
/// port of `--ssl-listen` addresses without one, `plain` the plaintext listeners.
pub(super) fn tls_config(
    a: &ServeArgs,
    port: u16,
    plain: &[SocketAddr],
) -> Result<Option<TlsConfig>, String> {
    let files_given = a.ssl_certificate.is_some() || a.ssl_key.is_some() || a.ssl_ca_file.is_some();
    let wanted = a.ssl || !a.ssl_listen.is_empty();
    if !cfg!(feature = "tls") && (wanted || files_given) {
        return Err(NO_TLS.into());
    }
    let handshake_timeout = match a.ssl_handshake_timeout.unwrap_or(10) {
        0 => return Err("--ssl-handshake-timeout must be at least 1 second".into()),
        n => Duration::from_secs(n),
    };
    if !wanted {
        if files_given {
            return Err(
                "--ssl-certificate, --ssl-key and --ssl-ca-file need --ssl (every listener) or --ssl-listen ADDR"
                    .into(),
            );
        }
        return Ok(None);
    }
    if a.ssl && !a.ssl_listen.is_empty() {
        return Err("--ssl makes every listener speak TLS; --ssl-listen adds TLS listeners beside plaintext ones: give one or the other".into());
    }
    let (Some(certificate), Some(key)) = (&a.ssl_certificate, &a.ssl_key) else {
        let flag = if a.ssl { "--ssl" } else { "--ssl-listen" };
        return Err(format!(
            "{flag} needs --ssl-certificate PEM and --ssl-key PEM"
        ));
    };
    let mut listen = Vec::new();
    for l in &a.ssl_listen {
        for sa in resolve(l, port)? {
            if sa.port() != 0 && plain.contains(&sa) {
                return Err(format!(
                    "--ssl-listen {sa} is also a plaintext --listen address; give it another address or port"
                ));
            }
            if !listen.contains(&sa) {
                listen.push(sa);
            }
        }
    }
    Ok(Some(TlsConfig {
        certificate: certificate.clone(),
        key: key.clone(),
        ca_file: a.ssl_ca_file.clone(),
        everywhere: a.ssl,
        listen,
        handshake_timeout,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use argh::FromArgs;

    fn parse(args: &[&str]) -> Result<Option<TlsConfig>, String> {
        let a = ServeArgs::from_args(&["serve"], args).map_err(|e| e.output)?;
        let plain: SocketAddr = "127.0.0.1:4730".parse().unwrap();
        tls_config(&a, 4730, &[plain])
    }

    const FILES: [&str; 4] = ["--ssl-certificate", "c.pem", "--ssl-key", "k.pem"];

    #[cfg(feature = "tls")]
    #[test]
    fn flag_combinations() {
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(parse(&["--ssl-handshake-timeout", "3"]), Ok(None));
        let all = parse(&[&["--ssl"], &FILES[..]].concat()).unwrap().unwrap();
        assert!(all.everywhere && all.listen.is_empty() && all.ca_file.is_none());
        assert_eq!(all.handshake_timeout, Duration::from_secs(10));
        let beside = [
            &["--ssl-listen", "127.0.0.2", "--ssl-listen", "[::1]:4731"],
            &FILES[..],
        ];
        let beside = parse(&beside.concat()).unwrap().unwrap();
        assert!(!beside.everywhere);
        let want: Vec<SocketAddr> = vec![
            "127.0.0.2:4730".parse().unwrap(),
            "[::1]:4731".parse().unwrap(),
        ];
        assert_eq!(beside.listen, want);
        for (args, said) in [
            (vec!["--ssl"], "--ssl needs --ssl-certificate"),
            (vec!["--ssl-listen", "127.0.0.2"], "--ssl-listen needs"),
            (FILES.to_vec(), "need --ssl"),
            (vec!["--ssl-ca-file", "ca.pem"], "need --ssl"),
            (
                [&["--ssl", "--ssl-listen", "127.0.0.2"], &FILES[..]].concat(),
                "one or the other",
            ),
            (
                [&["--ssl-listen", "127.0.0.1"], &FILES[..]].concat(),
                "also a plaintext",
            ),
            (
                [&["--ssl", "--ssl-handshake-timeout", "0"], &FILES[..]].concat(),
                "at least 1",
            ),
        ] {
            let e = parse(&args).unwrap_err();
            assert!(e.contains(said), "{args:?}: {e}");
        }
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn a_build_without_tls_refuses_the_flags() {
        for args in [
            vec!["--ssl"],
            [&["--ssl"], &FILES[..]].concat(),
            vec!["--ssl-listen", "127.0.0.2"],
            vec!["--ssl-ca-file", "ca.pem"],
        ] {
            let e = parse(&args).unwrap_err();
            assert!(e.contains("built without TLS"), "{args:?}: {e}");
        }
        assert_eq!(parse(&[]), Ok(None));
    }
}
