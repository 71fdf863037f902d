//! The server-wide bound on unsent output (`--max-total-output`). `--max-output-buffer` bounds
//! one connection, but many peers that ask and never read could each stay under it and still
//! take all the memory. Past the bound, a connection holding more than `HOLD_MIN` unsent bytes
//! is not read until its peer reads (TCP pushes back on its writes: nothing is lost, and a slow
//! reader goes on once it catches up). Output other peers cause (a worker's WORK_DATA for a
//! client that does not read) is not stopped that way, so past twice the bound the largest
//! holders are closed until the total is back under it. Memory freed by such connections is
//! handed back to the OS, at most once a second.

use crate::http::metrics::OutputStats;

/// A connection with more unsent bytes than this is not read while the total is over the
/// bound. A reply or two (64 KiB) is what a peer that reads has in flight.
pub(super) const HOLD_MIN: usize = 64 * 1024;
/// Unsent bytes freed by closed connections that are worth a heap trim.
const TRIM_MIN: usize = 8 << 20;
/// At most one such trim per this many ms: a trim walks the heap.
const TRIM_EVERY_MS: u64 = 1_000;

/// The count of unsent bytes and the connections held for it.
#[derive(Debug)]
pub(in crate::reactor) struct OutputBound {
    pub(super) max: usize,
    /// Unsent bytes of all connections as last counted (each connection's `counted`).
    total: usize,
    /// Connections not read because of the bound (slab indexes; stale ones are skipped).
    pub(super) held: Vec<usize>,
    /// Times a connection was held, and connections closed, since start (for /metrics).
    pub(super) holds: u64,
    pub(super) closes: u64,
    /// Unsent bytes of connections closed since the last trim.
    freed: usize,
    last_trim: u64,
}

impl OutputBound {
    pub(in crate::reactor) fn new(max: usize) -> OutputBound {
        OutputBound {
            max,
            total: 0,
            held: Vec::new(),
            holds: 0,
            closes: 0,
            freed: 0,
            last_trim: 0,
        }
    }

    /// A connection's unsent bytes are now `unsent`; it was counted with `counted`.
    pub(in crate::reactor) fn recount(&mut self, counted: &mut usize, unsent: usize) {
        self.total = self.total.saturating_sub(*counted).saturating_add(unsent);
        *counted = unsent;
    }

    /// A connection counted with `counted` is gone.
    pub(in crate::reactor) fn forget(&mut self, counted: usize) {
        self.total = self.total.saturating_sub(counted);
        self.freed = self.freed.saturating_add(counted);
    }

    fn over(&self) -> bool {
        self.total > self.max
    }

    /// Should a connection with `unsent` bytes waiting be left unread?
    pub(super) fn holds(&self, unsent: usize) -> bool {
        self.over() && unsent > HOLD_MIN
    }

    /// How many bytes must go for the total to be back under the bound, once past twice it.
    pub(super) fn excess(&self) -> Option<usize> {
        (self.total > self.max.saturating_mul(2)).then(|| self.total - self.max)
    }

    /// Enough was freed for a heap trim, and the last was long enough ago.
    pub(super) fn trim_due(&mut self, now: u64) -> bool {
        let due = self.freed >= TRIM_MIN
            && (now < self.last_trim || now >= self.last_trim + TRIM_EVERY_MS);
        if due {
            self.freed = 0;
            self.last_trim = now;
        }
        due
    }

    /// When the loop must wake for a trim that waits for its turn (the loop may have nothing
    /// else to wake it for once the peers are gone).
    pub(in crate::reactor) fn deadline(&self) -> Option<u64> {
        (self.freed >= TRIM_MIN).then(|| self.last_trim.saturating_add(TRIM_EVERY_MS))
    }

    pub(in crate::reactor) fn stats(&self) -> OutputStats {
        OutputStats {
            bytes: self.total as u64,
            max: self.max as u64,
            held: self.held.len() as u64,
            holds: self.holds,
            closes: self.closes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_holds_and_closes_against_the_bound() {
        let mut b = OutputBound::new(1 << 20);
        let (mut a, mut c) = (0, 0);
        b.recount(&mut a, 700 << 10);
        assert!(!b.holds(700 << 10), "under the bound nobody is held");
        b.recount(&mut c, 400 << 10);
        assert_eq!(b.total, 1100 << 10);
        assert!(b.holds(400 << 10));
        assert!(!b.holds(HOLD_MIN), "a reader's reply or two is never held");
        assert_eq!(b.excess(), None, "closing starts at twice the bound");
        b.recount(&mut a, 2 << 20);
        assert_eq!(b.excess(), Some((2 << 20) + (400 << 10) - (1 << 20)));
        b.forget(a);
        assert_eq!(b.total, 400 << 10);
        assert!(!b.holds(400 << 10));
        b.recount(&mut c, 0);
        assert_eq!((b.total, c), (0, 0));
    }

    #[test]
    fn trims_after_enough_was_freed_at_most_once_a_second() {
        let mut b = OutputBound::new(1 << 20);
        b.forget(TRIM_MIN - 1);
        assert!(!b.trim_due(5_000));
        b.forget(1);
        assert!(b.trim_due(5_000));
        assert_eq!(b.deadline(), None);
        b.forget(TRIM_MIN);
        assert!(!b.trim_due(5_500), "too soon");
        assert_eq!(b.deadline(), Some(6_000), "the loop wakes for it");
        assert!(b.trim_due(6_000));
        b.forget(TRIM_MIN);
        assert!(b.trim_due(10), "a clock stepped back does not stop it");
    }
}
