//! Limits over real sockets: `limit` caps the running jobs and an end wakes a sleeper,
//! `pause function` keeps the queue and `resume function` runs it, `rate` reopens on time (a
//! manual clock), `expire` fails what waited too long; `show limits` says so.

use crate::support;

use support::*;

/// A worker connection registered for `funcs`.
fn worker(s: &impl Connect, funcs: &[&str]) -> Conn {
    let mut w = s.open();
    w.can_do(funcs);
    w
}

/// Server and InProcess alike.
trait Connect {
    fn open(&self) -> Conn;
}

impl Connect for Server {
    fn open(&self) -> Conn {
        self.connect()
    }
}

impl Connect for InProcess {
    fn open(&self) -> Conn {
        self.connect()
    }
}

#[test]
fn a_limit_caps_running_jobs_and_an_end_wakes_a_sleeper() {
    let s = Server::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("limit resize 2", false), "OK\r\n");
    let mut c = s.connect();
    for i in 0..4 {
        c.submit(t::SUBMIT_JOB_BG, "resize", "", format!("{i}").as_bytes());
    }
    let mut ws: Vec<Conn> = (0..4).map(|_| worker(&s, &["resize"])).collect();
    let a = ws[0].grab_uniq().expect("a job");
    ws[1].grab_uniq().expect("a job");
    assert!(ws[2].grab_uniq().is_none(), "a third job ran under limit 2");
    assert_eq!(
        admin.admin("show limits", true),
        "resize\t2\t2\t-\t-\t-\t-\t2\n.\n"
    );
    // The sleeper hears of the room an end makes.
    ws[3].send_req(t::PRE_SLEEP, &[]);
    ws[0].send_req(t::WORK_COMPLETE, &[a.0.as_bytes(), b""]);
    ws[3].expect(t::NOOP);
    assert!(ws[3].grab_uniq().is_some());
    assert!(ws[2].grab_uniq().is_none());
    assert_eq!(admin.admin("limit resize off", false), "OK\r\n");
    assert!(ws[2].grab_uniq().is_some());
    assert_eq!(admin.admin("show limits", true), ".\n");
}

#[test]
fn a_paused_function_keeps_its_queue_and_runs_it_on_resume() {
    let s = Server::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("pause function email", false), "OK\r\n");
    let mut c = s.connect();
    let handles: Vec<String> = (0..3)
        .map(|i| c.submit(t::SUBMIT_JOB_BG, "email", "", format!("{i}").as_bytes()))
        .collect();
    let mut w = worker(&s, &["email"]);
    assert!(w.grab_uniq().is_none(), "a paused function's job ran");
    w.send_req(t::PRE_SLEEP, &[]);
    assert_eq!(
        admin.admin("show limits", true),
        "email\t-\t0\t-\t-\tpaused\t-\t3\n.\n"
    );
    assert_eq!(admin.admin("status", true), "email\t3\t0\t1\n.\n");
    assert_eq!(admin.admin("resume function email", false), "OK\r\n");
    w.expect(t::NOOP);
    let got: Vec<String> = std::iter::from_fn(|| w.grab_uniq().map(|j| j.0)).collect();
    assert_eq!(got, handles);
}

#[test]
fn a_rate_hands_out_n_a_window_and_reopens_on_time() {
    let s = InProcess::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("rate api 2/1s", false), "OK\r\n");
    let mut c = s.connect();
    for i in 0..5 {
        c.submit(t::SUBMIT_JOB_BG, "api", "", format!("{i}").as_bytes());
    }
    let mut w = worker(&s, &["api"]);
    assert!(w.grab_uniq().is_some());
    s.advance(300);
    assert!(w.grab_uniq().is_some());
    assert!(w.grab_uniq().is_none(), "a third handout inside the window");
    w.send_req(t::PRE_SLEEP, &[]);
    assert_eq!(
        admin.admin("show limits", true),
        "api\t-\t2\t2/1000ms\t2\t-\t-\t3\n.\n"
    );
    // The window reopens 1 s after the first handout, not before.
    s.advance(600);
    w.expect_silence(1);
    s.advance(100);
    w.expect(t::NOOP);
    assert!(w.grab_uniq().is_some());
    assert!(w.grab_uniq().is_none());
}

#[test]
fn expired_jobs_are_failed_never_run() {
    let s = InProcess::start(&[]);
    let mut admin = s.connect();
    assert_eq!(admin.admin("expire remind 1m", false), "OK\r\n");
    let mut c = s.connect();
    let old = c.submit(t::SUBMIT_JOB_BG, "remind", "", b"old");
    let mut fg = s.connect();
    let fg_handle = fg.submit(t::SUBMIT_JOB, "remind", "", b"old-fg");
    s.advance(50_000);
    let young = c.submit(t::SUBMIT_JOB_BG, "remind", "", b"young");
    s.advance(11_000);
    let mut w = worker(&s, &["remind"]);
    let (h, _, _, data) = w.grab_uniq().expect("the young job");
    assert_eq!((h, data), (young, b"young".to_vec()));
    assert_eq!(fg.expect(t::WORK_FAIL), fg_handle.as_bytes());
    let failed = admin.admin("show failed", true);
    let row = failed
        .lines()
        .find(|l| l.starts_with(&old))
        .unwrap_or_else(|| panic!("{old} not failed: {failed}"));
    assert!(row.contains("expired"), "{row}");
}

#[test]
fn limits_survive_kill_9_and_hold_the_queue_read_back() {
    let dir = TempDir::new("limits-journal");
    let args = ["--data-dir", dir.to_str().unwrap()];
    let mut s = Server::start(&args);
    let mut admin = s.connect();
    for line in [
        "limit resize 2",
        "rate api 100/1m",
        "pause function email",
        "expire remind 1h",
        "limit gone 1",
        "limit gone off",
    ] {
        assert_eq!(admin.admin(line, false), "OK\r\n", "{line}");
    }
    let mut c = s.connect();
    let handles: Vec<String> = (0..2)
        .map(|i| c.submit(t::SUBMIT_JOB_BG, "email", "", format!("{i}").as_bytes()))
        .collect();
    let before = admin.admin("show limits", true);
    assert_eq!(
        before,
        "api\t-\t0\t100/60000ms\t0\t-\t-\t0\n\
         email\t-\t0\t-\t-\tpaused\t-\t2\n\
         remind\t-\t0\t-\t-\t-\t3600000\t0\n\
         resize\t2\t0\t-\t-\t-\t-\t0\n.\n"
    );
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
    let s = Server::start(&args);
    let mut admin = s.connect();
    assert_eq!(admin.admin("show limits", true), before);
    // Still paused: the queue read back waits, and runs on resume.
    let mut w = s.connect();
    w.can_do(&["email"]);
    assert!(
        w.grab_uniq().is_none(),
        "a paused function's job ran after a restart"
    );
    assert_eq!(admin.admin("resume function email", false), "OK\r\n");
    let got: Vec<String> = std::iter::from_fn(|| w.grab_uniq().map(|j| j.0)).collect();
    assert_eq!(got, handles);
}

/// `group=`: the backup and the reindex never run at once, across a reload of the file that
/// keeps the group; the reindex due while the backup runs starts when the backup ends.
#[test]
fn runs_of_one_group_never_overlap_across_a_reload() {
    let dir = TempDir::new("limits-group");
    let file = dir.path("s.cron");
    let text = "@every 10s backup id=backup group=nightly\n\
                @every 10s reindex id=reindex group=nightly\n";
    std::fs::write(&file, text).unwrap();
    let s = InProcess::start(&["--schedules", file.to_str().unwrap()]);
    let mut admin = s.connect();
    let mut w = worker(&s, &["backup", "reindex"]);
    s.advance(10_000);
    let (first, f1, _, _) = w.grab_uniq().expect("one run of the group");
    assert!(
        w.grab_uniq().is_none(),
        "both runs of the group were handed out"
    );
    // A reload that keeps the group keeps the waiting run waiting.
    std::fs::write(&file, format!("{text}# reloaded\n")).unwrap();
    assert_eq!(admin.admin("reload schedules", false), "OK 2\n");
    assert!(
        w.grab_uniq().is_none(),
        "a reload let the group's second run start"
    );
    w.send_req(t::WORK_COMPLETE, &[first.as_bytes(), b""]);
    let (_, f2, _, _) = w
        .grab_uniq()
        .expect("the waiting run, once the first ended");
    assert_ne!(f1, f2);
    assert!(w.grab_uniq().is_none());
}

/// `group=` after a kill -9: the run that was going comes back from the journal still counted
/// as its group's, so the other entry's next run waits for it instead of running beside it.
#[test]
fn a_group_waits_for_the_run_read_back_after_kill_9() {
    let dir = TempDir::new("limits-group-restart");
    let file = dir.path("s.cron");
    std::fs::write(
        &file,
        "@every 1s backup id=backup group=nightly\n\
         @every 1s reindex id=reindex group=nightly\n",
    )
    .unwrap();
    let args = [
        "--data-dir",
        dir.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let mut s = Server::start(&args);
    let mut w = worker(&s, &["backup", "reindex"]);
    let (first, ..) = poll(10, "a run of the group", || {
        w.grab_uniq().ok_or_else(|| "none yet".to_string())
    });
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");
    let s = Server::start(&args);
    let mut w = worker(&s, &["backup", "reindex"]);
    let (back, ..) = w.grab_uniq().expect("the run read back from the journal");
    assert_eq!(back, first, "the run going at the kill came back");
    // The barrier: a later time of an entry of the group came and was held back.
    s.log_line("waits: group nightly has a run going", 10);
    assert!(
        w.grab_uniq().is_none(),
        "a run of the group started beside the run read back"
    );
    w.send_req(t::WORK_COMPLETE, &[back.as_bytes(), b""]);
    poll(10, "the held run, once the first ended", || {
        w.grab_uniq().ok_or_else(|| "none yet".to_string())
    });
}

/// The bounds of the functions' settings are flags: `--max-function-settings` bounds each
/// table (leases, retry policies, limits) on its own, `--max-rate-count` a rate's N; each
/// refusal names its flag. A restart with a lower bound reads back every setting the journal
/// kept and still refuses a new function.
#[test]
fn the_bounds_of_functions_settings_are_flags_and_a_lower_one_keeps_the_journal() {
    let dir = TempDir::new("bounds");
    let data = dir.to_str().unwrap().to_string();
    let mut s = Server::start(&[
        "--data-dir",
        &data,
        "--max-function-settings",
        "2",
        "--max-rate-count",
        "5",
    ]);
    let mut a = s.connect();
    assert_eq!(
        a.admin("rate f0 6/1s", false),
        "ERR INVALID_ARGUMENTS N+is+1+to+5+(--max-rate-count)\r\n"
    );
    assert_eq!(a.admin("rate f0 5/1s", false), "OK\r\n");
    assert_eq!(a.admin("limit f1 1", false), "OK\r\n");
    assert_eq!(
        a.admin("pause function f2", false),
        "ERR TOO_MANY_LIMITS 2+functions+have+a+setting+already+(--max-function-settings)\r\n"
    );
    for f in ["f0", "f1"] {
        assert_eq!(a.admin(&format!("timeout {f} 1m"), false), "OK\r\n");
        assert_eq!(a.admin(&format!("retry {f} 1 1s"), false), "OK\r\n");
    }
    assert_eq!(
        a.admin("timeout f2 1m", false),
        "ERR TOO_MANY_LEASES 2+functions+have+a+lease+already+(--max-function-settings):+clear+one+with+timeout+FUNCTION+off\r\n"
    );
    assert_eq!(
        a.admin("retry f2 1 1s", false),
        "ERR TOO_MANY_RETRY_POLICIES 2+functions+have+one+already+(--max-function-settings)\r\n"
    );
    s.signal(libc::SIGTERM);
    s.wait_exit(10).expect("stopped");

    let s = Server::start(&[
        "--data-dir",
        &data,
        "--max-function-settings",
        "1",
        "--max-rate-count",
        "2",
    ]);
    s.log_line(
        "journal: 2 functions have limits, past --max-function-settings 1",
        10,
    );
    s.log_line("journal: 1 function has a rate past --max-rate-count 2", 10);
    let mut a = s.connect();
    let limits = a.admin("show limits", true);
    assert!(limits.starts_with("f0\t-\t0\t5/1000ms\t"), "{limits}");
    assert!(limits.contains("\nf1\t1\t"), "{limits}");
    assert_eq!(a.admin("show timeouts", true), "f0\t60000\nf1\t60000\n.\n");
    let retries = a.admin("show retries", true);
    assert!(
        retries.contains("f0\t1\t") && retries.contains("f1\t1\t"),
        "{retries}"
    );
    assert!(
        a.admin("limit f2 1", false)
            .starts_with("ERR TOO_MANY_LIMITS 1+")
    );
    assert!(
        a.admin("timeout f2 1m", false)
            .starts_with("ERR TOO_MANY_LEASES 1+")
    );
    assert!(
        a.admin("rate f0 3/1s", false)
            .starts_with("ERR INVALID_ARGUMENTS N+is+1+to+2+")
    );
    assert_eq!(
        a.admin("limit f1 2", false),
        "OK\r\n",
        "one kept may change"
    );
}
