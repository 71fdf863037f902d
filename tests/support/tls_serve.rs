//! gearwheel serving TLS in the black-box tests: `serve` started with a server certificate
//! (`start_tls`), or with mutual TLS under an access list written from rules (`TlsServer`,
//! the ports of its TLS and HTTPS listeners), and the client commands (`gearwheel work`,
//! `admin`, `submit`) over mutual TLS.

use std::path::Path;

use super::process::{Proc, gw};
use super::server::Server;
use super::tls::{CertFiles, path_arg};
use super::wait::wait_until;

/// `serve` with `--ssl-certificate`/`--ssl-key` from `cert`, and `extra`.
pub fn start_tls(cert: &CertFiles, extra: &[&str]) -> Server {
    let mut args = vec!["--ssl-certificate", &cert.cert, "--ssl-key", &cert.key];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// Which listeners of a `TlsServer` speak TLS.
#[derive(Clone, Copy, PartialEq)]
pub enum Listen {
    /// `--ssl`: every listener (the Gearman one and, with `https`, an HTTP one on port 0).
    All { https: bool },
    /// `--ssl-listen 127.0.0.1:0` beside the plaintext loopback listener `-L 127.0.0.1`.
    Beside,
}

/// gearwheel requiring a client certificate signed by a CA (`--ssl-ca-file`) and granting
/// each identity what the `--acl` rules say.
pub struct TlsServer {
    pub server: Server,
    /// The TLS Gearman port (with `Listen::All`, the server's own).
    pub tls: u16,
    /// The HTTPS port (with `Listen::All { https: true }`).
    pub https: Option<u16>,
}

impl TlsServer {
    /// Serves with the certificate `cert`, clients checked against `ca`, the access list
    /// `rules` (one rule a line, in the file "acl" beside `ca`), listening as `listen`.
    pub fn start(ca: &Path, cert: &CertFiles, rules: &[&str], listen: Listen) -> TlsServer {
        let acl = ca.with_file_name("acl");
        std::fs::write(&acl, rules.join("\n") + "\n").unwrap();
        let (ca, acl) = (path_arg(ca), path_arg(&acl));
        let mut args = vec!["--ssl-ca-file", &ca, "--acl", &acl];
        match listen {
            Listen::All { https } => {
                args.push("--ssl");
                if https {
                    args.extend(["--http-port", "0"]);
                }
            }
            Listen::Beside => args.extend(["-L", "127.0.0.1", "--ssl-listen", "127.0.0.1:0"]),
        }
        let server = start_tls(cert, &args);
        let (tls, https) = match listen {
            Listen::All { https } => (
                server.port(),
                https.then(|| server.listener("HTTP listening on ").port()),
            ),
            Listen::Beside => (server.listener("TLS listening on ").port(), None),
        };
        TlsServer { server, tls, https }
    }
}

/// The client commands' (`work`, `submit`, `admin`) flags for mutual TLS.
pub fn tls_flags<'a>(ca: &'a str, cert: &'a CertFiles) -> [&'a str; 7] {
    [
        "--ssl",
        "--ssl-ca-file",
        ca,
        "--ssl-certificate",
        &cert.cert,
        "--ssl-key",
        &cert.key,
    ]
}

/// `gearwheel work -f up -- tr a-z A-Z` over mutual TLS to `addr`, presenting `worker`.
pub fn tls_upper_worker(addr: &str, ca: &str, worker: &CertFiles) -> Proc {
    let mut args = vec!["work", "-s", addr, "-f", "up"];
    args.extend(tls_flags(ca, worker));
    args.extend(["--", "tr", "a-z", "A-Z"]);
    Proc::gearwheel(&args, &[])
}

/// Over mutual TLS to `addr`, presenting `client`: `admin workers` lists the `up` worker
/// (waited for), then `submit -f up hello` prints HELLO.
pub fn assert_tls_submit_upper(addr: &str, ca: &str, client: &CertFiles) {
    let mut admin = vec!["admin", "-s", addr];
    admin.extend(tls_flags(ca, client));
    admin.push("workers");
    wait_until(20, "the worker registered over TLS", || {
        gw(&admin, None, 10).stdout.contains("up")
    });
    let mut submit = vec!["submit", "-s", addr, "-f", "up"];
    submit.extend(tls_flags(ca, client));
    submit.push("hello");
    let o = gw(&submit, None, 20);
    assert_eq!((o.code(), o.stdout.as_str()), (Some(0), "HELLO"), "{o:?}");
}
