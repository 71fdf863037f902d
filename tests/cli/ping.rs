//! `gearwheel ping ID -- COMMAND` as a process against a real server: a failing command raises
//! `failed` with its exit code and output tail, its output still reaches the terminal and its
//! exit code is the command's; a server that cannot be reached stops nothing.

use crate::support;

use std::time::{Duration, Instant};

use support::*;

/// Grab one job of the functions `w` can do within `within` (sleeping on PRE_SLEEP).
fn grab_within(w: &mut support::Conn, within: Duration) -> (String, Vec<u8>) {
    let end = Instant::now() + within;
    loop {
        if let Some((h, _, _, data)) = w.grab_uniq() {
            return (h, data);
        }
        assert!(Instant::now() < end, "no job within {within:?}");
        w.send_req(t::PRE_SLEEP, &[]);
        assert_eq!(w.read_packet().ptype, t::NOOP);
    }
}

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
    let (_, alert) = grab_within(&mut notifier, Duration::from_secs(5));
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains("\"outcome\":\"failed\"")
            && alert.contains("\"error\":\"exit code 3: copying rsync: error 23\"")
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
