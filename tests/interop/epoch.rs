//! SUBMIT_JOB_EPOCH from a real client library.
//!
//! Of the installed clients only libgearman (the C library) can send SUBMIT_JOB_EPOCH:
//! `gearman_execute()` with `gearman_task_attr_init_epoch()`. The `gearman` command has no
//! option for it, pecl/gearman has no API for it (only the GEARMAN_COMMAND_SUBMIT_JOB_EPOCH
//! constant), and neither Perl Gearman::Client nor python `gear` can submit one (gear only parses
//! it in its own server). tests/interop/epoch_submit.py calls libgearman.so through ctypes.
//! libgearman sends `FUNC\0<generated UUID>\0EPOCH\0DATA`.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

fn have_epoch_client() -> bool {
    require(have_libgearman(), "python3 with libgearman (libgearman8)")
}

/// A whole second at least 2 s ahead.
fn epoch_ahead() -> u64 {
    now_f64().floor() as u64 + 3
}

/// `at` (seconds since 1970) is at `epoch` or within the second after it (10 ms early
/// allowed: two clocks are read).
fn assert_on_time(at: f64, epoch: u64, what: &str) {
    let epoch = epoch as f64;
    assert!(
        at >= epoch - 0.01,
        "{what} {:.3} s before its epoch",
        epoch - at
    );
    assert!(
        at <= epoch + 1.0,
        "{what} {:.3} s after its epoch",
        at - epoch
    );
}

/// Submit through libgearman; returns the job handle.
fn submit_epoch(s: &Server, func: &str, epoch: u64, data: &str) -> String {
    let out = run(
        "epoch_submit.py",
        Command::new("python3")
            .arg(script("epoch_submit.py"))
            .arg(s.port().to_string())
            .arg(func)
            .arg(epoch.to_string())
            .arg(data),
        None,
        10,
    );
    let handle = out
        .trim_end()
        .strip_prefix("handle ")
        .unwrap_or_else(|| panic!("epoch_submit.py printed {out:?}"));
    assert!(handle.starts_with("H:"), "{out:?}");
    handle.to_string()
}

#[test]
fn epoch_job_from_libgearman_wakes_sleeping_worker_when_due() {
    if !have_epoch_client() {
        return;
    }
    let s = Server::start(&[]);
    let mut worker = s.connect();
    worker.can_do(&["epochfn"]);
    worker.send_req(t::PRE_SLEEP, &[]);

    let epoch = epoch_ahead();
    let handle = submit_epoch(&s, "epochfn", epoch, "payload");
    let mut admin = s.connect();
    assert_eq!(admin.admin("status", true), "epochfn\t1\t0\t1\n.\n");

    // Behave like a real worker: on NOOP grab; on NO_JOB go back to sleep. The job must not be
    // handed out before EPOCH, and must arrive within a second after it.
    worker
        .stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(epoch.saturating_sub(now_f64() as u64) + 3);
    let mut early_noops = 0;
    let (assigned_at, body) = loop {
        assert!(
            Instant::now() < end,
            "the epoch job never reached the sleeping worker; log:\n{}",
            s.log()
        );
        let p = match worker.try_read_packet() {
            Ok(p) => p,
            Err(_) => continue, // read timeout: keep waiting
        };
        match p.ptype {
            t::NOOP => {
                if now_f64() < epoch as f64 {
                    early_noops += 1;
                }
                worker.send_req(t::GRAB_JOB_UNIQ, &[]);
            }
            t::NO_JOB => worker.send_req(t::PRE_SLEEP, &[]),
            t::JOB_ASSIGN_UNIQ => break (now_f64(), p.body),
            other => panic!("unexpected packet {other}: {p:?}"),
        }
    };
    assert_on_time(assigned_at, epoch, "job assigned");
    assert!(
        early_noops <= 1,
        "worker woken {early_noops} times before the job was due"
    );
    let args: Vec<&[u8]> = body.splitn(4, |&b| b == 0).collect();
    assert_eq!(args[0], handle.as_bytes());
    assert_eq!(args[1], b"epochfn");
    assert_eq!(args[2].len(), 36, "libgearman sends a UUID unique");
    assert_eq!(args[3], b"payload");
    assert_eq!(admin.admin("status", true), "epochfn\t1\t1\t1\n.\n");
    worker
        .stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    worker.send_req(t::WORK_COMPLETE, &[handle.as_bytes(), b"done"]);
    wait_admin(&mut admin, "status", true, 3, |st| {
        st == "epochfn\t0\t0\t1\n.\n"
    });
}

#[test]
fn epoch_job_from_libgearman_runs_on_gearman_cli_worker_when_due() {
    if !have_epoch_client() {
        return;
    }
    if !need("gearman-tools (gearman, gearadmin)") {
        return;
    }
    let s = Server::start(&[]);
    let dir = TempDir::new("epoch");
    let out_file = dir.path("ran");
    // The worker writes the workload and the time it ran, then exits after one job.
    let sh = format!(
        "cat > '{f}.tmp'; echo >> '{f}.tmp'; date +%s.%N >> '{f}.tmp'; mv '{f}.tmp' '{f}'",
        f = out_file.display()
    );
    let mut worker = Proc::spawn(
        "gearman worker",
        Command::new("gearman").args([
            "-p",
            &s.port().to_string(),
            "-w",
            "-c",
            "1",
            "-f",
            "epochcli",
            "--",
            "sh",
            "-c",
            &sh,
        ]),
        None,
    );
    wait_workers(&s, "epochcli", 1);

    let epoch = epoch_ahead();
    submit_epoch(&s, "epochcli", epoch, "from-libgearman");
    let st = worker.exited(epoch.saturating_sub(now_f64() as u64) + 4);
    assert!(st.success(), "worker: {st}\n{}", worker.describe());
    let ran = std::fs::read_to_string(&out_file).unwrap();
    let mut lines = ran.lines();
    assert_eq!(lines.next(), Some("from-libgearman"));
    let at: f64 = lines.next().unwrap().parse().unwrap();
    assert_on_time(at, epoch, "ran");
}
