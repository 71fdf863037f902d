//! The name a certificate gives its holder: the subject CN, else the first DNS SAN.

use rustls::pki_types::CertificateDer;
use x509_parser::extensions::GeneralName;

/// The client certificate's name once a handshake is done: see [`cert_name`]. `None` before
/// the handshake completes or when the client sent no certificate.
pub fn peer_name(conn: &rustls::ServerConnection) -> Option<String> {
    conn.peer_certificates()?.first().and_then(cert_name)
}

/// The subject's common name when it has one, else the first DNS subject alternative name.
/// `None` when the DER does not parse or has neither (the certificate was already verified
/// against the CA by rustls; this only reads a name out of it).
pub fn cert_name(der: &CertificateDer<'_>) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .find_map(|cn| cn.as_str().ok());
    if let Some(cn) = cn.filter(|cn| !cn.is_empty()) {
        return Some(cn.to_string());
    }
    let san = cert.subject_alternative_name().ok()??;
    san.value.general_names.iter().find_map(|name| match name {
        GeneralName::DNSName(dns) => Some(dns.to_string()),
        _ => None,
    })
}
