//! `gearwheel work`: a worker that runs a command per job. One thread per (server, slot) pair
//! holds one connection; a shared count of free slots caps the jobs running at once over all
//! servers. Each command runs in its own process group so that a timeout kills all of it.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{EXIT_FAILED, EXIT_USAGE, WorkArgs, say};
use crate::client::{self, Assignment, Conn, Error, format_duration, parse_duration};
use crate::proto::packet::PacketType;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request (GRAB_JOB_UNIQ) may wait for its reply before the connection is
/// given up as dead.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a sleeping or waiting thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);
const BACKOFF_FIRST: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long was healthy: the next reconnect starts the backoff anew.
const HEALTHY: Duration = Duration::from_secs(10);
/// The server's CAN_DO_TIMEOUT is ours plus this, so that our kill (and its explanation)
/// comes first; the server's timer only acts when this worker is hung or gone.
const SERVER_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);
/// How much of a failed command's stderr goes into WORK_EXCEPTION.
const STDERR_TAIL: usize = 2048;
/// Longest result sent: the server's default --max-packet-size less room for the handle.
const MAX_OUTPUT: usize = (64 << 20) - 1024;
/// After the command exits, how long to wait for its pipes to close (a background child of
/// the command may hold them).
const PIPE_GRACE: Duration = Duration::from_secs(2);
/// A line of stderr longer than this goes out as WORK_WARNING before its end comes.
const WARNING_MAX: usize = 16 << 10;
/// Stderr chunks read but not yet sent: a command that writes faster than the server takes
/// waits on its pipe rather than growing the worker's memory.
const WARNINGS_QUEUED: usize = 64;

/// The validated flags.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    pub functions: Vec<String>,
    pub servers: Vec<String>,
    pub concurrency: usize,
    pub timeout: Option<Duration>,
    pub id: String,
    pub command: Vec<String>,
}

impl Spec {
    pub(crate) fn from_args(a: WorkArgs) -> Result<Spec, String> {
        if a.function.is_empty() {
            return Err("give at least one -f FUNCTION".into());
        }
        if let Some(f) = a.function.iter().find(|f| f.is_empty() || f.contains('\0')) {
            return Err(format!(
                "-f {f:?}: a function name cannot be empty or hold NUL"
            ));
        }
        if a.command.is_empty() || a.command[0].is_empty() {
            return Err("give the command to run after `--`".into());
        }
        if a.concurrency == 0 || a.concurrency > 4096 {
            return Err("-c must be 1 to 4096".into());
        }
        let timeout = match a.timeout.as_deref() {
            None => None,
            Some(t) => match parse_duration(t) {
                Ok(d) if d.is_zero() => return Err("--timeout must be more than 0".into()),
                Ok(d) => Some(d),
                Err(e) => return Err(format!("--timeout {e}")),
            },
        };
        // A syntax error is a bad flag (checked there); a name that does not resolve yet is
        // retried.
        let servers = client::servers::from_env(&a.server)?;
        Ok(Spec {
            functions: a.function,
            servers,
            concurrency: a.concurrency,
            timeout,
            id: a
                .id
                .unwrap_or_else(|| format!("gearwheel-work-{}", std::process::id())),
            command: a.command,
        })
    }
}

/// State the connection threads share.
struct Shared {
    spec: Spec,
    stop: AtomicBool,
    free: Mutex<usize>,
    freed: Condvar,
    /// Process groups of the commands running now, for a forced stop.
    running: Mutex<Vec<i32>>,
    /// `--ssl`: shared by the connections, so that a reconnection resumes its TLS session.
    tls: Option<client::ClientTls>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn log(msg: impl std::fmt::Display) {
    say("work", msg);
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Wait for a free slot; `None` when stopping.
    fn acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut free = lock(&self.free);
        loop {
            if self.stopping() {
                return None;
            }
            if *free > 0 {
                *free -= 1;
                return Some(Slot(Arc::clone(self)));
            }
            free = self
                .freed
                .wait_timeout(free, POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Sleep up to `d`, waking early when stopping.
    fn nap(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stopping() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(POLL));
        }
    }
}

/// A taken slot, given back when dropped.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        *lock(&self.0.free) += 1;
        self.0.freed.notify_one();
    }
}

enum Event {
    Signal,
    ThreadDone,
}

pub fn run(a: WorkArgs) -> u8 {
    let tls = match client::tls_from_flags(a.ssl, &a.ssl_ca_file, &a.ssl_certificate, &a.ssl_key) {
        Ok(t) => t,
        Err(e) => {
            say("work", e);
            return EXIT_USAGE;
        }
    };
    let spec = match Spec::from_args(a) {
        Ok(s) => s,
        Err(e) => {
            say("work", e);
            return EXIT_USAGE;
        }
    };
    let (tx, rx) = mpsc::channel();
    let mut signals = match signal_hook::iterator::Signals::new([libc::SIGTERM, libc::SIGINT]) {
        Ok(s) => s,
        Err(e) => {
            log(format_args!("cannot install signal handlers: {e}"));
            return EXIT_FAILED;
        }
    };
    let sig_tx = tx.clone();
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if sig_tx.send(Event::Signal).is_err() {
                return;
            }
        }
    });
    log(format_args!(
        "serving {} on {} with up to {} job(s) at once{}: {}",
        spec.functions.join(", "),
        spec.servers.join(", "),
        spec.concurrency,
        spec.timeout
            .map(|t| format!(", timeout {}", format_duration(t)))
            .unwrap_or_default(),
        spec.command.join(" ")
    ));
    let shared = Arc::new(Shared {
        free: Mutex::new(spec.concurrency),
        spec,
        stop: AtomicBool::new(false),
        freed: Condvar::new(),
        running: Mutex::new(Vec::new()),
        tls,
    });
    let mut threads = 0;
    for server in &shared.spec.servers {
        for _ in 0..shared.spec.concurrency {
            let (shared, server, tx) = (Arc::clone(&shared), server.clone(), tx.clone());
            std::thread::spawn(move || {
                connection_thread(&shared, &server);
                let _ = tx.send(Event::ThreadDone);
            });
            threads += 1;
        }
    }
    let mut signals_seen = 0;
    while threads > 0 {
        match rx.recv() {
            Ok(Event::ThreadDone) => threads -= 1,
            Ok(Event::Signal) => {
                signals_seen += 1;
                if signals_seen == 1 {
                    let n = lock(&shared.running).len();
                    log(format_args!(
                        "stopping: no new jobs; waiting for {n} running job(s) (signal again to kill them)"
                    ));
                    shared.stop.store(true, Ordering::SeqCst);
                    shared.freed.notify_all();
                } else {
                    let groups = lock(&shared.running).clone();
                    log(format_args!(
                        "killing {} running job(s); the server gives them to another worker",
                        groups.len()
                    ));
                    for g in groups {
                        // SAFETY: kill(2) on a process group this worker started.
                        unsafe {
                            libc::kill(-g, libc::SIGKILL);
                        }
                    }
                    // Leave without reporting: the server requeues jobs of a vanished worker.
                    return EXIT_FAILED;
                }
            }
            Err(_) => break,
        }
    }
    log("stopped");
    0
}

/// Keep one connection to `server` going until stopped: connect, with backoff on failure.
fn connection_thread(shared: &Arc<Shared>, server: &str) {
    let mut backoff = BACKOFF_FIRST;
    let mut failing = false;
    while !shared.stopping() {
        let mut conn = match Conn::connect_secure(server, CONNECT_TIMEOUT, shared.tls.as_ref()) {
            Ok(c) => c,
            Err(e) => {
                if !failing || backoff >= BACKOFF_MAX {
                    log(format_args!(
                        "cannot connect to {server}: {e}; retrying in {}",
                        format_duration(backoff)
                    ));
                }
                failing = true;
                shared.nap(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        if failing {
            log(format_args!("connected to {server}"));
        }
        let started = Instant::now();
        match session(shared, &mut conn) {
            Ok(()) => return,
            Err(e) => {
                if started.elapsed() >= HEALTHY {
                    backoff = BACKOFF_FIRST;
                }
                log(format_args!(
                    "{server}: {e}; reconnecting in {}",
                    format_duration(backoff)
                ));
                failing = true;
                shared.nap(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// One connection's life: register, then grab, run and report until stopped (`Ok`) or the
/// connection fails (`Err`).
fn session(shared: &Arc<Shared>, conn: &mut Conn) -> Result<(), Error> {
    let spec = &shared.spec;
    conn.set_client_id(&spec.id)?;
    let server_timeout = spec.timeout.map(|t| t + SERVER_TIMEOUT_MARGIN);
    for f in &spec.functions {
        conn.can_do(f.as_bytes(), server_timeout)?;
    }
    loop {
        let Some(slot) = shared.acquire() else {
            return Ok(());
        };
        conn.set_read_timeout(Some(REPLY_TIMEOUT))?;
        let job = match conn.grab_uniq() {
            Ok(j) => j,
            Err(Error::Server { code, text }) => {
                // A late result's JOB_NOT_FOUND, or similar: not a reason to reconnect.
                log(format_args!("{}: server says {code}: {text}", conn.peer()));
                continue;
            }
            Err(e) if e.is_timeout() => {
                return Err(Error::Protocol("no reply to GRAB_JOB_UNIQ in 30s".into()));
            }
            Err(e) => return Err(e),
        };
        let Some(job) = job else {
            drop(slot);
            conn.pre_sleep()?;
            if !wait_for_noop(shared, conn)? {
                return Ok(());
            }
            continue;
        };
        let started = Instant::now();
        // Stderr goes out as it comes, so that a long run can be watched; a failed send shows
        // up on the result's send below.
        let mut warn = |lines: &[u8]| {
            let _ = conn.work(PacketType::WorkWarning, &job.handle, lines);
        };
        let outcome = run_job(shared, &job, &mut warn);
        let took = started.elapsed();
        let (ptype, body) = outcome.reply();
        let sent = if ptype == PacketType::WorkComplete || ptype == PacketType::WorkException {
            conn.work(ptype, &job.handle, &body)
        } else {
            conn.work_fail(&job.handle)
        };
        drop(slot);
        log(format_args!(
            "function={} handle={} status={} duration={:.3}s",
            String::from_utf8_lossy(&job.function),
            String::from_utf8_lossy(&job.handle),
            outcome.short(),
            took.as_secs_f64()
        ));
        if let Err(e) = sent {
            log(format_args!(
                "the result of {} was not delivered (the server requeues the job)",
                String::from_utf8_lossy(&job.handle)
            ));
            return Err(e);
        }
    }
}

/// After PRE_SLEEP: wait for NOOP. `Ok(false)` when stopping.
fn wait_for_noop(shared: &Shared, conn: &mut Conn) -> Result<bool, Error> {
    conn.set_read_timeout(Some(POLL))?;
    loop {
        if shared.stopping() {
            return Ok(false);
        }
        match conn.recv() {
            Ok(f) if f.ptype == PacketType::Noop => return Ok(true),
            Ok(_) => {}
            Err(e) if e.is_timeout() => {}
            Err(Error::Server { code, text }) => {
                log(format_args!("{}: server says {code}: {text}", conn.peer()))
            }
            Err(e) => return Err(e),
        }
    }
}

/// How a command ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    Done(Vec<u8>),
    Failed { status: ExitStatus, stderr: String },
    TimedOut { after: Duration, stderr: String },
    TooLarge,
    NotStarted(String),
}

impl Outcome {
    /// The packet that reports it, and its data.
    pub(crate) fn reply(&self) -> (PacketType, Vec<u8>) {
        match self {
            Outcome::Done(out) => (PacketType::WorkComplete, out.clone()),
            _ => (PacketType::WorkException, self.text().into_bytes()),
        }
    }

    /// The WORK_EXCEPTION text.
    pub(crate) fn text(&self) -> String {
        let with_tail = |head: String, tail: &str| {
            if tail.is_empty() {
                head
            } else {
                format!("{head}: {tail}")
            }
        };
        match self {
            Outcome::Done(_) => String::new(),
            Outcome::Failed { status, stderr } => with_tail(describe(*status), stderr),
            Outcome::TimedOut { after, stderr } => with_tail(
                format!("timed out after {}; killed", format_duration(*after)),
                stderr,
            ),
            Outcome::TooLarge => {
                format!("output larger than {} bytes; discarded", MAX_OUTPUT)
            }
            Outcome::NotStarted(e) => e.clone(),
        }
    }

    /// The log line's status word.
    pub(crate) fn short(&self) -> String {
        match self {
            Outcome::Done(_) => "exit:0".into(),
            Outcome::Failed { status, .. } => match (status.code(), status.signal()) {
                (Some(c), _) => format!("exit:{c}"),
                (None, Some(s)) => format!("signal:{s}"),
                _ => "unknown".into(),
            },
            Outcome::TimedOut { .. } => "timeout".into(),
            Outcome::TooLarge => "too-large".into(),
            Outcome::NotStarted(_) => "not-started".into(),
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => format!("{status}"),
    }
}

/// The last `max` bytes of `b` as text, from a character boundary, trimmed.
pub(crate) fn tail(b: &[u8], max: usize) -> String {
    let start = b.len().saturating_sub(max);
    let s = String::from_utf8_lossy(&b[start..]);
    let s = if start > 0 {
        // Skip a partial character or line at the cut.
        match s.find('\n') {
            Some(i) if i + 1 < s.len() => &s[i + 1..],
            _ => s.trim_start_matches('\u{fffd}'),
        }
    } else {
        &s
    };
    s.trim().to_string()
}

/// Bytes a pipe reader has collected so far; `done` says when it reached EOF.
struct Collector {
    buf: Arc<Mutex<Vec<u8>>>,
    overflow: Arc<AtomicBool>,
    done: mpsc::Receiver<()>,
}

/// Stderr as it comes, cut into WORK_WARNING payloads of whole lines (a line longer than
/// `WARNING_MAX` is sent in pieces; what is left at the end goes last).
#[derive(Default)]
struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    fn push(&mut self, chunk: &[u8], send: &mut dyn FnMut(&[u8])) {
        self.pending.extend_from_slice(chunk);
        if let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') {
            send(&self.pending[..=end]);
            self.pending.drain(..=end);
        }
        while self.pending.len() >= WARNING_MAX {
            send(&self.pending[..WARNING_MAX]);
            self.pending.drain(..WARNING_MAX);
        }
    }

    fn finish(&mut self, send: &mut dyn FnMut(&[u8])) {
        if !self.pending.is_empty() {
            send(&self.pending);
            self.pending.clear();
        }
    }
}

impl Collector {
    /// Read `pipe` to its end on a thread. `keep_tail` keeps only the last bytes (stderr);
    /// otherwise up to MAX_OUTPUT bytes are kept and `overflow` set past that. `tee` gets
    /// every chunk as it is read.
    fn spawn(
        pipe: Option<impl Read + Send + 'static>,
        keep_tail: Option<usize>,
        tee: Option<mpsc::SyncSender<Vec<u8>>>,
    ) -> Collector {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let overflow = Arc::new(AtomicBool::new(false));
        let (tx, done) = mpsc::channel();
        let (b, o) = (Arc::clone(&buf), Arc::clone(&overflow));
        std::thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut chunk = [0u8; 16384];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => {
                            if let Some(t) = &tee {
                                let _ = t.send(chunk[..n].to_vec());
                            }
                            let mut v = lock(&b);
                            v.extend_from_slice(&chunk[..n]);
                            if let Some(t) = keep_tail {
                                if v.len() > 2 * t {
                                    let cut = v.len() - t;
                                    v.drain(..cut);
                                }
                            } else if v.len() > MAX_OUTPUT {
                                o.store(true, Ordering::SeqCst);
                                v.truncate(MAX_OUTPUT);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
            let _ = tx.send(());
        });
        Collector {
            buf,
            overflow,
            done,
        }
    }

    /// Wait for EOF up to `until`, then take what was read.
    fn take(self, until: Instant) -> (Vec<u8>, bool) {
        let _ = self
            .done
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        let v = std::mem::take(&mut *lock(&self.buf));
        (v, self.overflow.load(Ordering::SeqCst))
    }
}

/// Run the command for one job; `warn` gets its stderr in lines as they come.
fn run_job(shared: &Shared, job: &Assignment, warn: &mut dyn FnMut(&[u8])) -> Outcome {
    let spec = &shared.spec;
    let mut cmd = Command::new(&spec.command[0]);
    cmd.args(&spec.command[1..])
        .env("GEARMAN_FUNCTION", OsStr::from_bytes(&job.function))
        .env("GEARMAN_HANDLE", OsStr::from_bytes(&job.handle))
        .env("GEARMAN_UNIQUE", OsStr::from_bytes(&job.unique))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a timeout kills the command and everything it started, and a
        // Ctrl-C at the worker's terminal stops the worker gracefully, not the jobs.
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::NotStarted(format!("cannot run {}: {e}", spec.command[0])),
    };
    let pgid = child.id() as i32;
    lock(&shared.running).push(pgid);
    let status = supervise(&mut child, job.data.clone(), spec.timeout, warn);
    lock(&shared.running).retain(|&g| g != pgid);
    status
}

fn supervise(
    child: &mut Child,
    input: bytes::Bytes,
    timeout: Option<Duration>,
    warn: &mut dyn FnMut(&[u8]),
) -> Outcome {
    let pgid = child.id() as i32;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input makes this fail with EPIPE: fine.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let out = Collector::spawn(child.stdout.take(), None, None);
    let (tee, warnings) = mpsc::sync_channel(WARNINGS_QUEUED);
    let err = Collector::spawn(child.stderr.take(), Some(STDERR_TAIL), Some(tee));
    let mut lines = Lines::default();
    let started = Instant::now();
    // Without a timeout the wait still wakes now and then, to pass stderr on.
    let deadline = started + timeout.unwrap_or(Duration::from_secs(100 * 365 * 86_400));
    let status = wait_until(
        child,
        deadline,
        &mut |chunk| lines.push(chunk, warn),
        &warnings,
    );
    let status = match status {
        Some(s) => Ok(s),
        None => {
            // SAFETY: kill(2) on the process group of our own child, not yet reaped.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
            let _ = child.wait();
            Err(started.elapsed())
        }
    };
    let grace = Instant::now() + PIPE_GRACE;
    // Until the stderr reader ends (its end of the channel goes with it) or the grace is up:
    // a full channel would otherwise hold the reader back from its end.
    while let Ok(chunk) = warnings.recv_timeout(grace.saturating_duration_since(Instant::now())) {
        lines.push(&chunk, warn);
    }
    lines.finish(warn);
    let (stdout, overflow) = out.take(grace);
    let (stderr, _) = err.take(grace);
    let stderr = tail(&stderr, STDERR_TAIL);
    match status {
        Err(_) => Outcome::TimedOut {
            after: timeout.unwrap_or_default(),
            stderr,
        },
        Ok(s) if s.success() && overflow => Outcome::TooLarge,
        Ok(s) if s.success() => Outcome::Done(stdout),
        Ok(status) => Outcome::Failed { status, stderr },
    }
}

/// Wait for the child until `deadline`; `None` if it is still running then. Meanwhile the
/// chunks of `tee` go to `each` as they come.
fn wait_until(
    child: &mut Child,
    deadline: Instant,
    each: &mut dyn FnMut(&[u8]),
    tee: &mpsc::Receiver<Vec<u8>>,
) -> Option<ExitStatus> {
    // Short sleeps first so that quick commands are reported at once, then at most 20 ms.
    let mut nap = Duration::from_micros(500);
    loop {
        while let Ok(chunk) = tee.try_recv() {
            each(&chunk);
        }
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => {}
            Err(_) => return None,
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests;
