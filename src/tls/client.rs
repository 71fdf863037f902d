//! The client side of TLS: `--ssl` for `gearwheel work/submit/admin` and the `--etcd-*` files
//! for etcd (the server's own connections to it, and `gearwheel schedules`): the rustls client
//! configuration and a session per connection (a blocking stream for the commands).

use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::ServerName;

use super::client_config;

/// A blocking TLS stream to a server.
pub type ClientStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// The TLS settings of a client command, made once from its flags and shared by its
/// connections (so a reconnecting worker resumes its session).
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
}

impl ClientTls {
    /// `None` without `--ssl`. The certificate and key go together; the server is verified
    /// against `ca_file`, else the system's CA bundle.
    pub fn from_flags(
        ssl: bool,
        ca_file: Option<&Path>,
        certificate: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Option<ClientTls>, String> {
        if !ssl {
            if ca_file.or(certificate).or(key).is_some() {
                return Err("--ssl-ca-file, --ssl-certificate and --ssl-key need --ssl".into());
            }
            return Ok(None);
        }
        let identity = match (certificate, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("--ssl-certificate and --ssl-key go together".into()),
        };
        Ok(Some(ClientTls::new(ca_file, identity)?))
    }

    /// Reads the files: the server is verified against `ca_file`, else the system's CA
    /// bundle; `identity` (certificate, key) is presented when the server asks for one.
    pub fn new(
        ca_file: Option<&Path>,
        identity: Option<(&Path, &Path)>,
    ) -> Result<ClientTls, String> {
        Ok(ClientTls {
            config: client_config(ca_file, identity)?,
        })
    }

    /// A client session to `host` (the name the server's certificate must carry: a DNS name
    /// or an IP address).
    pub fn session(&self, host: &str) -> Result<rustls::ClientConnection, String> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))?;
        rustls::ClientConnection::new(self.config.clone(), name).map_err(|e| format!("TLS: {e}"))
    }

    /// Starts TLS on a connected socket to `host` (the name the server's certificate must
    /// carry: a DNS name or an IP address). The handshake runs on the first read or write.
    pub fn wrap(&self, host: &str, tcp: TcpStream) -> Result<ClientStream, String> {
        Ok(rustls::StreamOwned::new(self.session(host)?, tcp))
    }
}
