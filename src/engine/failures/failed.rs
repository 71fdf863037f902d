//! The failed list: background jobs that failed for good (WORK_FAIL, WORK_EXCEPTION, a
//! CAN_DO_TIMEOUT, `--job-retries` spent), kept with what is needed to look at them and queue
//! them again, within `--keep-failed` jobs and `--keep-failed-bytes` bytes (oldest dropped
//! first, and counted). Pure: no clock, no journal; the engine passes the time in.

use std::collections::VecDeque;
use std::rc::Rc;

use bytes::Bytes;

use crate::engine::FastMap;

/// Functions counted by name in the drop counters; drops of any further function are counted
/// under one "other" total, so a flood of names cannot grow the metrics without bound.
pub const MAX_DROP_LABELS: usize = 64;

/// One job that failed for good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedJob {
    pub handle: Bytes,
    pub func: Bytes,
    pub unique: Bytes,
    pub data: Bytes,
    /// WORK_EXCEPTION's data, or what happened in words (never empty).
    pub error: Bytes,
    /// How many times a worker was given it.
    pub attempts: u32,
    pub first_ms: u64,
    pub last_ms: u64,
    /// The schedule entry whose run it was, if any.
    pub entry: Option<Rc<str>>,
}

impl FailedJob {
    /// What the byte bound counts: the variable fields (the rest is a small constant).
    pub fn bytes(&self) -> usize {
        self.handle.len()
            + self.func.len()
            + self.unique.len()
            + self.data.len()
            + self.error.len()
            + self.entry.as_ref().map_or(0, |e| e.len())
    }
}

/// Which failed jobs an admin line or HTTP request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedSelector<'a> {
    Handle(&'a [u8]),
    Function(&'a [u8]),
    All,
    /// The console's filter: the jobs of a function, of a schedule entry, one handle, or
    /// several of these at once (`None` matches any).
    Matching {
        function: Option<&'a [u8]>,
        entry: Option<&'a [u8]>,
        handle: Option<&'a [u8]>,
    },
}

impl<'a> FailedSelector<'a> {
    /// `all`, a handle (`H:...`, as every handle this server hands out starts) or a function.
    pub fn parse(word: &'a [u8]) -> FailedSelector<'a> {
        if word.eq_ignore_ascii_case(b"all") {
            FailedSelector::All
        } else if word.starts_with(b"H:") {
            FailedSelector::Handle(word)
        } else {
            FailedSelector::Function(word)
        }
    }

    pub fn matches(&self, j: &FailedJob) -> bool {
        match self {
            FailedSelector::Handle(h) => j.handle.as_ref() == *h,
            FailedSelector::Function(f) => j.func.as_ref() == *f,
            FailedSelector::All => true,
            FailedSelector::Matching {
                function,
                entry,
                handle,
            } => {
                function.is_none_or(|f| j.func.as_ref() == f)
                    && entry.is_none_or(|e| j.entry.as_deref().map(str::as_bytes) == Some(e))
                    && handle.is_none_or(|h| j.handle.as_ref() == h)
            }
        }
    }
}

/// The bounded list, oldest first.
#[derive(Debug)]
pub struct FailedList {
    jobs: VecDeque<FailedJob>,
    bytes: usize,
    max_jobs: usize,
    max_bytes: usize,
    drops: FastMap<Bytes, u64>,
    drops_other: u64,
}

impl FailedList {
    pub fn new(max_jobs: usize, max_bytes: usize) -> FailedList {
        FailedList {
            jobs: VecDeque::new(),
            bytes: 0,
            max_jobs,
            max_bytes,
            drops: FastMap::default(),
            drops_other: 0,
        }
    }

    /// Keep `job`, then drop the oldest until both bounds hold. Returns the jobs dropped (the
    /// new one too, when it alone breaks a bound or nothing is kept), for the journal.
    pub fn push(&mut self, job: FailedJob) -> Vec<FailedJob> {
        self.bytes += job.bytes();
        self.jobs.push_back(job);
        let mut dropped = Vec::new();
        while self.jobs.len() > self.max_jobs || (self.bytes > self.max_bytes && self.max_bytes > 0)
        {
            let Some(old) = self.jobs.pop_front() else {
                break;
            };
            self.bytes -= old.bytes();
            self.count_drop(&old.func);
            dropped.push(old);
        }
        dropped
    }

    fn count_drop(&mut self, func: &Bytes) {
        if let Some(n) = self.drops.get_mut(func) {
            *n += 1;
        } else if self.drops.len() < MAX_DROP_LABELS {
            self.drops.insert(func.clone(), 1);
        } else {
            self.drops_other += 1;
        }
    }

    /// Take the jobs `sel` names out of the list, oldest first.
    pub fn take(&mut self, sel: FailedSelector<'_>) -> Vec<FailedJob> {
        let (taken, kept): (Vec<_>, Vec<_>) = self.jobs.drain(..).partition(|j| sel.matches(j));
        self.jobs = kept.into();
        self.bytes -= taken.iter().map(FailedJob::bytes).sum::<usize>();
        taken
    }

    /// Every kept job, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &FailedJob> {
        self.jobs.iter()
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Kept jobs per function, for the metrics.
    pub fn sizes(&self) -> Vec<(Bytes, usize)> {
        let mut m: FastMap<&Bytes, usize> = FastMap::default();
        for j in &self.jobs {
            *m.entry(&j.func).or_default() += 1;
        }
        let mut v: Vec<_> = m.into_iter().map(|(f, n)| (f.clone(), n)).collect();
        v.sort();
        v
    }

    /// Jobs dropped by the bounds, per function (at most `MAX_DROP_LABELS` names), and the
    /// drops of all other functions together.
    pub fn drops(&self) -> (Vec<(Bytes, u64)>, u64) {
        let mut v: Vec<_> = self.drops.iter().map(|(f, n)| (f.clone(), *n)).collect();
        v.sort();
        (v, self.drops_other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: u64, func: &str, data_len: usize) -> FailedJob {
        FailedJob {
            handle: format!("H:t:{n}").into(),
            func: Bytes::copy_from_slice(func.as_bytes()),
            unique: format!("u{n}").into(),
            data: vec![b'x'; data_len].into(),
            error: Bytes::from_static(b"failed (WORK_FAIL)"),
            attempts: 1,
            first_ms: n,
            last_ms: n,
            entry: None,
        }
    }

    fn handles(l: &FailedList) -> Vec<String> {
        l.iter()
            .map(|j| String::from_utf8_lossy(&j.handle).into_owned())
            .collect()
    }

    #[test]
    fn the_count_bound_drops_the_oldest_and_counts_it() {
        let mut l = FailedList::new(2, 0);
        assert!(l.push(job(1, "a", 1)).is_empty());
        assert!(l.push(job(2, "b", 1)).is_empty());
        let d = l.push(job(3, "a", 1));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].handle, "H:t:1");
        assert_eq!(handles(&l), ["H:t:2", "H:t:3"]);
        assert_eq!(l.drops(), (vec![(Bytes::from("a"), 1)], 0));
    }

    #[test]
    fn zero_keeps_none() {
        let mut l = FailedList::new(0, 0);
        let d = l.push(job(1, "a", 1));
        assert_eq!(d.len(), 1);
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
        assert_eq!(l.drops().0, vec![(Bytes::from("a"), 1)]);
    }

    #[test]
    fn the_byte_bound_drops_the_oldest_until_it_holds() {
        let one = job(1, "f", 100).bytes();
        let mut l = FailedList::new(100, one * 2);
        l.push(job(1, "f", 100));
        l.push(job(2, "f", 100));
        assert_eq!(l.bytes(), one * 2);
        let d = l.push(job(3, "f", 100));
        assert_eq!(d.len(), 1);
        assert_eq!(handles(&l), ["H:t:2", "H:t:3"]);
        // One job larger than the whole bound is not kept at all.
        let d = l.push(job(4, "f", one * 3));
        assert_eq!(d.len(), 3);
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn drop_labels_are_bounded() {
        let mut l = FailedList::new(0, 0);
        for i in 0..MAX_DROP_LABELS + 10 {
            l.push(job(i as u64, &format!("f{i}"), 1));
        }
        let (named, other) = l.drops();
        assert_eq!(named.len(), MAX_DROP_LABELS);
        assert_eq!(other, 10);
    }

    #[test]
    fn take_by_handle_function_and_all() {
        let mut l = FailedList::new(10, 0);
        for (i, f) in ["a", "b", "a", "c"].iter().enumerate() {
            l.push(job(i as u64, f, 3));
        }
        let total = l.bytes();
        let t = l.take(FailedSelector::parse(b"H:t:1"));
        assert_eq!(t.len(), 1);
        assert_eq!(l.bytes(), total - t[0].bytes());
        assert!(l.take(FailedSelector::parse(b"H:t:1")).is_empty());
        let t = l.take(FailedSelector::parse(b"a"));
        assert_eq!(t.len(), 2);
        assert_eq!(handles(&l), ["H:t:3"]);
        assert_eq!(l.take(FailedSelector::parse(b"ALL")).len(), 1);
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn take_by_function_and_entry() {
        let mut l = FailedList::new(10, 0);
        for (i, (f, e)) in [("a", Some("nightly")), ("a", None), ("b", Some("nightly"))]
            .into_iter()
            .enumerate()
        {
            let mut j = job(i as u64, f, 3);
            j.entry = e.map(std::rc::Rc::from);
            l.push(j);
        }
        let both = FailedSelector::Matching {
            function: Some(b"a"),
            entry: Some(b"nightly"),
            handle: None,
        };
        assert_eq!(l.take(both).len(), 1);
        let entry = FailedSelector::Matching {
            function: None,
            entry: Some(b"nightly"),
            handle: None,
        };
        assert_eq!(l.take(entry).len(), 1);
        assert_eq!(handles(&l), ["H:t:1"]);
        let other = FailedSelector::Matching {
            function: None,
            entry: None,
            handle: Some(b"H:t:9"),
        };
        assert!(l.take(other).is_empty());
        let any = FailedSelector::Matching {
            function: None,
            entry: None,
            handle: None,
        };
        assert_eq!(l.take(any).len(), 1);
    }

    #[test]
    fn sizes_are_per_function() {
        let mut l = FailedList::new(10, 0);
        for (i, f) in ["b", "a", "b"].iter().enumerate() {
            l.push(job(i as u64, f, 1));
        }
        assert_eq!(
            l.sizes(),
            vec![(Bytes::from("a"), 1), (Bytes::from("b"), 2)]
        );
    }
}
