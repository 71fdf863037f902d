//! `gearwheel ping ID -- COMMAND` as a process against a real server: a failing command raises
//! `failed` with its exit code and output tail, its output still reaches the terminal and its
//! exit code is the command's; a server that cannot be reached stops nothing.

use crate::support;

use std::time::Duration;

use support::*;

#[test]
fn a_failing_command_raises_failed_with_its_output_tail_and_keeps_its_exit_code() {
    let dir = TempDir::new("cli-ping");
    let sched = dir.path("s.cron");
    std::fs::write(
        &sched,
        "0 3 * * * backup.remote expect=ping on_failure=alert\n",
    )
    .unwrap();
    let s = HttpServer::start(&["--schedules", sched.to_str().unwrap()]);
    let mut notifier = s.gearman();
    notifier.can_do(&["alert"]);
    let server = format!("http://{}", s.http);
    let o = gw(
        &[
            "ping",
            "backup.remote",
            "-s",
            &server,
            "--",
            "sh",
            "-c",
            "echo copying; echo 'rsync: error 23' >&2; exit 3",
        ],
        None,
        20,
    );
    assert_eq!(o.code(), Some(3), "{o:?}");
    assert_eq!(o.stdout, "copying\n", "the output passes through");
    assert_eq!(o.stderr, "rsync: error 23\n", "{o:?}");
    let (_, alert) = notifier.grab_within(Duration::from_secs(5));
    let alert = String::from_utf8(alert).unwrap();
    // The tail holds both streams; which of the two pipes is read first is the scheduler's
    // choice, so the order of the two lines is not asserted.
    assert!(
        alert.contains("\"outcome\":\"failed\"")
            && (alert.contains("\"error\":\"exit code 3: copying rsync: error 23\"")
                || alert.contains("\"error\":\"exit code 3: rsync: error 23 copying\""))
            && alert.contains("\"entry\":\"backup.remote\""),
        "{alert}"
    );
    let mut admin = s.gearman();
    let row = admin.schedule_row("backup.remote");
    assert_eq!((row[7].as_str(), row[8].as_str()), ("1", "1"), "{row:?}");

    // A success: exit 0, no alert; the run is counted.
    let o = gw(
        &["ping", "backup.remote", "-s", &server, "--", "true"],
        None,
        20,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(admin.schedule_row("backup.remote")[7], "2");
}

#[test]
fn without_a_server_the_command_still_runs_and_the_ping_is_given_up() {
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = TempDir::new("cli-ping-down");
    let mark = dir.path("ran");
    let o = gw(
        &[
            "ping",
            "backup.remote",
            "-s",
            &format!("127.0.0.1:{port}"),
            "--",
            "sh",
            "-c",
            &format!("touch {}; exit 4", mark.display()),
        ],
        None,
        30,
    );
    assert_eq!(o.code(), Some(4), "{o:?}");
    assert!(mark.exists(), "the command ran");
    assert!(
        o.stderr.contains(&format!(
            "gearwheel ping: could not ping 127.0.0.1:{port} ("
        )) && o.stderr.contains("given up"),
        "{o:?}"
    );
}

/// An `https://` server, its certificate checked against `--ssl-ca-file`; a bearer token from
/// `--token-file` is what the access list grants `ping` to.
#[cfg(feature = "tls")]
#[test]
fn over_https_with_a_token_from_a_file() {
    let ca = TestCa::new("cli-ping-https");
    let cert = ca.server("gearwheel");
    let dir = TempDir::new("cli-ping-https");
    let sched = dir.path("s.cron");
    std::fs::write(&sched, "0 3 * * * backup.remote expect=ping\n").unwrap();
    let secret = "ping-s3cret-9f1";
    // printf %s SECRET | sha256sum, as docs/security.md has an operator make a token line.
    let digest = std::process::Command::new("sh")
        .args(["-c", &format!("printf %s {secret} | sha256sum")])
        .output()
        .unwrap();
    let hex = String::from_utf8_lossy(&digest.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let acl = dir.path("acl");
    std::fs::write(
        &acl,
        format!("token pinger {hex}\ntoken:pinger  ping  backup.*\naddr:127.0.0.1 status *\n"),
    )
    .unwrap();
    let token = dir.path("token");
    std::fs::write(&token, format!("{secret}\n")).unwrap();
    let server = start_tls(
        &cert,
        &[
            "--ssl",
            "--http-port",
            "0",
            "--schedules",
            sched.to_str().unwrap(),
            "--acl",
            acl.to_str().unwrap(),
        ],
    );
    let url = format!("https://127.0.0.1:{}", http_addr(&server).port());
    let ca_file = ca.ca_arg();
    let ping = |with_token: bool| {
        let mut a = vec![
            "ping",
            "backup.remote",
            "-s",
            &url,
            "--ssl-ca-file",
            &ca_file,
        ];
        if with_token {
            a.extend(["--token-file", token.to_str().unwrap()]);
        }
        a.extend(["--", "true"]);
        gw(&a, None, 30)
    };
    let o = ping(true);
    assert_eq!(o.code(), Some(0), "{o:?}");
    assert_eq!(o.stderr, "", "both pings delivered: {o:?}");
    let o = ping(false);
    assert_eq!(
        o.code(),
        Some(0),
        "the command's code, whatever the server says: {o:?}"
    );
    assert!(
        o.stderr
            .contains("the server refused the ping (HTTP 403); not retried"),
        "{o:?}"
    );
}
