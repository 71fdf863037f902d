//! The TLS server (`serve --ssl`, `--ssl-listen`, `--ssl-ca-file`) over real loopback sockets,
//! with a throwaway CA made by rcgen: Gearman round trips through a rustls client, mutual TLS
//! required and refused, the handshake timeout, bytes that are not TLS on a TLS port and a TLS
//! client on a plaintext one, TLS listeners beside plaintext ones, HTTPS with curl, the
//! certificate re-read on SIGHUP, and `gearwheel work/submit --ssl` end to end. A peer's
//! certificate as its identity is tls_identity.rs; long HTTPS answers, tls_https.rs.
#![cfg(feature = "tls")]

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use gearwheel::tls::{ClientStream, ClientTls};
use support::*;

/// A TLS client trusting `ca`, presenting `identity` (certificate, key) when given.
pub(crate) fn client_tls(ca: &Path, identity: Option<(&Path, &Path)>) -> ClientTls {
    let (c, k) = identity.unzip();
    ClientTls::from_flags(true, Some(ca), c, k)
        .unwrap()
        .unwrap()
}

/// A Gearman connection over TLS.
pub(crate) struct TlsConn(pub(crate) ClientStream);

impl TlsConn {
    pub(crate) fn connect(addr: SocketAddr, tls: &ClientTls) -> TlsConn {
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        TlsConn(tls.wrap(&addr.ip().to_string(), tcp).unwrap())
    }

    pub(crate) fn send(&mut self, ptype: u32, args: &[&[u8]]) {
        self.0.write_all(&req(ptype, args)).unwrap();
        self.0.flush().unwrap();
    }

    /// The next packet: (type, body); an error when the server refused or closed.
    pub(crate) fn read(&mut self) -> std::io::Result<(u32, Vec<u8>)> {
        let mut head = [0u8; 12];
        self.0.read_exact(&mut head)?;
        assert_eq!(&head[..4], b"\0RES");
        let ptype = u32::from_be_bytes(head[4..8].try_into().unwrap());
        let len = u32::from_be_bytes(head[8..12].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len];
        self.0.read_exact(&mut body)?;
        Ok((ptype, body))
    }

    pub(crate) fn expect(&mut self, ptype: u32) -> Vec<u8> {
        let (got, body) = self.read().unwrap();
        assert_eq!(got, ptype, "body {:?}", String::from_utf8_lossy(&body));
        body
    }

    pub(crate) fn echo(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        self.0.write_all(&req(t::ECHO_REQ, &[data]))?;
        self.0.flush()?;
        self.read().map(|(_, b)| b)
    }

    /// The name on the server's certificate (after the handshake, run here if need be).
    pub(crate) fn server_name(&mut self) -> String {
        let s = &mut self.0;
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        let certs = s.conn.peer_certificates().unwrap();
        gearwheel::tls::cert_name(&certs[0]).unwrap()
    }
}

/// Waits until the server closes `tcp` (EOF or reset), failing after `secs`.
fn wait_closed(tcp: &mut TcpStream, secs: u64) -> Duration {
    let started = Instant::now();
    tcp.set_read_timeout(Some(Duration::from_secs(secs)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) if started.elapsed() < Duration::from_secs(secs) => {
                return started.elapsed();
            }
            Ok(_) => continue,
            _ => panic!("not closed within {secs} s"),
        }
    }
}

/// A worker and a client over TLS: the job, its result.
fn round_trip(addr: SocketAddr, worker: &ClientTls, client: &ClientTls) {
    let mut w = TlsConn::connect(addr, worker);
    w.send(t::CAN_DO, &[b"upper"]);
    let mut c = TlsConn::connect(addr, client);
    c.send(t::SUBMIT_JOB, &[b"upper", b"", b"hello over tls"]);
    let handle = c.expect(t::JOB_CREATED);
    w.send(t::GRAB_JOB, &[]);
    let assign = w.expect(t::JOB_ASSIGN);
    let parts: Vec<&[u8]> = assign.splitn(3, |&b| b == 0).collect();
    assert_eq!(parts, [&handle[..], b"upper", b"hello over tls"]);
    w.send(t::WORK_COMPLETE, &[&handle, b"HELLO OVER TLS"]);
    let done = c.expect(t::WORK_COMPLETE);
    assert_eq!(done, [&handle[..], b"\0HELLO OVER TLS"].concat());
}

#[test]
fn a_gearman_round_trip_over_tls() {
    let ca = TestCa::new("srv-rt");
    let cert = ca.server("gearwheel");
    let server = start_tls(&cert, &["--ssl"]);
    let tls = client_tls(&ca.ca(), None);
    round_trip(server.addr, &tls, &tls);
    let mut c = TlsConn::connect(server.addr, &tls);
    // A reply larger than the session's 64 KiB plaintext bound comes whole.
    let big = vec![b'x'; 1 << 20];
    assert_eq!(c.echo(&big).unwrap(), big);
    assert_eq!(c.server_name(), "gearwheel");
}

#[test]
fn mutual_tls_requires_a_certificate_from_the_ca() {
    if !require(have("curl"), "curl") {
        return;
    }
    let ca = TestCa::new("srv-mtls");
    let cert = ca.server("gearwheel");
    let server = start_tls(
        &cert,
        &["--ssl", "--ssl-ca-file", &ca.ca_arg(), "--http-port", "0"],
    );
    // No client certificate: refused.
    let mut bare = TlsConn::connect(server.addr, &client_tls(&ca.ca(), None));
    assert!(bare.echo(b"x").is_err(), "served without a certificate");
    // A certificate from another CA: refused.
    let other = TestCa::new("srv-mtls-other");
    let (oc, ok) = other.issue("stranger", "stranger", &[]);
    let mut stranger = TlsConn::connect(server.addr, &client_tls(&ca.ca(), Some((&oc, &ok))));
    assert!(stranger.echo(b"x").is_err(), "served a foreign certificate");
    // A certificate the CA signed: served, and named in the log.
    let (wc, wk) = ca.issue("worker", "worker-7", &[]);
    let good = client_tls(&ca.ca(), Some((&wc, &wk)));
    let mut conn = TlsConn::connect(server.addr, &good);
    assert_eq!(conn.echo(b"ping").unwrap(), b"ping");
    server.wait_log("client certificate \"worker-7\"", 10);
    server.wait_log("TLS handshake failed (no_client_certificate)", 10);
    server.wait_log("TLS handshake failed (bad_certificate)", 10);
    // The refusals are counted, over HTTPS with the same client certificate.
    let http = http_port(&server);
    let metrics = curl(
        &ca,
        &format!("https://127.0.0.1:{http}/metrics"),
        Some((&wc, &wk)),
    );
    for line in [
        "gearman_tls_handshake_failures_total{reason=\"no_client_certificate\"} 1",
        "gearman_tls_handshake_failures_total{reason=\"bad_certificate\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    assert!(metrics.contains("gearman_tls_connections "), "{metrics}");
    // Without a client certificate curl gets nothing.
    let o = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert", &ca.ca_arg()])
        .arg(format!("https://127.0.0.1:{http}/status"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "curl without a certificate was served");
}

pub(crate) fn http_port(server: &Server) -> u16 {
    http_addr(server).port()
}

/// `curl` over HTTPS trusting the test CA; the body (curl must succeed).
pub(crate) fn curl(ca: &TestCa, url: &str, identity: Option<(&Path, &Path)>) -> String {
    let mut c = std::process::Command::new("curl");
    c.args([
        "-sS",
        "--fail",
        "--max-time",
        "10",
        "--cacert",
        &ca.ca_arg(),
    ]);
    if let Some((cert, key)) = identity {
        c.args(["--cert", &path_arg(cert), "--key", &path_arg(key)]);
    }
    let o = c.arg(url).output().expect("curl");
    assert!(
        o.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn https_status_with_curl() {
    if !require(have("curl"), "curl") {
        return;
    }
    let ca = TestCa::new("srv-https");
    let cert = ca.server("gearwheel");
    let server = start_tls(&cert, &["--ssl", "--http-port", "0"]);
    let port = http_port(&server);
    let body = curl(&ca, &format!("https://127.0.0.1:{port}/status"), None);
    assert!(body.contains("\"connections\""), "{body}");
    // TLS 1.2 too (python gear turns 1.3 off).
    let o = std::process::Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "--tls-max", "1.2"])
        .args(["--cacert", &ca.ca_arg()])
        .arg(format!("https://127.0.0.1:{port}/status"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Plain HTTP on the HTTPS port is not TLS: closed, nothing served.
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = tcp.read_to_end(&mut got);
    assert!(
        !got.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn a_silent_client_is_closed_after_the_handshake_timeout() {
    let ca = TestCa::new("srv-timeout");
    let cert = ca.server("gearwheel");
    let server = start_tls(&cert, &["--ssl", "--ssl-handshake-timeout", "1"]);
    let mut silent = TcpStream::connect(server.addr).unwrap();
    let waited = wait_closed(&mut silent, 20);
    assert!(
        waited >= Duration::from_millis(900),
        "closed after {waited:?}"
    );
    server.wait_log("no TLS handshake within 1000 ms", 10);
    // A client that sends half a ClientHello and stops is closed the same way.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    wait_closed(&mut slow, 20);
    // The server goes on serving.
    let tls = client_tls(&ca.ca(), None);
    assert_eq!(
        TlsConn::connect(server.addr, &tls).echo(b"ok").unwrap(),
        b"ok"
    );
}

#[test]
fn bytes_that_are_not_tls_on_a_tls_port_are_closed_at_once() {
    let ca = TestCa::new("srv-garbage");
    let cert = ca.server("gearwheel");
    // A long handshake timeout: a close within it is the refusal, not the timeout.
    let server = start_tls(&cert, &["--ssl", "--ssl-handshake-timeout", "60"]);
    let inputs: [&[u8]; 3] = [
        b"status\r\n",
        &req(t::ECHO_REQ, &[b"plaintext gearman"]),
        &[0xff; 64],
    ];
    for bytes in inputs {
        let mut tcp = TcpStream::connect(server.addr).unwrap();
        tcp.write_all(bytes).unwrap();
        let waited = wait_closed(&mut tcp, 20);
        assert!(waited < Duration::from_secs(10), "closed after {waited:?}");
    }
    server.wait_log("TLS handshake failed (not_tls)", 10);
    let tls = client_tls(&ca.ca(), None);
    assert_eq!(
        TlsConn::connect(server.addr, &tls).echo(b"ok").unwrap(),
        b"ok"
    );
}

#[test]
fn a_tls_client_on_a_plaintext_port_is_closed() {
    let ca = TestCa::new("srv-plainport");
    let server = Server::start(&[]);
    let tls = client_tls(&ca.ca(), None);
    let mut c = TlsConn::connect(server.addr, &tls);
    assert!(
        c.echo(b"x").is_err(),
        "a TLS client was served in plaintext"
    );
    server.wait_log("a TLS handshake on a plaintext Gearman port", 10);
    // No slot is left behind: `workers` lists one connection, the one asking.
    let mut plain = server.connect();
    wait_until(10, "the TLS client's slot to be freed", || {
        plain.admin("workers", true).lines().count() == 1
    });
    let mut more = server.connect();
    more.send_req(t::ECHO_REQ, &[b"still here"]);
    assert_eq!(more.expect(t::ECHO_RES), b"still here");
}

#[test]
fn ssl_listen_beside_a_plaintext_listener() {
    let ca = TestCa::new("srv-listen");
    let cert = ca.server("gearwheel");
    let server = start_tls(&cert, &["-L", "127.0.0.1", "--ssl-listen", "127.0.0.1:0"]);
    let tls_addr = server.listener("TLS listening on ");
    assert_ne!(tls_addr, server.addr);
    // A plaintext client submits; a TLS worker takes the job.
    let tls = client_tls(&ca.ca(), None);
    let mut w = TlsConn::connect(tls_addr, &tls);
    w.send(t::CAN_DO, &[b"mixed"]);
    let mut c = server.connect();
    let handle = c.submit(t::SUBMIT_JOB, "mixed", "", b"across");
    w.send(t::GRAB_JOB, &[]);
    let assign = w.expect(t::JOB_ASSIGN);
    assert!(assign.ends_with(b"\0mixed\0across"));
    w.send(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    let done = c.expect(t::WORK_COMPLETE);
    assert!(done.ends_with(b"\0done"));
    // Each port speaks only its own: TLS on the plaintext one is refused, and plaintext on
    // the TLS one.
    let mut wrong = TlsConn::connect(server.addr, &tls);
    assert!(wrong.echo(b"x").is_err());
    let mut plain_on_tls = TcpStream::connect(tls_addr).unwrap();
    plain_on_tls.write_all(&req(t::ECHO_REQ, &[b"x"])).unwrap();
    wait_closed(&mut plain_on_tls, 20);
}

#[test]
fn sighup_reloads_the_certificate_and_a_broken_file_keeps_the_old_one() {
    let ca = TestCa::new("srv-reload");
    let first = ca.server("first");
    let server = start_tls(&first, &["--ssl"]);
    let tls = client_tls(&ca.ca(), None);
    assert_eq!(TlsConn::connect(server.addr, &tls).server_name(), "first");
    // Rotate: the new certificate and key replace the files' contents.
    let second = ca.server("second");
    std::fs::copy(&second.cert, &first.cert).unwrap();
    std::fs::copy(&second.key, &first.key).unwrap();
    server.signal(libc::SIGHUP);
    server.wait_log("TLS certificate, key and CA files read again", 10);
    assert_eq!(TlsConn::connect(server.addr, &tls).server_name(), "second");
    // A broken file: the log says why, and the last good certificate stays.
    std::fs::write(&first.cert, "not a certificate\n").unwrap();
    server.signal(libc::SIGHUP);
    server.wait_log("TLS files not reloaded, the current certificate stays", 10);
    assert_eq!(TlsConn::connect(server.addr, &tls).server_name(), "second");
}

#[test]
fn start_errors_for_missing_files_and_flag_combinations() {
    let ca = TestCa::new("srv-errors");
    let cert = ca.server("gearwheel");
    let missing = path_arg(&ca.dir().join("missing.pem"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--ssl"],
            "--ssl needs --ssl-certificate PEM and --ssl-key PEM",
        ),
        (
            vec!["--ssl-certificate", &cert.cert, "--ssl-key", &cert.key],
            "need --ssl",
        ),
        (
            vec![
                "--ssl",
                "--ssl-certificate",
                &missing,
                "--ssl-key",
                &cert.key,
            ],
            "missing.pem",
        ),
        (
            vec![
                "--ssl",
                "--ssl-certificate",
                &cert.key,
                "--ssl-key",
                &cert.key,
            ],
            "no PEM certificate",
        ),
        (
            vec![
                "--ssl",
                "--ssl-listen",
                "127.0.0.1:0",
                "--ssl-certificate",
                &cert.cert,
                "--ssl-key",
                &cert.key,
            ],
            "give one or the other",
        ),
        (
            vec!["--ssl", "--ssl-handshake-timeout", "0"],
            "--ssl-handshake-timeout must be at least 1 second",
        ),
    ];
    for (flags, said) in cases {
        let mut args = vec!["serve", "-p", "0"];
        args.extend_from_slice(&flags);
        let o = gw(&args, None, 20);
        assert_eq!(o.code(), Some(2), "{flags:?}: {o:?}");
        assert!(o.stderr.contains(said), "{flags:?}: {o:?}");
    }
}

/// A self-signed X.509 version 1 certificate and its key in `dir`, made the way the mistake is
/// made: `openssl x509 -req` without an extension file.
fn version_1_certificate(dir: &Path) -> Option<(String, String)> {
    if !have("openssl") {
        eprintln!("SKIP: openssl is not installed");
        return None;
    }
    let (cert, key, csr) = (dir.join("v1.pem"), dir.join("v1.key"), dir.join("v1.csr"));
    let p = |p: &Path| p.to_str().unwrap().to_string();
    run(
        "openssl req",
        std::process::Command::new("openssl").args([
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
        ]),
        None,
        20,
    );
    run(
        "openssl x509",
        std::process::Command::new("openssl").args([
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-signkey",
            &p(&key),
            "-days",
            "30",
            "-out",
            &p(&cert),
        ]),
        None,
        20,
    );
    Some((p(&cert), p(&key)))
}

#[test]
fn a_version_1_certificate_and_a_key_of_another_are_refused_in_words() {
    let ca = TestCa::new("srv-words");
    let a = ca.server("gearwheel");
    let b = ca.client("other");
    // The key of another certificate: both files named, and how to check a pair.
    let o = gw(
        &[
            "serve",
            "-p",
            "0",
            "--ssl",
            "--ssl-certificate",
            &a.cert,
            "--ssl-key",
            &b.key,
        ],
        None,
        20,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
    let want = format!("{} is not the private key of {}", b.key, a.cert);
    assert!(o.stderr.contains(&want), "{}", o.stderr);
    assert!(!o.stderr.contains("KeyMismatch"), "{}", o.stderr);
    let Some((v1, v1_key)) = version_1_certificate(ca.dir()) else {
        return;
    };
    // The server's own certificate, and a client's.
    for args in [
        &[
            "serve",
            "-p",
            "0",
            "--ssl",
            "--ssl-certificate",
            &v1,
            "--ssl-key",
            &v1_key,
        ][..],
        &[
            "submit",
            "--ssl",
            "--ssl-ca-file",
            &ca.ca_arg(),
            "--ssl-certificate",
            &v1,
            "--ssl-key",
            &v1_key,
            "-s",
            "127.0.0.1:1",
            "-f",
            "f",
            "x",
        ],
    ] {
        let o = gw(args, None, 20);
        assert_eq!(o.code(), Some(2), "{args:?}: {o:?}");
        let want = format!("{v1}: an X.509 version 1 certificate");
        assert!(o.stderr.contains(&want), "{}", o.stderr);
        assert!(
            o.stderr.contains("re-issue it as version 3") && o.stderr.contains("docs/security.md"),
            "{}",
            o.stderr
        );
        assert!(!o.stderr.contains("UnsupportedCertVersion"), "{}", o.stderr);
    }
}

#[test]
fn gearwheel_work_and_submit_over_mutual_tls() {
    let ca = TestCa::new("srv-cli");
    let cert = ca.server("gearwheel");
    let cafile = ca.ca_arg();
    let server = start_tls(&cert, &["--ssl", "--ssl-ca-file", &cafile]);
    let addr = format!("127.0.0.1:{}", server.port());
    let (worker, client) = (ca.client("worker-1"), ca.client("client-1"));
    let _worker = tls_upper_worker(&addr, &cafile, &worker);
    server.wait_log("client certificate \"worker-1\"", 20);
    assert_tls_submit_upper(&addr, &cafile, &client);
    // Without a client certificate the server refuses the command.
    let o = gw(
        &[
            "submit",
            "-s",
            &addr,
            "-f",
            "up",
            "--ssl",
            "--ssl-ca-file",
            &cafile,
            "x",
        ],
        None,
        20,
    );
    assert_ne!(o.code(), Some(0), "{o:?}");
}
