//! Runs that wait to be made, over real sockets on a manual clock: `catchup=all` with its cap,
//! a backfill of 100 times grabbed in order by a real worker with `{time}` filled, its dry run
//! and `--max-backfill`, `overlap=queue` (never two at once; the waiting run starts as the
//! previous ends, in the turn an HTTP cancel ends it), a resume that lets the catch-up runs a
//! pause held go on at once, and a kill -9 that keeps what waits.

use crate::support;
use std::sync::Arc;

use gearwheel::clock::ManualClock;
use support::*;

const MIN: u64 = 60_000;

fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("backfill-{name}"))
}

fn start(
    clock: Arc<ManualClock>,
    data: &TempDir,
    file: &std::path::Path,
    extra: &[&str],
) -> InProcess {
    let mut args = vec![
        "--job-handle-prefix",
        "H:b",
        "--data-dir",
        data.to_str().unwrap(),
        "--schedules",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    InProcess::start_on(clock, &args)
}

fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Jobs of `func` queued or running, from `status`.
fn total(c: &mut Conn, func: &str) -> u64 {
    c.admin("status", true)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{func}\t")))
        .and_then(|rest| rest.split('\t').next()?.parse().ok())
        .unwrap_or(0)
}

/// A worker grabs the next job of its functions (it must be there now) and completes it;
/// returns its workload.
fn grab_and_complete(w: &mut Conn) -> String {
    let (h, _, _, data) = w.grab_uniq().expect("a job is queued");
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    String::from_utf8(data).unwrap()
}

#[test]
fn a_backfill_of_100_times_runs_them_in_order_with_time_filled() {
    let data = dir("bf-data");
    let file_dir = dir("bf-file");
    let file = file_dir.join("s.cron");
    std::fs::write(&file, "@every 1m bf -- stands for {time}\n").unwrap();
    let s = start(manual_clock(), &data, &file, &["--max-backfill", "100"]);
    let mut c = s.connect();
    let last = s.now_ms() / MIN * MIN;
    let first = last - 99 * MIN;
    let times: Vec<String> = (0..100).map(|i| rfc3339(first + i * MIN)).collect();

    // A dry run lists the 100 times and makes nothing.
    let listed = c.admin(
        &format!("backfill schedule bf {} {} dry-run", times[0], times[99]),
        true,
    );
    let listed: Vec<&str> = listed.lines().filter(|l| *l != ".").collect();
    assert_eq!(listed, times);
    assert_eq!(total(&mut c, "bf"), 0, "a dry run makes nothing");

    // One more than --max-backfill is refused; so are a range backwards and one in the future.
    let refused = c.admin(
        &format!(
            "backfill schedule bf {} {}",
            rfc3339(first - MIN),
            times[99]
        ),
        false,
    );
    assert!(refused.starts_with("ERR TOO_MANY_RUNS "), "{refused}");
    let backwards = c.admin(
        &format!("backfill schedule bf {} {}", times[9], times[0]),
        false,
    );
    assert!(
        backwards.starts_with("ERR INVALID_ARGUMENTS "),
        "{backwards}"
    );
    let future = c.admin(
        &format!(
            "backfill schedule bf {} {}",
            times[0],
            rfc3339(last + 10 * MIN)
        ),
        false,
    );
    assert!(future.starts_with("ERR INVALID_ARGUMENTS "), "{future}");
    assert_eq!(total(&mut c, "bf"), 0);

    assert_eq!(
        c.admin(
            &format!("backfill schedule bf {} {}", times[0], times[99]),
            false
        ),
        "OK 100\n"
    );
    // While 99 of them wait (the first is queued), two more would pass the bound.
    let more = c.admin(
        &format!("backfill schedule bf {} {}", times[0], times[1]),
        false,
    );
    assert!(more.starts_with("ERR TOO_MANY_RUNS "), "{more}");

    // A real worker takes them one at a time (overlap=skip), oldest first, each standing for
    // its own time; the clock never moves, so each starts as the one before ends.
    let mut w = s.connect();
    w.can_do(&["bf"]);
    for t in &times {
        assert_eq!(total(&mut c, "bf"), 1, "one at a time");
        assert_eq!(grab_and_complete(&mut w), format!("stands for {t}"));
    }
    assert!(w.grab_uniq().is_none(), "no 101st run");
    let row = c.schedule_row("bf");
    assert_eq!(row[7], "100", "each is a run: {row:?}");
    assert!(row[14].ends_with(" complete backfill"), "{}", row[14]);

    // The audit trail has it.
    let audit = c.admin("show audit", true);
    assert!(audit.contains("backfill schedule bf"), "{audit}");
}

#[test]
fn catchup_all_makes_up_every_missed_run_oldest_first_up_to_its_cap() {
    let data = dir("cu-data");
    let file_dir = dir("cu-file");
    let file = file_dir.join("s.cron");
    std::fs::write(
        &file,
        "@every 1m cu catchup=all catchup_max=3 on_failure=alert -- run of {time}\n",
    )
    .unwrap();
    let s = start(manual_clock(), &data, &file, &[]);
    let c = s.connect();
    let mut w = s.connect();
    w.can_do(&["cu"]);
    // To the first run's time exactly: `@every 1m` runs on the minute, so a step of a whole
    // minute from a clock late in its minute would count one more missed run below.
    s.advance(MIN - s.now_ms() % MIN);
    let ran = grab_and_complete(&mut w);
    let seen = chrono::DateTime::parse_from_rfc3339(ran.strip_prefix("run of ").unwrap())
        .unwrap()
        .timestamp_millis() as u64;
    // Its WORK_COMPLETE is in before the kill: a line on the worker's own connection.
    w.admin("status", true);

    // Down for five of its minutes (and a bit): five runs missed.
    let clock = s.kill9();
    drop((c, w));
    clock.advance(5 * MIN + 10_000);
    let s = start(clock, &data, &file, &[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["cu"]);
    // The newest three are made up, oldest first, one at a time; the two older are missed.
    for i in 3..=5 {
        assert_eq!(total(&mut c, "cu"), 1, "{}", s.log());
        assert_eq!(
            grab_and_complete(&mut w),
            format!("run of {}", rfc3339(seen + i * MIN))
        );
    }
    assert_eq!(total(&mut w, "cu"), 0, "no fourth: {}", s.log());
    let row = c.schedule_row("cu");
    assert_eq!(
        row[9], "2",
        "the two beyond the cap count as skipped: {row:?}"
    );
    // The alert names them.
    let mut a = s.connect();
    a.can_do(&["alert"]);
    let (_, _, _, alert) = a.grab_uniq().expect("an alert for the runs beyond the cap");
    let alert = String::from_utf8(alert).unwrap();
    assert!(alert.contains(r#""outcome":"missed""#), "{alert}");
    assert!(alert.contains("2 runs missed from"), "{alert}");
    assert!(alert.contains(&rfc3339(seen + MIN)), "{alert}");
}

#[test]
fn overlap_queue_never_runs_two_at_once_and_the_waiting_run_starts_as_the_previous_ends() {
    let data = dir("q-data");
    let file_dir = dir("q-file");
    let file = file_dir.join("s.cron");
    std::fs::write(&file, "@every 10s q overlap=queue -- tick {time}\n").unwrap();
    let s = start(manual_clock(), &data, &file, &[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["q"]);
    s.advance(10_000);
    let (h1, _, _, first) = w.grab_uniq().expect("the first run");
    let first = String::from_utf8(first).unwrap();
    let t1 = chrono::DateTime::parse_from_rfc3339(first.strip_prefix("tick ").unwrap())
        .unwrap()
        .timestamp_millis() as u64;
    // Its next time comes while it runs: that run waits; the one after is skipped.
    s.advance(10_000);
    assert_eq!(
        total(&mut c, "q"),
        1,
        "the second waits, not queued beside the first"
    );
    s.advance(10_000);
    assert_eq!(total(&mut c, "q"), 1);
    assert_eq!(
        c.schedule_row("q")[9],
        "1",
        "the third is skipped and counted"
    );

    // A kill -9 keeps the waiting run (and the first, which goes back to its queue).
    let clock = s.kill9();
    drop((c, w));
    let s = start(clock, &data, &file, &[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["q"]);
    let (h, _, _, again) = w.grab_uniq().expect("the first run, back from the journal");
    assert_eq!(
        (h.as_str(), again),
        (h1.as_str(), first.clone().into_bytes())
    );
    assert_eq!(total(&mut c, "q"), 1, "{}", s.log());
    // A pause holds the waiting run past the previous one's end; the resume lets it start,
    // the moment it is answered: no clock move in between.
    assert_eq!(c.admin("pause schedule q", false), "OK\r\n");
    w.send_req(t::WORK_COMPLETE, &[h.as_bytes(), b""]);
    assert_eq!(total(&mut w, "q"), 0, "paused: the waiting run waits");
    assert_eq!(c.admin("resume schedule q", false), "OK\r\n");
    assert_eq!(total(&mut w, "q"), 1, "resumed: it starts at once");
    assert_eq!(
        grab_and_complete(&mut w),
        format!("tick {}", rfc3339(t1 + 10_000))
    );
    assert_eq!(total(&mut w, "q"), 0, "nothing else waited");
}

#[test]
fn a_kill_9_keeps_the_backfill_runs_still_waiting() {
    let data = dir("k-data");
    let file_dir = dir("k-file");
    let file = file_dir.join("s.cron");
    std::fs::write(&file, "@hourly k -- {time}\n").unwrap();
    let s = start(manual_clock(), &data, &file, &[]);
    let mut c = s.connect();
    let last = s.now_ms() / (60 * MIN) * (60 * MIN);
    let times: Vec<String> = (0..5).rev().map(|i| rfc3339(last - i * 60 * MIN)).collect();
    assert_eq!(
        c.admin(
            &format!("backfill schedule k {} {}", times[0], times[4]),
            false
        ),
        "OK 5\n"
    );
    let mut w = s.connect();
    w.can_do(&["k"]);
    assert_eq!(grab_and_complete(&mut w), times[0]);
    let (_, _, _, second) = w.grab_uniq().expect("the second");
    assert_eq!(String::from_utf8(second).unwrap(), times[1]);
    w.admin("status", true);

    let clock = s.kill9();
    drop((c, w));
    let s = start(clock, &data, &file, &[]);
    let mut w = s.connect();
    w.can_do(&["k"]);
    for t in &times[1..] {
        assert_eq!(&grab_and_complete(&mut w), t, "{}", s.log());
    }
    assert!(w.grab_uniq().is_none());
    // Each is still a backfill run, the one held across the kill too (its job came back from
    // the journal).
    let mut c = s.connect();
    let recent = c.schedule_row("k")[14].clone();
    let runs: Vec<&str> = recent.split(';').collect();
    assert_eq!(runs.len(), 5, "{recent}");
    for r in &runs {
        assert!(r.ends_with(" complete backfill"), "{recent}");
    }
}

#[test]
fn post_backfill_lists_a_dry_run_then_queues_the_runs() {
    let file_dir = dir("http-file");
    let file = file_dir.join("s.cron");
    std::fs::write(&file, "@hourly h -- {time}\n").unwrap();
    let s = HttpServer::in_process(&["--schedules", file.to_str().unwrap()]);
    let last = s.server.now_ms() / (60 * MIN) * (60 * MIN);
    let (from, to) = (rfc3339(last - 2 * 60 * MIN), rfc3339(last));
    let r = s.call(
        "POST",
        &format!("/schedules/h/backfill?from={from}&to={to}&dry_run=1"),
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.text();
    let listed = format!(
        "\"times\":[\"{from}\",\"{}\",\"{to}\"]",
        rfc3339(last - 60 * MIN)
    );
    assert!(
        body.starts_with("{\"op\":\"backfill\",\"dry_run\":true,\"runs\":3,"),
        "{body}"
    );
    assert!(body.contains(&listed), "{body}");
    let mut c = s.gearman();
    assert_eq!(total(&mut c, "h"), 0, "a dry run makes nothing");

    // The same in a form body; the first run is queued at once, the others wait for it.
    let form = format!("from={from}&to={to}");
    let r = s.call("POST", "/schedules/h/backfill", &[], form.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"runs_waiting\":2"), "{}", r.text());
    assert_eq!(total(&mut c, "h"), 1);
    let mut w = s.gearman();
    w.can_do(&["h"]);
    assert_eq!(grab_and_complete(&mut w), from);

    // The console's form: a dry run, then the runs, from its own page only.
    let page = [("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")];
    let body = format!("h {from} {from} dry-run");
    let r = s.call("POST", "/ui/api/backfill", &page, body.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains(&format!("\"times\":[\"{from}\"]")),
        "{}",
        r.text()
    );
    let r = s.call("POST", "/ui/api/backfill", &[], body.as_bytes());
    assert_eq!(r.status, 403, "{}", r.text());

    // Errors: an unknown entry, a bad time, a GET.
    let r = s.call(
        "POST",
        &format!("/schedules/nope/backfill?from={from}&to={to}"),
        &[],
        b"",
    );
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.call(
        "POST",
        "/schedules/h/backfill?from=yesterday&to=today",
        &[],
        b"",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(s.get("/schedules/h/backfill?from=a&to=b").status, 405);
}

#[test]
fn a_backfill_waits_for_its_group_and_keeps_to_the_functions_limit() {
    let file_dir = dir("g-file");
    let file = file_dir.join("s.cron");
    std::fs::write(
        &file,
        "@hourly a group=g -- a {time}\n@hourly b group=g\n@hourly la overlap=allow -- la {time}\n",
    )
    .unwrap();
    let s = InProcess::start(&["--schedules", file.to_str().unwrap()]);
    let mut c = s.connect();
    let last = s.now_ms() / (60 * MIN) * (60 * MIN);
    let (from, to) = (rfc3339(last - 60 * MIN), rfc3339(last));

    // b of the same group runs: a's backfill waits until it ends.
    assert!(c.admin("run schedule b", false).starts_with("OK H:"));
    let mut wb = s.connect();
    wb.can_do(&["b"]);
    let (hb, _, _, _) = wb.grab_uniq().expect("b's run");
    assert_eq!(
        c.admin(&format!("backfill schedule a {from} {to}"), false),
        "OK 2\n"
    );
    assert_eq!(total(&mut c, "a"), 0, "group g is busy");
    wb.send_req(t::WORK_COMPLETE, &[hb.as_bytes(), b""]);
    wb.admin("status", true);
    let mut wa = s.connect();
    wa.can_do(&["a"]);
    assert_eq!(grab_and_complete(&mut wa), format!("a {from}"));
    assert_eq!(grab_and_complete(&mut wa), format!("a {to}"));

    // overlap=allow: the runs are queued at once, and the function's limit hands them out
    // one at a time.
    assert!(c.admin("limit la 1", false).starts_with("OK"));
    assert_eq!(
        c.admin(&format!("backfill schedule la {from} {to}"), false),
        "OK 2\n"
    );
    assert_eq!(total(&mut c, "la"), 2);
    let (mut w1, mut w2) = (s.connect(), s.connect());
    w1.can_do(&["la"]);
    w2.can_do(&["la"]);
    let (h1, _, _, d1) = w1.grab_uniq().expect("the first");
    assert_eq!(d1, format!("la {from}").into_bytes());
    assert!(w2.grab_uniq().is_none(), "limit la 1: one at a time");
    w1.send_req(t::WORK_COMPLETE, &[h1.as_bytes(), b""]);
    w1.admin("status", true);
    assert_eq!(grab_and_complete(&mut w2), format!("la {to}"));
}

#[test]
fn a_cancel_over_http_starts_the_waiting_run_in_that_turn() {
    let data = dir("qc-data");
    let file_dir = dir("qc-file");
    let file = file_dir.join("s.cron");
    std::fs::write(
        &file,
        "@every 10s qc overlap=queue retry=1 backoff=1h -- tick {time}\n",
    )
    .unwrap();
    let s = start(manual_clock(), &data, &file, &["--http-port", "0"]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["qc"]);
    s.advance(10_000);
    let (h1, _, _, first) = w.grab_uniq().expect("the first run");
    let t1 = chrono::DateTime::parse_from_rfc3339(
        std::str::from_utf8(&first)
            .unwrap()
            .strip_prefix("tick ")
            .unwrap(),
    )
    .unwrap()
    .timestamp_millis() as u64;
    // It fails: its retry waits an hour as a future job, and the entry's next time waits
    // behind it.
    w.send_req(t::WORK_FAIL, &[h1.as_bytes()]);
    w.send_req(t::PRE_SLEEP, &[]);
    sync(&mut w);
    s.advance(10_000);
    assert_eq!(c.schedule_row("qc")[9], "0", "nothing skipped");
    assert!(!got_noop(&mut w, 200), "nothing for the worker yet");
    let retry = c.admin("show scheduled", true);
    let retry = retry
        .lines()
        .find(|l| l.contains("qc"))
        .and_then(|l| l.split('\t').next())
        .unwrap_or_else(|| panic!("the retry is a future job: {retry}"))
        .to_string();

    // The retry cancelled over HTTP: the waiting run is made in that turn, and the sleeping
    // worker is woken with no Gearman packet and no clock move in between.
    let mut http = Http::connect(s.http_addr());
    http.send(&request(
        "POST",
        "/ui/api/cancel",
        &[("X-Gearwheel-Console", "1"), ("Origin", "http://127.0.0.1")],
        retry.as_bytes(),
    ));
    let r = http.read();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(got_noop(&mut w, 5_000), "woken for the waiting run");
    assert_eq!(
        grab_and_complete(&mut w),
        format!("tick {}", rfc3339(t1 + 10_000))
    );
}

#[test]
fn a_resume_starts_the_catch_up_runs_the_pause_held() {
    let data = dir("rp-data");
    let file_dir = dir("rp-file");
    let file = file_dir.join("s.cron");
    std::fs::write(&file, "@every 1m rp catchup=all -- run of {time}\n").unwrap();
    let s = start(manual_clock(), &data, &file, &[]);
    let mut w = s.connect();
    w.can_do(&["rp"]);
    s.advance(MIN - s.now_ms() % MIN);
    let ran = grab_and_complete(&mut w);
    let seen = chrono::DateTime::parse_from_rfc3339(ran.strip_prefix("run of ").unwrap())
        .unwrap()
        .timestamp_millis() as u64;
    w.admin("status", true);
    let clock = s.kill9();
    drop(w);
    clock.advance(3 * MIN + 10_000);
    let s = start(clock, &data, &file, &[]);
    let mut c = s.connect();
    let mut w = s.connect();
    w.can_do(&["rp"]);
    // The first of the three missed runs is made; the entry is paused while it runs, so the
    // two behind it wait when it ends.
    assert_eq!(c.admin("pause schedule rp", false), "OK\r\n");
    assert_eq!(
        grab_and_complete(&mut w),
        format!("run of {}", rfc3339(seen + MIN))
    );
    w.send_req(t::PRE_SLEEP, &[]);
    sync(&mut w);
    assert_eq!(total(&mut c, "rp"), 0, "held by the pause: {}", s.log());

    // Resumed: the next waiting run is made in that turn and wakes the sleeping worker.
    assert_eq!(c.admin("resume schedule rp", false), "OK\r\n");
    assert!(
        got_noop(&mut w, 5_000),
        "woken for the waiting run: {}",
        s.log()
    );
    assert_eq!(
        grab_and_complete(&mut w),
        format!("run of {}", rfc3339(seen + 2 * MIN))
    );
}
