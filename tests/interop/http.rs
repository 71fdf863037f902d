//! HTTP interop: curl as the client (Debian `curl`), libgearman's `gearman -w` and
//! `gearwheel work` as the workers. curl brings what hand-written requests do not: its own
//! keep-alive reuse, `Expect: 100-continue` on large bodies, chunked uploads from stdin, and
//! HTTP/1.0 mode.

use crate::support;

use std::process::Command;

use support::*;

fn have_curl() -> bool {
    require(support::have("curl"), "curl")
}

fn curl(args: &[&str]) -> Command {
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "10"]).args(args);
    c
}

/// A `gearman -w` worker for `func` running `cmd`, registered before this returns.
fn gearman_worker(s: &HttpServer, func: &str, cmd: &[&str]) -> Proc {
    let port = s.server.port().to_string();
    let mut args = vec!["-p", port.as_str(), "-w", "-f", func, "--"];
    args.extend_from_slice(cmd);
    let p = Proc::spawn("gearman worker", Command::new("gearman").args(&args), None);
    wait_workers(&s.server, func, 1);
    p
}

#[test]
fn curl_submits_to_a_real_gearman_worker() {
    if !have_curl() || !need("gearman-tools (gearman, gearadmin)") {
        return;
    }
    let s = HttpServer::start(&[]);
    let _w = gearman_worker(&s, "reverse", &["rev"]);
    let base = format!("http://{}", s.http);

    // Foreground: the worker's output is the body; -i shows gearmand's headers.
    let out = run(
        "curl POST",
        &mut curl(&["-i", "--data-binary", "hello\n", &format!("{base}/reverse")]),
        None,
        15,
    );
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(
        out.contains("\r\nX-Gearman-Command: WORK_COMPLETE\r\n"),
        "{out}"
    );
    assert!(out.contains("\r\nX-Gearman-Job-Handle: H:"), "{out}");
    assert!(out.ends_with("\r\n\r\nolleh\n"), "{out}");

    // A body over curl's 1 MiB threshold comes with Expect: 100-continue; a chunked upload
    // from stdin (-T -) too.
    let big: Vec<u8> = (0..1_200_000u32)
        .map(|i| b"abcdefghij"[(i % 10) as usize])
        .chain(std::iter::once(b'\n'))
        .collect();
    let out = run(
        "curl big POST",
        &mut curl(&["--data-binary", "@-", &format!("{base}/reverse")]),
        Some(&big),
        30,
    );
    let mut want = big[..big.len() - 1].to_vec();
    want.reverse();
    want.push(b'\n');
    assert_eq!(out.len(), want.len());
    assert!(out.as_bytes() == want.as_slice(), "reversed body");
    let out = run(
        "curl -T -",
        &mut curl(&["-T", "-", &format!("{base}/reverse")]),
        Some(b"chunked\n"),
        15,
    );
    assert_eq!(out, "deknuhc\n");

    // Background: the handle, no body.
    let out = run(
        "curl background",
        &mut curl(&[
            "-i",
            "-H",
            "X-Gearman-Background: true",
            "-d",
            "x",
            &format!("{base}/nobody"),
        ]),
        None,
        15,
    );
    assert!(out.contains("X-Gearman-Command: JOB_CREATED"), "{out}");
    assert!(out.ends_with("Content-Length: 0\r\n\r\n"), "{out}");

    // Keep-alive: curl reuses one connection for several URLs.
    let out = run(
        "curl keep-alive",
        &mut curl(&[
            "-w",
            "[%{num_connects}]",
            &format!("{base}/healthz"),
            &format!("{base}/status"),
            &format!("{base}/metrics"),
        ]),
        None,
        15,
    );
    assert!(out.starts_with("ok\n[1]{"), "{out}");
    assert_eq!(out.matches("[0]").count(), 2, "{out}");
    assert!(
        out.contains("gearman_jobs_completed_total{function=\"reverse\"} 3"),
        "{out}"
    );

    // HTTP/1.0.
    let out = run(
        "curl --http1.0",
        &mut curl(&["--http1.0", "-i", &format!("{base}/healthz")]),
        None,
        15,
    );
    assert!(out.starts_with("HTTP/1.0 200 OK\r\n"), "{out}");

    // Status codes curl sees.
    let code = |args: &[&str]| {
        let mut a = vec!["-o", "/dev/null", "-w", "%{http_code}"];
        a.extend_from_slice(args);
        run("curl code", &mut curl(&a), None, 15)
    };
    assert_eq!(code(&["-X", "DELETE", &format!("{base}/reverse")]), "405");
    // `/` is the console's: read, never submitted to.
    assert_eq!(code(&["-d", "", &format!("{base}/")]), "405");
    assert_eq!(code(&[&format!("{base}/")]), "200");
    assert_eq!(code(&[&format!("{base}/jobs/H:none:1")]), "404");
    assert_eq!(
        code(&[
            "-H",
            "X-Gearman-Timeout: 200",
            "-d",
            "x",
            &format!("{base}/nobody-works-on-this")
        ]),
        "504"
    );
}

#[test]
fn worker_failures_reach_curl_as_502() {
    if !have_curl() || !need("gearman-tools (gearman, gearadmin)") {
        return;
    }
    let s = HttpServer::start(&[]);
    let base = format!("http://{}", s.http);
    let _fail = gearman_worker(&s, "fails", &["false"]);
    let out = run(
        "curl fail",
        &mut curl(&["-i", "-d", "x", &format!("{base}/fails")]),
        None,
        15,
    );
    assert!(out.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{out}");
    assert!(out.contains("X-Gearman-Command: WORK_FAIL"), "{out}");

    // gearwheel's own worker turns a non-zero exit into WORK_EXCEPTION with the reason.
    let mut work = Command::new(env!("CARGO_BIN_EXE_gearwheel"));
    work.args([
        "work",
        "-f",
        "throws",
        "-s",
        &s.server.addr.to_string(),
        "--",
        "sh",
        "-c",
        "echo disk full >&2; exit 3",
    ]);
    let _w = Proc::spawn("gearwheel work", &mut work, None);
    wait_workers(&s.server, "throws", 1);
    let out = run(
        "curl exception",
        &mut curl(&["-i", "-d", "x", &format!("{base}/throws")]),
        None,
        15,
    );
    assert!(out.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{out}");
    assert!(out.contains("X-Gearman-Command: WORK_EXCEPTION"), "{out}");
    assert!(
        out.contains("exit status 3") && out.contains("disk full"),
        "{out}"
    );
}

#[test]
fn curl_as_itself_is_served_and_as_a_browser_from_another_site_is_refused() {
    if !have_curl() {
        return;
    }
    let s = HttpServer::start(&[]);
    let base = format!("http://{}", s.http);
    let code = |extra: &[&str]| -> String {
        let mut args = vec!["-o", "/dev/null", "-w", "%{http_code}"];
        args.extend_from_slice(extra);
        let url = format!("{base}/status");
        args.push(&url);
        run("curl", &mut curl(&args), None, 15)
    };
    assert_eq!(code(&[]), "200");
    let local = format!("http://localhost:{}/healthz", s.http.port());
    assert_eq!(
        run(
            "curl localhost",
            &mut curl(&["-o", "/dev/null", "-w", "%{http_code}", &local]),
            None,
            15
        ),
        "200"
    );
    assert_eq!(code(&["-H", "Host: rebound.example"]), "403");
    assert_eq!(code(&["-H", "Sec-Fetch-Site: cross-site"]), "403");
    assert_eq!(code(&["-H", "Origin: http://evil.example"]), "403");
    let own = format!("Origin: {base}");
    assert_eq!(
        code(&["-H", &own, "-H", "Sec-Fetch-Site: same-origin"]),
        "200"
    );
}
