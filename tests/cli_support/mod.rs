//! Helpers for the tests of `gearwheel work`, `submit`, `admin` and the service flags
//! (tests/cli_*.rs): run the real binary with a time limit, keep a worker running in the
//! background with its log, and poll the server until a condition holds.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::Server;

pub const BIN: &str = env!("CARGO_BIN_EXE_gearwheel");

/// What a finished command left.
#[derive(Debug)]
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Run `gearwheel args...` with `stdin`, killed after `secs`.
pub fn gw(args: &[&str], stdin: Option<&[u8]>, secs: u64) -> Out {
    let mut c = Command::new(BIN);
    c.args(args);
    run(&mut c, stdin, secs)
}

/// Run a command with `stdin`, killed after `secs` (then the test fails).
pub fn run(c: &mut Command, stdin: Option<&[u8]>, secs: u64) -> Out {
    let mut child = c
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(input) = stdin {
        let mut w = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(o)) => Out {
            status: o.status,
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
        Ok(Err(e)) => panic!("{c:?}: {e}"),
        Err(_) => {
            // SAFETY: kill(2) on our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            panic!("{c:?} did not finish within {secs}s");
        }
    }
}

/// A `gearwheel` process left running (a worker, a foreground submit); its stderr is kept.
/// Killed when dropped.
pub struct Bg {
    pub child: Child,
    stdout: Arc<Mutex<String>>,
    log: Arc<Mutex<String>>,
}

impl Bg {
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Bg {
        let mut c = Command::new(BIN);
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        Bg::from_command(c)
    }

    /// Any command (a shell line that starts gearwheel, say), kept like `spawn`'s.
    pub fn from_command(mut c: Command) -> Bg {
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn gearwheel");
        let log = Arc::new(Mutex::new(String::new()));
        let stdout = Arc::new(Mutex::new(String::new()));
        for (pipe, buf) in [
            (
                Box::new(child.stderr.take().unwrap()) as Box<dyn std::io::Read + Send>,
                Arc::clone(&log),
            ),
            (Box::new(child.stdout.take().unwrap()), Arc::clone(&stdout)),
        ] {
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut l = buf.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        Bg { child, stdout, log }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Wait until the log contains `needle`.
    pub fn wait_log(&self, needle: &str, secs: u64) {
        wait_for(secs, &format!("log line {needle:?}"), || {
            self.log().contains(needle)
        });
    }

    /// Wait for the exit, up to `secs`.
    pub fn wait_exit(&mut self, secs: u64) -> Option<ExitStatus> {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if let Ok(Some(st)) = self.child.try_wait() {
                // Let the reader threads catch the last lines.
                std::thread::sleep(Duration::from_millis(50));
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll `cond` every 20 ms until it holds; panic after `secs`.
pub fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

/// A connection through gearwheel's own client library, which retries reads interrupted by
/// a signal (EINTR) where `common::Conn` does not.
pub fn client(s: &Server) -> gearwheel::client::Conn {
    let c = gearwheel::client::Conn::connect(&s.addr.to_string(), Duration::from_secs(5))
        .expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// An admin command's reply lines (through `.` for lists), joined with `\n`.
pub fn admin_text(s: &Server, line: &str, list: bool) -> String {
    let lines = client(s).admin(line, list).expect("admin reply");
    lines.join("\n") + "\n"
}

/// The `status` row of `func` as (total, running, workers), if the server lists it.
pub fn status_of(s: &Server, func: &str) -> Option<(u32, u32, u32)> {
    let text = admin_text(s, "status", true);
    text.lines().find_map(|l| {
        let c: Vec<&str> = l.split('\t').collect();
        (c.len() == 4 && c[0] == func).then(|| {
            let n = |i: usize| c[i].parse().unwrap_or(0);
            (n(1), n(2), n(3))
        })
    })
}

/// Wait until `func` has at least `n` workers registered.
pub fn wait_workers(s: &Server, func: &str, n: u32) {
    wait_for(10, &format!("{n} worker(s) for {func}"), || {
        status_of(s, func).is_some_and(|(_, _, w)| w >= n)
    });
}

/// Start `gearwheel work -s SERVER extra... -- cmd...` and wait until it has registered.
pub fn worker(s: &Server, func: &str, extra: &[&str], cmd: &[&str]) -> Bg {
    worker_env(s, func, extra, cmd, &[])
}

pub fn worker_env(
    s: &Server,
    func: &str,
    extra: &[&str],
    cmd: &[&str],
    env: &[(&str, &str)],
) -> Bg {
    let addr = s.addr.to_string();
    let mut args = vec!["work", "-s", &addr, "-f", func];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let w = Bg::spawn(&args, env);
    wait_workers(s, func, 1);
    w
}

/// A fresh empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "gearwheel-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Is a process alive (and not a zombie)?
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            // The state follows the parenthesised command name.
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}
