//! One job's output while it runs: the WORK_DATA, WORK_WARNING, WORK_COMPLETE and
//! WORK_EXCEPTION payloads in the order they came, of which only the last `cap` bytes are
//! kept (the tail is what says how a run ended); the bytes seen in all say where it was cut.
//! Pure.

use std::collections::VecDeque;

/// The tail of a job's output, at most `cap` bytes.
#[derive(Debug, Default)]
pub struct OutputBuf {
    tail: VecDeque<u8>,
    cap: usize,
    /// Every byte the job printed, kept or not.
    seen: u64,
    /// The length of the WORK_COMPLETE payload, the last bytes pushed, once it came.
    result_len: Option<u32>,
}

impl OutputBuf {
    pub fn new(cap: usize) -> OutputBuf {
        OutputBuf {
            tail: VecDeque::new(),
            cap,
            seen: 0,
            result_len: None,
        }
    }

    /// Add the WORK_COMPLETE payload: the end of the output, and the job's result.
    pub fn push_result(&mut self, result: &[u8]) {
        self.push(result);
        self.result_len = Some(u32::try_from(result.len()).unwrap_or(u32::MAX));
    }

    /// How long the result is, once WORK_COMPLETE came.
    pub fn result_len(&self) -> Option<u32> {
        self.result_len
    }

    /// Add what a worker sent. Never holds more than `cap` bytes, even for a chunk larger
    /// than `cap` (only its own tail is copied).
    pub fn push(&mut self, chunk: &[u8]) {
        self.seen = self.seen.saturating_add(chunk.len() as u64);
        let chunk = &chunk[chunk.len().saturating_sub(self.cap)..];
        let over = (self.tail.len() + chunk.len()).saturating_sub(self.cap);
        self.tail.drain(..over.min(self.tail.len()));
        self.tail.extend(chunk);
    }

    /// The bytes kept, in one piece.
    pub fn kept(&self) -> Vec<u8> {
        let (a, b) = self.tail.as_slices();
        [a, b].concat()
    }

    pub fn kept_len(&self) -> usize {
        self.tail.len()
    }

    /// Every byte printed, kept or not.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Some of the output was dropped from the front.
    pub fn cut(&self) -> bool {
        self.seen > self.tail.len() as u64
    }

    /// Drop up to `n` of the oldest bytes kept (the total bound needs them); returns how many
    /// went.
    pub fn drop_front(&mut self, n: usize) -> usize {
        let n = n.min(self.tail.len());
        self.tail.drain(..n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut b = OutputBuf::new(10);
        b.push(b"abc");
        b.push(b"def");
        assert_eq!(b.kept(), b"abcdef");
        assert_eq!((b.seen(), b.cut()), (6, false));
    }

    #[test]
    fn keeps_the_last_cap_bytes_and_marks_the_cut() {
        let mut b = OutputBuf::new(4);
        b.push(b"abc");
        b.push(b"def");
        assert_eq!(b.kept(), b"cdef");
        assert_eq!((b.seen(), b.cut()), (6, true));
        b.push(b"0123456789");
        assert_eq!(b.kept(), b"6789");
        assert_eq!(b.seen(), 16);
    }

    #[test]
    fn a_megabyte_leaves_its_last_64_kib() {
        let mut b = OutputBuf::new(64 << 10);
        let line: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut all = Vec::new();
        for _ in 0..1049 {
            b.push(&line);
            all.extend_from_slice(&line);
        }
        assert_eq!(b.kept_len(), 64 << 10);
        assert_eq!(b.kept(), all[all.len() - (64 << 10)..]);
        assert!(b.tail.capacity() < 2 * (64 << 10));
    }

    #[test]
    fn zero_keeps_nothing_but_counts() {
        let mut b = OutputBuf::new(0);
        b.push(b"abc");
        assert_eq!(b.kept_len(), 0);
        assert_eq!((b.seen(), b.cut()), (3, true));
        b.push(b"abcdef");
        assert_eq!(b.drop_front(4), 0);
        let mut b = OutputBuf::new(10);
        b.push(b"abcdef");
        assert_eq!(b.drop_front(4), 4);
        assert_eq!((b.kept(), b.seen(), b.cut()), (b"ef".to_vec(), 6, true));
        assert_eq!(b.drop_front(9), 2);
        b.push_result(b"done");
        assert_eq!(b.result_len(), Some(4));
    }
}
