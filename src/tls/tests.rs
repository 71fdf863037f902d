//! TLS configurations through real rustls handshakes in memory (no sockets: the reactor's
//! transport is tested over loopback elsewhere), with a throwaway CA made here by rcgen.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConnection, HandshakeKind, ServerConnection};

use super::tls_support::{
    BmpString, DnType, DnValue, Ia5String, PrintableString, SanType, TeletexString, TestCa,
    UniversalString,
};

use super::{ServerTls, TlsFiles, cert_name, client_config, peer_name};

/// Moves TLS records between the two sides until neither has anything to say; the error is
/// the first side's failure.
fn handshake(client: &mut ClientConnection, server: &mut ServerConnection) -> Result<(), String> {
    for _ in 0..20 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let to_server = !wire.is_empty();
        let mut reader = &wire[..];
        while !reader.is_empty() {
            server.read_tls(&mut reader).unwrap();
            server
                .process_new_packets()
                .map_err(|e| format!("server: {e}"))?;
        }
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        let to_client = !wire.is_empty();
        let mut reader = &wire[..];
        while !reader.is_empty() {
            client.read_tls(&mut reader).unwrap();
            client
                .process_new_packets()
                .map_err(|e| format!("client: {e}"))?;
        }
        if !to_server && !to_client && !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    Err("handshake did not finish".into())
}

fn connect(config: &Arc<rustls::ClientConfig>) -> ClientConnection {
    ClientConnection::new(config.clone(), ServerName::try_from("localhost").unwrap()).unwrap()
}

fn server(ca: &TestCa, mutual: bool) -> ServerTls {
    let (certificate, key) = ca.issue("server", "gearwheel", &["localhost"]);
    let ca_file = mutual.then(|| ca.ca());
    ServerTls::load(TlsFiles {
        certificate,
        key,
        ca_file,
    })
    .unwrap()
}

#[test]
fn server_authenticated_round_trip_and_resumption() {
    let ca = TestCa::new("plain");
    let tls = server(&ca, false);
    let client = client_config(Some(&ca.ca()), None).unwrap();
    let (mut c, mut s) = (connect(&client), tls.accept().unwrap());
    handshake(&mut c, &mut s).unwrap();
    assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
    assert_eq!(peer_name(&s), None, "no client certificate, no name");
    use std::io::{Read, Write};
    c.writer().write_all(b"\0REQ").unwrap();
    handshake(&mut c, &mut s).unwrap();
    let mut got = [0u8; 4];
    s.reader().read_exact(&mut got).unwrap();
    assert_eq!(&got, b"\0REQ");
    // A reconnecting client (same client configuration, so the same session store) resumes.
    let (mut c, mut s) = (connect(&client), tls.accept().unwrap());
    handshake(&mut c, &mut s).unwrap();
    assert_eq!(c.handshake_kind(), Some(HandshakeKind::Resumed));
}

#[test]
fn tls12_is_offered_and_accepted() {
    let ca = TestCa::new("tls12");
    let tls = server(&ca, false);
    let roots = {
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(ca.ca()).unwrap();
        use rustls::pki_types::pem::PemObject;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.unwrap()).unwrap();
        }
        roots
    };
    let only12 = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let (mut c, mut s) = (connect(&Arc::new(only12)), tls.accept().unwrap());
    handshake(&mut c, &mut s).unwrap();
    assert_eq!(s.protocol_version(), Some(rustls::ProtocolVersion::TLSv1_2));
}

#[test]
fn mutual_tls_requires_a_certificate_from_the_ca() {
    let ca = TestCa::new("mutual");
    let tls = server(&ca, true);
    assert!(tls.mutual());
    let (cert, key) = ca.issue("worker", "worker-backup", &["backup.example"]);

    let with_cert = client_config(Some(&ca.ca()), Some((&cert, &key))).unwrap();
    let (mut c, mut s) = (connect(&with_cert), tls.accept().unwrap());
    handshake(&mut c, &mut s).unwrap();
    assert_eq!(peer_name(&s).as_deref(), Some("worker-backup"));

    let without = client_config(Some(&ca.ca()), None).unwrap();
    let (mut c, mut s) = (connect(&without), tls.accept().unwrap());
    let err = handshake(&mut c, &mut s).unwrap_err();
    assert!(err.contains("server:"), "the server refuses: {err}");

    // A certificate from another CA is refused too.
    let other = TestCa::new("other");
    let (cert, key) = other.issue("stranger", "worker-backup", &[]);
    let stranger = client_config(Some(&ca.ca()), Some((&cert, &key))).unwrap();
    let (mut c, mut s) = (connect(&stranger), tls.accept().unwrap());
    let err = handshake(&mut c, &mut s).unwrap_err();
    assert!(err.contains("server:"), "the server refuses: {err}");
}

#[test]
fn name_is_the_one_cn_else_the_first_dns_san() {
    let ca = TestCa::new("names");
    let read = |file: &Path| {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_file(file).unwrap()
    };
    let name = |(cert, _): (std::path::PathBuf, std::path::PathBuf)| cert_name(&read(&cert));
    let named = |file: &str, subject: &[(DnType, DnValue)], sans: Vec<SanType>| {
        name(ca.issue_named(file, subject, sans))
    };
    let cn = |v: DnValue| [(DnType::CommonName, v)];
    let ia5 = |s: &str| Ia5String::try_from(s).unwrap();

    assert_eq!(
        name(ca.issue("cn", "web-1", &["web1.example", "web1b.example"])).as_deref(),
        Ok("web-1")
    );
    let san_only = name(ca.issue("san", "", &["web2.example", "web2b.example"]));
    assert_eq!(san_only.as_deref(), Ok("web2.example"));
    // Whatever string type encodes the CN, it is read.
    let types = [
        (
            "utf8",
            DnValue::Utf8String("wörker-ütf8".into()),
            "wörker-ütf8",
        ),
        (
            "printable",
            DnValue::PrintableString(PrintableString::try_from("worker-p").unwrap()),
            "worker-p",
        ),
        ("ia5", DnValue::Ia5String(ia5("worker-ia5")), "worker-ia5"),
        (
            "teletex",
            DnValue::TeletexString(TeletexString::try_from("worker-t61").unwrap()),
            "worker-t61",
        ),
        (
            "bmp",
            DnValue::BmpString(BmpString::try_from("wörker-bmp").unwrap()),
            "wörker-bmp",
        ),
        (
            "universal",
            DnValue::UniversalString(UniversalString::try_from("wörker-u").unwrap()),
            "wörker-u",
        ),
    ];
    for (file, value, want) in types {
        assert_eq!(
            named(file, &cn(value), vec![]).as_deref(),
            Ok(want),
            "{file}"
        );
    }
    // A CN that is there names the holder, even with a DNS SAN beside it.
    let bmp = DnValue::BmpString(BmpString::try_from("bmp-web").unwrap());
    let with_san = named(
        "bmp-san",
        &cn(bmp),
        vec![SanType::DnsName(ia5("other.example"))],
    );
    assert_eq!(with_san.as_deref(), Ok("bmp-web"));

    // No name: nothing, or only SANs that name no one.
    let none = |r: Result<String, super::Unnamed>| r.unwrap_err().0;
    assert!(none(name(ca.issue("none", "", &[]))).contains("no subject CN and no DNS SAN"));
    let far = SanType::IpAddress("127.0.0.1".parse().unwrap());
    assert!(none(named("ip", &[], vec![far])).contains("no DNS SAN"));
    let mail = SanType::Rfc822Name(ia5("ops@example.net"));
    assert!(none(named("mail", &[], vec![mail])).contains("no DNS SAN"));
    let uri = SanType::URI(ia5("spiffe://example.net/worker"));
    assert!(none(named("uri", &[], vec![uri])).contains("no DNS SAN"));
    // Two CNs (two RDNs, the same attribute type): which one is meant is not guessed.
    let two = [
        (DnType::CommonName, DnValue::Utf8String("ops".into())),
        (
            DnType::CustomDnType(vec![2, 5, 4, 3]),
            DnValue::Utf8String("web-1".into()),
        ),
    ];
    let two_with_san = named("two", &two, vec![SanType::DnsName(ia5("web.example"))]);
    assert!(none(two_with_san).contains("several subject CNs"));
    // A CN that does not decode does not give way to the DNS SAN: the BMPString "bmp-web"
    // above with a lone surrogate in place of its "b" (the name is only read, not verified).
    let (cert, _) = ca.issue_named(
        "bmp-bad",
        &cn(DnValue::BmpString(BmpString::try_from("bmp-web").unwrap())),
        vec![SanType::DnsName(ia5("other.example"))],
    );
    let mut der = read(&cert).to_vec();
    let at = der
        .windows(4)
        .position(|w| w == [0x1e, 14, 0, b'b'])
        .unwrap();
    der[at + 2] = 0xd8;
    let bad = rustls::pki_types::CertificateDer::from(der);
    assert!(
        cert_name(&bad)
            .unwrap_err()
            .0
            .contains("CN does not decode")
    );
    let garbage = rustls::pki_types::CertificateDer::from(vec![0x30, 0x03, 1, 2, 3]);
    assert!(
        cert_name(&garbage)
            .unwrap_err()
            .0
            .contains("does not parse")
    );
}

#[test]
fn reload_takes_a_new_certificate_and_keeps_the_old_on_a_bad_file() {
    let ca = TestCa::new("reload");
    let mut tls = server(&ca, false);
    let client = client_config(Some(&ca.ca()), None).unwrap();
    let served_cn = |tls: &ServerTls| {
        let (mut c, mut s) = (connect(&client), tls.accept().unwrap());
        handshake(&mut c, &mut s).unwrap();
        cert_name(&c.peer_certificates().unwrap()[0]).ok()
    };
    assert_eq!(served_cn(&tls).as_deref(), Some("gearwheel"));
    ca.issue("server", "gearwheel-rotated", &["localhost"]);
    tls.reload().unwrap();
    assert_eq!(served_cn(&tls).as_deref(), Some("gearwheel-rotated"));

    std::fs::write(ca.dir().join("server.key"), "not a key").unwrap();
    let err = tls.reload().unwrap_err();
    assert!(
        err.contains("server.key"),
        "the error names the file: {err}"
    );
    assert_eq!(
        served_cn(&tls).as_deref(),
        Some("gearwheel-rotated"),
        "the old one stays"
    );
}

#[test]
fn load_errors_name_the_file() {
    let ca = TestCa::new("errors");
    let (certificate, key) = ca.issue("server", "gearwheel", &["localhost"]);
    let missing = ca.dir().join("missing.pem");
    let err = ServerTls::load(TlsFiles {
        certificate: missing.clone(),
        key: key.clone(),
        ca_file: None,
    })
    .err()
    .unwrap();
    assert!(err.contains("missing.pem"), "{err}");
    let err = ServerTls::load(TlsFiles {
        certificate: key.clone(),
        key: key.clone(),
        ca_file: None,
    })
    .err()
    .unwrap();
    assert!(err.contains("no PEM certificate"), "{err}");
    let err = client_config(Some(&key), None).err().unwrap();
    assert!(err.contains("server.key"), "{err}");
    // A key that is not the certificate's is refused at load, not at the first handshake.
    let (_, other_key) = ca.issue("other", "other", &[]);
    let err = ServerTls::load(TlsFiles {
        certificate,
        key: other_key,
        ca_file: None,
    })
    .err()
    .unwrap();
    assert!(err.contains("other.key"), "{err}");
}
