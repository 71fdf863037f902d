//! `@after` over real sockets, on a manual clock: a child runs once per completed set of its
//! parents' runs (fan-in), `when=success` against `when=always`, `within=` missing a run
//! with an alert naming the parent that did not run, `{after}` filled with the parents'
//! runs, a reload that drops a parent, and a kill -9 that keeps the partial set.

use crate::support;

use support::*;

/// A run of entry `id` by hand; returns its job's handle.
fn run(c: &mut Conn, id: &str) -> String {
    let reply = c.admin(&format!("run schedule {id}"), false);
    reply
        .trim()
        .strip_prefix("OK ")
        .unwrap_or_else(|| panic!("run schedule {id}: {reply}"))
        .to_string()
}

/// Take the job `handle` of `func` and end it with `ptype` (WORK_COMPLETE or WORK_FAIL).
fn end(w: &mut Conn, handle: &str, ptype: u32) {
    let (got, _) = grab(w);
    assert_eq!(got, handle);
    let args: &[&[u8]] = if ptype == t::WORK_COMPLETE {
        &[b"ok"]
    } else {
        &[]
    };
    work(w, ptype, handle, args);
    sync(w);
}

/// The next job for `w`'s functions, if one is queued (NO_JOB is the server's positive
/// "none"), completed at once (a child's run still going would skip its next one:
/// overlap=skip).
fn queued(w: &mut Conn) -> Option<(String, String)> {
    let (h, _, _, data) = w.grab_uniq()?;
    work(w, t::WORK_COMPLETE, &h, &[b""]);
    sync(w);
    Some((h, String::from_utf8(data).unwrap()))
}

fn schedules(text: &str, name: &str) -> (TempDir, String) {
    let dir = TempDir::new(name);
    let file = dir.path("s.cron");
    std::fs::write(&file, text).unwrap();
    let f = file.to_str().unwrap().to_string();
    (dir, f)
}

#[test]
fn a_child_runs_once_per_completed_set_with_its_parents_runs_in_after() {
    let (_dir, file) = schedules(
        "@every 1d a\n@every 1d b\n@after a,b c -- {\"from\":{after}}\n",
        "after-fanin",
    );
    let s = InProcess::start(&["--schedules", &file]);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let mut pb = worker(&s, &["b"]);
    let mut child = worker(&s, &["c"]);

    // a twice: still one parent of two; nothing for c.
    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_COMPLETE);
    let a2 = run(&mut admin, "a");
    end(&mut pa, &a2, t::WORK_COMPLETE);
    assert_eq!(queued(&mut child), None, "c ran before b");

    // b completes the set: c runs once, with the newest run of each parent.
    let b1 = run(&mut admin, "b");
    end(&mut pb, &b1, t::WORK_COMPLETE);
    let (_, data) = queued(&mut child).expect("c runs when both parents have run");
    assert!(
        data.starts_with(&format!(
            "{{\"from\":[{{\"id\":\"a\",\"handle\":\"{a2}\",\"scheduled\":\""
        )),
        "{data}"
    );
    assert!(
        data.contains(&format!("{{\"id\":\"b\",\"handle\":\"{b1}\""))
            && data.contains("\"outcome\":\"complete\"")
            && !data.contains(&a1),
        "{data}"
    );
    assert_eq!(queued(&mut child), None, "one run per set");

    // A new set begins: b alone again is not enough.
    let b2 = run(&mut admin, "b");
    end(&mut pb, &b2, t::WORK_COMPLETE);
    assert_eq!(queued(&mut child), None, "c ran again without a");
    let a3 = run(&mut admin, "a");
    end(&mut pa, &a3, t::WORK_COMPLETE);
    assert!(queued(&mut child).is_some(), "the second set runs c again");
    let row = admin.schedule_row("c");
    assert_eq!((row[1].as_str(), row[7].as_str()), ("@after a,b", "2"));
}

#[test]
fn when_success_waits_for_a_completed_run_and_when_always_takes_any() {
    let (_dir, file) = schedules(
        "@every 1d a\n@after a on.success -- {after}\n@after a on.any when=always -- {after}\n",
        "after-when",
    );
    let s = InProcess::start(&["--schedules", &file]);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let mut success = worker(&s, &["on.success"]);
    let mut any = worker(&s, &["on.any"]);

    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_FAIL);
    let (_, data) = queued(&mut any).expect("when=always runs after a failed parent");
    assert!(data.contains("\"outcome\":\"failed\""), "{data}");
    assert_eq!(
        queued(&mut success),
        None,
        "when=success ran after a failure"
    );

    let a2 = run(&mut admin, "a");
    end(&mut pa, &a2, t::WORK_COMPLETE);
    let (_, data) = queued(&mut success).expect("when=success runs after a completed run");
    assert!(data.contains(&a2) && data.contains("\"outcome\":\"complete\""));
    assert!(
        queued(&mut any).is_some(),
        "when=always runs after each run"
    );
}

#[test]
fn a_parent_that_does_not_run_within_misses_the_run_and_alerts_naming_it() {
    let (_dir, file) = schedules(
        "@every 1d a\n@every 1d b\n@after a,b c within=10m on_failure=alert\n",
        "after-within",
    );
    let s = InProcess::start(&["--schedules", &file]);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let mut pb = worker(&s, &["b"]);
    let mut child = worker(&s, &["c"]);
    let mut notifier = worker(&s, &["alert"]);

    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_COMPLETE);
    s.advance(9 * 60_000 + 59_000);
    assert!(notifier.grab_uniq().is_none(), "alert before within=");
    s.advance(1_000);
    let (_, alert) = grab(&mut notifier);
    let alert = String::from_utf8(alert).unwrap();
    assert!(
        alert.contains("\"entry\":\"c\"")
            && alert.contains("\"outcome\":\"missed\"")
            && alert.contains("missed: parent b did not run within 10m of a's run at"),
        "{alert}"
    );
    // The set starts afresh: b now is the first of a new one.
    let b1 = run(&mut admin, "b");
    end(&mut pb, &b1, t::WORK_COMPLETE);
    assert_eq!(queued(&mut child), None, "c ran on a stale set");
    let a2 = run(&mut admin, "a");
    end(&mut pa, &a2, t::WORK_COMPLETE);
    assert!(queued(&mut child).is_some(), "both within 10m: c runs");
    let row = admin.schedule_row("c");
    assert!(row[14].contains("missed"), "{row:?}");
}

#[test]
fn a_reload_that_drops_a_parent_drops_its_run_from_the_set() {
    let (dir, file) = schedules(
        "@every 1d a\n@every 1d b\n@after a,b c -- {after}\n",
        "after-reload",
    );
    let s = InProcess::start(&["--schedules", &file]);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let mut pb = worker(&s, &["b"]);
    let mut child = worker(&s, &["c"]);
    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_COMPLETE);
    std::fs::write(
        dir.path("s.cron"),
        "@every 1d a\n@every 1d b\n@after b c -- {after}\n",
    )
    .unwrap();
    assert!(admin.admin("reload schedules", false).starts_with("OK"));
    assert_eq!(queued(&mut child), None, "a reload fires nothing");
    let b1 = run(&mut admin, "b");
    end(&mut pb, &b1, t::WORK_COMPLETE);
    let (_, data) = queued(&mut child).expect("c runs after b");
    assert!(data.contains(&b1) && !data.contains(&a1), "{data}");
}

#[test]
fn a_kill_9_keeps_the_parents_runs_seen_so_far() {
    let dir = TempDir::new("after-restart");
    let file = dir.path("s.cron");
    std::fs::write(&file, "@every 1d a\n@every 1d b\n@after a,b c -- {after}\n").unwrap();
    let data_dir = dir.path("data");
    let args = [
        "--data-dir",
        data_dir.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let s = InProcess::start(&args);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_COMPLETE);
    // Written at the turn's end: the ECHO round trips of `settle` are after it.
    s.settle();
    let s = InProcess::start_on(s.kill9(), &args);
    let mut admin = s.connect();
    let mut pb = worker(&s, &["b"]);
    let mut child = worker(&s, &["c"]);
    assert_eq!(queued(&mut child), None);
    let b1 = run(&mut admin, "b");
    end(&mut pb, &b1, t::WORK_COMPLETE);
    let (_, data) = queued(&mut child).expect("a's run before the restart still counts");
    assert!(data.contains(&a1) && data.contains(&b1), "{data}");
}

#[test]
fn the_history_links_a_run_to_its_parents_runs() {
    let (_dir, file) = schedules("@every 1d a\n@after a c\n", "after-links");
    let s = HttpServer::in_process(&["--schedules", &file]);
    let mut admin = s.server.connect();
    let mut pa = worker(&s.server, &["a"]);
    let mut child = worker(&s.server, &["c"]);
    let a1 = run(&mut admin, "a");
    end(&mut pa, &a1, t::WORK_COMPLETE);
    let (c1, _) = queued(&mut child).expect("c runs after a");

    // show runs: the last column names the parent's run.
    let runs = admin.admin("show runs c", true);
    let line = runs.lines().next().unwrap_or_default();
    let cols: Vec<&str> = line.split('\t').collect();
    assert_eq!(cols.get(1), Some(&c1.as_str()), "{runs}");
    assert!(
        cols.get(6)
            .is_some_and(|a| a.starts_with(&format!("a {a1} ")) && a.ends_with(" complete")),
        "{runs}"
    );
    // /schedules: the run's parents, and the set pending since (empty).
    let body = s.get("/schedules").text();
    assert!(
        body.contains("\"after_pending\":[]")
            && body.contains(&format!("\"after\":[{{\"id\":\"a\",\"handle\":\"{a1}\"")),
        "{body}"
    );
    // The run's page: /jobs/HANDLE carries its parents' runs.
    let job = s.get(&format!("/jobs/{c1}")).text();
    assert!(
        job.contains(&format!("\"after\":[{{\"id\":\"a\",\"handle\":\"{a1}\"")),
        "{job}"
    );
    // A parent's run ended since is pending, until the child runs again.
    let a2 = run(&mut admin, "a");
    end(&mut pa, &a2, t::WORK_COMPLETE);
    let (c2, _) = queued(&mut child).expect("c runs after a again");
    assert_ne!(c2, c1);
}

#[test]
fn a_fan_out_parent_has_run_when_its_last_job_ends() {
    let (_dir, file) = schedules("@every 1d a fanout=2\n@after a c\n", "after-fanout");
    let s = InProcess::start(&["--schedules", &file]);
    let mut admin = s.connect();
    let mut pa = worker(&s, &["a"]);
    let mut child = worker(&s, &["c"]);
    let reply = admin.admin("run schedule a", false);
    let handles: Vec<&str> = reply.trim().trim_start_matches("OK ").split(' ').collect();
    assert_eq!(handles.len(), 2, "{reply}");
    end(&mut pa, handles[0], t::WORK_COMPLETE);
    assert_eq!(queued(&mut child), None, "c ran after one part of two");
    end(&mut pa, handles[1], t::WORK_COMPLETE);
    assert!(queued(&mut child).is_some(), "c runs once both parts ended");
    // One part of two failed: the run did not complete (when=success).
    let reply = admin.admin("run schedule a", false);
    let handles: Vec<&str> = reply.trim().trim_start_matches("OK ").split(' ').collect();
    end(&mut pa, handles[0], t::WORK_FAIL);
    end(&mut pa, handles[1], t::WORK_COMPLETE);
    assert_eq!(queued(&mut child), None, "c ran after a part failed");
}
