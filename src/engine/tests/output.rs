//! What jobs print: kept while they run, kept after they end for `--keep-results`, within
//! `--keep-output` per job and `--keep-output-total` in all; `show output` and `show runs`;
//! the time moved by hand.

use super::*;
use crate::engine::output::OVERHEAD;
use crate::schedule::{Zone, file::parse};

const HOUR: u64 = 3_600_000;

fn data(w: &mut World, wk: ConnId, h: &Bytes, what: &str) {
    w.req(
        wk,
        Request::WorkData {
            handle: h.clone(),
            data: b(what),
        },
    );
}

fn warn(w: &mut World, wk: ConnId, h: &Bytes, what: &str) {
    w.req(
        wk,
        Request::WorkWarning {
            handle: h.clone(),
            data: b(what),
        },
    );
}

fn complete(w: &mut World, wk: ConnId, h: &Bytes, result: &str) {
    w.req(
        wk,
        Request::WorkComplete {
            handle: h.clone(),
            data: b(result),
        },
    );
}

/// `show output HANDLE` as (kept, printed, bytes), or the error line.
fn show_output(w: &mut World, h: &Bytes) -> Result<(usize, u64, String), String> {
    let c = w.conn();
    let text = w.admin(c, &format!("show output {}", String::from_utf8_lossy(h)));
    let Some(rest) = text.strip_prefix("OK ") else {
        return Err(text);
    };
    let (head, body) = rest.split_once('\n').expect("a header line");
    let (kept, printed) = head.split_once(' ').expect("two numbers");
    let kept: usize = kept.parse().unwrap();
    assert_eq!(body.len(), kept, "{text:?}");
    Ok((kept, printed.parse().unwrap(), body.to_string()))
}

#[test]
fn a_background_jobs_output_and_result_are_kept_for_their_time() {
    let mut w = World::new();
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "u", "d", Priority::Normal, true);
    let (h, _) = w.grab(wk).unwrap();
    warn(&mut w, wk, &h, "step 1\n");
    // Live while it runs.
    assert_eq!(show_output(&mut w, &h), Ok((7, 7, "step 1\n".into())));
    assert_eq!(w.e.job_status(&h).detail.unwrap().output_bytes, Some(7));
    data(&mut w, wk, &h, "step 2\n");
    w.now += 1500;
    complete(&mut w, wk, &h, "done");
    let kept = w.e.kept_job(&h).expect("kept").clone();
    assert_eq!(kept.ending, Ending::Complete);
    assert_eq!(kept.result(), Some(&b"done"[..]));
    assert_eq!(kept.output, "step 1\nstep 2\ndone");
    assert_eq!((kept.attempts, kept.error), (1, None));
    assert_eq!(kept.ended_ms - kept.started_ms, 1500);
    assert_eq!(&*kept.worker, "addr:127.0.0.1");
    assert_eq!(w.e.job_function(&h).map(|f| &f[..]), Some(&b"f"[..]));
    // GET_STATUS stays as the protocol says: the job is not known any more.
    assert!(!w.e.job_status(&h).known);
    // Kept for 24 h after it ended, then gone.
    let ended = w.now;
    w.now = ended + 24 * HOUR - 1;
    w.e.on_time(w.now, &mut w.out);
    assert!(show_output(&mut w, &h).is_ok());
    assert_eq!(w.e.next_deadline(), Some(ended + 24 * HOUR));
    w.now = ended + 24 * HOUR;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.e.kept_job(&h).is_none());
    assert!(
        show_output(&mut w, &h)
            .unwrap_err()
            .starts_with("ERR NOT_FOUND")
    );
    assert_eq!(w.e.next_deadline(), None);
}

#[test]
fn foreground_jobs_keep_nothing_unless_asked() {
    for keep in [false, true] {
        let mut w = World::with(EngineConfig {
            handle_prefix: "H:t".into(),
            keep_results_foreground: keep,
            ..EngineConfig::default()
        });
        let (c, wk) = (w.conn(), w.conn());
        w.can_do(wk, "f");
        w.submit(c, "f", "u", "d", Priority::Normal, false);
        let (h, _) = w.grab(wk).unwrap();
        data(&mut w, wk, &h, "x");
        complete(&mut w, wk, &h, "r");
        assert_eq!(w.e.kept_job(&h).is_some(), keep);
    }
}

#[test]
fn only_the_last_keep_output_bytes_are_kept_and_the_cut_is_marked() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        keep_output: 64 << 10,
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    w.submit(c, "f", "u", "d", Priority::Normal, true);
    let (h, _) = w.grab(wk).unwrap();
    // 1 MB printed, in lines.
    let mut all = String::new();
    for i in 0..16_000 {
        let line = format!("line {i:09} of the backup's output\n");
        warn(&mut w, wk, &h, &line);
        all.push_str(&line);
    }
    assert!(all.len() > 600_000);
    w.req(
        wk,
        Request::WorkException {
            handle: h.clone(),
            data: b("disk full"),
        },
    );
    all.push_str("disk full");
    let (kept, printed, body) = show_output(&mut w, &h).unwrap();
    assert_eq!((kept, printed), (64 << 10, all.len() as u64));
    assert_eq!(body, all[all.len() - (64 << 10)..]);
    let j = w.e.kept_job(&h).unwrap();
    assert!(j.cut());
    assert_eq!(j.ending, Ending::Exception);
    assert_eq!(j.error.as_deref(), Some(&b"disk full"[..]));
    assert_eq!(j.result(), None);
}

#[test]
fn the_total_bound_drops_the_oldest_outputs() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        keep_output_total: 10 * (1000 + OVERHEAD + 32),
        ..EngineConfig::default()
    });
    let (c, wk) = (w.conn(), w.conn());
    w.can_do(wk, "f");
    let mut handles = Vec::new();
    for i in 0..100 {
        w.submit(c, "f", &format!("u{i}"), "d", Priority::Normal, true);
        let (h, _) = w.grab(wk).unwrap();
        complete(&mut w, wk, &h, &"r".repeat(1000));
        handles.push(h);
    }
    let (n, bytes, dropped) = w.e.kept_totals();
    assert!(bytes <= 10 * (1000 + OVERHEAD + 32), "{bytes}");
    assert!((8..=10).contains(&n), "{n}");
    assert_eq!(dropped as usize, 100 - n);
    assert!(w.e.kept_job(&handles[0]).is_none());
    assert!(w.e.kept_job(&handles[99]).is_some());
}

#[test]
fn a_retried_attempt_starts_its_output_afresh() {
    let mut w = World::new();
    let (c, wk1, wk2) = (w.conn(), w.conn(), w.conn());
    w.can_do(wk1, "f");
    w.submit(c, "f", "u", "d", Priority::Normal, true);
    let (h, _) = w.grab(wk1).unwrap();
    data(&mut w, wk1, &h, "first try");
    // The worker dies: the job is queued again, its output starts anew on the next worker.
    w.e.disconnect(wk1, w.now, &mut w.out);
    w.can_do(wk2, "f");
    let (h2, _) = w.grab(wk2).unwrap();
    assert_eq!(h, h2);
    assert!(w.e.kept_job(&h).is_none());
    complete(&mut w, wk2, &h, "ok");
    let j = w.e.kept_job(&h).unwrap();
    assert_eq!((j.output.as_ref(), j.attempts), (&b"ok"[..], 2));
}

#[test]
fn show_runs_lists_an_entrys_runs_with_their_handles_and_outputs() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        zone: Zone::Utc,
        ..EngineConfig::default()
    });
    // A whole minute.
    let t0 = 1_764_000_000_000;
    w.now = t0 + 1;
    let file = parse("* * * * * backup\n", &Zone::Utc).unwrap();
    w.e.load_schedules(file, w.now, true, &mut w.out);
    let wk = w.conn();
    w.can_do(wk, "backup");
    w.now = t0 + 60_000;
    w.e.on_time(w.now, &mut w.out);
    let (h, _) = w.grab(wk).unwrap();
    warn(&mut w, wk, &h, "dumped\n");
    w.now += 2000;
    complete(&mut w, wk, &h, "");
    let c = w.conn();
    let text = w.admin(c, "show runs backup");
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.last(), Some(&vec!["."]));
    assert_eq!(rows.len(), 2, "{text:?}");
    let hs = String::from_utf8_lossy(&h).into_owned();
    assert_eq!(rows[0][1], hs);
    assert_eq!(rows[0][4], "complete");
    assert_eq!(rows[0][5], "7");
    assert!(
        w.admin(c, "show runs nope")
            .starts_with("ERR UNKNOWN_SCHEDULE")
    );
    // An entry's last runs are held past --keep-results, as long as they are its last.
    w.now += 48 * HOUR;
    w.e.on_time(w.now, &mut w.out);
    assert!(w.e.kept_job(&h).is_some());
}

#[test]
fn running_jobs_outputs_count_against_the_total_too() {
    let total = 4 * (64 << 10);
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        keep_output_total: total,
        ..EngineConfig::default()
    });
    let c = w.conn();
    // One finished job kept, then ten jobs running at once, each printing 64 KiB.
    let wk = w.conn();
    w.can_do(wk, "f");
    w.submit(c, "f", "done", "d", Priority::Normal, true);
    let (first, _) = w.grab(wk).unwrap();
    complete(&mut w, wk, &first, "ok");
    assert!(w.e.kept_job(&first).is_some());
    let mut running = Vec::new();
    for i in 0..10 {
        let wk = w.conn();
        w.can_do(wk, "f");
        w.submit(c, "f", &format!("u{i}"), "d", Priority::Normal, true);
        let (h, _) = w.grab(wk).unwrap();
        warn(&mut w, wk, &h, &"x".repeat(64 << 10));
        running.push((wk, h));
    }
    // The kept one made room first; the running ones hold at most the bound between them.
    assert!(w.e.kept_job(&first).is_none());
    let live: usize = running
        .iter()
        .map(|(_, h)| w.e.job_output(h).unwrap().kept.len())
        .sum();
    assert!(live <= total, "{live}");
    // Each still knows how much it printed.
    assert!(
        running
            .iter()
            .all(|(_, h)| w.e.job_output(h).unwrap().printed == 64 << 10)
    );
    // Once they end, the count of live bytes goes back to nothing.
    for (wk, h) in &running {
        complete(&mut w, *wk, h, "");
    }
    assert_eq!(w.e.live_output, 0);
    assert!(w.e.kept_totals().1 <= total);
}

#[test]
fn a_result_with_nothing_printed_before_it_keeps_within_the_bounds_too() {
    let total = 64 << 10;
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        keep_output_total: total,
        ..EngineConfig::default()
    });
    let c = w.conn();
    // A running job's output fills the bound.
    let big = w.conn();
    w.can_do(big, "f");
    w.submit(c, "f", "big", "d", Priority::Normal, true);
    let (hb, _) = w.grab(big).unwrap();
    warn(&mut w, big, &hb, &"x".repeat(total));
    // A job whose result is all it sends (no buffer for it) keeps none of it then, but
    // knows how much it was.
    let wk = w.conn();
    w.can_do(wk, "f");
    w.submit(c, "f", "r1", "d", Priority::Normal, true);
    let (h1, _) = w.grab(wk).unwrap();
    complete(&mut w, wk, &h1, &"y".repeat(5000));
    assert_eq!(
        show_output(&mut w, &h1).map(|(k, p, _)| (k, p)),
        Ok((0, 5000))
    );
    assert_eq!(w.e.live_output, total);
    complete(&mut w, big, &hb, "");
    assert_eq!(w.e.live_output, 0);
    // With room, its last `--keep-output` bytes, the result.
    w.submit(c, "f", "r2", "d", Priority::Normal, true);
    let (h2, _) = w.grab(wk).unwrap();
    complete(&mut w, wk, &h2, &format!("{}end", "z".repeat(4997)));
    let (kept, printed, body) = show_output(&mut w, &h2).unwrap();
    assert_eq!((kept, printed), (5000, 5000));
    assert!(body.ends_with("zend"));
    assert_eq!(
        w.e.kept_job(&h2).and_then(|j| j.result()).map(<[u8]>::len),
        Some(5000)
    );
    assert!(w.e.kept_totals().1 <= total);
}

#[test]
fn a_handle_kept_again_is_journalled_again_not_as_gone() {
    let mut w = World::with(EngineConfig {
        handle_prefix: "H:t".into(),
        durable: true,
        ..EngineConfig::default()
    });
    let kept = |output: &'static [u8]| crate::engine::KeptJob {
        handle: Bytes::from_static(b"H:t:1"),
        func: Bytes::from_static(b"f"),
        ending: crate::engine::Ending::Expired,
        started_ms: 0,
        ended_ms: 0,
        worker: "addr:127.0.0.1".into(),
        attempts: 1,
        error: None,
        entry: None,
        scheduled_ms: None,
        manual: false,
        backfill: false,
        output: Bytes::from_static(output),
        output_bytes: output.len() as u64,
        result_len: None,
    };
    // An attempt that timed out, then the same job (same handle) run again.
    w.e.keep_output(kept(b"first"));
    w.e.keep_output(kept(b"second"));
    let records: Vec<String> = w
        .e
        .take_durable()
        .map(|r| match r {
            Record::OutputKept(o) => format!("kept {}", String::from_utf8_lossy(&o.output)),
            Record::OutputGone { handle } => format!("gone {}", String::from_utf8_lossy(&handle)),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(records, ["kept first", "kept second"]);
}
