//! The HTTP listener refuses what a web page could make a browser send: a Host that is not the
//! server's (DNS rebinding), a request a browser marks as from another site, an Origin that is
//! not the server's own. Scripts and curl (the listen address as Host, no Origin, no
//! Sec-Fetch-Site) are served as ever. Every refusal is logged and counted in /metrics. Live
//! data (the JSON endpoints, /metrics) is never cached nor sniffed.

use crate::support;

use support::*;

/// A request with exactly these headers (no Host unless given).
fn raw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut v = format!("{method} {path} HTTP/1.1\r\n");
    for (k, val) in headers {
        v.push_str(&format!("{k}: {val}\r\n"));
    }
    v.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut v = v.into_bytes();
    v.extend_from_slice(body);
    v
}

fn send(s: &HttpServer, bytes: &[u8]) -> Resp {
    let mut h = s.connect();
    h.send(bytes);
    h.read()
}

fn metric(s: &HttpServer, reason: &str) -> u64 {
    let text = s.get("/metrics").text();
    let key = format!("gearman_http_refused_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .unwrap_or_else(|| panic!("{key} in {text}"))
        .parse()
        .unwrap()
}

#[test]
fn scripts_are_served_and_a_rebound_host_is_refused() {
    let s = HttpServer::start(&[]);
    let own = s.http.to_string();
    // curl's request: the address it connects to as Host.
    for host in [own.as_str(), "127.0.0.1", "localhost"] {
        let r = send(&s, &raw("GET", "/healthz", &[("Host", host)], b""));
        assert_eq!(r.status, 200, "{host}");
    }
    // HTTP/1.0 without a Host at all.
    let mut h = s.connect();
    h.send(b"GET /healthz HTTP/1.0\r\n\r\n");
    assert_eq!(h.read().status, 200);
    // A page on rebound.example whose name now points at 127.0.0.1 reads /status: refused.
    let r = send(
        &s,
        &raw("GET", "/status", &[("Host", "rebound.example:8080")], b""),
    );
    assert_eq!(r.status, 403);
    assert!(r.text().contains("--http-allowed-host"), "{}", r.text());
    let r = send(
        &s,
        &raw("POST", "/reboot", &[("Host", "rebound.example")], b"x"),
    );
    assert_eq!(r.status, 403);
    // Two Host headers: 400, never the first checked and the second used.
    let r = send(
        &s,
        &raw(
            "GET",
            "/status",
            &[("Host", &own), ("Host", "rebound.example")],
            b"",
        ),
    );
    assert_eq!(r.status, 400);
    assert_eq!(metric(&s, "host"), 2);
    assert!(
        !s.get("/status").text().contains("reboot"),
        "no job was submitted"
    );
    s.server
        .wait_log("403 (host): Host \"rebound.example:8080\"", 3);
}

#[test]
fn browser_requests_from_another_site_or_origin_are_refused() {
    let s = HttpServer::start(&[]);
    let own = s.http.to_string();
    let host = ("Host", own.as_str());
    // <img src="http://127.0.0.1:8080/reboot"> on another site.
    let r = send(
        &s,
        &raw(
            "GET",
            "/reboot",
            &[host, ("Sec-Fetch-Site", "cross-site")],
            b"",
        ),
    );
    assert_eq!(r.status, 403);
    // Another port of the same host is another origin too.
    let r = send(
        &s,
        &raw(
            "GET",
            "/reboot",
            &[host, ("Sec-Fetch-Site", "same-site")],
            b"",
        ),
    );
    assert_eq!(r.status, 403);
    // A form posted from another origin, by a browser that sends no Sec-Fetch-Site.
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let r = send(
            &s,
            &raw("POST", "/reboot", &[host, ("Origin", origin)], b"x"),
        );
        assert_eq!(r.status, 403, "{origin}");
    }
    assert_eq!(metric(&s, "cross_site"), 2);
    assert_eq!(metric(&s, "origin"), 3);
    assert!(!s.get("/status").text().contains("reboot"));
    // The server's own pages (the console to come) are served.
    let origin = format!("http://{own}");
    let r = send(
        &s,
        &raw(
            "POST",
            "/later",
            &[
                host,
                ("Origin", &origin),
                ("Sec-Fetch-Site", "same-origin"),
                ("X-Gearman-Background", "true"),
            ],
            b"x",
        ),
    );
    assert_eq!(r.status, 200);
    let r = send(
        &s,
        &raw("GET", "/status", &[host, ("Sec-Fetch-Site", "none")], b""),
    );
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\"later\""));
    s.server.wait_log("403 (origin)", 3);
    s.server.wait_log("403 (cross_site)", 3);
}

#[test]
fn configured_names_are_served() {
    let s = HttpServer::start(&["--http-allowed-host", "gear.example"]);
    let port = s.http.port();
    let r = send(
        &s,
        &raw(
            "GET",
            "/healthz",
            &[("Host", &format!("GEAR.example:{port}"))],
            b"",
        ),
    );
    assert_eq!(r.status, 200);
    let r = send(
        &s,
        &raw("GET", "/healthz", &[("Host", "other.example")], b""),
    );
    assert_eq!(r.status, 403);
}

#[test]
fn live_data_is_never_cached_nor_sniffed() {
    let dir = TempDir::new("uncached");
    let schedules = dir.path("schedules.cron");
    std::fs::write(&schedules, "").unwrap();
    let s = HttpServer::start(&["--schedules", schedules.to_str().unwrap()]);
    let paths = [
        "/status",
        "/workers",
        "/failed",
        "/schedules",
        "/webhooks",
        "/metrics",
        "/jobs/H:x:1",
        "/healthz",
    ];
    for p in paths {
        let r = s.call("GET", p, &[], b"");
        assert_eq!(r.header("Cache-Control"), Some("no-store"), "{p}: {r:?}");
        assert_eq!(
            r.header("X-Content-Type-Options"),
            Some("nosniff"),
            "{p}: {r:?}"
        );
    }
    // An operation's answer too.
    let r = s.call("POST", "/failed/H:x:1/retry", &[], b"");
    assert_eq!(r.header("Cache-Control"), Some("no-store"), "{r:?}");
    // The console keeps its own (revalidated, once).
    let r = s.call("GET", "/ui/api/server", &[], b"");
    let cache: Vec<_> = r
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("cache-control"))
        .collect();
    assert_eq!(cache.len(), 1, "{r:?}");
    assert_eq!(r.header("Cache-Control"), Some("no-cache"), "{r:?}");
}
