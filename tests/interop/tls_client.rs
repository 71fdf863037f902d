//! `gearwheel work`, `submit` and `admin --ssl` against a real TLS server: stunnel4 requiring a
//! client certificate (mutual TLS) in front of a plaintext gearwheel, with a test CA made by
//! rcgen. A worker and a client each present their own certificate; a client without one, and
//! a client that does not trust the server's CA, are refused.
#![cfg(feature = "tls")]

use crate::support;

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// stunnel in the foreground on a free loopback port, forwarding to `to`; killed on drop.
struct Stunnel {
    child: std::process::Child,
    port: u16,
}

impl Drop for Stunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stunnel(ca: &TestCa, to: std::net::SocketAddr) -> Stunnel {
    let (cert, key) = ca.issue("server", "gearwheel", &["localhost"]);
    // stunnel binds by itself: take a free port and hand it over (a tiny race, retried).
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = ca.dir().join("stunnel.conf");
        std::fs::write(
            &conf,
            format!(
                "foreground = yes\npid =\n[gearman]\naccept = 127.0.0.1:{port}\nconnect = {to}\n\
                 cert = {}\nkey = {}\nCAfile = {}\nverify = 2\n",
                cert.display(),
                key.display(),
                ca.ca().display()
            ),
        )
        .unwrap();
        let child = Command::new("stunnel4")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("stunnel4");
        let mut tunnel = Stunnel { child, port };
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return tunnel;
            }
            if let Ok(Some(_)) = tunnel.child.try_wait() {
                break; // the port was taken meanwhile: try another
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("stunnel4 did not start");
}

#[test]
fn work_submit_and_admin_over_mutual_tls() {
    if !support::require(support::have("stunnel4"), "stunnel4") {
        return;
    }
    let ca = TestCa::new("cli");
    let s = Server::start(&[]);
    let tunnel = stunnel(&ca, s.addr);
    let addr = format!("localhost:{}", tunnel.port);
    let cafile = ca.ca_arg();
    let (worker, client) = (ca.client("worker-1"), ca.client("client-1"));
    let _w = tls_upper_worker(&addr, &cafile, &worker);
    assert_tls_submit_upper(&addr, &cafile, &client);

    // No client certificate: the server's handshake refuses it, and the command says so.
    let o = gw(
        &[
            "admin",
            "-s",
            &addr,
            "--ssl",
            "--ssl-ca-file",
            &cafile,
            "status",
        ],
        None,
        10,
    );
    assert_ne!(o.code(), Some(0), "{o:?}");
    // A server this client's CA did not sign is not trusted.
    let other = TestCa::new("cli-other");
    let other_ca = other.ca_arg();
    let mut untrusting = vec!["admin", "-s", &addr];
    untrusting.extend(tls_flags(&other_ca, &client));
    untrusting.push("status");
    let o = gw(&untrusting, None, 10);
    assert_ne!(o.code(), Some(0), "{o:?}");
    assert!(
        o.stderr.contains("certificate") || o.stderr.contains("Certificate"),
        "{o:?}"
    );
    // The flags are checked before any connection.
    let o = gw(
        &["admin", "-s", &addr, "--ssl-key", &client.key, "status"],
        None,
        10,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
    assert!(o.stderr.contains("need --ssl"), "{o:?}");
    let o = gw(
        &[
            "admin",
            "-s",
            &addr,
            "--ssl",
            "--ssl-certificate",
            &client.cert,
            "status",
        ],
        None,
        10,
    );
    assert_eq!(o.code(), Some(2), "{o:?}");
}
