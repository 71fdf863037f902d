//! The PEM files of `--ssl-certificate`, `--ssl-key` and `--ssl-ca-file`, and the rustls
//! server and client configurations made from them (TLS 1.2 and 1.3, the ring provider).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use super::name::NamedClientVerifier;

/// Resumable sessions a server keeps (stateful resumption; about 100 bytes each), so that a
/// reconnecting worker skips the full handshake. Bounded: the oldest is forgotten first.
const SESSION_CACHE: usize = 1024;

/// Where the system's CA bundle is on Debian, the client's trust when no `--ssl-ca-file` is given.
const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The server's certificate files, as the flags name them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--ssl-certificate`: the server's certificate chain, leaf first.
    pub certificate: PathBuf,
    /// `--ssl-key`: its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// `--ssl-ca-file`: when given, a client certificate signed by one of these is required.
    pub ca_file: Option<PathBuf>,
}

/// The server's TLS configuration, re-read from its files on SIGHUP.
pub struct ServerTls {
    files: TlsFiles,
    config: Arc<ServerConfig>,
}

impl ServerTls {
    /// Reads the files; the error names the file and what is wrong with it.
    pub fn load(files: TlsFiles) -> Result<ServerTls, String> {
        let config = server_config(&files)?;
        Ok(ServerTls { files, config })
    }

    /// Re-reads the files (certificate rotation without a restart). On an error the current
    /// configuration stays and the error says why, for the caller to log; connections already
    /// open keep the configuration they were accepted with.
    pub fn reload(&mut self) -> Result<(), String> {
        self.config = server_config(&self.files)?;
        Ok(())
    }

    /// Whether a client certificate is required (mutual TLS).
    pub fn mutual(&self) -> bool {
        self.files.ca_file.is_some()
    }

    /// A new server-side session for an accepted connection.
    pub fn accept(&self) -> Result<rustls::ServerConnection, String> {
        rustls::ServerConnection::new(self.config.clone()).map_err(|e| format!("TLS: {e}"))
    }

    /// The configuration new connections get.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.config.clone()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    let chain = read_certs(&files.certificate)?;
    let key = read_key(&files.key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match &files.ca_file {
        Some(ca) => {
            let roots = Arc::new(read_roots(ca)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider())
                .build()
                .map_err(|e| format!("{}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(Arc::new(NamedClientVerifier(verifier)))
        }
        None => builder.with_no_client_auth(),
    };
    check_version(&files.certificate, &chain)?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| pair_error(&files.certificate, &files.key, e))?;
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
    Ok(Arc::new(config))
}

/// A client configuration for `gearwheel work/submit/admin --ssl`: the server is verified
/// against `ca_file` (else the system's CA bundle), and `identity` (certificate, key) is
/// presented when the server asks for one.
pub fn client_config(
    ca_file: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<Arc<ClientConfig>, String> {
    let roots = read_roots(ca_file.unwrap_or(Path::new(SYSTEM_CA_BUNDLE)))?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => {
            let chain = read_certs(cert)?;
            check_version(cert, &chain)?;
            builder
                .with_client_auth_cert(chain, read_key(key)?)
                .map_err(|e| pair_error(cert, key, e))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// A certificate this side presents must be X.509 version 3: rustls (webpki) refuses
/// versions 1 and 2 and says only `UnsupportedCertVersion`, and `openssl x509 -req` without
/// an extension file writes version 1. A leaf that does not parse is left to rustls to name.
fn check_version(path: &Path, chain: &[CertificateDer<'_>]) -> Result<(), String> {
    let Some(Ok((_, leaf))) = chain
        .first()
        .map(|der| x509_parser::parse_x509_certificate(der.as_ref()))
    else {
        return Ok(());
    };
    match leaf.version().0 {
        2 => Ok(()),
        v => Err(format!(
            "{}: an X.509 version {} certificate, which gearwheel's TLS (rustls) refuses: \
             re-issue it as version 3, which `openssl x509 -req` writes when given an \
             extension file (-extfile with subjectAltName=DNS:NAME for a server, \
             extendedKeyUsage=clientAuth for a client), as in docs/security.md",
            path.display(),
            v + 1
        )),
    }
}

/// rustls's refusal of a certificate and key pair, in words: it says `KeyMismatch` when the
/// key is not the certificate's.
fn pair_error(cert: &Path, key: &Path, e: rustls::Error) -> String {
    match e {
        rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => format!(
            "{} is not the private key of {}: give the key the certificate was issued for \
             (`openssl x509 -noout -pubkey -in CERT` and `openssl pkey -pubout -in KEY` print \
             the same public key for a pair)",
            key.display(),
            cert.display()
        ),
        e => format!("{} and {}: {e}", cert.display(), key.display()),
    }
}

// The files are read through `config_file` (regular files only, never a blocking open: they
// are read again on SIGHUP, in the loop), and parsed from memory.
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = crate::config_file::read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(&crate::config_file::read(path)?)
        .map_err(|e| format!("{}: no usable private key: {e}", path.display()))
}

fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(read_certs(path)?);
    if added == 0 {
        return Err(format!(
            "{}: no usable CA certificate in it",
            path.display()
        ));
    }
    Ok(roots)
}
