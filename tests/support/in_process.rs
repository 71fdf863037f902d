//! The server under test on a clock the test moves: the real server (`gearwheel::reactor::
//! Embedded`, same flags) on a thread of the test process, on port 0, driven over real sockets.
//! Time passes only by `advance`, which returns once the server has acted on the new time, so
//! a test never sleeps for time to pass and may assert that nothing happened.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use gearwheel::clock::{Clock, ManualClock, SystemClock};
use gearwheel::reactor::Embedded;

use super::gearman::{Conn, Packet, t};
use super::wait::poll;

/// A manual clock set to the real time now (so dates in names and schedules look like
/// today's), to share between servers that follow one another.
pub fn manual_clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(SystemClock.now_ms()))
}

/// A server on a manual clock; stopped (journal closed) when dropped.
pub struct InProcess {
    server: Option<Embedded>,
    pub addr: SocketAddr,
    pub clock: Arc<ManualClock>,
    name: String,
}

/// Steps `advance` takes: time passes as a series of turns, as it would on a real clock, not
/// as one jump (an `@every 1s` entry over 2.2 s sees its two due times).
const STEP_MS: u64 = 100;

impl InProcess {
    /// Start with default flags plus `extra`, on a new `manual_clock`.
    pub fn start(extra: &[&str]) -> InProcess {
        InProcess::start_on(manual_clock(), extra)
    }

    /// Start on `clock` (shared with a server before it, for a restart).
    pub fn start_on(clock: Arc<ManualClock>, extra: &[&str]) -> InProcess {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!("gearwheel-{}", N.fetch_add(1, Ordering::SeqCst));
        capture_logs();
        // No idle trim: it unmaps pages of the whole process, the test harness's included.
        let mut args = vec!["-p", "0", "--idle-trim", "0"];
        // A GRAB held after a job ends waits on the clock, which only the test moves: answered
        // at once (as gearmand does) unless the test asks for the wait.
        if !extra.contains(&"--grab-wait") {
            args.extend_from_slice(&["--grab-wait", "0"]);
        }
        args.extend_from_slice(extra);
        // A restart after `kill9` or a drop can find the journal's lock still held by this
        // very process: a process another test is starting holds copies of this process's
        // descriptors, that lock's among them, from its fork until its exec. Start again once
        // that child has gone on; a lock held by any other process is an error at once.
        let ours = format!("in use by another gearwheel (pid {})", std::process::id());
        let server = poll(
            10,
            "a sibling test's child to let go of the journal lock",
            || match Embedded::start(&args, clock.clone(), &name) {
                Ok(server) => Ok(server),
                Err(e) if e.contains(&ours) => Err(e),
                Err(e) => panic!("in-process server did not start: {e}"),
            },
        );
        InProcess {
            addr: server.addr(),
            server: Some(server),
            clock,
            name,
        }
    }

    pub fn connect(&self) -> Conn {
        Conn::connect(self.addr)
    }

    /// The HTTP listener's address (`--http-port 0`).
    pub fn http_addr(&self) -> SocketAddr {
        self.server.as_ref().expect("running").http_addrs[0]
    }

    /// The clock's time.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Let `ms` pass, in steps of at most `STEP_MS`; returns once the server has finished a
    /// turn at the new time, so what it did is in the sockets and what it did not do, it will
    /// not do without more time or more input.
    pub fn advance(&self, ms: u64) {
        let mut left = ms;
        while left > 0 {
            let step = left.min(STEP_MS);
            self.clock.advance(step);
            left -= step;
            self.settle();
        }
    }

    /// Let time pass in steps of `step_ms` until a packet comes to `c` (at most `limit_ms`);
    /// returns it. The packet's time is `now_ms()` then, to a step.
    pub fn advance_until_packet(&self, c: &mut Conn, step_ms: u64, limit_ms: u64) -> Packet {
        let start = self.now_ms();
        loop {
            assert!(
                self.now_ms() - start < limit_ms,
                "nothing came in {limit_ms} ms"
            );
            self.advance(step_ms);
            if let Some(p) = c.read_within(1) {
                return p;
            }
        }
    }

    /// Set the clock to `ms` since the epoch (in one move), then `settle`.
    pub fn set_time(&self, ms: u64) {
        self.clock.set(ms);
        self.settle();
    }

    /// Return once the server has finished every turn begun before this call: two ECHO round
    /// trips on a connection of its own. The first is answered in a turn that began after the
    /// call; the second is read only after that turn ended, its writes to other connections
    /// included. Bytes still in flight on another connection are not covered: `sync` that
    /// connection instead.
    pub fn settle(&self) {
        let mut c = self.connect();
        for _ in 0..2 {
            c.send_req(t::ECHO_REQ, &[b"settle"]);
            assert_eq!(c.expect(t::ECHO_RES), b"settle");
        }
    }

    /// Everything the server has logged so far (its thread's lines).
    pub fn log(&self) -> String {
        logs()
            .lock()
            .unwrap()
            .get(&self.name)
            .cloned()
            .unwrap_or_default()
    }

    /// Wait until the log contains `needle` (for a line the server writes as it acts on a
    /// socket event, not on time: time moves only by `advance`).
    pub fn wait_log(&self, needle: &str, secs: u64) {
        poll(secs, &format!("{} to log {needle:?}", self.name), || {
            let log = self.log();
            if log.contains(needle) {
                Ok(())
            } else {
                Err(log)
            }
        })
    }

    /// Stop as `kill -9` leaves the data directory: the journal is not closed, what it had not
    /// written is lost. Returns the clock, for the next server.
    pub fn kill9(mut self) -> Arc<ManualClock> {
        if let Some(s) = self.server.take() {
            s.abandon().expect("the loop ended");
        }
        self.clock.clone()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = s.stop();
        }
    }
}

/// The log lines of each in-process server, by its thread's name.
fn logs() -> &'static Mutex<HashMap<String, String>> {
    static LOGS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    LOGS.get_or_init(Default::default)
}

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }

    fn log(&self, r: &log::Record) {
        let thread = std::thread::current();
        let Some(name) = thread.name().filter(|n| n.starts_with("gearwheel-")) else {
            return;
        };
        // The level as the server's own lines name it (src/logger.rs).
        let level = match r.level() {
            log::Level::Warn => "WARNING".to_string(),
            l => l.to_string(),
        };
        let line = format!("{level} {}\n", r.args());
        let mut logs = logs().lock().unwrap();
        logs.entry(name.to_string()).or_default().push_str(&line);
    }

    fn flush(&self) {}
}

/// Route the `log` records of in-process servers to `logs`, once per test process (as
/// `--verbose INFO` does for a server process).
fn capture_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        static CAPTURE: Capture = Capture;
        if log::set_logger(&CAPTURE).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
    });
}
