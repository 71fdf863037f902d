//! The server's two times, read only through `Clock`: the wall clock it schedules by, and a
//! monotonic one for the etcd link's lease arithmetic, which must not step with the wall
//! clock, so that a clock step cannot stretch a lease (ARCHITECTURE.md, rule 5). The system
//! clock for the server, a manual one for tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch. Future jobs are given in wall-clock time, so that is
/// the time the whole server runs on. The server reads it once per loop turn.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;

    /// Milliseconds on a clock that never steps (from an arbitrary start, never 0): time that
    /// passed, whatever the wall clock does. Read with `now_ms`, once per turn.
    fn mono_ms(&self) -> u64;

    /// A clock that moves by hand, so that a loop sleeping on it can be woken when it moves
    /// (`ManualClock::on_move`); the system clock moves by itself.
    fn manual(&self) -> Option<&ManualClock> {
        None
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }

    fn mono_ms(&self) -> u64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
    }
}

type Wake = Box<dyn Fn() + Send + Sync>;

/// A clock that moves only when told to. Shared (behind an `Arc`) between a test and the
/// server it drives on another thread; each move wakes the loops watching it, so a deadline
/// it passes is acted on at once, without the loop polling.
#[derive(Default)]
pub struct ManualClock {
    now: AtomicU64,
    /// Moved by `advance` (time passing), not by `set` (the wall clock stepped).
    mono: AtomicU64,
    wakes: Mutex<Vec<Wake>>,
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ManualClock({})", self.now_ms())
    }
}

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(start_ms),
            mono: AtomicU64::new(1),
            wakes: Mutex::new(Vec::new()),
        }
    }

    /// Time passes: both clocks move.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.mono.fetch_add(ms, Ordering::SeqCst);
        self.wake();
    }

    /// The wall clock is stepped (forward or back); no time passed.
    pub fn set(&self, ms: u64) {
        self.now.store(ms, Ordering::SeqCst);
        self.wake();
    }

    /// Call `wake` after every move from now on (a server's loop registers its waker here).
    pub fn on_move(&self, wake: Wake) {
        self.wakes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(wake);
    }

    fn wake(&self) {
        for w in self.wakes.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            w();
        }
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn mono_ms(&self) -> u64 {
        self.mono.load(Ordering::SeqCst)
    }

    fn manual(&self) -> Option<&ManualClock> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1000);
        assert_eq!(c.now_ms(), 1000);
        c.advance(5);
        assert_eq!(c.now_ms(), 1005);
        c.set(7);
        assert_eq!(c.now_ms(), 7);
        assert_eq!(
            c.mono_ms(),
            6,
            "a step of the wall clock is no time passing"
        );
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
        let m = SystemClock.mono_ms();
        assert!(m >= 1 && SystemClock.mono_ms() >= m);
    }

    #[test]
    fn every_move_of_a_shared_manual_clock_wakes_its_watchers() {
        let c = Arc::new(ManualClock::new(0));
        let woken = Arc::new(AtomicU64::new(0));
        let w = woken.clone();
        c.on_move(Box::new(move || {
            w.fetch_add(1, Ordering::SeqCst);
        }));
        let other = c.clone();
        std::thread::spawn(move || other.advance(10))
            .join()
            .unwrap();
        c.set(50);
        assert_eq!(c.now_ms(), 50);
        assert_eq!(woken.load(Ordering::SeqCst), 2);
        let dynamic: Arc<dyn Clock> = c;
        assert!(dynamic.manual().is_some() && SystemClock.manual().is_none());
    }
}
