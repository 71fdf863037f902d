//! The journal's numbers as `/metrics` shows them: its size from `Journal::stats`, and the
//! commits and fsync latencies the reactor counts as it drives the journal. Plain data, so the
//! reactor's journal driver and the HTTP render share them without importing each other.

/// Upper bounds of the `gearwheel_journal_fsync_seconds` buckets, in microseconds (a local
/// SSD fsyncs in 0.1-2 ms, a network or spinning disk in 5-50 ms; a stall shows in the top).
pub const FSYNC_BUCKETS_US: [u64; 10] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 1_000_000,
];

/// Latencies of the journal's fsyncs, as a Prometheus histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsyncHistogram {
    /// Fsyncs per bucket of `FSYNC_BUCKETS_US` (not cumulative); the last one counts those
    /// above every bound.
    pub buckets: [u64; FSYNC_BUCKETS_US.len() + 1],
    pub count: u64,
    pub sum_us: u64,
    pub max_us: u64,
    /// The latest fsync's latency (the console's overview shows it); 0 before the first.
    pub last_us: u64,
}

impl FsyncHistogram {
    /// Record one fsync that took `us` microseconds.
    pub fn observe(&mut self, us: u64) {
        let i = FSYNC_BUCKETS_US.partition_point(|&b| b < us);
        self.buckets[i] += 1;
        self.count += 1;
        self.sum_us = self.sum_us.saturating_add(us);
        self.max_us = self.max_us.max(us);
        self.last_us = us;
    }
}

/// The journal's numbers (with `--data-dir`): its size from `Journal::stats`, its commits and
/// fsyncs as counted by the reactor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalMetrics {
    /// Segment and snapshot files.
    pub files: u64,
    /// Jobs whose records are live (queued, running or future background jobs).
    pub live_jobs: u64,
    /// Bytes of the live records: what a compaction would keep.
    pub live_bytes: u64,
    /// Bytes in the journal's files, plus what is buffered and not yet written.
    pub total_bytes: u64,
    /// Group commits that wrote records or fsynced.
    pub commits: u64,
    /// Writes and fsyncs that failed (disk full, I/O error).
    pub write_errors: u64,
    pub fsync: FsyncHistogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_keeps_the_last_latency() {
        let mut h = FsyncHistogram::default();
        assert_eq!((h.count, h.last_us), (0, 0));
        h.observe(3_000);
        h.observe(120);
        assert_eq!(
            (h.count, h.sum_us, h.max_us, h.last_us),
            (2, 3_120, 3_000, 120)
        );
        assert_eq!(h.buckets[0], 0);
        assert_eq!(h.buckets[1], 1, "120 us is in the 250 us bucket");
        assert_eq!(h.buckets[5], 1, "3 ms is in the 5 ms bucket");
    }
}
