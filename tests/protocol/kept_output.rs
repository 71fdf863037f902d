//! What jobs print, over real sockets: a background job's WORK_DATA, WORK_WARNING and result
//! kept by its handle (live while it runs), `--keep-output` keeping the tail of a large
//! output, foreground jobs keeping nothing, and `show output` under the ACL's `status` for
//! the job's function.

use crate::support;
use support::*;

/// `show output HANDLE` through the client library: (bytes, printed), or the error line.
fn output(s: &Server, handle: &str) -> Result<(Vec<u8>, u64), String> {
    client(s)
        .admin_block(&format!("show output {handle}"))
        .expect("a reply")
        .map(|(b, n)| (b.to_vec(), n))
}

#[test]
fn a_background_jobs_output_and_result_are_kept_by_its_handle() {
    let s = Server::start(&["--job-handle-prefix", "H:o"]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["backup"]);
    let h = c.submit(t::SUBMIT_JOB_BG, "backup", "u1", b"");
    let (g, _, _, _) = w.grab_uniq().unwrap();
    assert_eq!(g, h);
    w.send_req(t::WORK_WARNING, &[h.as_bytes(), b"copying\n"]);
    w.send_req(t::WORK_DATA, &[h.as_bytes(), b"50%\n"]);
    // While it runs: what it printed so far (the admin line is answered after the packets
    // before it on the worker's connection were served: wait for it).
    wait_until(5, "the live output", || {
        output(&s, &h) == Ok((b"copying\n50%\n".to_vec(), 12))
    });
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"ok"]);
    wait_until(5, "the kept output", || {
        output(&s, &h) == Ok((b"copying\n50%\nok".to_vec(), 14))
    });
    // GET_STATUS stays as the protocol says: the job is over.
    c.send_req(t::GET_STATUS, &[h.as_bytes()]);
    let st = c.expect(t::STATUS_RES);
    assert!(st.starts_with(format!("{h}\x000\x00").as_bytes()), "{st:?}");
    // A foreground job's client got its result: nothing is kept.
    c.send_req(t::SUBMIT_JOB, &[b"backup", b"u2", b""]);
    let fg = String::from_utf8(c.expect(t::JOB_CREATED)).unwrap();
    let (g, _, _, _) = w.grab_uniq().unwrap();
    w.send_req(t::WORK_COMPLETE, &[g.as_bytes(), b"r"]);
    c.expect(t::WORK_COMPLETE);
    let e = output(&s, &fg).unwrap_err();
    assert!(e.starts_with("ERR NOT_FOUND"), "{e}");
}

#[test]
fn keep_output_keeps_the_last_bytes_of_a_megabyte() {
    let s = Server::start(&["--keep-output", "65536"]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["big"]);
    let h = c.submit(t::SUBMIT_JOB_BG, "big", "", b"");
    w.grab_uniq().unwrap();
    let mut all = Vec::new();
    for i in 0..16u8 {
        let chunk: Vec<u8> = (0..65536u32).map(|j| b'a' + ((j as u8) ^ i) % 26).collect();
        w.send_req(t::WORK_WARNING, &[h.as_bytes(), &chunk]);
        all.extend_from_slice(&chunk);
    }
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"end"]);
    all.extend_from_slice(b"end");
    wait_until(5, "the kept output", || {
        output(&s, &h).is_ok_and(|(_, n)| n > 0)
    });
    let (kept, printed) = output(&s, &h).unwrap();
    assert_eq!(printed, all.len() as u64);
    assert_eq!(kept.len(), 65536);
    assert_eq!(kept, all[all.len() - 65536..]);
}

#[test]
fn show_output_needs_status_on_the_jobs_function() {
    let dir = TempDir::new("acl-output");
    // 127.0.0.2 may see only `public`'s jobs (binding to it needs no setup on Linux).
    let acl = dir.path("acl");
    std::fs::write(
        &acl,
        "addr:127.0.0.1 submit,work,status *\naddr:127.0.0.2 status public\n",
    )
    .unwrap();
    let s = Server::start(&["--acl", acl.to_str().unwrap()]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["secret", "public"]);
    let mut done = Vec::new();
    for f in ["secret", "public"] {
        let h = c.submit(t::SUBMIT_JOB_BG, f, "", b"");
        w.grab_uniq().unwrap();
        w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), f.as_bytes()]);
        done.push(h);
    }
    wait_until(5, "both kept", || {
        done.iter().all(|h| output(&s, h).is_ok())
    });
    let other = |h: &str| {
        let mut conn = Conn::from_stream(netns::stream_from("127.0.0.2", s.addr));
        conn.admin(&format!("show output {h}"), false)
    };
    let denied = other(&done[0]);
    assert!(denied.starts_with("ERR PERMISSION_DENIED"), "{denied:?}");
    assert!(other(&done[1]).starts_with("OK 6 6\n"));
}

/// `show output HANDLE`'s first line, on a connection of its own.
fn output_head(addr: std::net::SocketAddr, handle: &str) -> String {
    let mut c = Conn::connect(addr);
    c.admin(&format!("show output {handle}"), false)
}

#[test]
fn a_background_jobs_result_is_fetched_by_its_handle_for_24_hours() {
    const DAY: u64 = 24 * 3_600_000;
    let s = InProcess::start(&[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["report"]);
    let h = c.submit(t::SUBMIT_JOB_BG, "report", "", b"");
    w.grab_uniq().unwrap();
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b"42 rows"]);
    // Settle on the worker's own connection: an ECHO on another one can overtake it.
    sync(&mut w);
    let ended = s.now_ms();
    assert_eq!(output_head(s.addr, &h), "OK 7 7\n");
    s.set_time(ended + DAY - 1);
    assert_eq!(output_head(s.addr, &h), "OK 7 7\n");
    s.set_time(ended + DAY);
    assert!(
        output_head(s.addr, &h).starts_with("ERR NOT_FOUND"),
        "kept past --keep-results"
    );
}

#[test]
fn a_runs_last_64_kib_survive_a_kill_9_and_restart() {
    let dir = TempDir::new("kept-restart");
    let file = dir.path("schedules");
    std::fs::write(&file, "0 3 * * * backup\n").unwrap();
    let data = dir.path("data");
    let args = [
        "--http-port",
        "0",
        "--data-dir",
        data.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let s = InProcess::start(&args);
    let mut w = s.connect();
    w.can_do(&["backup"]);
    let mut a = s.connect();
    let ran = a.admin("run schedule backup", false);
    let h = ran
        .trim()
        .strip_prefix("OK ")
        .expect("a handle")
        .to_string();
    assert_eq!(w.grab_uniq().unwrap().0, h);
    // The command prints 1 MB, in lines.
    let mut all = Vec::new();
    for i in 0..30_000 {
        all.extend_from_slice(format!("{i:08} copied 40 bytes of the dump file\n").as_bytes());
    }
    all.truncate(1 << 20);
    assert_eq!(all.len(), 1 << 20);
    for chunk in all.chunks(50_000) {
        w.send_req(t::WORK_WARNING, &[h.as_bytes(), chunk]);
    }
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    // A megabyte may still sit in the socket: only an ECHO behind it on the same
    // connection proves the server read (and journalled) all of it.
    sync(&mut w);
    let tail = &all[all.len() - 65536..];
    let clock = s.kill9();
    let s = InProcess::start_on(clock, &args);
    let hs = HttpServer {
        http: s.http_addr(),
        server: s,
    };
    // Admin: the bytes and how many were printed in all.
    let (kept, printed) = gearwheel::client::Conn::connect(
        &hs.server.addr.to_string(),
        std::time::Duration::from_secs(5),
    )
    .unwrap()
    .admin_block(&format!("show output {h}"))
    .unwrap()
    .unwrap();
    assert_eq!((kept.len(), printed), (65536, 1 << 20));
    assert!(kept == tail, "the last 64 KiB printed");
    // The entry's runs name it, with its size.
    let runs = hs.gearman().admin("show runs backup", true);
    assert!(runs.contains(&format!("\t{h}\t")), "{runs:?}");
    assert!(runs.contains("\tcomplete\t1048576\t-\n"), "{runs:?}");
    // HTTP: the job's status, and its output as text.
    let r = hs.get(&format!("/jobs/{h}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.text();
    for field in [
        "\"known\":false",
        "\"kept\":true",
        "\"state\":\"complete\"",
        "\"entry\":\"backup\"",
        "\"output_bytes\":1048576",
        "\"output_cut\":true",
        "\"result\":\"\"",
    ] {
        assert!(j.contains(field), "{field} in {j}");
    }
    let r = hs.get(&format!("/jobs/{h}/output"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert!(
        r.body == tail,
        "the last 64 KiB printed, {} bytes",
        r.body.len()
    );
    assert_eq!(hs.get("/jobs/H:none:1/output").status, 404);
    let metrics = hs.get("/metrics").text();
    assert!(
        metrics.contains("\ngearwheel_outputs_kept 1\n"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("outputs"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let sched = hs.get("/schedules").text();
    assert!(
        sched.contains(&format!("\"handle\":\"{h}\",\"output_bytes\":1048576")),
        "{sched}"
    );
}

/// The `show runs` line of the run whose job is `handle`.
fn run_line<'a>(runs: &'a str, handle: &str) -> &'a str {
    runs.lines()
        .find(|l| l.split('\t').nth(1) == Some(handle))
        .unwrap_or_else(|| panic!("{handle} not in {runs:?}"))
}

#[test]
fn runs_started_in_one_millisecond_keep_their_own_outputs_and_manual_marks() {
    let dir = TempDir::new("runs-by-handle");
    let file = dir.path("schedules");
    std::fs::write(&file, "@every 1m backup overlap=allow\n").unwrap();
    let data = dir.path("data");
    let args = [
        "--data-dir",
        data.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    let s = InProcess::start(&args);
    let mut a = s.connect();
    // A run of its timing, then a manual one: both queued.
    s.advance(60_000);
    a.admin("run schedule backup", false);
    // Two workers take them on one turn's clock: the two runs start in the same millisecond.
    let (mut w1, mut w2) = (s.connect(), s.connect());
    w1.can_do(&["backup"]);
    w2.can_do(&["backup"]);
    let h1 = w1.grab_uniq().expect("the scheduled run").0;
    let h2 = w2.grab_uniq().expect("the manual run").0;
    assert_ne!(h1, h2);
    w1.send_req(t::WORK_COMPLETE, &[h1.as_bytes(), b"first\n"]);
    w2.send_req(t::WORK_COMPLETE, &[h2.as_bytes(), b"second run\n"]);
    sync(&mut w1);
    sync(&mut w2);
    let check = |a: &mut Conn| {
        let runs = a.admin("show runs backup", true);
        let (r1, r2) = (run_line(&runs, &h1), run_line(&runs, &h2));
        assert_eq!(r1.split('\t').nth(2), r2.split('\t').nth(2), "one start");
        assert!(r1.ends_with("\tcomplete\t6\t-"), "{runs:?}");
        assert!(r2.ends_with("\tcomplete\t11\t-"), "{runs:?}");
    };
    check(&mut a);
    // `show schedules`' last column: the runs, a manual one marked.
    let manual = |a: &mut Conn| -> Vec<bool> {
        let row = a.schedule_row("backup");
        row[14].split(';').map(|r| r.ends_with(" manual")).collect()
    };
    assert_eq!(manual(&mut a), [false, true]);
    // After a kill -9 the entry's history comes back from the kept outputs: each run with its
    // own output, the manual one marked.
    let clock = s.kill9();
    let s = InProcess::start_on(clock, &args);
    let mut a = s.connect();
    check(&mut a);
    assert_eq!(manual(&mut a), [false, true]);
}
