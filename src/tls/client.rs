//! The client side of `--ssl` for `gearwheel work/submit/admin`: a blocking rustls stream
//! over the command's TCP connection.

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
        Ok(Some(ClientTls {
            config: client_config(ca_file, identity)?,
        }))
    }

    /// Starts TLS on a connected socket to `host` (the name the server's certificate must
    /// carry: a DNS name or an IP address). The handshake runs on the first read or write.
    pub fn wrap(&self, host: &str, tcp: TcpStream) -> Result<ClientStream, String> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))?;
        let conn = rustls::ClientConnection::new(self.config.clone(), name)
            .map_err(|e| format!("TLS: {e}"))?;
        Ok(rustls::StreamOwned::new(conn, tcp))
    }
}
