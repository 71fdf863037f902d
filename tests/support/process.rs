//! The one process runner: a child whose stdout and stderr are collected by threads while it
//! runs (so it never blocks on a full pipe), killed when dropped; and running a command to
//! completion with a time limit.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::wait::{poll, poll_for};

/// How often a wait looks again.
const TICK: Duration = Duration::from_millis(10);

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_gearwheel");

/// One output pipe's bytes so far, and whether the pipe has closed.
#[derive(Default)]
struct Captured {
    bytes: Mutex<Vec<u8>>,
    closed: AtomicBool,
}

fn drain(mut r: impl Read + Send + 'static, into: Arc<Captured>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => into.bytes.lock().unwrap().extend_from_slice(&buf[..n]),
            }
        }
        into.closed.store(true, Ordering::Release);
    });
}

/// A running child process with its outputs captured; killed when dropped.
pub struct Proc {
    pub name: String,
    pub child: Child,
    out: Arc<Captured>,
    err: Arc<Captured>,
}

impl Proc {
    /// Start `cmd` with `stdin` written to it (then closed), or /dev/null.
    pub fn spawn(name: &str, cmd: &mut Command, stdin: Option<&[u8]>) -> Proc {
        Proc::try_spawn(name, cmd, stdin)
            .unwrap_or_else(|e| panic!("{name}: cannot start {cmd:?}: {e}"))
    }

    /// `spawn`, or why the command could not start.
    pub fn try_spawn(name: &str, cmd: &mut Command, stdin: Option<&[u8]>) -> std::io::Result<Proc> {
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        if let Some(data) = stdin {
            let mut w = child.stdin.take().unwrap();
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
        }
        let (out, err) = (Arc::default(), Arc::default());
        drain(child.stdout.take().unwrap(), Arc::clone(&out));
        drain(child.stderr.take().unwrap(), Arc::clone(&err));
        Ok(Proc {
            name: name.to_string(),
            child,
            out,
            err,
        })
    }

    /// `gearwheel args...` with these environment variables added.
    pub fn gearwheel(args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut c = Command::new(BIN);
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        Proc::spawn(
            &format!("gearwheel {}", args.first().unwrap_or(&"")),
            &mut c,
            None,
        )
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The descriptors open in the process now, as /proc/PID/fd lists them.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or_else(|e| panic!("{}: /proc/{}/fd: {e}", self.name, self.pid()))
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.bytes.lock().unwrap()).into_owned()
    }

    /// Standard error: where gearwheel writes its log.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.bytes.lock().unwrap()).into_owned()
    }

    /// Both outputs, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "{} stdout:\n{}\n{} stderr:\n{}",
            self.name,
            self.stdout(),
            self.name,
            self.stderr()
        )
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Stop the process (SIGSTOP) and wait until the kernel shows it stopped: from then on,
    /// what peers do piles up in its sockets, to be seen in one batch of events at `resume`.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
        poll(5, &format!("{} to stop", self.name), || {
            match state(self.pid()) {
                Some('T') => Ok(()),
                other => Err(format!("state {other:?}")),
            }
        });
    }

    /// Let a paused process go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The exit status if the process has exited, once its outputs are read to their end
    /// (what it wrote last, an error at start say, is in `stdout`/`stderr` then); `None`
    /// while it runs.
    pub fn has_exited(&mut self) -> Option<ExitStatus> {
        let st = self.child.try_wait().ok()??;
        self.outputs_closed();
        Some(st)
    }

    /// Wait until stderr (the log) contains `needle`; panics after `secs`.
    pub fn wait_log(&self, needle: &str, secs: u64) {
        poll(secs, &format!("{} to log {needle:?}", self.name), || {
            let log = self.stderr();
            if log.contains(needle) {
                Ok(())
            } else {
                Err(log)
            }
        })
    }

    /// The first line of the log (stderr) that contains `needle`, waited for up to `secs`.
    pub fn log_line(&self, needle: &str, secs: u64) -> String {
        poll(secs, &format!("{} to log {needle:?}", self.name), || {
            let log = self.stderr();
            match log.lines().find(|l| l.contains(needle)) {
                Some(line) => Ok(line.to_string()),
                None => Err(log),
            }
        })
    }

    /// Wait until stdout contains `needle`; panics (with both outputs) after `secs` or if the
    /// process exits without printing it.
    pub fn wait_stdout(&mut self, needle: &str, secs: u64) {
        let found = poll_for(Duration::from_secs(secs), TICK, || {
            if self.stdout().contains(needle) {
                return Ok(());
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                self.outputs_closed();
                if self.stdout().contains(needle) {
                    return Ok(());
                }
                panic!(
                    "{} exited ({st}) before printing {needle:?}\n{}",
                    self.name,
                    self.describe()
                );
            }
            Err(String::new())
        });
        if found.is_err() {
            panic!(
                "{} did not print {needle:?} within {secs} s\n{}",
                self.name,
                self.describe()
            );
        }
    }

    /// The exit status once the process has exited (up to `secs`), with its output read to
    /// the end; `None` if it is still running then (it is left running).
    pub fn wait_exit(&mut self, secs: u64) -> Option<ExitStatus> {
        let st = poll_for(Duration::from_secs(secs), TICK, || {
            match self.child.try_wait() {
                Ok(Some(st)) => Ok(st),
                _ => Err(String::new()),
            }
        })
        .ok()?;
        self.outputs_closed();
        Some(st)
    }

    /// `wait_exit`, but a process still running after `secs` is killed and the test fails.
    pub fn exited(&mut self, secs: u64) -> ExitStatus {
        match self.wait_exit(secs) {
            Some(st) => st,
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{} did not exit within {secs} s\n{}",
                    self.name,
                    self.describe()
                );
            }
        }
    }

    /// Wait for a successful exit and return stdout.
    pub fn finish(&mut self, secs: u64) -> String {
        let st = self.exited(secs);
        assert!(
            st.success(),
            "{} failed: {st}\n{}",
            self.name,
            self.describe()
        );
        self.stdout()
    }

    /// After the exit: wait (briefly) until both pipes are read to their end. A grandchild
    /// that inherited a pipe can hold it open, so this gives up after a second.
    fn outputs_closed(&self) {
        let closed = |c: &Captured| c.closed.load(Ordering::Acquire);
        let _ = poll_for(Duration::from_secs(1), Duration::from_millis(2), || {
            if closed(&self.out) && closed(&self.err) {
                Ok(())
            } else {
                Err(String::new())
            }
        });
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

/// Run a command with `stdin` to its end (killed after `secs`, then the test fails).
pub fn run_out(c: &mut Command, stdin: Option<&[u8]>, secs: u64) -> Out {
    let mut p = Proc::spawn(&format!("{:?}", c.get_program()), c, stdin);
    let status = p.exited(secs);
    Out {
        status,
        stdout: p.stdout(),
        stderr: p.stderr(),
    }
}

/// `run_out` as (status, stdout, stderr), named for failure messages.
pub fn run_any(
    name: &str,
    cmd: &mut Command,
    stdin: Option<&[u8]>,
    secs: u64,
) -> (ExitStatus, String, String) {
    let mut p = Proc::spawn(name, cmd, stdin);
    let status = p.exited(secs);
    (status, p.stdout(), p.stderr())
}

/// `run_out`, for a command that must succeed: its stdout.
pub fn run(name: &str, cmd: &mut Command, stdin: Option<&[u8]>, secs: u64) -> String {
    Proc::spawn(name, cmd, stdin).finish(secs)
}

/// Run `gearwheel args...` with `stdin`, killed after `secs`.
pub fn gw(args: &[&str], stdin: Option<&[u8]>, secs: u64) -> Out {
    run_out(Command::new(BIN).args(args), stdin, secs)
}

/// Is a command on PATH?
pub fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
        .unwrap_or(false)
}

/// Is a process alive (and not a zombie)?
pub fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z')
}

/// A process's state letter from /proc/PID/stat (R, S, T, Z ...); `None` once it is gone.
pub fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}
