//! The failed list over real sockets: background jobs a real worker fails are kept with their
//! error text, `retry failed` hands the same unique and workload to a worker again, `drop
//! failed` forgets, and `--keep-failed` bounds the list.

use crate::support;
use support::*;

fn rows(text: &str) -> Vec<Vec<String>> {
    let body = text
        .strip_suffix(".\n")
        .unwrap_or_else(|| panic!("{text:?}"));
    body.lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn failed_background_jobs_are_kept_retried_and_dropped() {
    let s = Server::start(&["--job-handle-prefix", "H:f"]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["f"]);
    let h1 = c.submit(t::SUBMIT_JOB_BG, "f", "u1", b"work one");
    let h2 = c.submit(t::SUBMIT_JOB_LOW_BG, "f", "u2", b"work two");
    let (g1, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(g1, h1);
    w.send_req(t::WORK_FAIL, &[g1.as_bytes()]);
    let (g2, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(g2, h2);
    w.send_req(t::WORK_EXCEPTION, &[g2.as_bytes(), b"boom\r\nline two"]);
    // A foreground failure is not kept.
    c.send_req(t::SUBMIT_JOB, &[b"f", b"u3", b"fg"]);
    c.expect(t::JOB_CREATED);
    let (g3, _, _, _) = w.grab_uniq().unwrap();
    w.send_req(t::WORK_FAIL, &[g3.as_bytes()]);
    c.expect(t::WORK_FAIL);

    let r = rows(&c.admin("show failed", true));
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0][..4], [h1.as_str(), "f", "u1", "1"]);
    assert_eq!(r[0][6..], ["-", "failed (WORK_FAIL)"]);
    assert_eq!(r[1][..3], [h2.as_str(), "f", "u2"]);
    assert_eq!(r[1][7], "boom\\x0d\\x0aline two");
    assert!(r[0][4].ends_with('Z') && r[0][4] == r[0][5], "{:?}", r[0]);
    assert_eq!(c.admin("show failed other", true), ".\n");

    assert_eq!(c.admin(&format!("retry failed {h1}"), false), "OK 1\n");
    let (again, func, unique, data) = w.grab_uniq().expect("the retried job");
    assert_ne!(again, h1);
    assert_eq!((func.as_str(), unique.as_str()), ("f", "u1"));
    assert_eq!(data, b"work one");
    w.send_req(t::WORK_COMPLETE, &[again.as_bytes(), b""]);
    let r = rows(&c.admin("show failed", true));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0][0], h2);
    assert_eq!(c.admin("drop failed all", false), "OK 1\n");
    assert_eq!(c.admin("show failed", true), ".\n");
    assert!(
        c.admin("retry failed", false)
            .starts_with("ERR INVALID_ARGUMENTS")
    );
}

#[test]
fn keep_failed_keeps_the_newest() {
    let s = Server::start(&["--job-handle-prefix", "H:k", "--keep-failed", "2"]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["f"]);
    for u in ["a", "b", "c"] {
        c.submit(t::SUBMIT_JOB_BG, "f", u, b"x");
        let (h, _, _, _) = w.grab_uniq().unwrap();
        w.send_req(t::WORK_FAIL, &[h.as_bytes()]);
    }
    // Its NO_JOB says the worker's last WORK_FAIL was read.
    assert!(w.grab_uniq().is_none());
    let uniques: Vec<String> = rows(&c.admin("show failed", true))
        .into_iter()
        .map(|row| row[2].clone())
        .collect();
    assert_eq!(uniques, ["b", "c"]);
}

#[test]
fn the_failed_list_survives_kill_9_with_the_journal() {
    let dir = TempDir::new("failed");
    let args = [
        "--job-handle-prefix",
        "H:j",
        "--data-dir",
        dir.to_str().unwrap(),
    ];
    let mut s = Server::start(&args);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["f"]);
    let mut handles = Vec::new();
    for u in ["a", "b", "c", "d"] {
        handles.push(c.submit(t::SUBMIT_JOB_BG, "f", u, u.as_bytes()));
        let (h, _, _, _) = w.grab_uniq().unwrap();
        w.send_req(
            t::WORK_EXCEPTION,
            &[h.as_bytes(), format!("bad {u}").as_bytes()],
        );
    }
    assert!(w.grab_uniq().is_none());
    assert_eq!(
        c.admin(&format!("drop failed {}", handles[1]), false),
        "OK 1\n"
    );
    assert_eq!(
        c.admin(&format!("retry failed {}", handles[2]), false),
        "OK 1\n"
    );
    // A background JOB_CREATED is sent only once this turn's records are durable, and the
    // admin lines' records were written before it.
    c.submit(t::SUBMIT_JOB_BG, "g", "sync", b"");
    let before = c.admin("show failed", true);
    assert_eq!(rows(&before).len(), 2, "{before}");
    drop((c, w));
    s.signal(libc::SIGKILL);
    s.wait_exit(5).expect("killed");

    let s = Server::start(&args);
    let mut c = s.connect();
    assert_eq!(c.admin("show failed", true), before);
    let r = rows(&before);
    assert_eq!((r[0][2].as_str(), r[0][7].as_str()), ("a", "bad a"));
    assert_eq!((r[1][2].as_str(), r[1][7].as_str()), ("d", "bad d"));
    // The retried job is queued once, the failed ones not at all.
    let mut w = s.connect();
    w.can_do(&["f"]);
    let (_, _, unique, data) = w.grab_uniq().expect("the retried job");
    assert_eq!((unique.as_str(), data.as_slice()), ("c", &b"c"[..]));
    assert!(w.grab_uniq().is_none());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
