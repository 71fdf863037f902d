//! `gearwheel admin` against the real server: each command's table, `--raw`, errors and exit
//! codes; and `gearwheel submit --in/--at` showing up in `admin scheduled` until it is due.

mod support;

use std::time::{SystemTime, UNIX_EPOCH};

use gearwheel::client::SubmitKind;
use support::*;

fn admin(s: &Server, args: &[&str]) -> Out {
    let addr = s.addr.to_string();
    let mut a = vec!["admin", "-s", &addr];
    a.extend_from_slice(args);
    gw(&a, None, 10)
}

/// `admin` that must succeed; returns stdout.
fn ok(s: &Server, args: &[&str]) -> String {
    let o = admin(s, args);
    assert_eq!(o.code(), Some(0), "admin {args:?}: {o:?}");
    o.stdout
}

#[test]
fn status_workers_jobs_and_unique_tables() {
    let s = Server::start(&[]);
    assert_eq!(ok(&s, &["status"]), "FUNCTION  TOTAL  RUNNING  WORKERS\n");

    let mut w = client(&s);
    w.set_client_id("box-7").unwrap();
    w.can_do(b"resize", None).unwrap();
    w.can_do(b"thumbnail", None).unwrap();
    let mut c = client(&s);
    let mut sub = |kind, f: &str, u: &str| {
        let h = c.submit(kind, f.as_bytes(), u.as_bytes(), b"x").unwrap();
        String::from_utf8(h.to_vec()).unwrap()
    };
    let h1 = sub(SubmitKind::NormalBg, "resize", "img-1");
    let h2 = sub(SubmitKind::LowBg, "resize", "img-2");
    let _h3 = sub(SubmitKind::HighBg, "archive", "");
    let running = w.grab_uniq().unwrap().expect("a job");
    assert_eq!(running.handle, h1.as_bytes());

    assert_eq!(
        ok(&s, &["status"]),
        "FUNCTION   TOTAL  RUNNING  WORKERS\n\
         archive        1        0        0\n\
         resize         2        1        1\n\
         thumbnail      0        0        1\n"
    );
    assert_eq!(
        ok(&s, &["prioritystatus"]),
        "FUNCTION   HIGH  NORMAL  LOW  WORKERS\n\
         archive       1       0    0        0\n\
         resize        0       0    1        1\n\
         thumbnail     0       0    0        1\n"
    );

    let workers = ok(&s, &["workers"]);
    let mut lines = workers.lines();
    assert_eq!(
        lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["FD", "ADDRESS", "CLIENT-ID", "FUNCTIONS"]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        &row[1..],
        ["127.0.0.1", "box-7", "resize", "thumbnail"],
        "{workers}"
    );
    assert!(row[0].parse::<u32>().is_ok(), "{workers}");
    assert_eq!(lines.next(), None);

    let jobs = ok(&s, &["jobs"]);
    let rows: Vec<Vec<&str>> = jobs
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["HANDLE", "RETRIES", "BACKGROUND"]);
    assert_eq!(rows.len(), 4, "{jobs}");
    assert!(rows.contains(&vec![h2.as_str(), "0", "yes"]), "{jobs}");

    let unique = ok(&s, &["unique"]);
    let mut u: Vec<&str> = unique.lines().collect();
    assert_eq!(u.remove(0), "UNIQUE");
    u.sort();
    assert_eq!(u, ["(none)", "img-1", "img-2"]);

    // --raw: the protocol lines as sent, the `.` included.
    let raw = ok(&s, &["--raw", "status"]);
    let mut l: Vec<&str> = raw.lines().collect();
    assert_eq!(l.pop(), Some("."));
    l.sort();
    assert_eq!(
        l,
        ["archive\t1\t0\t0", "resize\t2\t1\t1", "thumbnail\t0\t0\t1"]
    );
}

#[test]
fn values_and_function_commands() {
    let s = Server::start(&[]);
    assert_eq!(
        ok(&s, &["version"]),
        format!("{}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(ok(&s, &["getpid"]), format!("{}\n", s.child.id()));
    assert_eq!(ok(&s, &["verbose"]), "INFO\n");
    assert_eq!(ok(&s, &["create", "fresh"]), "OK\n");
    assert_eq!(ok(&s, &["maxqueue", "fresh", "5"]), "OK\n");
    assert_eq!(
        ok(&s, &["maxqueue", "fresh"]),
        "HIGH  NORMAL  LOW\n   5       5    5\n"
    );
    assert_eq!(ok(&s, &["maxqueue", "fresh", "0", "7", "0"]), "OK\n");
    assert_eq!(
        ok(&s, &["maxqueue", "fresh"]),
        "HIGH       NORMAL  LOW\nunlimited       7  unlimited\n"
    );
    assert!(ok(&s, &["status"]).contains("\nfresh "));
    assert_eq!(ok(&s, &["drop", "fresh"]), "OK\n");
    assert!(!ok(&s, &["status"]).contains("fresh"));
}

#[test]
fn cancel_and_server_errors() {
    let s = Server::start(&[]);
    let h = client(&s)
        .submit(SubmitKind::NormalBg, b"q", b"", b"x")
        .unwrap();
    let h = String::from_utf8(h.to_vec()).unwrap();
    assert_eq!(ok(&s, &["cancel", &h]), "OK\n");
    let o = admin(&s, &["cancel", &h]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("UNKNOWN_JOB"), "{}", o.stderr);
    // --raw prints the ERR line as received and still fails.
    let o = admin(&s, &["--raw", "drop", "never-seen"]);
    assert_eq!(o.code(), Some(1));
    assert_eq!(o.stdout, "ERR function not found\n");
}

#[test]
fn bad_commands_and_unreachable_servers() {
    // A command this tool does not know goes to the server, which refuses it.
    let s = Server::start(&[]);
    let o = admin(&s, &["frobnicate"]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("UNKNOWN_COMMAND"), "{}", o.stderr);
    let o = gw(&["admin", "status", "extra"], None, 5);
    assert_eq!(o.code(), Some(2), "{o:?}");
    let o = gw(&["admin"], None, 5);
    assert_eq!(o.code(), Some(2), "{o:?}");
    let o = gw(&["admin", "-s", "127.0.0.1:1", "status"], None, 10);
    assert_eq!(o.code(), Some(3), "{o:?}");
}

#[test]
fn a_future_job_shows_in_scheduled_until_it_is_due() {
    let s = Server::start(&[]);
    let addr = s.addr.to_string();
    let o = gw(
        &[
            "submit", "-s", &addr, "-f", "later", "--unique", "u9", "--in", "2s", "x",
        ],
        None,
        10,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let handle = o.stdout.trim().to_string();
    assert!(handle.starts_with("H:"), "{o:?}");

    let table = ok(&s, &["scheduled"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["HANDLE", "FUNCTION", "UNIQUE", "DUE", "PRIORITY", "IN"]
    );
    assert_eq!(rows.len(), 2, "{table}");
    assert_eq!(&rows[1][..3], [handle.as_str(), "later", "u9"]);
    assert!(rows[1][3].ends_with('Z'), "{table}");
    assert!(
        rows[1][5] == "in" && matches!(rows[1][6], "1s" | "2s"),
        "{table}"
    );
    let raw = ok(&s, &["--raw", "scheduled"]);
    assert!(raw.starts_with(&format!("{handle}\tlater\tu9\t")) && raw.ends_with("\n.\n"));

    // Due: it leaves the wheel and waits in the queue.
    wait_until(5, "the job to come due", || {
        ok(&s, &["scheduled"]).lines().count() == 1
    });
    assert_eq!(status_of(&s, "later"), Some((1, 0, 0)));

    // --at with unix seconds, an hour ahead.
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let o = gw(
        &[
            "submit",
            "-s",
            &addr,
            "-f",
            "later",
            "--at",
            &at.to_string(),
            "y",
        ],
        None,
        10,
    );
    assert_eq!(o.code(), Some(0), "{o:?}");
    let table = ok(&s, &["scheduled"]);
    assert!(
        table.contains(o.stdout.trim()) && table.contains("in 1h"),
        "{table}"
    );
}

#[test]
fn schedules_is_shown_as_a_table_or_its_error() {
    // `show schedules` belongs to the schedules file; without one the server answers an
    // empty list (or, on a server without the command, an ERR that is passed on).
    let s = Server::start(&[]);
    let o = admin(&s, &["schedules"]);
    match o.code() {
        Some(0) => assert!(o.stdout.starts_with("ID  SPEC  FUNCTION"), "{o:?}"),
        Some(1) => assert!(o.stderr.contains("UNKNOWN_COMMAND"), "{o:?}"),
        _ => panic!("{o:?}"),
    }
}

#[test]
fn shutdown_graceful_stops_the_server() {
    let mut s = Server::start(&[]);
    assert_eq!(ok(&s, &["shutdown", "graceful"]), "OK\n");
    assert!(s.wait_exit(10).is_some_and(|st| st.success()));
}

#[test]
fn the_admin_protocols_own_command_names_work() {
    let dir = TempDir::new("admin-names");
    let s = Server::start(&["--data-dir", dir.to_str().unwrap()]);
    let h = client(&s)
        .submit(SubmitKind::NormalBg, b"q", b"u-1", b"x")
        .unwrap();
    let h = String::from_utf8(h.to_vec()).unwrap();
    let jobs = ok(&s, &["show", "jobs"]);
    assert!(jobs.starts_with("HANDLE "), "{jobs}");
    assert!(jobs.contains(&h) && jobs.ends_with("yes\n"), "{jobs}");
    assert_eq!(ok(&s, &["show", "unique", "jobs"]), "UNIQUE\nu-1\n");
    assert!(ok(&s, &["show", "scheduled"]).starts_with("HANDLE  FUNCTION"));
    assert!(ok(&s, &["show", "schedules"]).starts_with("ID  SPEC"));
    let journal = ok(&s, &["show", "journal"]);
    assert!(journal.starts_with("NAME "), "{journal}");
    assert!(journal.contains("\nlive_jobs "), "{journal}");
    assert!(ok(&s, &["journal"]).contains("\nlive_jobs "));
    assert_eq!(ok(&s, &["create", "function", "made"]), "OK\n");
    assert_eq!(ok(&s, &["drop", "function", "made"]), "OK\n");
    assert_eq!(ok(&s, &["cancel", "job", &h]), "OK\n");
    // A known line outside this tool's list: the reply's lines as they came.
    assert_eq!(
        ok(&s, &["version"]),
        format!("{}\n", env!("CARGO_PKG_VERSION"))
    );
    let o = admin(&s, &["reload", "schedules"]);
    assert_eq!(o.code(), Some(1), "{o:?}");
    assert!(o.stderr.contains("schedules file"), "{o:?}");
}

#[test]
fn binary_uniques_are_escaped_in_tables_and_raw_with_raw() {
    let s = Server::start(&[]);
    // The server writes control characters of uniques as `\xHH` itself (they could forge
    // reply lines); what it passes on as bytes (C1 controls, bytes that are
    // not UTF-8, the backslash) the tool escapes.
    let unique: &[u8] = b"u\xc2\x9b31m\xff\\";
    client(&s)
        .submit(SubmitKind::NormalBg, b"bin", unique, b"\x00\x01")
        .unwrap();
    assert_eq!(
        ok(&s, &["unique"]),
        "UNIQUE\nu\\xc2\\x9b31m\\xff\\x5c\n",
        "no terminal escape reaches the screen"
    );
    let addr = s.addr.to_string();
    let out = std::process::Command::new(BIN)
        .args(["admin", "-s", &addr, "--raw", "unique"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, [unique, b"\n.\n"].concat());
}
