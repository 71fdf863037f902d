//! Interop with libgearman's command-line tools (Debian `gearman-tools` 1.1.20): `gearman` as
//! client and as worker, and `gearadmin`.
//!
//! What they send: the `gearman` worker uses CAN_DO, GRAB_JOB_ALL and PRE_SLEEP; the client
//! sends SUBMIT_JOB* with a generated UUID as the unique (also for foreground jobs) unless `-u`
//! is given. `gearadmin` sends one admin line ending in `\r\n`, strips `OK ` from `OK <x>`
//! replies, prints a bare `OK` as `OK`, and turns `ERR <x> ...` into `Error: <x>` on stderr
//! (exit status 0).

use crate::support;

use std::process::Command;

use support::*;

fn have_cli() -> bool {
    require(
        support::have("gearman") && support::have("gearadmin"),
        "gearman-tools (gearman, gearadmin)",
    )
}

/// `gearman -p PORT args...`
fn gearman(s: &Server, args: &[&str]) -> Command {
    let mut c = Command::new("gearman");
    c.arg("-p").arg(s.port().to_string()).args(args);
    c
}

/// `gearadmin -p PORT args...`; returns (stdout, stderr).
fn gearadmin(s: &Server, args: &[&str]) -> (String, String) {
    let mut c = Command::new("gearadmin");
    c.arg("-p").arg(s.port().to_string()).args(args);
    let Out {
        status: st,
        stdout: out,
        stderr: err,
    } = run_out(&mut c, None, 5);
    assert!(
        st.success(),
        "gearadmin {args:?} failed: {st}\n{out}\n{err}"
    );
    (out, err)
}

/// Start a `gearman -w` worker for `func` running `cmd`, and wait until it is registered.
fn cli_worker(s: &Server, func: &str, cmd: &[&str]) -> Proc {
    let mut args = vec!["-w", "-f", func, "--"];
    args.extend_from_slice(cmd);
    let p = Proc::spawn("gearman worker", &mut gearman(s, &args), None);
    wait_workers(s, func, 1);
    p
}

fn lines_sorted(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn cli_worker_and_client_round_trip() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    let _worker = cli_worker(&s, "reverse", &["rev"]);

    let out = run(
        "gearman client",
        &mut gearman(&s, &["-f", "reverse"]),
        Some(b"hello\n"),
        5,
    );
    assert_eq!(out, "olleh\n");

    // Data as an argument, output prefixed with the function name.
    let out = run(
        "gearman -P",
        &mut gearman(&s, &["-P", "-f", "reverse", "abc"]),
        None,
        5,
    );
    assert_eq!(out, "reverse: cba");

    // High and low priority foreground jobs.
    for flag in ["-I", "-L"] {
        let out = run(
            "gearman client",
            &mut gearman(&s, &[flag, "-f", "reverse"]),
            Some(b"prio\n"),
            5,
        );
        assert_eq!(out, "oirp\n", "with {flag}");
    }

    // One job per input line.
    let out = run(
        "gearman -n",
        &mut gearman(&s, &["-n", "-f", "reverse"]),
        Some(b"ab\ncd\n"),
        5,
    );
    assert_eq!(lines_sorted(&out), ["ba", "dc"]);

    let (status, _) = gearadmin(&s, &["--status"]);
    assert_eq!(status, "reverse\t0\t0\t1\n.\n");
    let (workers, _) = gearadmin(&s, &["--workers"]);
    assert!(
        workers.lines().any(|l| {
            let (fd, rest) = l.split_once(' ').unwrap_or_default();
            fd.parse::<u32>().is_ok() && rest == "127.0.0.1 - : reverse"
        }),
        "no worker line for the gearman worker in {workers:?}"
    );
    assert!(
        workers.ends_with("\n.\n") || workers == ".\n",
        "{workers:?}"
    );
}

#[test]
fn cli_background_jobs_queue_by_priority_and_run_later() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    let dir = TempDir::new("cli-bg");
    let out_file = dir.path("ran");

    for args in [
        &["-b", "-f", "bgfn", "normal1"][..],
        &["-b", "-L", "-f", "bgfn", "low1"][..],
        &["-b", "-I", "-f", "bgfn", "high1"][..],
        &["-b", "-u", "myuniq", "-f", "bgfn", "unique1"][..],
        // Same function and unique: joins the queued job instead of adding one.
        &["-b", "-u", "myuniq", "-f", "bgfn", "unique2"][..],
        &["-b", "-f", "bgfn", "normal2"][..],
    ] {
        let out = run("gearman -b", &mut gearman(&s, args), None, 5);
        assert_eq!(out, "", "gearman {args:?} printed something");
    }

    assert_eq!(gearadmin(&s, &["--status"]).0, "bgfn\t5\t0\t0\n.\n");
    assert_eq!(
        gearadmin(&s, &["--priority-status"]).0,
        "bgfn\t1\t3\t1\t0\n.\n"
    );
    let (jobs, _) = gearadmin(&s, &["--show-jobs"]);
    let rows: Vec<&str> = jobs.lines().filter(|l| *l != ".").collect();
    assert_eq!(rows.len(), 5, "{jobs:?}");
    for r in &rows {
        let f: Vec<&str> = r.split('\t').collect();
        assert!(
            f.len() == 4 && f[0].starts_with("H:") && f[1..] == ["0", "0", "1"],
            "show jobs row {r:?}"
        );
    }
    assert!(jobs.ends_with("\n.\n"), "{jobs:?}");
    let (uniques, _) = gearadmin(&s, &["--show-unique-jobs"]);
    let mut u: Vec<&str> = uniques.lines().filter(|l| *l != ".").collect();
    u.sort();
    assert_eq!(u.len(), 5, "{uniques:?}");
    assert_eq!(
        u.iter().filter(|x| **x == "myuniq").count(),
        1,
        "{uniques:?}"
    );
    // libgearman gives every other background job a UUID unique.
    assert!(
        u.iter()
            .filter(|x| **x != "myuniq")
            .all(|x| x.len() == 36 && x.matches('-').count() == 4),
        "{uniques:?}"
    );

    // A worker that takes exactly 5 jobs, appending each workload to a file.
    let script = format!(
        "cat >> '{}'; echo >> '{}'",
        out_file.display(),
        out_file.display()
    );
    let mut worker = Proc::spawn(
        "gearman worker",
        &mut gearman(
            &s,
            &["-w", "-c", "5", "-f", "bgfn", "--", "sh", "-c", &script],
        ),
        None,
    );
    let st = worker.exited(8);
    assert!(st.success(), "worker: {st}\n{}", worker.describe());
    let ran = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(ran, "high1\nnormal1\nunique1\nnormal2\nlow1\n");
    let mut c = s.connect();
    // Its jobs done and its worker gone, the function stays listed, as gearmand's does.
    wait_admin(&mut c, "status", true, 3, |st| st == "bgfn\t0\t0\t0\n.\n");
    assert_eq!(gearadmin(&s, &["--show-jobs"]).0, ".\n");
}

#[test]
fn cli_clients_with_same_unique_share_one_job() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    let mut conn = s.connect();
    // Wait until `n` clients are attached to the job with unique "same" (GET_STATUS_UNIQUE).
    let mut wait_clients = |n: u32, procs: &[&Proc]| {
        let want = format!("same\x001\x000\x000\x000\x00{n}").into_bytes();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            conn.send_req(t::GET_STATUS_UNIQUE, &[b"same"]);
            let body = conn.expect(t::STATUS_RES_UNIQUE);
            if body == want {
                return;
            }
            assert!(
                std::time::Instant::now() < end,
                "STATUS_RES_UNIQUE never showed {n} clients: {:?}\n{}",
                String::from_utf8_lossy(&body),
                procs
                    .iter()
                    .map(|p| p.describe())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let mut c1 = Proc::spawn(
        "client 1",
        &mut gearman(&s, &["-u", "same", "-f", "cfn", "first"]),
        None,
    );
    wait_clients(1, &[&c1]);
    let mut c2 = Proc::spawn(
        "client 2",
        &mut gearman(&s, &["-u", "same", "-f", "cfn", "second"]),
        None,
    );
    wait_clients(2, &[&c1, &c2]);
    assert_eq!(conn.admin("status", true), "cfn\t1\t0\t0\n.\n");
    assert_eq!(conn.admin("show unique jobs", true), "same\n.\n");

    // One worker run (-c 1) answers both clients with the first submitter's data.
    let mut worker = Proc::spawn(
        "gearman worker",
        &mut gearman(
            &s,
            &["-w", "-c", "1", "-f", "cfn", "--", "tr", "a-z", "A-Z"],
        ),
        None,
    );
    assert_eq!(c1.finish(5), "FIRST");
    assert_eq!(c2.finish(5), "FIRST");
    let st = worker.exited(5);
    assert!(st.success(), "{}", worker.describe());
    // Its job done and its worker gone, the function stays listed, as gearmand's does.
    wait_admin(&mut conn, "status", true, 3, |st| st == "cfn\t0\t0\t0\n.\n");
}

#[test]
fn gearadmin_server_version_getpid_verbose() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        gearadmin(&s, &["--server-version"]).0,
        format!("{}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        gearadmin(&s, &["--getpid"]).0,
        format!("{}\n", s.child.id())
    );
    assert_eq!(gearadmin(&s, &["--server-verbose"]).0, "INFO\n");
    assert_eq!(gearadmin(&s, &["--status"]).0, ".\n");
    assert_eq!(gearadmin(&s, &["--show-jobs"]).0, ".\n");
    assert_eq!(gearadmin(&s, &["--show-unique-jobs"]).0, ".\n");
}

#[test]
fn gearadmin_create_and_drop_function() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    assert_eq!(
        gearadmin(&s, &["--create-function=newfn"]),
        ("OK\n".to_string(), String::new())
    );
    assert_eq!(gearadmin(&s, &["--status"]).0, "newfn\t0\t0\t0\n.\n");
    assert_eq!(
        gearadmin(&s, &["--drop-function=newfn"]),
        ("OK\n".to_string(), String::new())
    );
    assert_eq!(gearadmin(&s, &["--status"]).0, ".\n");
    let (out, err) = gearadmin(&s, &["--drop-function=newfn"]);
    assert_eq!(out, "");
    assert_eq!(err.trim_end(), "Error: function not found");

    // A function with a connected worker cannot be dropped.
    let _worker = cli_worker(&s, "busyfn", &["cat"]);
    let (out, err) = gearadmin(&s, &["--drop-function=busyfn"]);
    assert_eq!(out, "");
    assert_eq!(
        err.trim_end(),
        "Error: there are still connected workers or executing clients"
    );
    assert_eq!(gearadmin(&s, &["--status"]).0, "busyfn\t0\t0\t1\n.\n");
}

#[test]
fn gearadmin_cancel_job() {
    if !have_cli() {
        return;
    }
    let s = Server::start(&[]);
    run(
        "gearman -b",
        &mut gearman(&s, &["-b", "-f", "cfn", "payload"]),
        None,
        5,
    );
    let (jobs, _) = gearadmin(&s, &["--show-jobs"]);
    let handle = jobs.lines().next().unwrap().split('\t').next().unwrap();
    assert!(handle.starts_with("H:"), "{jobs:?}");
    assert_eq!(
        gearadmin(&s, &[&format!("--cancel-job={handle}")]),
        ("OK\n".to_string(), String::new())
    );
    // Its only job cancelled and no worker: the function stays listed, as gearmand's does.
    assert_eq!(gearadmin(&s, &["--status"]).0, "cfn\t0\t0\t0\n.\n");
    let (jobs, _) = gearadmin(&s, &["--show-jobs"]);
    assert!(
        !jobs
            .lines()
            .any(|l| l.starts_with(&format!("{handle}\t")) && l.ends_with("\t1")),
        "cancelled job still queued: {jobs:?}"
    );
    let (out, err) = gearadmin(&s, &["--cancel-job=H:nohost:424242"]);
    assert_eq!(out, "");
    assert_eq!(err.trim_end(), "Error: UNKNOWN_JOB");

    // Cancelling a queued foreground job fails it: the waiting client gives up with an error.
    let mut client = Proc::spawn(
        "gearman client",
        &mut gearman(&s, &["-f", "fgfn", "data"]),
        None,
    );
    let mut conn = s.connect();
    wait_admin(&mut conn, "status", true, 5, |st| {
        status_row(st, "fgfn") == Some((1, 0, 0))
    });
    let jobs = conn.admin("show jobs", true);
    let fg = jobs
        .lines()
        .find(|l| l.ends_with("\t0"))
        .and_then(|l| l.split('\t').next())
        .unwrap_or_else(|| panic!("no foreground job in {jobs:?}"))
        .to_string();
    assert_eq!(
        gearadmin(&s, &[&format!("--cancel-job={fg}")]),
        ("OK\n".to_string(), String::new())
    );
    let st = client.exited(5);
    assert!(!st.success(), "client should fail\n{}", client.describe());
    assert!(
        format!("{}{}", client.stdout(), client.stderr()).contains("Job failed"),
        "{}",
        client.describe()
    );
}
