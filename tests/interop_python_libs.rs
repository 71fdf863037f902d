//! Interop with the python Gearman libraries users run, each as
//! worker and client of a real gearwheel: python3-gearman 0.1.0 and pygearman 0.2.6 (two
//! Python 3 forks of python-gearman 2.0, one program for both:
//! tests/interop/python/python_gearman.py) and aiogear 0.2.6 (asyncio:
//! tests/interop/python/aiogear_client.py), installed from
//! tests/interop/python/requirements.txt. What each library sends, and its quirks, are written
//! at the top of its program.
//!
//! Against gearmand 1.1.20 two things differ. python-gearman's worker follows WORK_EXCEPTION
//! with WORK_FAIL; gearmand answers ERROR JOB_NOT_FOUND (gearwheel drops the echo), and sends
//! clients that did not ask for exceptions `WORK_FAIL handle\0` with a NUL, which both forks'
//! clients take for an unknown handle and die of (gearwheel sends the plain handle). And
//! gearmand refuses aiogear's SUBMIT_JOB_SCHED with an ERROR, which aiogear cannot parse.

mod support;

use support::*;

const PYTHON3_GEARMAN: LibProgram = LibProgram {
    program: "python3",
    before_port: &["python/python_gearman.py", "python3_gearman"],
};
const PYGEARMAN: LibProgram = LibProgram {
    program: "python3",
    before_port: &["python/python_gearman.py", "gearman"],
};
const AIOGEAR: LibProgram = LibProgram {
    program: "python3",
    before_port: &["python/aiogear_client.py"],
};

/// What python_gearman.py's `do` prints with either fork.
const PYTHON_GEARMAN_DO: &str = "normal COMPLETE 'olleh' data=[] warnings=[] status=None exception=None\n\
     high COMPLETE 'hgih' data=[] warnings=[] status=None exception=None\n\
     low COMPLETE 'wol' data=[] warnings=[] status=None exception=None\n\
     progress COMPLETE 'done:p' data=['chunk'] warnings=['careful'] status=2 exception=None\n\
     fail FAILED None data=[] warnings=[] status=None exception=None\n\
     throw FAILED None data=[] warnings=[] status=None exception=None\n\
     multiple ['eno', 'owt', 'eerht']\n";

fn python_gearman_do(lib: &LibProgram) {
    let s = Server::start(&[]);
    let mut w = lib.worker(&s);
    assert_eq!(lib.client(&s, "do", ""), PYTHON_GEARMAN_DO);
    // The WORK_FAIL that followed the WORK_EXCEPTION of `throw` got no ERROR.
    assert!(!w.stdout().contains("error"), "{}", w.describe());
    assert!(!w.stderr().contains("JOB_NOT_FOUND"), "{}", w.describe());
    assert!(w.running(), "{}", w.describe());
}

/// Background jobs of three priorities queued before any worker runs: High first, Low last.
/// `state` is what the client shows of a submitted job besides its handle.
fn background_order(lib: &LibProgram, state: &str) {
    let s = Server::start(&[]);
    assert_eq!(
        lib.client(&s, "background", ""),
        ["L1", "N1", "H1"]
            .map(|d| format!("submitted {d} {state}True\n"))
            .concat()
    );
    queued_jobs_run_by_priority(&s, 1, |s| lib.worker(s), &["H1", "N1", "L1"]);
}

/// The admin client (ping, version, status, workers; pygearman also getpid, show jobs and
/// show unique jobs) and GET_STATUS, while a job is held at 3/7.
fn python_gearman_admin(lib: &LibProgram, extra: &str) {
    let s = Server::start(&[]);
    let _w = lib.worker(&s);
    let dir = TempDir::new("python-gearman");
    let flag = dir.path("release");
    let module = lib.before_port[1];
    assert_eq!(
        lib.client(&s, "admin", flag.to_str().unwrap()),
        format!(
            "ping True\n\
             version OK {}\n\
             job status True True 3 7\n\
             status [('fail', 0, 0, 1), ('hold', 1, 1, 1), ('log', 0, 0, 1), \
             ('progress', 0, 0, 1), ('reverse', 0, 0, 1), ('throw', 0, 0, 1)]\n\
             workers 1 ['fail', 'hold', 'log', 'progress', 'reverse', 'throw']\n\
             {extra}\
             hold COMPLETE 'released' data=[] warnings=[] status=3 exception=None\n",
            env!("CARGO_PKG_VERSION")
        ),
        "{module}"
    );
}

#[test]
fn python3_gearman_worker_and_client() {
    if !need("python3 with python3-gearman") {
        return;
    }
    python_gearman_do(&PYTHON3_GEARMAN);
}

#[test]
fn python3_gearman_background_priorities() {
    if !need("python3 with python3-gearman") {
        return;
    }
    background_order(&PYTHON3_GEARMAN, "CREATED ");
}

#[test]
fn python3_gearman_admin_and_status() {
    if !need("python3 with python3-gearman") {
        return;
    }
    python_gearman_admin(&PYTHON3_GEARMAN, "");
}

#[test]
fn pygearman_worker_and_client() {
    if !need("python3 with pygearman") {
        return;
    }
    python_gearman_do(&PYGEARMAN);
}

#[test]
fn pygearman_background_priorities() {
    if !need("python3 with pygearman") {
        return;
    }
    background_order(&PYGEARMAN, "CREATED ");
}

#[test]
fn pygearman_admin_and_status() {
    if !need("python3 with pygearman") {
        return;
    }
    python_gearman_admin(
        &PYGEARMAN,
        "getpid True\n\
         show jobs [(0, 0, 0)] [True]\n\
         show unique jobs ({'unique': ['pg-hold']},)\n",
    );
}

#[test]
fn aiogear_worker_and_client() {
    if !need("python3 with aiogear") {
        return;
    }
    let s = Server::start(&[]);
    let _w = AIOGEAR.worker(&s);
    assert_eq!(
        AIOGEAR.client(&s, "do", ""),
        "option b'exceptions'\n\
         normal WorkComplete olleh\n\
         high WorkComplete hgih\n\
         low WorkComplete wol\n\
         throw WorkException boom\n"
    );
    let dir = TempDir::new("aiogear");
    let flag = dir.path("release");
    assert_eq!(
        AIOGEAR.client(&s, "status", flag.to_str().unwrap()),
        "status True True 0 0\nhold WorkComplete released\n"
    );
}

#[test]
fn aiogear_background_priorities() {
    if !need("python3 with aiogear") {
        return;
    }
    background_order(&AIOGEAR, "");
}

/// aiogear's `submit_job_sched(name, dt)` for a minute two minutes ahead. What it sends (issue
/// 16 item 4): all five fields as plain integers from `dt.strftime('%M %H %d %m %w')`, so the
/// day of week counts from Sunday = 0, and both the day of month and the day of week are set.
/// gearwheel reads the day of week from Monday = 0 and matches all five fields
/// (docs/future-jobs.md), so the job is due on the next date whose day and month are dt's and
/// whose weekday is the one after dt's, years ahead, and the server says so at WARNING.
#[test]
fn aiogear_submit_job_sched() {
    use chrono::{DateTime, Datelike, NaiveDate, Timelike};
    if !need("python3 with aiogear") {
        return;
    }
    let s = Server::start(&["--timezone", "UTC"]);
    let out = AIOGEAR.client(&s, "sched", "2");
    let f: Vec<&str> = out.split_whitespace().collect();
    assert!(f.len() == 8 && f[0] == "sched", "{out:?}");
    let (handle, dt) = (f[1], DateTime::parse_from_rfc3339(f[2]).unwrap());
    let fields: Vec<u32> = f[3..].iter().map(|x| x.parse().unwrap()).collect();
    let wday = dt.weekday().num_days_from_sunday();
    assert_eq!(
        fields,
        [dt.minute(), dt.hour(), dt.day(), dt.month(), wday],
        "{out:?}"
    );
    // The first year after dt's whose date of dt's day and month falls on weekday `wday`
    // counted from Monday.
    let date = (dt.year()..dt.year() + 30)
        .filter_map(|y| NaiveDate::from_ymd_opt(y, dt.month(), dt.day()))
        .find(|d| d.weekday().num_days_from_monday() == wday)
        .unwrap();
    let due = format!(
        "{}T{:02}:{:02}:00Z",
        date.format("%Y-%m-%d"),
        dt.hour(),
        dt.minute()
    );
    let mut admin = s.connect();
    let scheduled = admin.admin("show scheduled", true);
    assert!(
        scheduled.starts_with(&format!("{handle}\tlog\t")),
        "{scheduled:?}"
    );
    assert_eq!(
        scheduled.lines().next().unwrap().split('\t').nth(3),
        Some(due.as_str()),
        "{scheduled:?}"
    );
    s.wait_log(&format!("future job {handle} (log) is due {due}, "), 5);
}
