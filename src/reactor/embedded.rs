//! A real server on a thread of this process, on a clock moved by hand: what tests use to let
//! time pass without sleeping. Same flags, listeners, journal and schedules as `gearwheel serve`
//! (no signals, pid file, user or daemon: those are the process's); tests still speak bytes to
//! it over real sockets. Each move of the clock wakes the loop, so a deadline it passes is
//! acted on at once.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread::JoinHandle;

use mio::{Registry, Waker};

use super::{Exit, Server, TlsSetup};
use argh::FromArgs;

use crate::clock::{Clock, ManualClock};
use crate::config::{Config, ServeArgs, split_equals};

const RUN: u8 = 0;
const STOP: u8 = 1;
const ABANDON: u8 = 2;

/// How a loop on a manual clock is woken: by the clock's moves, and to stop.
pub(super) struct Wake {
    waker: Waker,
    stop: AtomicU8,
}

impl Wake {
    /// A waker on `registry`, rung by every move of `clock`.
    pub(super) fn watch(clock: &ManualClock, registry: &Registry) -> io::Result<Arc<Wake>> {
        let wake = Arc::new(Wake {
            waker: Waker::new(registry, super::token::Source::Wake.token())?,
            stop: AtomicU8::new(RUN),
        });
        let w = wake.clone();
        clock.on_move(Box::new(move || {
            let _ = w.waker.wake();
        }));
        Ok(wake)
    }

    /// The waker rang: `Some((exit, close the journal))` when asked to stop.
    pub(super) fn stopped(&self) -> Option<(Exit, bool)> {
        match self.stop.load(Ordering::SeqCst) {
            STOP => Some((Exit::Stopped, true)),
            ABANDON => Some((Exit::Stopped, false)),
            _ => None,
        }
    }

    fn ring(&self, how: u8) {
        self.stop.store(how, Ordering::SeqCst);
        let _ = self.waker.wake();
    }
}

/// A server running on its own thread; stopped (its journal closed) when dropped.
pub struct Embedded {
    /// The `--listen` addresses (port 0 resolved).
    pub addrs: Vec<SocketAddr>,
    /// The HTTP listeners' addresses.
    pub http_addrs: Vec<SocketAddr>,
    wake: Arc<Wake>,
    thread: Option<JoinHandle<io::Result<Exit>>>,
}

impl Embedded {
    /// Start `gearwheel serve ARGS` (the words after `serve`) on `clock`, on a thread named
    /// `thread` (its log lines carry that name). Returns once it listens; a bad flag, file or
    /// address is the error `gearwheel serve` would print.
    pub fn start(args: &[&str], clock: Arc<ManualClock>, thread: &str) -> Result<Embedded, String> {
        let words = split_equals(args.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let a = ServeArgs::from_args(&["gearwheel", "serve"], &refs).map_err(|e| e.output)?;
        let config = Config::from_args(a, None)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(thread.to_string())
            .spawn(move || {
                let mut server = match start(config, clock) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return Ok(Exit::Stopped);
                    }
                };
                let Some(wake) = server.time.wake.clone() else {
                    return Ok(Exit::Stopped);
                };
                let addrs = (
                    server.local_addrs().to_vec(),
                    server.http_addrs().to_vec(),
                    wake,
                );
                let _ = tx.send(Ok(addrs));
                server.run()
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let (addrs, http_addrs, wake) = rx
            .recv()
            .map_err(|_| "the server thread ended at start".to_string())??;
        Ok(Embedded {
            addrs,
            http_addrs,
            wake,
            thread: Some(handle),
        })
    }

    /// The first `--listen` address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Stop as SIGTERM does (what the turn made durable is written) and wait for the loop.
    pub fn stop(mut self) -> io::Result<Exit> {
        self.end(STOP)
    }

    /// Stop without closing the journal, as a killed process leaves it: what the journal had
    /// written stays, what it had not is lost. The data directory can be opened again.
    pub fn abandon(mut self) -> io::Result<Exit> {
        self.end(ABANDON)
    }

    fn end(&mut self, how: u8) -> io::Result<Exit> {
        self.wake.ring(how);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the server thread panicked")),
            None => Ok(Exit::Stopped),
        }
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.end(STOP);
        }
    }
}

/// What `gearwheel serve` does between its flags and its loop, minus what is the process's.
fn start(config: Config, clock: Arc<ManualClock>) -> Result<Server, String> {
    let schedules = config.schedules.clone();
    let journal = config
        .data_dir
        .clone()
        .map(|d| (d, config.fsync, config.repair));
    let tls = TlsSetup::load(&config)?;
    let clock: Arc<dyn Clock> = clock;
    let mut server = Server::bind_on(config, tls, clock).map_err(|e| e.to_string())?;
    server.load_acl()?;
    if let Some((dir, fsync, repair)) = &journal {
        let line = server.open_journal(dir, *fsync, *repair)?;
        crate::notice!("{line}");
    }
    if let Some(path) = schedules {
        server.load_schedules(path).map_err(|e| e.join("\n"))?;
    }
    Ok(server)
}
