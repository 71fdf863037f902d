//! Job rates over the last minutes for the console's chart: a fixed ring of per-slot counts
//! (submitted, completed, failed) fed from the engine's summed counters once a loop turn.
//! Bounded memory whatever the uptime or load; no time-series store. Time is passed in.

use crate::engine::JobCounters;

/// How long one slot covers.
pub const SLOT_MS: u64 = 10_000;
/// Slots kept: ten minutes.
pub const SLOTS: usize = 60;

/// One slot's job events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    pub submitted: u64,
    pub completed: u64,
    /// Failed and ended with an exception.
    pub failed: u64,
}

impl Slot {
    fn between(new: &JobCounters, old: &JobCounters) -> Slot {
        Slot {
            submitted: new.submitted.saturating_sub(old.submitted),
            completed: new.completed.saturating_sub(old.completed),
            failed: (new.failed + new.exceptions).saturating_sub(old.failed + old.exceptions),
        }
    }
}

#[derive(Debug, Default)]
pub struct Rates {
    /// Closed slots, oldest first once `len == SLOTS` (a ring: `next` is the oldest).
    ring: Vec<Slot>,
    next: usize,
    /// The open slot's number (`now / SLOT_MS`) and the counters when it opened.
    current: Option<(u64, JobCounters)>,
    /// The counters at the last observation.
    last: JobCounters,
}

impl Rates {
    /// The counters at `now` (ms): events since the last call are counted in `now`'s slot.
    /// O(1) unless slots closed since the last call (at most `SLOTS` of them are written).
    pub fn observe(&mut self, now: u64, counters: JobCounters) {
        let slot = now / SLOT_MS;
        let Some((open, base)) = self.current else {
            self.current = Some((slot, self.last));
            self.last = counters;
            return;
        };
        if slot > open {
            self.close(Slot::between(&self.last, &base));
            // Slots with no turn in them had no events (every event wakes the loop).
            for _ in 0..(slot - open - 1).min(SLOTS as u64) {
                self.close(Slot::default());
            }
            self.current = Some((slot, self.last));
        }
        self.last = counters;
    }

    fn close(&mut self, s: Slot) {
        if self.ring.len() < SLOTS {
            self.ring.push(s);
        } else {
            self.ring[self.next] = s;
            self.next = (self.next + 1) % SLOTS;
        }
    }

    /// The closed slots oldest first, then the open one (partial), and the open slot's start
    /// (ms). Empty before the first observation.
    pub fn slots(&self) -> (Vec<Slot>, u64) {
        let mut v: Vec<Slot> = self.ring[self.next..]
            .iter()
            .chain(&self.ring[..self.next])
            .copied()
            .collect();
        let Some((open, base)) = self.current else {
            return (v, 0);
        };
        v.push(Slot::between(&self.last, &base));
        (v, open * SLOT_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(submitted: u64, completed: u64, failed: u64, exceptions: u64) -> JobCounters {
        JobCounters {
            submitted,
            completed,
            failed,
            exceptions,
            retried: 0,
        }
    }

    fn sub(v: &[Slot]) -> Vec<u64> {
        v.iter().map(|s| s.submitted).collect()
    }

    #[test]
    fn events_land_in_the_slot_of_the_turn_that_saw_them() {
        let mut r = Rates::default();
        assert_eq!(r.slots(), (vec![], 0));
        r.observe(1_000, c(0, 0, 0, 0));
        r.observe(2_000, c(3, 1, 0, 0));
        r.observe(9_999, c(5, 2, 1, 1));
        let (v, start) = r.slots();
        assert_eq!(start, 0);
        assert_eq!(
            v,
            vec![Slot {
                submitted: 5,
                completed: 2,
                failed: 2
            }]
        );
        r.observe(10_000, c(6, 2, 1, 1));
        // A quiet minute: empty slots in between.
        r.observe(35_000, c(8, 2, 1, 1));
        let (v, start) = r.slots();
        assert_eq!(start, 30_000);
        assert_eq!(sub(&v), vec![5, 1, 0, 2]);
    }

    #[test]
    fn the_ring_keeps_the_last_slots_only() {
        let mut r = Rates::default();
        for i in 0..200u64 {
            r.observe(i * SLOT_MS, c(i * (i + 1) / 2, 0, 0, 0));
        }
        let (v, start) = r.slots();
        assert_eq!(v.len(), SLOTS + 1);
        assert_eq!(start, 199 * SLOT_MS);
        // Slot i saw i new jobs.
        assert_eq!(sub(&v), (199 - SLOTS as u64..200).collect::<Vec<_>>());
        // A gap longer than the ring writes at most the ring's length.
        r.observe(u64::MAX / 2, c(1 << 40, 0, 0, 0));
        assert_eq!(r.slots().0.len(), SLOTS + 1);
        assert!(r.slots().0[..SLOTS].iter().all(|s| s.submitted == 0));
    }
}
