//! The timer wheel: every deadline in the server (future jobs, CAN_DO_TIMEOUT, schedule
//! entries) in one hierarchical wheel over a slab. Insert and cancel are O(1), `poll(now)`
//! hands out what is due, `next_deadline()` is exact so the loop sleeps until then and no
//! longer. Time is always a parameter (milliseconds), never read here.
//!
//! Eight levels of 64 slots: level L's slot spans 64^L ms, so the wheel reaches 2^48 ms
//! (about 8,900 years) past its current time. An entry sits at the level of the highest bit
//! where its deadline differs from the wheel's time; as time reaches its slot it cascades
//! down, and at level 0 each slot is one exact millisecond. Entries move as whole lists in
//! order, so equal deadlines fire in insertion order.

use std::cell::Cell;

use slab::Slab;

const LEVELS: usize = 8;
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;
/// The wheel's top level ends at the next multiple of 2^48 ms (the year 10889 for the
/// first block); later deadlines are clamped to it.
const TOP_MASK: u64 = (1 << (SLOT_BITS as u64 * LEVELS as u64)) - 1;
const NIL: u32 = u32::MAX;

/// A key returned by `insert`, used to cancel. Stale keys (already fired or cancelled) are
/// recognised and ignored even after their slab slot is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerKey {
    index: u32,
    seq: u64,
}

impl TimerKey {
    /// The entry's slot, for `Timers::key_at`.
    pub fn index(self) -> u32 {
        self.index
    }
}

struct Entry<T> {
    deadline: u64,
    seq: u64,
    value: T,
    prev: u32,
    next: u32,
    level: u8,
    slot: u8,
}

#[derive(Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List {
    head: NIL,
    tail: NIL,
};

pub struct Timers<T> {
    entries: Slab<Entry<T>>,
    /// Boxed, as `mins`: 4 KiB each, and a `Timers` is part of the engine and of the reactor,
    /// which live in `Server` on the main thread's stack; inline, every move of the server at
    /// start copied them and left that stack 52 kB deeper (resident for the process's life).
    slots: Box<[[List; SLOTS]; LEVELS]>,
    /// One bit per non-empty slot, so the next slot is found with trailing_zeros.
    occupied: [u64; LEVELS],
    /// The wheel's time: no entry is earlier than this.
    elapsed: u64,
    next_seq: u64,
    /// Per slot, the earliest deadline in it, or `UNKNOWN` until asked (then found by walking
    /// the slot once). Kept per slot so that cancelling the earliest entry of one slot, as a
    /// held GRAB's deadline is on every synchronous job, never costs a walk of another slot
    /// holding tens of thousands of future jobs.
    mins: Box<[[Cell<u64>; SLOTS]; LEVELS]>,
}

/// `mins` for "not known": no deadline reaches it (they stop at the year 10889).
const UNKNOWN: u64 = u64::MAX;

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for Timers<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("len", &self.len())
            .field("elapsed", &self.elapsed)
            .finish()
    }
}

fn level_for(elapsed: u64, deadline: u64) -> usize {
    let diff = (elapsed ^ deadline) | (SLOTS as u64 - 1);
    let bit = 63 - diff.leading_zeros() as usize;
    bit / SLOT_BITS as usize
}

fn slot_for(deadline: u64, level: usize) -> usize {
    ((deadline >> (level as u32 * SLOT_BITS)) as usize) & (SLOTS - 1)
}

impl<T> Timers<T> {
    pub fn new() -> Self {
        Timers {
            entries: Slab::new(),
            slots: Box::new([[EMPTY; SLOTS]; LEVELS]),
            occupied: [0; LEVELS],
            elapsed: 0,
            next_seq: 0,
            mins: Box::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| Cell::new(UNKNOWN))
            })),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Give back the memory of entries that are gone.
    pub fn shrink_to_fit(&mut self) {
        if self.entries.is_empty() {
            self.entries = Slab::new();
        } else {
            self.entries.shrink_to_fit();
        }
    }

    /// Arm `value` for `deadline` (ms). A deadline in the past fires at the next poll.
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let deadline = deadline.clamp(self.elapsed, self.elapsed | TOP_MASK);
        let seq = self.next_seq;
        self.next_seq += 1;
        let index = self.entries.insert(Entry {
            deadline,
            seq,
            value,
            prev: NIL,
            next: NIL,
            level: 0,
            slot: 0,
        });
        self.link(index as u32);
        TimerKey {
            index: index as u32,
            seq,
        }
    }

    /// Disarm; returns the value if the key was still armed.
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let e = self.entries.get(key.index as usize)?;
        if e.seq != key.seq {
            return None;
        }
        self.unlink(key.index);
        Some(self.entries.remove(key.index as usize).value)
    }

    /// The key of the armed entry at `index` (a key's `index()`) if its value is the one
    /// `is_mine` looks for: for a holder that keeps only the 4-byte index and tells its own
    /// entry from a later one in the same slot by the value.
    pub fn key_at(&self, index: u32, is_mine: impl Fn(&T) -> bool) -> Option<TimerKey> {
        let e = self.entries.get(index as usize)?;
        is_mine(&e.value).then_some(TimerKey { index, seq: e.seq })
    }

    /// The deadline of an armed key.
    pub fn deadline(&self, key: TimerKey) -> Option<u64> {
        self.entries
            .get(key.index as usize)
            .filter(|e| e.seq == key.seq)
            .map(|e| e.deadline)
    }

    /// The exact earliest deadline, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        // The earliest slot holds the earliest deadline: every later slot starts after it ends.
        let (level, slot, _) = self.earliest_slot()?;
        let known = self.mins[level][slot].get();
        if known != UNKNOWN {
            return Some(known);
        }
        let mut i = self.slots[level][slot].head;
        let mut min = UNKNOWN;
        while i != NIL {
            let e = &self.entries[i as usize];
            min = min.min(e.deadline);
            i = e.next;
        }
        self.mins[level][slot].set(min);
        Some(min)
    }

    /// Remove and return one entry due at or before `now`, earliest first.
    pub fn poll(&mut self, now: u64) -> Option<(TimerKey, T)> {
        if self.entries.is_empty() {
            // Nothing to pass over: catch the wheel's time up, so that what is armed next
            // lands in the low levels rather than in one far slot with everything else.
            self.elapsed = self.elapsed.max(now);
            return None;
        }
        loop {
            let (level, slot, start) = self.earliest_slot()?;
            if start > now {
                return None;
            }
            self.elapsed = self.elapsed.max(start);
            if level == 0 {
                let index = self.slots[0][slot].head;
                self.unlink(index);
                let e = self.entries.remove(index as usize);
                return Some((TimerKey { index, seq: e.seq }, e.value));
            }
            // Cascade: move the slot's entries, in order, to the levels they now belong to.
            let mut i = self.slots[level][slot].head;
            self.slots[level][slot] = EMPTY;
            self.mins[level][slot].set(UNKNOWN);
            self.occupied[level] &= !(1u64 << slot);
            while i != NIL {
                let next = self.entries[i as usize].next;
                self.link(i);
                i = next;
            }
        }
    }

    /// The first non-empty slot in time order: (level, slot, the slot's start time).
    fn earliest_slot(&self) -> Option<(usize, usize, u64)> {
        let mut best: Option<(usize, usize, u64)> = None;
        for level in (0..LEVELS).rev() {
            let shift = level as u32 * SLOT_BITS;
            let current = slot_for(self.elapsed, level);
            let bits = self.occupied[level] & (!0u64 << current);
            if bits == 0 {
                continue;
            }
            let slot = bits.trailing_zeros() as usize;
            let span_bits = shift + SLOT_BITS;
            let base = if span_bits >= 64 {
                0
            } else {
                self.elapsed >> span_bits << span_bits
            };
            let start = base + ((slot as u64) << shift);
            // Higher levels win ties so that they cascade before a lower slot fires.
            if best.is_none_or(|(_, _, s)| start < s) {
                best = Some((level, slot, start));
            }
        }
        best
    }

    fn link(&mut self, index: u32) {
        let own = self.entries[index as usize].deadline;
        let deadline = own.max(self.elapsed);
        let level = level_for(self.elapsed, deadline);
        let slot = slot_for(deadline, level);
        let min = &self.mins[level][slot];
        let list = &mut self.slots[level][slot];
        let tail = list.tail;
        if tail == NIL {
            list.head = index;
            min.set(own);
        } else if min.get() != UNKNOWN {
            min.set(min.get().min(own));
        }
        list.tail = index;
        if tail != NIL {
            self.entries[tail as usize].next = index;
        }
        let e = &mut self.entries[index as usize];
        e.prev = tail;
        e.next = NIL;
        e.level = level as u8;
        e.slot = slot as u8;
        self.occupied[level] |= 1u64 << slot;
    }

    fn unlink(&mut self, index: u32) {
        let (prev, next, level, slot, deadline) = {
            let e = &self.entries[index as usize];
            (
                e.prev,
                e.next,
                e.level as usize,
                e.slot as usize,
                e.deadline,
            )
        };
        if self.mins[level][slot].get() == deadline {
            // Found again on the next `next_deadline`, if this slot is then the earliest.
            self.mins[level][slot].set(UNKNOWN);
        }
        if prev != NIL {
            self.entries[prev as usize].next = next;
        } else {
            self.slots[level][slot].head = next;
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        } else {
            self.slots[level][slot].tail = prev;
        }
        if self.slots[level][slot].head == NIL {
            self.occupied[level] &= !(1u64 << slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The slots live behind pointers: a wheel is part of the engine and of the reactor, and
    /// with 8 KiB inline each the server on the main thread's stack (moved three times at
    /// start) held the idle stack 52 kB deeper than before the reactor got a wheel of its own (44 -> 96 kB
    /// resident).
    #[test]
    fn a_wheel_is_small_to_move() {
        let size = std::mem::size_of::<Timers<u64>>();
        assert!(size <= 160, "Timers is {size} bytes");
    }

    fn drain<T>(t: &mut Timers<T>, now: u64) -> Vec<T> {
        std::iter::from_fn(|| t.poll(now).map(|(_, v)| v)).collect()
    }

    #[test]
    fn fires_in_deadline_then_insertion_order() {
        let mut t = Timers::new();
        t.insert(50, "b");
        t.insert(10, "a");
        t.insert(50, "c");
        let k = t.insert(30, "cancelled");
        assert_eq!(t.cancel(k), Some("cancelled"));
        assert_eq!(t.cancel(k), None);
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.poll(9).map(|x| x.1), None);
        assert_eq!(t.poll(10).map(|x| x.1), Some("a"));
        assert_eq!(t.next_deadline(), Some(50));
        assert_eq!(drain(&mut t, 100), vec!["b", "c"]);
        assert!(t.is_empty());
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn every_level_boundary() {
        for level in 0..LEVELS as u32 {
            for delta in [-1i64, 0, 1] {
                let span = 1i64 << (SLOT_BITS * level);
                let base: u64 = 1_700_000_000_000;
                let mut t = Timers::new();
                t.poll(base);
                let d = (base as i64 + span * 63 + delta).max(base as i64) as u64;
                let k = t.insert(d, level);
                assert_eq!(t.deadline(k), Some(d));
                assert_eq!(t.next_deadline(), Some(d), "level {level} delta {delta}");
                assert_eq!(t.poll(d - 1).map(|x| x.1), None);
                assert_eq!(t.poll(d).map(|x| x.1), Some(level));
                // Cancel at the same spot works too.
                let k = t.insert(d + span as u64, level);
                assert_eq!(t.cancel(k), Some(level));
                assert!(t.is_empty());
                assert_eq!(t.poll(u64::MAX >> 1), None);
            }
        }
    }

    #[test]
    fn past_deadlines_fire_at_the_next_poll() {
        let mut t = Timers::new();
        assert_eq!(t.poll(1_000), None);
        t.insert(5_000, "later");
        assert_eq!(drain(&mut t, 5_000), vec!["later"]);
        t.insert(1, "past");
        assert_eq!(t.next_deadline(), Some(5_000));
        assert_eq!(drain(&mut t, 5_000), vec!["past"]);
    }

    #[test]
    fn ten_years_ahead_and_beyond() {
        let now: u64 = 1_795_000_000_000;
        let mut t = Timers::new();
        t.poll(now);
        let ten_years = now + 10 * 365 * 86_400_000;
        t.insert(ten_years, "ten");
        let year_9999 = 253_402_300_799_000;
        t.insert(year_9999, "9999");
        assert_eq!(t.next_deadline(), Some(ten_years));
        assert_eq!(drain(&mut t, ten_years - 1), Vec::<&str>::new());
        assert_eq!(drain(&mut t, ten_years), vec!["ten"]);
        assert_eq!(t.next_deadline(), Some(year_9999));
        assert_eq!(drain(&mut t, year_9999), vec!["9999"]);
    }

    #[test]
    fn equal_deadlines_keep_insertion_order_across_cascades() {
        let mut t = Timers::new();
        let d = 1_000_000;
        // Inserted at different wheel times, so they enter at different levels.
        t.insert(d, 0);
        t.poll(d - 100_000);
        t.insert(d, 1);
        t.poll(d - 1_000);
        t.insert(d, 2);
        t.poll(d - 10);
        t.insert(d, 3);
        assert_eq!(drain(&mut t, d), vec![0, 1, 2, 3]);
    }

    #[test]
    fn matches_a_sorted_model_under_random_operations() {
        // A small LCG keeps the test deterministic without a dependency.
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        let mut t = Timers::new();
        let mut model: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut keys: Vec<(TimerKey, u64, u64)> = Vec::new();
        let mut now = 1_000_000u64;
        for i in 0..200_000u64 {
            match rnd() % 10 {
                0..=5 => {
                    let ahead = match rnd() % 4 {
                        0 => rnd() % 64,
                        1 => rnd() % 10_000,
                        2 => rnd() % 10_000_000,
                        _ => rnd() % 100_000_000_000,
                    };
                    let d = now + ahead;
                    let k = t.insert(d, i);
                    model.insert((d, i), i);
                    keys.push((k, d, i));
                }
                6 | 7 if !keys.is_empty() => {
                    let (k, d, v) = keys.swap_remove((rnd() as usize) % keys.len());
                    assert_eq!(t.cancel(k), model.remove(&(d, v)));
                }
                _ => {
                    now += rnd() % 50_000;
                    while let Some((_, v)) = t.poll(now) {
                        let (&(d, mv), _) = model.iter().next().expect("model has it");
                        assert!(d <= now);
                        assert_eq!(v, mv);
                        model.remove(&(d, mv));
                    }
                    assert!(model.keys().next().is_none_or(|(d, _)| *d > now));
                }
            }
            assert_eq!(t.next_deadline(), model.keys().next().map(|(d, _)| *d));
        }
        assert_eq!(t.len(), model.len());
    }

    #[test]
    fn a_million_entries() {
        let mut t = Timers::new();
        let base = 1_795_000_000_000u64;
        t.poll(base);
        for i in 0..1_000_000u64 {
            t.insert(base + (i * 7919) % 3_600_000, i);
        }
        assert_eq!(t.len(), 1_000_000);
        assert_eq!(t.next_deadline(), Some(base));
        let mut last = 0;
        let mut n = 0;
        let mut now = base;
        while n < 1_000_000 {
            now += 60_000;
            while let Some((_, v)) = t.poll(now) {
                let d = base + (v * 7919) % 3_600_000;
                assert!(d >= last && d <= now);
                last = d;
                n += 1;
            }
        }
        assert!(t.is_empty());
    }

    #[test]
    fn an_empty_wheel_keeps_up_with_the_clock() {
        let mut t: Timers<u32> = Timers::new();
        assert!(t.poll(1_000_000).is_none());
        // Armed after the catch-up: exact, and nothing fires early.
        t.insert(1_000_005, 1);
        assert_eq!(t.next_deadline(), Some(1_000_005));
        assert!(t.poll(1_000_004).is_none());
        assert_eq!(drain(&mut t, 1_000_005), vec![1]);
        // A deadline already behind the wheel's time fires at the next poll.
        assert!(t.poll(2_000_000).is_none());
        t.insert(1_500_000, 2);
        assert_eq!(t.next_deadline(), Some(2_000_000));
        assert_eq!(drain(&mut t, 2_000_000), vec![2]);
    }

    #[test]
    fn cancelling_the_earliest_of_one_slot_keeps_another_slot_exact() {
        let mut t: Timers<u32> = Timers::new();
        t.poll(1_000_000);
        let far: Vec<TimerKey> = (0..1000)
            .map(|i| t.insert(1_000_000 + 60_000 + i * 7, i as u32))
            .collect();
        assert_eq!(t.next_deadline(), Some(1_060_000));
        for i in 0..100u64 {
            let k = t.insert(1_000_002 + i % 3, 9);
            assert_eq!(t.next_deadline(), Some(1_000_002 + i % 3));
            t.cancel(k);
            assert_eq!(t.next_deadline(), Some(1_060_000));
        }
        // Cancelling the far slot's own earliest: found again, exactly.
        t.cancel(far[0]);
        assert_eq!(t.next_deadline(), Some(1_060_007));
    }
}
