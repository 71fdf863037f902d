//! Deadlines for the whole server: insert, cancel by key, poll what is due at `now`, and tell
//! the reactor how long it may sleep. Time is always a parameter, never read here.

use std::collections::BTreeMap;

/// A key returned by `insert`, used to cancel. Never reused within one `Timers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerKey {
    deadline: u64,
    seq: u64,
}

impl TimerKey {
    pub fn deadline(self) -> u64 {
        self.deadline
    }
}

/// Ordered deadlines with their payloads; equal deadlines fire in insertion order.
#[derive(Debug)]
pub struct Timers<T> {
    entries: BTreeMap<TimerKey, T>,
    next_seq: u64,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers {
            entries: BTreeMap::new(),
            next_seq: 0,
        }
    }
}

impl<T> Timers<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let key = TimerKey {
            deadline,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.entries.insert(key, value);
        key
    }

    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        self.entries.remove(&key)
    }

    /// The earliest deadline, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.entries.keys().next().map(|k| k.deadline)
    }

    /// Remove and return the next entry due at or before `now`.
    pub fn poll(&mut self, now: u64) -> Option<(TimerKey, T)> {
        let first = *self.entries.keys().next()?;
        if first.deadline > now {
            return None;
        }
        self.entries.remove(&first).map(|v| (first, v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(t.poll(9), None);
        assert_eq!(t.poll(10).map(|x| x.1), Some("a"));
        assert_eq!(t.poll(100).map(|x| x.1), Some("b"));
        assert_eq!(t.poll(100).map(|x| x.1), Some("c"));
        assert_eq!(t.poll(u64::MAX), None);
        assert!(t.is_empty());
    }
}
