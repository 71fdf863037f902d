//! One function per `--mode`, each measuring one thing and returning its `Report`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering::SeqCst;
use std::thread;
use std::time::{Duration, Instant};

use crate::event_loop::{Plan, Run, clients_finished, jobs_finished};
use crate::opts::Opts;
use crate::packet::{ECHO_REQ, ECHO_RES, put};
use crate::peers::{Submit, WorkerKind, lock};
use crate::procfs::{raise_nofile, self_cpu, server_snap, unix_ms};
use crate::report::{Report, pct, put_latency_us, put_server};

pub(crate) fn put_tenths(r: &mut Report, start: Instant, tenths: &[Instant], total: u64) {
    // Submits per second in each tenth of the fill: flat, or falling as the queue grows.
    let mut prev = start;
    let mut rates = Vec::new();
    for t in tenths {
        let dt = t.duration_since(prev).as_secs_f64();
        rates.push(format!("{:.0}", (total as f64 / 10.0) / dt.max(1e-9)));
        prev = *t;
    }
    if !rates.is_empty() {
        r.put("submits_per_s_by_tenth", rates.join(","));
    }
}

pub(crate) fn mode_bg_or_sync(o: &Opts, fg: bool) -> io::Result<Report> {
    let jobs = o.jobs_or(if fg { 50_000 } else { 200_000 });
    let window = o.window_or(if fg { 1 } else { 64 });
    let (kind, what) = if fg {
        (WorkerKind::Echo, Submit::Foreground)
    } else {
        (WorkerKind::Plain, Submit::Background)
    };
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = server_snap(o);
    let c0 = self_cpu();
    let start = run.go();
    let deadline = start + o.timeout;
    let (ok, _) = if fg {
        run.watch(jobs, deadline, clients_finished(o.clients))
    } else {
        run.watch(jobs, deadline, jobs_finished)
    };
    let end = if fg {
        *lock(&run.sh.clients_end)
    } else {
        *lock(&run.sh.jobs_end)
    };
    let end = end.unwrap_or_else(Instant::now);
    thread::sleep(Duration::from_millis(20));
    let s1 = server_snap(o);
    let c1 = self_cpu();
    let submit_end = *lock(&run.sh.clients_end);
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("workers", o.workers);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("jobs", jobs);
    r.put("completed", sh.jobs_done.load(SeqCst));
    r.put("ok", ok);
    r.putf("secs", secs, 3);
    r.putf("jobs_per_s", jobs as f64 / secs, 0);
    if let (false, Some(e)) = (fg, submit_end) {
        r.putf(
            "submits_per_s",
            jobs as f64 / e.duration_since(start).as_secs_f64(),
            0,
        );
    }
    put_latency_us(&mut r, std::mem::take(&mut *lock(&sh.latencies_us)));
    put_server(&mut r, s0, s1, jobs);
    r.putf("loadgen_cpu_s", c1 - c0, 2);
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

pub(crate) fn mode_echo(o: &Opts) -> io::Result<Report> {
    let n = o.jobs_or(200_000);
    let window = o.window_or(1);
    let run = Run::start(
        o,
        Plan {
            job_target: 0,
            workers: 0,
            kind: WorkerKind::Plain,
            clients: o.clients,
            what: Submit::Echo,
            total: n,
            window,
        },
    )?;
    let s0 = server_snap(o);
    let c0 = self_cpu();
    let start = run.go();
    let (ok, _) = run.watch(n, start + o.timeout, clients_finished(o.clients));
    let end = lock(&run.sh.clients_end).unwrap_or_else(Instant::now);
    let s1 = server_snap(o);
    let c1 = self_cpu();
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("echoes", n);
    r.put("ok", ok);
    r.putf("secs", secs, 3);
    r.putf("echoes_per_s", n as f64 / secs, 0);
    put_latency_us(&mut r, std::mem::take(&mut *lock(&sh.latencies_us)));
    put_server(&mut r, s0, s1, n);
    r.putf("loadgen_cpu_s", c1 - c0, 2);
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

/// Workers take `jobs` queued jobs; (jobs/s, CPU seconds of the server, ok).
pub(crate) fn drain(o: &Opts, jobs: u64, r: &mut Report) -> io::Result<()> {
    let s0 = server_snap(o);
    let t0 = Instant::now();
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind: WorkerKind::Plain,
            clients: 0,
            what: Submit::Background,
            total: 0,
            window: 1,
        },
    )?;
    let (ok, _) = run.watch(0, t0 + o.timeout, jobs_finished);
    let end = lock(&run.sh.jobs_end).unwrap_or_else(Instant::now);
    let sh = run.stop();
    let s1 = server_snap(o);
    let done = sh.jobs_done.load(SeqCst);
    r.put("drained", done);
    r.put("drain_ok", ok);
    r.putf(
        "drain_jobs_per_s",
        done as f64 / end.duration_since(t0).as_secs_f64(),
        0,
    );
    if let (Some(a), Some(b)) = (s0, s1) {
        r.putf(
            "drain_cpu_us_per_job",
            (b.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    Ok(())
}

/// What `submit_all` measured.
struct Filled {
    ok: bool,
    start: Instant,
    tenths: Vec<Instant>,
    /// Jobs answered: all of them, or what was answered before a time-out.
    jobs_in: u64,
    secs: f64,
    sh: std::sync::Arc<crate::peers::Shared>,
    /// The server before the run; the caller reads it again after.
    s0: Option<crate::procfs::ProcSnap>,
}

/// Submit `jobs` with no worker (a queue filling up), and settle for 200 ms after.
fn submit_all(o: &Opts, what: Submit, jobs: u64, window: usize) -> io::Result<Filled> {
    let run = Run::start(
        o,
        Plan {
            job_target: 0,
            workers: 0,
            kind: WorkerKind::Plain,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = server_snap(o);
    let start = run.go();
    let (ok, tenths) = run.watch(jobs, start + o.timeout, clients_finished(o.clients));
    // A run that timed out ends now, and counts only what was answered.
    let end = match *lock(&run.sh.clients_end) {
        Some(e) if ok => e,
        _ => Instant::now(),
    };
    let jobs_in = if ok { jobs } else { run.sh.acked.load(SeqCst) };
    let sh = run.stop();
    let secs = end.duration_since(start).as_secs_f64();
    thread::sleep(Duration::from_millis(200));
    Ok(Filled {
        ok,
        start,
        tenths,
        jobs_in,
        secs,
        sh,
        s0,
    })
}

pub(crate) fn mode_fill(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let window = o.window_or(64);
    let Filled {
        ok,
        start,
        tenths,
        jobs_in,
        secs,
        sh,
        s0,
    } = submit_all(o, Submit::Background, jobs, window)?;
    let s1 = server_snap(o);
    let mut r = Report::new(o);
    r.put("clients", o.clients);
    r.put("window", window);
    r.put("payload", o.payload);
    r.put("jobs", jobs);
    r.put("ok", ok);
    r.putf("fill_secs", secs, 3);
    r.putf("submits_per_s", jobs_in as f64 / secs, 0);
    put_tenths(&mut r, start, &tenths, jobs);
    if let (Some(a), Some(b)) = (s0, s1) {
        let per = (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs as f64;
        r.put("server_rss_kb_empty", a.rss_kb);
        r.put("server_rss_kb_full", b.rss_kb);
        r.putf("bytes_per_queued_job", per, 0);
        r.putf(
            "bytes_per_queued_job_over_payload",
            per - o.payload as f64,
            0,
        );
        r.putf(
            "fill_cpu_us_per_job",
            (b.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    if o.drain && o.workers > 0 {
        drain(o, jobs, &mut r)?;
        thread::sleep(Duration::from_millis(500));
        if let (Some(a), Some(b), Some(c)) = (s0, s1, server_snap(o)) {
            r.put("server_rss_kb_drained", c.rss_kb);
            let held = b.anon_kb.saturating_sub(a.anon_kb).max(1) as f64;
            let kept = c.anon_kb.saturating_sub(a.anon_kb) as f64;
            r.putf("rss_returned_pct", 100.0 * (1.0 - kept / held), 0);
        }
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

pub(crate) fn mode_drain(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let mut r = Report::new(o);
    r.put("workers", o.workers);
    r.put("jobs", jobs);
    drain(o, jobs, &mut r)?;
    Ok(r)
}

/// A blocking ECHO round trip on a fresh connection (idle mode).
pub(crate) fn echo_once(addr: SocketAddr) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut out = Vec::new();
    put(&mut out, ECHO_REQ, &[b"x"]);
    s.write_all(&out)?;
    let mut h = [0u8; 12];
    s.read_exact(&mut h)?;
    let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let mut body = vec![0; len];
    s.read_exact(&mut body)?;
    if u32::from_be_bytes([h[4], h[5], h[6], h[7]]) != ECHO_RES {
        return Err(io::Error::other("no ECHO_RES"));
    }
    Ok(s)
}

pub(crate) fn mode_idle(o: &Opts) -> io::Result<Report> {
    let n = o.connections;
    let limit = raise_nofile();
    if (limit as usize) < n + 64 {
        eprintln!("idle: open-files limit {limit} is low for {n} connections");
    }
    let addr = o.addr()?;
    let s0 = server_snap(o);
    let conns = (0..n)
        .map(|_| echo_once(addr))
        .collect::<io::Result<Vec<_>>>()?;
    thread::sleep(Duration::from_millis(500));
    let s1 = server_snap(o);
    let idle = Duration::from_secs_f64(o.idle_secs.unwrap_or(2.0));
    thread::sleep(idle);
    let s2 = server_snap(o);
    drop(conns);
    thread::sleep(Duration::from_millis(500));
    let s3 = server_snap(o);
    let mut r = Report::new(o);
    r.put("connections", n);
    if let (Some(a), Some(b), Some(c), Some(d)) = (s0, s1, s2, s3) {
        r.put("server_rss_kb_idle", a.rss_kb);
        r.put("server_anon_kb_idle", a.anon_kb);
        r.put("server_rss_kb_connected", b.rss_kb);
        r.putf(
            "bytes_per_connection",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / n as f64,
            0,
        );
        r.putf("idle_secs", idle.as_secs_f64(), 1);
        r.putf("idle_cpu_ms", (c.cpu - b.cpu) * 1e3, 1);
        r.put("idle_wakeups", c.ctxt.saturating_sub(b.ctxt));
        r.put("server_rss_kb_closed", d.rss_kb);
        r.put("server_threads", a.threads);
    }
    Ok(r)
}

pub(crate) fn mode_future(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(100_000);
    let window = o.window_or(64);
    // Due far enough ahead that every submit is in before the first job is due.
    let lead = o.lead.unwrap_or(2 + jobs / 40_000);
    let base = (unix_ms() / 1e3).ceil() as u64 + lead;
    let what = Submit::Epoch {
        base,
        spread: o.spread,
        total: jobs,
    };
    let run = Run::start(
        o,
        Plan {
            job_target: jobs,
            workers: o.workers,
            kind: WorkerKind::Future,
            clients: o.clients,
            what,
            total: jobs,
            window,
        },
    )?;
    let s0 = server_snap(o);
    let start = run.go();
    let (sub_ok, _) = run.watch(jobs, start + o.timeout, clients_finished(o.clients));
    let submitted_at = unix_ms();
    let sub_end = lock(&run.sh.clients_end).unwrap_or_else(Instant::now);
    let s1 = server_snap(o);
    let last_due_ms = (base + o.spread) as f64 * 1e3;
    let wait = (last_due_ms - unix_ms()).max(0.0) / 1e3 + o.grace as f64;
    let (ok, _) = run.watch(
        0,
        Instant::now() + Duration::from_secs_f64(wait),
        jobs_finished,
    );
    thread::sleep(Duration::from_millis(20));
    let s2 = server_snap(o);
    let sh = run.stop();
    let mut late = std::mem::take(&mut *lock(&sh.lateness_us));
    late.sort_unstable();
    let sub_secs = sub_end.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.put("jobs", jobs);
    r.put("spread_s", o.spread);
    r.put("workers", o.workers);
    r.put("received", late.len());
    r.put("ok", ok && sub_ok);
    r.putf("submit_secs", sub_secs, 3);
    r.putf("submits_per_s", jobs as f64 / sub_secs, 0);
    r.putf(
        "submit_margin_s",
        (base as f64 * 1e3 - submitted_at) / 1e3,
        2,
    );
    let ms = |us: i64| format!("{:.1}", us as f64 / 1e3);
    if let (Some(min), Some(p50), Some(p99), Some(max)) =
        (late.first(), pct(&late, 0.5), pct(&late, 0.99), late.last())
    {
        r.put("lateness_min_ms", ms(*min));
        r.put("lateness_p50_ms", ms(p50));
        r.put("lateness_p99_ms", ms(p99));
        r.put("lateness_max_ms", ms(*max));
        r.put("early", late.iter().filter(|&&l| l < 0).count());
    }
    if let (Some(a), Some(b), Some(c)) = (s0, s1, s2) {
        r.putf(
            "bytes_per_future_job",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs as f64,
            0,
        );
        r.putf("server_cpu_s", c.cpu - a.cpu, 2);
        r.putf(
            "server_cpu_us_per_job",
            (c.cpu - a.cpu) * 1e6 / jobs as f64,
            2,
        );
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

pub(crate) fn mode_future_idle(o: &Opts) -> io::Result<Report> {
    let jobs = o.jobs_or(1_000_000);
    let window = o.window_or(64);
    // An hour ahead, spread over a day: nothing comes due during the measurement.
    let base = (unix_ms() / 1e3) as u64 + 3600;
    let what = Submit::Epoch {
        base,
        spread: 86_400,
        total: jobs,
    };
    let Filled {
        ok,
        start,
        tenths,
        jobs_in,
        secs: sub_secs,
        sh,
        s0,
    } = submit_all(o, what, jobs, window)?;
    let s1 = server_snap(o);
    let idle = Duration::from_secs_f64(o.idle_secs.unwrap_or(10.0));
    thread::sleep(idle);
    let s2 = server_snap(o);
    let mut r = Report::new(o);
    r.put("jobs", jobs);
    r.put("ok", ok);
    r.putf("submit_secs", sub_secs, 3);
    r.putf("submits_per_s", jobs_in as f64 / sub_secs, 0);
    r.put("submitted", jobs_in);
    put_tenths(&mut r, start, &tenths, jobs);
    if let (Some(a), Some(b), Some(c)) = (s0, s1, s2) {
        r.putf(
            "bytes_per_future_job",
            (b.anon_kb as f64 - a.anon_kb as f64) * 1024.0 / jobs_in.max(1) as f64,
            0,
        );
        r.put("server_rss_kb_full", b.rss_kb);
        r.putf("idle_secs", idle.as_secs_f64(), 1);
        r.putf("idle_cpu_ms", (c.cpu - b.cpu) * 1e3, 1);
        r.put("idle_wakeups", c.ctxt.saturating_sub(b.ctxt));
    }
    r.put("errors", sh.errors.load(SeqCst));
    Ok(r)
}

pub(crate) fn run_mode(o: &Opts) -> io::Result<Report> {
    match o.mode.as_str() {
        "bg" => mode_bg_or_sync(o, false),
        "sync" => mode_bg_or_sync(o, true),
        "echo" => mode_echo(o),
        "fill" => mode_fill(o),
        "drain" => mode_drain(o),
        "idle" => mode_idle(o),
        "future" => mode_future(o),
        "handshake" => crate::tls::mode_handshake(o),
        "stalls" => Ok(mode_stalls(o)),
        _ => mode_future_idle(o),
    }
}

/// How often this machine stops a running thread, whatever the server: the gaps between
/// successive clock readings of a thread that does nothing else. A round trip that meets
/// one is that much later, with any server; the faster the server, the larger the share of
/// its p99 they make.
pub(crate) fn mode_stalls(o: &Opts) -> Report {
    let span = Duration::from_secs_f64(o.idle_secs.unwrap_or(2.0));
    const AT_LEAST_US: [u64; 4] = [20, 50, 100, 500];
    let mut counts = [0u64; 4];
    let mut stalled = Duration::ZERO;
    let start = Instant::now();
    let mut prev = start;
    while prev.duration_since(start) < span {
        let now = Instant::now();
        let gap = now.duration_since(prev);
        prev = now;
        if gap >= Duration::from_micros(AT_LEAST_US[0]) {
            stalled += gap;
            for (n, &us) in counts.iter_mut().zip(&AT_LEAST_US) {
                *n += u64::from(gap >= Duration::from_micros(us));
            }
        }
    }
    let secs = prev.duration_since(start).as_secs_f64();
    let mut r = Report::new(o);
    r.putf("secs", secs, 1);
    for (n, us) in counts.iter().zip(AT_LEAST_US) {
        r.putf(&format!("stalls_{us}us_per_s"), *n as f64 / secs, 0);
    }
    r.putf("stalled_pct", 100.0 * stalled.as_secs_f64() / secs, 2);
    r
}
