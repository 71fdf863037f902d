//! Signals as loop events: each handler sets a flag and writes a byte to a self-pipe that the
//! loop polls, so nothing but those two async-signal-safe acts happens in a handler.

use std::io::{self, Read};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mio::net::UnixStream;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};

pub struct Signals {
    rx: UnixStream,
    stop: Arc<AtomicBool>,
    graceful: Arc<AtomicBool>,
    reopen: Arc<AtomicBool>,
}

/// The signals seen since the last `take`.
#[derive(Debug, Default)]
pub struct Received {
    pub stop: bool,
    pub graceful: bool,
    pub reopen_log: bool,
}

impl Signals {
    pub fn install() -> io::Result<Signals> {
        let (rx, tx) = StdUnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let graceful = Arc::new(AtomicBool::new(false));
        let reopen = Arc::new(AtomicBool::new(false));
        for (sig, flag) in [
            (SIGTERM, &stop),
            (SIGINT, &stop),
            (SIGUSR1, &graceful),
            (SIGHUP, &reopen),
        ] {
            signal_hook::flag::register(sig, Arc::clone(flag))?;
            signal_hook::low_level::pipe::register(sig, tx.try_clone()?)?;
        }
        // A write past RLIMIT_FSIZE must fail with EFBIG (which the journal reports and
        // survives), not kill the process with SIGXFSZ.
        // SAFETY: setting a signal's disposition to ignore has no other effect.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        }
        Ok(Signals {
            rx: UnixStream::from_std(rx),
            stop,
            graceful,
            reopen,
        })
    }

    pub fn receiver(&mut self) -> &mut UnixStream {
        &mut self.rx
    }

    /// Drain the pipe and read the flags.
    pub fn take(&mut self) -> Received {
        let mut buf = [0u8; 64];
        while matches!(self.rx.read(&mut buf), Ok(n) if n > 0) {}
        Received {
            stop: self.stop.swap(false, Ordering::SeqCst),
            graceful: self.graceful.swap(false, Ordering::SeqCst),
            reopen_log: self.reopen.swap(false, Ordering::SeqCst),
        }
    }
}
