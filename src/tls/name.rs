//! The name a certificate gives its holder (its one subject CN, else its first DNS SAN), and
//! the client verifier that refuses, at the handshake, a certificate that gives none.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::extensions::GeneralName;
use x509_parser::x509::AttributeTypeAndValue;

/// The client certificate's name once a handshake is done: see [`cert_name`]. `None` before
/// the handshake completes or when the client sent no certificate.
pub fn peer_name(conn: &rustls::ServerConnection) -> Option<String> {
    conn.peer_certificates()?
        .first()
        .and_then(|c| cert_name(c).ok())
}

/// Why a certificate names no one; the text never holds a byte of the certificate, so it can
/// be logged as is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unnamed(pub &'static str);

impl fmt::Display for Unnamed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Unnamed {}

/// The subject's common name when it has one, else the first DNS subject alternative name.
///
/// A CN is read whatever string type encodes it (UTF8String, PrintableString, IA5String,
/// NumericString, VisibleString, TeletexString as Latin-1 as OpenSSL reads it, BMPString,
/// UniversalString). A certificate with several CNs, or one whose CN does not decode, has no
/// name: which of two names a holder goes by is not for the server to guess, and a CN that
/// is there but unread must not give way to a SAN. An empty CN counts as none. IP, email and
/// URI SANs name no one: a certificate with only those has no name.
pub fn cert_name(der: &CertificateDer<'_>) -> Result<String, Unnamed> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|_| Unnamed("the certificate does not parse"))?;
    let mut cns = cert.subject().iter_common_name();
    if let Some(cn) = cns.next() {
        if cns.next().is_some() {
            return Err(Unnamed(
                "the certificate has several subject CNs, so no one name",
            ));
        }
        let cn = decode(cn).ok_or(Unnamed("the certificate's subject CN does not decode"))?;
        if !cn.is_empty() {
            return Ok(cn);
        }
    }
    let no_name = Unnamed(
        "the certificate has no subject CN and no DNS SAN (IP, email and URI SANs name no one)",
    );
    let san = cert
        .subject_alternative_name()
        .map_err(|_| no_name)?
        .ok_or(no_name)?;
    san.value
        .general_names
        .iter()
        .find_map(|name| match name {
            GeneralName::DNSName(dns) if !dns.is_empty() => Some(dns.to_string()),
            _ => None,
        })
        .ok_or(no_name)
}

/// An attribute's string, whichever of the X.520 string types encodes it; `None` for another
/// type or bytes that are not what the type says.
fn decode(attr: &AttributeTypeAndValue<'_>) -> Option<String> {
    let value = attr.attr_value();
    let data = value.data;
    let ascii = || {
        data.is_ascii()
            .then(|| String::from_utf8(data.to_vec()).ok())
            .flatten()
    };
    match value.tag() {
        Tag::Utf8String => String::from_utf8(data.to_vec()).ok(),
        Tag::PrintableString | Tag::Ia5String | Tag::NumericString | Tag::VisibleString => ascii(),
        // T.61 proper is a shift-coded mess that no CA writes; in practice the bytes are
        // Latin-1, and OpenSSL reads them so.
        Tag::TeletexString => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            if data.len() % 2 != 0 {
                return None;
            }
            let units = data
                .chunks_exact(2)
                .map(|u| u16::from_be_bytes([u[0], u[1]]));
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .ok()
        }
        Tag::UniversalString => {
            if data.len() % 4 != 0 {
                return None;
            }
            data.chunks_exact(4)
                .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
                .collect()
        }
        _ => None,
    }
}

/// The CA's verifier, and then a name: a certificate the CA signed but that names no one
/// (see [`cert_name`]) fails the handshake with `bad_certificate`, so that its holder is
/// never served as an address. The reason is the handshake's error ([`Unnamed`] inside).
#[derive(Debug)]
pub struct NamedClientVerifier(pub Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for NamedClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.0.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.0.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.0.verify_client_cert(end_entity, intermediates, now)?;
        match cert_name(end_entity) {
            Ok(_) => Ok(verified),
            Err(why) => Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                rustls::OtherError(Arc::new(why)),
            ))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The reason inside a handshake error that [`NamedClientVerifier`] made, if it made it.
pub fn unnamed(e: &rustls::Error) -> Option<Unnamed> {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(o)) => {
            o.0.downcast_ref::<Unnamed>().copied()
        }
        _ => None,
    }
}
