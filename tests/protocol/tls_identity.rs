//! A TLS peer's identity over real loopback sockets: protected mode on every listener that
//! does not authenticate its peers, the client certificate naming the connection for the
//! ACL, and a certificate named by its one CN of any string type, or refused.

#![cfg(feature = "tls")]

use crate::support;
use crate::tls_server::{TlsConn, client_tls, curl};

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gearwheel::tls::ClientTls;
use support::*;

/// A TLS connection to `to` from the far address of the test's network namespace.
fn far_tls(to: SocketAddr, tls: &ClientTls) -> TlsConn {
    let tcp = netns::stream_from(netns::FAR, to);
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    TlsConn(tls.wrap(&to.ip().to_string(), tcp).unwrap())
}

/// Encryption is not authentication: a TLS listener that asks no client certificate is
/// guarded by protected mode as a plaintext one is; one that asks for it (--ssl-ca-file) is
/// not, its peers being authenticated.
#[test]
fn protected_mode_guards_every_listener_that_does_not_authenticate_its_peers() {
    if !netns::inside(
        module_path!(),
        "protected_mode_guards_every_listener_that_does_not_authenticate_its_peers",
    ) {
        return;
    }
    let ca = TestCa::new("srv-protected");
    let (c, k) = ca.issue("gearwheel", "gearwheel", &["127.0.0.1", netns::FAR]);
    let cert = CertFiles::new(&c, &k);
    let server = start_tls(&cert, &["-L", "0.0.0.0", "--ssl-listen", "0.0.0.0:0"]);
    let tls_port = server.listener("TLS listening on ").port();
    // The start names both listeners.
    let line = server.log_line("protected mode: no --acl", 10);
    assert!(line.contains(&format!(":{}", server.port())), "{line}");
    assert!(line.contains(&format!(":{tls_port}")), "{line}");
    // From beyond loopback, over TLS: the handshake, then the refusal, unasked.
    let tls = client_tls(&ca.ca(), None);
    let mut secure = far_tls(netns::far(tls_port), &tls);
    let (code, _) = split_error(&secure.expect(t::ERROR));
    assert_eq!(code, "PROTECTED_MODE");
    assert!(secure.echo(b"x").is_err());
    // In plaintext too; from loopback, TLS is served.
    let mut plain = Conn::from_stream(netns::stream_from(netns::FAR, netns::far(server.port())));
    let (code, _) = split_error(&plain.expect(t::ERROR));
    assert_eq!(code, "PROTECTED_MODE");
    let mut near = TlsConn::connect(netns::near(tls_port), &tls);
    assert_eq!(near.echo(b"near").unwrap(), b"near");

    // Asking for a client certificate, the TLS listener authenticates its peers: a far one
    // with a certificate of the CA is served, and the start names the plaintext one only.
    let ca_arg = ca.ca_arg();
    let server = start_tls(
        &cert,
        &[
            "-L",
            "0.0.0.0",
            "--ssl-listen",
            "0.0.0.0:0",
            "--ssl-ca-file",
            &ca_arg,
        ],
    );
    let tls_port = server.listener("TLS listening on ").port();
    let line = server.log_line("protected mode: no --acl", 10);
    assert!(!line.contains(&format!(":{tls_port}")), "{line}");
    let id = ca.client("far-client");
    let mutual = client_tls(&ca.ca(), Some((Path::new(&id.cert), Path::new(&id.key))));
    let mut secure = far_tls(netns::far(tls_port), &mutual);
    assert_eq!(secure.echo(b"over tls").unwrap(), b"over tls");
}

#[test]
fn the_client_certificate_names_the_connection_for_the_acl() {
    let ca = TestCa::new("srv-acl");
    let rig = TlsServer::start(
        &ca.ca(),
        &ca.server("gearwheel"),
        &["cn:reporter  submit,status  report.*"],
        Listen::All { https: false },
    );
    let server = &rig.server;
    let (rc, rk) = ca.issue("reporter", "reporter", &[]);
    let (oc, ok) = ca.issue("other", "other", &[]);
    let mut reporter = TlsConn::connect(server.addr, &client_tls(&ca.ca(), Some((&rc, &rk))));
    reporter.send(t::SUBMIT_JOB_BG, &[b"report.daily", b"", b"x"]);
    reporter.expect(t::JOB_CREATED);
    let mut other = TlsConn::connect(server.addr, &client_tls(&ca.ca(), Some((&oc, &ok))));
    other.send(t::SUBMIT_JOB_BG, &[b"report.daily", b"", b"x"]);
    let (code, text) = split_error(&other.expect(t::ERROR));
    assert_eq!(code, "PERMISSION_DENIED", "{text}");
    server.wait_log("cn:other", 10);
}

/// What a connection presenting `cert` (a file pair of `ca`) gets for SUBMIT_JOB_BG of
/// `func`: `Ok(JOB_CREATED or the ERROR code)`, or `Err` when the handshake was refused.
fn submit_as(
    addr: SocketAddr,
    ca: &TestCa,
    cert: &(PathBuf, PathBuf),
    func: &str,
) -> Result<String, String> {
    let mut c = TlsConn::connect(addr, &client_tls(&ca.ca(), Some((&cert.0, &cert.1))));
    c.0.write_all(&req(t::SUBMIT_JOB_BG, &[func.as_bytes(), b"", b"x"]))
        .and_then(|_| c.0.flush())
        .map_err(|e| e.to_string())?;
    match c.read().map_err(|e| e.to_string())? {
        (t::JOB_CREATED, _) => Ok("JOB_CREATED".into()),
        (t::ERROR, body) => Ok(split_error(&body).0),
        (other, _) => Ok(format!("packet {other}")),
    }
}

#[test]
fn a_certificate_is_named_by_its_one_cn_of_any_string_type_or_refused() {
    if !require(have("curl"), "curl") {
        return;
    }
    let ca = TestCa::new("srv-names");
    let rig = TlsServer::start(
        &ca.ca(),
        &ca.server("gearwheel"),
        &[
            "addr:127.0.0.0/8  submit          addr.*",
            "cn:bmp-worker     submit          bmp.*",
            "cn:t61-worker     submit          t61.*",
            "cn:ops            submit,status   *",
        ],
        Listen::All { https: true },
    );
    let (server, addr) = (&rig.server, rig.server.addr);
    let cn = |v: DnValue| [(DnType::CommonName, v)];
    let ia5 = |s: &str| Ia5String::try_from(s).unwrap();
    // A CN as a BMPString or a TeletexString is a name, not an address.
    let bmp = ca.issue_named(
        "bmp",
        &cn(DnValue::BmpString(
            BmpString::try_from("bmp-worker").unwrap(),
        )),
        vec![],
    );
    assert_eq!(
        submit_as(addr, &ca, &bmp, "bmp.job").as_deref(),
        Ok("JOB_CREATED")
    );
    assert_eq!(
        submit_as(addr, &ca, &bmp, "addr.job").as_deref(),
        Ok("PERMISSION_DENIED")
    );
    let t61 = ca.issue_named(
        "t61",
        &cn(DnValue::TeletexString(
            TeletexString::try_from("t61-worker").unwrap(),
        )),
        vec![],
    );
    assert_eq!(
        submit_as(addr, &ca, &t61, "t61.job").as_deref(),
        Ok("JOB_CREATED")
    );
    // A certificate that names no one is refused at the handshake, never served as
    // addr:127.0.0.1: only an IP, an email or a URI SAN, or two CNs.
    let unnamed = [
        (
            "ip",
            vec![],
            vec![SanType::IpAddress("127.0.0.1".parse().unwrap())],
        ),
        (
            "mail",
            vec![],
            vec![SanType::Rfc822Name(ia5("ops@example.net"))],
        ),
        (
            "uri",
            vec![],
            vec![SanType::URI(ia5("spiffe://example.net/ops"))],
        ),
        (
            "two-cns",
            vec![
                (DnType::CommonName, DnValue::Utf8String("ops".into())),
                (
                    DnType::CustomDnType(vec![2, 5, 4, 3]),
                    DnValue::Utf8String("bmp-worker".into()),
                ),
            ],
            vec![],
        ),
    ];
    for (file, subject, sans) in unnamed {
        let cert = ca.issue_named(file, &subject, sans);
        let got = submit_as(addr, &ca, &cert, "addr.job");
        assert!(got.is_err(), "{file}: served: {got:?}");
    }
    server.wait_log("TLS handshake failed (unnamed_certificate): the certificate has no subject CN and no DNS SAN", 10);
    server.wait_log(
        "TLS handshake failed (unnamed_certificate): the certificate has several subject CNs",
        10,
    );
    let (oc, ok) = ca.issue("ops", "ops", &[]);
    let https = rig.https.unwrap();
    let metrics = curl(
        &ca,
        &format!("https://127.0.0.1:{https}/metrics"),
        Some((&oc, &ok)),
    );
    let line = "gearman_tls_handshake_failures_total{reason=\"unnamed_certificate\"} 4";
    assert!(metrics.contains(line), "{line} not in\n{metrics}");
}
