//! HTTP/1.x over real sockets: keep-alive, pipelining, HTTP/1.0, every error status, limits
//! and timeouts (truncated request, huge header, slow header), and the read-only endpoints.

use crate::support;

use std::io::Write;
use std::time::Duration;

use support::*;

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let s = HttpServer::start(&[]);
    let mut h = s.connect();
    for i in 0..5 {
        h.send(&request(
            "POST",
            "/ka",
            &[("X-Gearman-Background", "true")],
            format!("job {i}").as_bytes(),
        ));
        let r = h.read();
        assert_eq!(r.status, 200);
        assert!(!r.closes());
        h.send(&request("GET", "/healthz", &[], b""));
        assert_eq!(h.read().text(), "ok\n");
    }
    let st = s.get("/status").text();
    assert!(st.contains("\"name\":\"ka\",\"total\":5"), "{st}");
    // Connection: close is honoured.
    h.send(&request("GET", "/healthz", &[("Connection", "close")], b""));
    let r = h.read();
    assert!(r.closes());
    h.expect_eof();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    // In-process: "nothing yet" is checked once the server has settled, not after a wait.
    let s = HttpServer::in_process(&[]);
    let mut w = worker(&s.server, &["work"]);
    let mut h = s.connect();
    // A foreground job first: the requests behind it wait for it.
    let mut all = request("POST", "/work", &[], b"first");
    all.extend(request("GET", "/healthz", &[], b""));
    all.extend(request(
        "POST",
        "/bg",
        &[("X-Gearman-Background", "true")],
        b"x",
    ));
    all.extend(request("GET", "/nosuch/endpoint/but/a/function", &[], b""));
    all.extend(request("HEAD", "/status", &[], b""));
    h.send(&all);
    let (handle, data) = grab(&mut w);
    assert_eq!(data, b"first");
    s.server.settle();
    h.expect_silence(1);
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"one"]);
    let r1 = h.read();
    assert_eq!((r1.status, r1.text()), (200, "one".to_string()));
    let r2 = h.read();
    assert_eq!(r2.text(), "ok\n");
    let r3 = h.read();
    assert_eq!(r3.header("X-Gearman-Command"), Some("JOB_CREATED"));
    // GET of an unknown path submits to that function (gearmand); nobody works on it, so
    // this one waits. HEAD /status comes after it.
    s.server.settle();
    h.expect_silence(1);
    let mut w2 = worker(&s.server, &["nosuch/endpoint/but/a/function"]);
    let (h4, _) = grab(&mut w2);
    w2.send_req(t::WORK_COMPLETE, &[h4.as_bytes(), b"four"]);
    assert_eq!(h.read().text(), "four");
    let r5 = h.read_head();
    assert_eq!(r5.status, 200);
    assert!(r5.body.is_empty(), "HEAD has no body");
    assert!(
        r5.header("Content-Length")
            .unwrap()
            .parse::<usize>()
            .unwrap()
            > 0
    );

    // Many small pipelined requests in one write, split across TCP segments anyhow.
    let mut burst = Vec::new();
    for _ in 0..300 {
        burst.extend(request("GET", "/healthz", &[], b""));
    }
    h.send(&burst);
    for _ in 0..300 {
        assert_eq!(h.read().status, 200);
    }
}

#[test]
fn http_1_0_gets_1_0_replies_and_a_close() {
    let s = HttpServer::start(&[]);
    let mut h = s.connect();
    h.send(b"GET /healthz HTTP/1.0\r\n\r\n");
    let r = h.read();
    assert_eq!((r.version.as_str(), r.status), ("HTTP/1.0", 200));
    assert!(r.header("Connection").is_none());
    h.expect_eof();
    // 1.0 with keep-alive stays open and says so.
    let mut h = s.connect();
    h.send(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = h.read();
    assert_eq!(r.header("Connection"), Some("keep-alive"));
    h.send(b"POST /v10 HTTP/1.0\r\nX-Gearman-Background: true\r\nContent-Length: 1\r\n\r\nx");
    let r = h.read();
    assert_eq!((r.version.as_str(), r.status), ("HTTP/1.0", 200));
    h.expect_eof();
}

/// Send raw bytes on a new connection, read one response, and check the server closes.
fn refused(s: &HttpServer, raw: &[u8], status: u16) -> Resp {
    let mut h = s.connect();
    h.send(raw);
    let r = h.read();
    assert_eq!(
        r.status,
        status,
        "{:?} -> {}",
        String::from_utf8_lossy(raw),
        r.text()
    );
    assert!(r.closes(), "{status} closes");
    assert!(r.body.len() < 200, "short body");
    h.expect_eof();
    r
}

#[test]
fn each_error_status() {
    let s = HttpServer::start(&["--max-packet-size", "2048"]);
    refused(&s, b"GET /a b c HTTP/1.1\r\n\r\n", 400);
    refused(
        &s,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        400,
    );
    refused(
        &s,
        b"POST /f HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        400,
    );
    refused(&s, b"POST /f HTTP/1.1\r\nContent-Length: 2049\r\n\r\n", 413);
    refused(
        &s,
        b"POST /f HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n801\r\n",
        413,
    );
    refused(
        &s,
        format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000)).as_bytes(),
        414,
    );
    refused(
        &s,
        format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "b".repeat(17000)).as_bytes(),
        431,
    );
    let many: String = (0..80).map(|i| format!("X-H{i}: v\r\n")).collect();
    refused(&s, format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes(), 431);
    refused(&s, b"GET / HTTP/2.0\r\n\r\n", 505);
    refused(
        &s,
        b"POST /f HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        501,
    );
    refused(&s, b"POST /f HTTP/1.1\r\nExpect: tea\r\n\r\n", 417);

    // A client that goes on sending its too-large body still reads the 413: the server
    // drains what comes after its answer instead of resetting the connection.
    let mut h = s.connect();
    h.send(b"POST /f HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n");
    for _ in 0..100 {
        if h.stream.write_all(&[b'x'; 10_000]).is_err() {
            break;
        }
    }
    let r = h.read();
    assert_eq!(r.status, 413);
    assert!(r.closes());

    // Request-level errors keep the connection.
    let mut h = s.connect();
    // `/` is the console's: read with GET, never a submission.
    h.send(&request("POST", "/", &[], b""));
    assert_eq!(h.read().status, 405);
    h.send(&request("DELETE", "/f", &[], b"body"));
    let r = h.read();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("Allow"), Some("GET, HEAD, POST, PUT"));
    h.send(&request("HEAD", "/f", &[], b""));
    assert_eq!(h.read_head().status, 405);
    h.send(&request("GET", "/jobs/H:nowhere:1", &[], b""));
    let r = h.read();
    assert_eq!(r.status, 404);
    assert_json(&r.text());
    h.send(&request(
        "POST",
        "/f",
        &[("X-Gearman-Priority", "urgent")],
        b"",
    ));
    assert_eq!(h.read().status, 400);
    h.send(&request("GET", "/healthz", &[], b""));
    assert_eq!(h.read().status, 200);
    // The server is fine after all of it.
    let mut g = s.gearman();
    assert!(g.admin("version", false).starts_with("OK "));
}

#[test]
fn truncated_request_gets_400_and_a_close() {
    let s = HttpServer::start(&[]);
    let mut h = s.connect();
    h.send(b"POST /f HTTP/1.1\r\nContent-Le");
    h.stream.shutdown(std::net::Shutdown::Write).unwrap();
    let r = h.read();
    assert_eq!(r.status, 400);
    h.expect_eof();
    // A body cut short, too.
    let mut h = s.connect();
    h.send(b"POST /f HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
    h.stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(h.read().status, 400);
    h.expect_eof();
    // A whole request then a half-close: answered, then closed.
    let mut h = s.connect();
    h.send(&request("GET", "/healthz", &[], b""));
    h.stream.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(h.read().status, 200);
    h.expect_eof();
}

#[test]
fn slow_header_is_408_and_idle_connections_close() {
    // In-process on a manual clock: the timeouts pass by the test's `advance`.
    let s = HttpServer::in_process(&["--http-header-timeout", "1", "--http-idle-timeout", "2"]);
    let clock = &s.server;
    // Slowloris: a byte every 300 ms never completes the head in time. The writes stop
    // before the deadline, so that no write races the server's close.
    let mut h = s.connect();
    let t0 = clock.now_ms();
    for b in b"GET " {
        h.stream.write_all(&[*b]).unwrap();
        clock.advance(300);
    }
    h.set_timeout(Duration::from_secs(4));
    let r = h.read();
    assert_eq!(r.status, 408);
    let el = Duration::from_millis(clock.now_ms() - t0);
    assert!(
        el >= Duration::from_millis(900) && el < Duration::from_secs(3),
        "{el:?}"
    );
    h.expect_eof();

    // A stalled body: 408 too.
    let mut h = s.connect();
    h.send(b"POST /f HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
    clock.advance(1100);
    h.set_timeout(Duration::from_secs(4));
    assert_eq!(h.read().status, 408);

    // An idle keep-alive connection is closed quietly after --http-idle-timeout.
    let mut h = s.connect();
    h.send(&request("GET", "/healthz", &[], b""));
    assert_eq!(h.read().status, 200);
    let t0 = clock.now_ms();
    while !h.closed_now() {
        assert!(clock.now_ms() - t0 < 5000, "never closed");
        clock.advance(100);
    }
    let el = Duration::from_millis(clock.now_ms() - t0);
    assert!(
        el >= Duration::from_millis(1500) && el < Duration::from_secs(4),
        "{el:?}"
    );
}

#[test]
fn http_connections_count_against_max_connections() {
    let s = HttpServer::start(&["--max-connections", "3"]);
    let mut a = s.connect();
    let mut b = s.connect();
    let mut c = s.connect();
    for h in [&mut a, &mut b, &mut c] {
        h.send(&request("GET", "/healthz", &[], b""));
        assert_eq!(h.read().status, 200);
    }
    let mut d = s.connect();
    d.set_timeout(Duration::from_secs(2));
    d.send(&request("GET", "/healthz", &[], b""));
    assert!(d.try_read().is_err(), "the fourth connection is refused");
    let mut g = support::Conn::connect(s.server.addr);
    g.send_req(t::ECHO_REQ, &[b"x"]);
    assert!(g.try_read_packet().is_err(), "Gearman too");
    drop(a);
    // The server frees a's slot when it reads the close: until then a new connection is
    // refused (closed unanswered), after it served.
    wait_until(5, "a new connection served after a closed", || {
        let mut e = s.connect();
        e.send(&request("GET", "/healthz", &[], b""));
        e.try_read().is_ok_and(|r| r.status == 200)
    });
    // Waited for: the log is read by another thread, behind the replies already seen.
    s.server.wait_log("--max-connections 3 reached", 5);
}

#[test]
fn read_only_endpoints() {
    let dir = TempDir::new("http-sched");
    let sched = dir.join("s.cron");
    std::fs::write(&sched, "@every 1h tick -- x\n0 3 * * * nightly -- {time}\n").unwrap();
    let s = HttpServer::start(&["--schedules", sched.to_str().unwrap()]);
    let mut w = s.gearman();
    w.send_req(t::SET_CLIENT_ID, &[b"w-\"1\""]);
    w.can_do(&["resize", "thumb"]);
    let r = s.call(
        "POST",
        "/resize",
        &[("X-Gearman-Background", "true")],
        b"img",
    );
    let handle = r.header("X-Gearman-Job-Handle").unwrap().to_string();

    let st = s.get("/status");
    assert_eq!(st.header("Content-Type"), Some("application/json"));
    assert_json(&st.text());
    assert!(
        st.text().contains(
            "{\"name\":\"resize\",\"total\":1,\"queued\":1,\"running\":0,\"future\":0,\"workers\":1"
        ),
        "{}",
        st.text()
    );

    let wk = s.get("/workers").text();
    assert_json(&wk);
    assert!(
        wk.contains("\"client_id\":\"w-\\\"1\\\"\",\"functions\":[\"thumb\",\"resize\"]"),
        "{wk}"
    );

    let j = s.get(&format!("/jobs/{handle}"));
    assert_eq!(j.status, 200);
    assert_json(&j.text());
    assert!(j.text().contains("\"function\":\"resize\""), "{}", j.text());

    let sc = s.get("/schedules").text();
    assert_json(&sc);
    assert!(
        sc.contains("\"spec\":\"0 3 * * *\",\"says\":\"every day at 03:00 ")
            && sc.contains("\"function\":\"nightly\""),
        "{sc}"
    );
    assert!(sc.contains("\"next_run\":\"20"), "{sc}");

    let hz = s.get("/healthz");
    assert_eq!((hz.status, hz.text()), (200, "ok\n".to_string()));
    let head = s.call("HEAD", "/workers", &[], b"");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn expect_continue_and_chunked_bodies() {
    let s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["echo"]);
    let mut h = s.connect();
    h.send(
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let r = h.read();
    assert_eq!(r.status, 100);
    h.send(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    let (handle, data) = grab(&mut w);
    assert_eq!(data, b"hello world");
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), &data]);
    let r = h.read();
    assert_eq!((r.status, r.text()), (200, "hello world".to_string()));
}

#[test]
fn during_a_graceful_shutdown_http_serves_health_and_metrics_only() {
    let mut s = HttpServer::start(&[]);
    let mut w = worker(&s.server, &["long"]);
    let mut h = s.connect();
    h.send(&request("POST", "/long", &[], b""));
    let (handle, _) = grab(&mut w);
    let mut keep = s.connect();
    s.server.signal(libc::SIGUSR1);
    s.server.wait_log("graceful shutdown", 5);
    keep.send(&request("GET", "/healthz", &[], b""));
    let r = keep.read();
    assert_eq!((r.status, r.text()), (503, "draining\n".to_string()));
    // A new connection (a load balancer's health check) is still answered, until the drain ends.
    let r = s.get("/healthz");
    assert_eq!((r.status, r.text()), (503, "draining\n".to_string()));
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("\ngearman_draining 1\n"), "{}", r.text());
    // Nothing else: no new job, no other endpoint.
    let r = s.call("POST", "/long", &[], b"x");
    assert_eq!((r.status, r.text()), (503, "draining\n".to_string()));
    assert_eq!(s.get("/status").status, 503);
    keep.send(&request("POST", "/long", &[], b"y"));
    assert_eq!(keep.read().status, 503);
    assert!(
        std::net::TcpStream::connect(s.server.addr).is_err(),
        "the Gearman port no longer accepts"
    );
    // The job that was running is answered, and then the server exits.
    w.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    assert_eq!(h.read().text(), "done");
    assert_eq!(s.server.wait_exit(5).expect("exits").code(), Some(0));
    assert!(
        std::net::TcpStream::connect(s.http).is_err(),
        "closed at exit"
    );
}
