//! The journal over real processes: background and future jobs survive kill -9 with their
//! handles, finished jobs stay finished, the handle counter moves on, schedule runs are
//! remembered, and damage stops start-up with the file and offset until --repair.

use crate::support;
use std::time::{SystemTime, UNIX_EPOCH};

use support::*;

fn data_dir(name: &str) -> TempDir {
    TempDir::new(&format!("journal-{name}"))
}

fn start(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--job-handle-prefix",
        "H:j",
        "--data-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn kill9(mut s: Server) {
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
}

#[test]
fn background_and_future_jobs_survive_kill_9_with_their_handles() {
    let dir = data_dir("kill");
    let s = start(&dir, &[]);
    let mut c = s.connect();
    let h1 = c.submit(t::SUBMIT_JOB_BG, "fn", "u1", b"one");
    let h2 = c.submit(t::SUBMIT_JOB_LOW_BG, "fn", "", b"two");
    let h3 = c.submit(t::SUBMIT_JOB_HIGH_BG, "fn", "u3", b"three");
    let later = (SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        .to_string();
    c.send_req(
        t::SUBMIT_JOB_EPOCH,
        &[b"later", b"e", later.as_bytes(), b"future"],
    );
    let h4 = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    // A foreground job is not kept; a finished one stays finished.
    c.submit(t::SUBMIT_JOB, "fg", "", b"fg");
    let mut w = s.connect();
    w.can_do(&["fn"]);
    let (h, _, _, d) = w.grab_uniq().unwrap();
    assert_eq!((h.as_str(), &d[..]), (h3.as_str(), &b"three"[..]));
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    // The next grab takes `one`: it was running when the server died, so it runs again.
    let (h, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(h, h1);
    kill9(s);

    let s = start(&dir, &[]);
    s.wait_log("3 jobs (1 of them future) recovered", 2);
    // Said once with a count, not once per job.
    assert!(!s.log().contains("accepted future job"), "{}", s.log());
    let mut c = s.connect();
    assert_eq!(c.admin("status", true), "fn\t2\t0\t0\nlater\t1\t0\t0\n.\n");
    assert_eq!(
        c.admin("show jobs", true),
        format!("{h1}\t0\t0\t1\n{h2}\t0\t0\t1\n{h4}\t0\t0\t1\n.\n")
    );
    let sched = c.admin("show scheduled", true);
    assert!(sched.starts_with(&format!("{h4}\tlater\te\t")), "{sched}");
    // Coalescing still works on a restored job, and new handles come after the old ones.
    assert_eq!(c.submit(t::SUBMIT_JOB_BG, "fn", "u1", b"again"), h1);
    // Past the foreground job's H:j:5 too: handles are never reused across restarts.
    let new: u64 = c
        .submit(t::SUBMIT_JOB_BG, "fn", "", b"new")
        .strip_prefix("H:j:")
        .unwrap()
        .parse()
        .unwrap();
    assert!(new > 5, "{new}");
    let mut w = s.connect();
    w.can_do(&["fn"]);
    let order: Vec<String> =
        std::iter::from_fn(|| w.grab_uniq().map(|j| String::from_utf8(j.3).unwrap())).collect();
    assert_eq!(order, ["one", "new", "two"]);
}

#[test]
fn a_clean_stop_keeps_everything_and_a_retried_job_keeps_its_count() {
    let dir = data_dir("clean");
    let s = start(&dir, &["--fsync", "never"]);
    let mut c = s.connect();
    let h = c.submit(t::SUBMIT_JOB_BG, "fn", "u", b"x");
    {
        let mut w = s.connect();
        w.can_do(&["fn"]);
        w.grab_uniq().unwrap();
    }
    // The worker is gone: the job was given back once.
    let given_back = format!("{h}\t1\t0\t1\n.\n");
    wait_admin(&mut c, "show jobs", true, 5, |r| r == given_back);
    s.signal(libc::SIGTERM);
    let mut s = s;
    assert_eq!(s.wait_exit(5).and_then(|st| st.code()), Some(0));
    drop(s);
    let s = start(&dir, &[]);
    let mut c = s.connect();
    assert_eq!(c.admin("show jobs", true), format!("{h}\t1\t0\t1\n.\n"));
}

#[test]
fn schedule_runs_are_remembered_for_catch_up() {
    let dir = data_dir("sched");
    let file = dir.with_extension("cron");
    std::fs::write(&file, "@every 1s tick\n").unwrap();
    let s = start(&dir, &["--schedules", file.to_str().unwrap()]);
    s.wait_log("schedule tick: run scheduled", 3);
    let mut c = s.connect();
    let row = c.admin("show schedules", true);
    let last = row.split('\t').nth(4).unwrap().to_string();
    assert_ne!(last, "-");
    kill9(s);
    let s = start(&dir, &["--schedules", file.to_str().unwrap()]);
    let mut c = s.connect();
    let row = c.admin("show schedules", true);
    let restored = row.split('\t').nth(4).unwrap().to_string();
    assert!(restored >= last, "{restored} < {last}");
    // The job queued before the crash is back, and overlap=skip finds it.
    assert!(c.admin("status", true).starts_with("tick\t1\t"));
}

#[test]
fn damage_in_the_middle_stops_start_up_until_repair() {
    let dir = data_dir("damage");
    let s = start(&dir, &[]);
    let mut c = s.connect();
    for i in 0..20 {
        c.submit(
            t::SUBMIT_JOB_BG,
            "fn",
            &format!("u{i}"),
            b"payload-payload-payload",
        );
    }
    kill9(s);
    let seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&seg, &bytes).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args(["serve", "-p", "0", "--data-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&seg.display().to_string()) && err.contains("offset"),
        "{err}"
    );
    assert!(err.contains("--repair"), "{err}");
    let s = start(&dir, &["--repair"]);
    let mut c = s.connect();
    let total: u32 = c
        .admin("status", true)
        .lines()
        .next()
        .unwrap()
        .split('\t')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (18..20).contains(&total),
        "one damaged record dropped, the rest kept: {total}"
    );
}

#[test]
fn show_journal_reports_the_files_and_fsyncs() {
    let dir = data_dir("show");
    let s = start(&dir, &[]);
    let mut c = s.connect();
    c.submit(t::SUBMIT_JOB_BG, "fn", "", b"x");
    let listing = c.admin("show journal", true);
    let get = |k: &str| -> String {
        listing
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}\t")))
            .unwrap_or_else(|| panic!("{k} in {listing}"))
            .to_string()
    };
    assert_eq!(get("fsync"), "always");
    assert_eq!(get("live_jobs"), "1");
    assert!(get("fsyncs").parse::<u64>().unwrap() >= 1);
    assert!(get("last_fsync").ends_with('Z'));
    assert_eq!(get("write_errors"), "0");
    assert!(listing.ends_with("\n.\n"));
    let plain = Server::start(&[]);
    let mut c = plain.connect();
    assert_eq!(
        c.admin("show journal", false),
        "ERR NO_JOURNAL The+server+runs+without+--data-dir\r\n"
    );
}

#[test]
fn jobs_keep_their_handles_when_the_prefix_changes() {
    let dir = data_dir("prefix");
    let s = start(&dir, &[]);
    let mut c = s.connect();
    let old = c.submit(t::SUBMIT_JOB_BG, "fn", "u", b"old");
    kill9(s);
    let s = Server::start(&[
        "--job-handle-prefix",
        "H:new",
        "--data-dir",
        dir.to_str().unwrap(),
    ]);
    let mut c = s.connect();
    c.send_req(t::GET_STATUS, &[old.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        format!("{old}\x001\x000\x000\x000").into_bytes()
    );
    let new = c.submit(t::SUBMIT_JOB_BG, "fn", "", b"new");
    assert!(new.starts_with("H:new:"), "{new}");
    let mut w = s.connect();
    w.can_do(&["fn"]);
    let (h, _, _, d) = w.grab_uniq().unwrap();
    assert_eq!((h.as_str(), &d[..]), (old.as_str(), &b"old"[..]));
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    let (h, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(h, new);
    // The old handle is gone for good after its completion.
    c.send_req(t::GET_STATUS, &[old.as_bytes()]);
    assert_eq!(
        c.expect(t::STATUS_RES),
        format!("{old}\x000\x000\x000\x000").into_bytes()
    );
}

#[test]
fn a_data_dir_held_by_another_server_does_not_suggest_repair() {
    let dir = data_dir("locked");
    let _first = start(&dir, &[]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gearwheel"))
        .args(["serve", "-p", "0", "--data-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another gearwheel"), "{err}");
    // Repairing a journal another server is writing would be wrong advice.
    assert!(!err.contains("repair"), "{err}");
}

fn num(row: &[String], i: usize) -> u64 {
    row[i].parse().unwrap()
}

#[test]
fn schedule_counters_and_runs_missed_while_down_survive_a_restart() {
    let dir = data_dir("sched-restart");
    let files = data_dir("sched-restart-file");
    std::fs::create_dir_all(&files).unwrap();
    let file = files.join("s.cron");
    std::fs::write(&file, "@every 1s tick\n@every 1s gone\n").unwrap();
    let sched = ["--schedules", file.to_str().unwrap()];
    let s = start(&dir, &sched);
    // A worker fails the first run; the next one stays queued and later ones are skipped.
    let mut w = s.connect();
    w.can_do(&["tick"]);
    let (h, _, _, _) = poll(10, "the first scheduled run", || {
        w.grab_uniq().ok_or_else(|| "NO_JOB".to_string())
    });
    w.send_req(t::WORK_FAIL, &[h.as_bytes()]);
    let mut c = s.connect();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let before = loop {
        let r = c.schedule_row("tick");
        if num(&r, 7) >= 2 && num(&r, 8) == 1 && num(&r, 9) >= 1 {
            break r;
        }
        assert!(std::time::Instant::now() < end, "{r:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    kill9(s);
    // Down for a few seconds, over several run times; `gone` leaves the file. Wall time on
    // purpose: the runs missed are counted from the real clock by a real process restarted.
    std::thread::sleep(std::time::Duration::from_millis(3200));
    std::fs::write(&file, "@every 1s tick\n").unwrap();
    let s = start(&dir, &sched);
    s.wait_log("1 entry from", 5);
    assert!(
        s.log().contains("1 with history from the journal"),
        "a removed entry is not recovered: {}",
        s.log()
    );
    let line = s.log_line("missed while the server was down", 5);
    assert!(
        line.starts_with("WARNING") && line.contains("schedule tick: "),
        "{line}"
    );
    let after = s.connect().schedule_row("tick");
    assert_eq!(after[4], before[4], "last run");
    assert!(
        num(&after, 7) >= num(&before, 7),
        "runs: {before:?} -> {after:?}"
    );
    assert_eq!(num(&after, 8), 1, "failures: {after:?}");
    assert!(
        num(&after, 9) >= num(&before, 9) + 3,
        "skips count the runs missed while down: {before:?} -> {after:?}"
    );
}
