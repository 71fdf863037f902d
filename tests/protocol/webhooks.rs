//! Alerts delivered without a worker: an `on_failure=` URL gets the alert POSTed by the server
//! itself. A real HTTP receiver on loopback (a std listener on a thread of the test) answers
//! with the statuses a test scripts; the alerts are raised by `/ping/ID/fail` on a heartbeat
//! entry. Delivery with its idempotency key, a retry after a 500, giving up, exactly once
//! across a kill -9, Slack's body, and a remote `http://` refused.

use crate::support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use support::*;

/// One request the receiver got: its idempotency key, its body, and the status it answered.
#[derive(Clone, Debug)]
struct Got {
    key: String,
    body: String,
    status: u16,
}

/// A webhook receiver on loopback: answers each POST with the next scripted status (200
/// once the script is spent) and keeps what it got.
struct Receiver {
    port: u16,
    got: Arc<Mutex<Vec<Got>>>,
}

impl Receiver {
    fn start(script: &[u16]) -> Receiver {
        Receiver::on(TcpListener::bind("127.0.0.1:0").unwrap(), script)
    }

    fn on(l: TcpListener, script: &[u16]) -> Receiver {
        let port = l.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.iter().copied().collect::<VecDeque<_>>()));
        let (g, sc) = (Arc::clone(&got), Arc::clone(&script));
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let status = sc.lock().unwrap().pop_front().unwrap_or(200);
                if let Some((key, body)) = serve(s, status) {
                    g.lock().unwrap().push(Got { key, body, status });
                }
            }
        });
        Receiver { port, got }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    /// Waits for the `n`th request and returns them all.
    fn wait_for(&self, n: usize) -> Vec<Got> {
        wait_until(20, &format!("{n} webhook requests"), || {
            self.got().len() >= n
        });
        self.got()
    }
}

/// Read one request (head and Content-Length body) and answer `status`.
fn serve(s: std::net::TcpStream, status: u16) -> Option<(String, String)> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    assert!(line.starts_with("POST /hook"), "{line}");
    let (mut len, mut key) = (0, String::new());
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => len = value.trim().parse().ok()?,
            "idempotency-key" => key = value.trim().to_string(),
            _ => {}
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    let mut s = s;
    let _ = write!(
        s,
        "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    Some((key, String::from_utf8(body).ok()?))
}

fn schedules_file(dir: &TempDir, text: &str) -> std::path::PathBuf {
    let p = dir.path("s.cron");
    std::fs::write(&p, text).unwrap();
    p
}

/// A failed run of `beat`: its alert goes to the entry's `on_failure=`.
fn fail(s: &HttpServer) {
    let r = s.call("POST", "/ping/beat/fail", &[], b"disk full");
    assert_eq!(r.status, 200, "{}", r.text());
}

fn metric(s: &HttpServer, line: &str) -> bool {
    s.get("/metrics").text().lines().any(|l| l == line)
}

#[test]
fn an_alert_is_posted_with_its_idempotency_key() {
    let rx = Receiver::start(&[]);
    let dir = TempDir::new("hook-deliver");
    let file = schedules_file(
        &dir,
        &format!(
            "@hourly beat expect=ping on_failure={}\n",
            rx.url("/hook/T0/secret")
        ),
    );
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    fail(&s);
    let got = rx.wait_for(1);
    let g = &got[0];
    assert!(g.key.starts_with("H:") && g.key.contains(":hook:"), "{g:?}");
    assert!(
        g.body
            .starts_with("{\"event\":\"failure\",\"entry\":\"beat\"")
            && g.body.contains("\"outcome\":\"failed\"")
            && g.body
                .contains("\"error\":\"failed (ping /fail): disk full\"")
            && g.body
                .ends_with(&format!(",\"idempotency_key\":\"{}\"}}", g.key)),
        "{g:?}"
    );
    wait_until(10, "the delivery counted", || {
        metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"delivered\"} 1",
        )
    });
    assert!(metric(&s, "gearwheel_webhook_queue 0"));
    // The log comes through the server's stderr pipe: wait for the line, then read it all.
    s.server.wait_log(&format!("alert {} delivered", g.key), 10);
    let log = s.server.log();
    assert!(
        !log.contains("secret"),
        "the URL's path is never logged:\n{log}"
    );
}

#[test]
fn a_500_is_tried_again_after_its_backoff() {
    let rx = Receiver::start(&[500]);
    let dir = TempDir::new("hook-retry");
    let file = schedules_file(
        &dir,
        &format!("@hourly beat expect=ping on_failure={}\n", rx.url("/hook")),
    );
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    fail(&s);
    let got = rx.wait_for(2);
    assert_eq!((got[0].status, got[1].status), (500, 200), "{got:?}");
    assert_eq!(got[0].key, got[1].key, "the same alert, the same key");
    assert_eq!(got[0].body, got[1].body);
    wait_until(10, "the delivery counted", || {
        metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"retried\"} 1",
        ) && metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"delivered\"} 1",
        )
    });
}

#[test]
fn a_hook_that_keeps_failing_is_given_up() {
    let rx = Receiver::start(&[500, 503, 500, 500]);
    let dir = TempDir::new("hook-give-up");
    let file = schedules_file(
        &dir,
        &format!("@hourly beat expect=ping on_failure={}\n", rx.url("/hook")),
    );
    let s = HttpServer::start(&[
        "--schedules",
        file.to_str().unwrap(),
        "--webhook-attempts",
        "2",
    ]);
    fail(&s);
    wait_until(20, "the alert given up", || {
        metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"given_up\"} 1",
        )
    });
    let got = rx.got();
    assert_eq!(
        got.iter().map(|g| g.status).collect::<Vec<_>>(),
        [500, 503],
        "two attempts, then no more"
    );
    assert!(metric(&s, "gearwheel_webhook_queue 0"));
    s.server
        .wait_log("given up after 2 attempts: answered 503", 10);
    let listing = s.gearman().admin("show webhooks", true);
    let row: Vec<&str> = listing.lines().next().unwrap().split('\t').collect();
    assert_eq!(
        (row[0], row[1], row[3]),
        (
            format!("http://127.0.0.1:{}", rx.port).as_str(),
            "0",
            "given up: answered 503"
        ),
        "{listing}"
    );
    // A positive barrier before saying nothing more came: the next alert is delivered alone.
    fail(&s);
    let got = rx.wait_for(3);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_ne!(got[2].key, got[0].key);
}

#[test]
fn an_alert_queued_before_a_kill_9_is_delivered_once_after_the_restart() {
    let rx = Receiver::start(&[500]);
    let dir = TempDir::new("hook-kill9");
    let data = dir.path("data");
    let file = schedules_file(
        &dir,
        &format!("@hourly beat expect=ping on_failure={}\n", rx.url("/hook")),
    );
    let args = [
        "--schedules",
        file.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--fsync",
        "always",
    ];
    let s = HttpServer::start(&args);
    fail(&s);
    // Its first attempt failed: the alert waits for its backoff, journalled.
    let first = rx.wait_for(1);
    assert_eq!(first[0].status, 500);
    s.server.signal(libc::SIGKILL);
    drop(s);
    let s = HttpServer::start(&args);
    let got = rx.wait_for(2);
    assert_eq!(got[1].status, 200);
    assert_eq!(got[1].key, first[0].key, "the same alert after the restart");
    wait_until(10, "the delivery counted", || {
        metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"delivered\"} 1",
        )
    });
    // Once delivered it is done for good: a restart sends it no more. The barrier: a new
    // alert after the restart arrives, and nothing came before it.
    s.server.signal(libc::SIGKILL);
    drop(s);
    let s = HttpServer::start(&args);
    fail(&s);
    let got = rx.wait_for(3);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_ne!(got[2].key, first[0].key, "{got:?}");
    let delivered: Vec<_> = got
        .iter()
        .filter(|g| g.key == first[0].key && g.status == 200)
        .collect();
    assert_eq!(delivered.len(), 1, "exactly once: {got:?}");
}

#[test]
fn slack_gets_its_text_body() {
    let rx = Receiver::start(&[]);
    let dir = TempDir::new("hook-slack");
    let file = schedules_file(
        &dir,
        &format!(
            "ALERT_FORMAT=slack\nON_FAILURE={}\n@hourly beat expect=ping\n",
            rx.url("/hook/services/T/B/x")
        ),
    );
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    fail(&s);
    let got = rx.wait_for(1);
    let b = &got[0].body;
    assert!(
        b.starts_with("{\"text\":\"gearwheel: schedule `beat` (beat) failed for the run at 20")
            && b.contains(": failed (ping /fail): disk full (H:")
            && b.ends_with(")\"}"),
        "{b}"
    );
    assert!(!got[0].key.is_empty(), "the key in its header");
}

#[test]
fn a_remote_http_url_is_refused_with_its_line_and_column() {
    let dir = TempDir::new("hook-remote");
    let file = schedules_file(&dir, "@hourly beat expect=ping\n");
    let s = HttpServer::start(&["--schedules", file.to_str().unwrap()]);
    std::fs::write(
        &file,
        "# alerts\n@hourly beat expect=ping on_failure=http://alerts.example.com/hook/s3cret\n",
    )
    .unwrap();
    let mut admin = s.gearman();
    let r = admin.admin("reload schedules", false);
    assert!(
        r.starts_with("ERR SCHEDULE_ERROR ") && r.contains(":2:37:"),
        "{r}"
    );
    assert!(r.contains("loopback"), "{r}");
    let log = s.server.log();
    assert!(
        !log.contains("s3cret"),
        "a URL's path is never logged:\n{log}"
    );
}

/// An `https://` receiver: the test CA's certificate for localhost, rustls on the test's
/// thread; the server verifies it against `--webhook-ca-file`, read at start-up.
#[cfg(feature = "tls")]
#[test]
fn an_https_receiver_verified_against_the_ca_gets_the_alert() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let ca = TestCa::new("webhook");
    let files = ca.server("localhost");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(&files.key).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    );
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let conn = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match tls.read(&mut b) {
                    Ok(1) => head.push(b[0]),
                    _ => break,
                }
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            if tls.read_exact(&mut body).is_err() {
                continue;
            }
            let _ = tls.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            tls.conn.send_close_notify();
            let _ = tls.flush();
            g.lock()
                .unwrap()
                .push((head, String::from_utf8_lossy(&body).to_string()));
        }
    });
    let dir = TempDir::new("hook-https");
    let file = schedules_file(
        &dir,
        &format!("@hourly beat expect=ping on_failure=https://localhost:{port}/hook/x\n"),
    );
    // The bundle is read at start-up, not at the first delivery (in the loop): gone by then,
    // it is not missed.
    let bundle = dir.path("ca.pem");
    std::fs::copy(ca.ca(), &bundle).unwrap();
    let s = HttpServer::start(&[
        "--schedules",
        file.to_str().unwrap(),
        "--webhook-ca-file",
        bundle.to_str().unwrap(),
    ]);
    s.server.wait_log("schedules: 1 entry", 10);
    std::fs::remove_file(&bundle).unwrap();
    fail(&s);
    wait_until(20, "the https delivery counted", || {
        metric(
            &s,
            "gearwheel_webhook_deliveries_total{outcome=\"delivered\"} 1",
        )
    });
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let (head, body) = &got[0];
    assert!(
        head.starts_with("POST /hook/x HTTP/1.1\r\n")
            && head.contains(&format!("Host: localhost:{port}\r\n")),
        "{head}"
    );
    assert!(body.contains("\"outcome\":\"failed\""), "{body}");
}

/// `GET /webhooks`: each target redacted to scheme, host and port (never its path or query),
/// its alerts waiting and its last try's outcome and time, after a delivery and a give-up.
#[test]
fn get_webhooks_shows_each_target_redacted_with_its_last_outcome() {
    let ok = Receiver::start(&[]);
    let bad = Receiver::start(&[500, 503]);
    let dir = TempDir::new("hook-view");
    let file = schedules_file(
        &dir,
        &format!(
            "@hourly beat expect=ping on_failure={}\n@hourly beat2 expect=ping on_failure={}\n",
            ok.url("/hook/T0/secret?token=sesame"),
            bad.url("/hook/hidden"),
        ),
    );
    let s = HttpServer::start(&[
        "--schedules",
        file.to_str().unwrap(),
        "--webhook-attempts",
        "2",
    ]);
    let view = |s: &HttpServer| {
        let r = s.get("/webhooks");
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.text();
        for hidden in ["secret", "sesame", "/hook", "hidden"] {
            assert!(!text.contains(hidden), "{hidden} shown: {text}");
        }
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    assert_eq!(view(&s)["webhooks"], serde_json::json!([]), "no try yet");
    fail(&s);
    let r = s.call("POST", "/ping/beat2/fail", &[], b"disk full");
    assert_eq!(r.status, 200, "{}", r.text());
    ok.wait_for(1);
    wait_until(20, "one delivered, one given up", || {
        let v = view(&s);
        v["delivered"] == 1 && v["given_up"] == 1
    });
    let v = view(&s);
    assert_eq!(v["queued"], 0, "{v}");
    let rows = v["webhooks"].as_array().unwrap();
    let row = |port: u16| {
        let url = format!("http://127.0.0.1:{port}");
        rows.iter()
            .find(|r| r["url"] == url.as_str())
            .unwrap_or_else(|| panic!("{url} not in {v}"))
    };
    let (d, g) = (row(ok.port), row(bad.port));
    assert_eq!(
        (&d["queued"], &d["outcome"]),
        (&0.into(), &"delivered".into())
    );
    assert_eq!(
        (&g["queued"], &g["outcome"]),
        (&0.into(), &"given up: answered 503".into())
    );
    for r in [d, g] {
        assert!(
            r["last_try"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{r}"
        );
    }
    assert_eq!(rows.len(), 2, "{v}");
}
