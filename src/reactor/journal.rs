//! The journal in the loop: `JournalDriver`, one value the reactor owns and calls. It opens
//! and replays at start, appends the engine's durable changes and commits them once per turn
//! before replies are flushed (group commit), keeps handle numbers reserved ahead in
//! DIR/HANDLES, knows its fsync deadline, compacts in slices and syncs at exit. Time is passed
//! in; the engine and the outbox are lent by the reactor for each call.

use std::path::Path;

use bytes::Bytes;
use log::{error, warn};

use crate::config::{Config, Fsync};
use crate::engine::{Engine, Outbox};
use crate::store::{self, FsyncHistogram, FsyncMode, Journal, JournalMetrics, Options, Record};

/// Bytes of old files one loop turn may copy while compacting.
const COMPACT_SLICE: usize = 1 << 20;
/// Handle numbers reserved at a time in DIR/HANDLES (`store::write_reserved`).
const HANDLE_BLOCK: u64 = 1 << 16;

/// The journal as the loop drives it. Without `--data-dir` it holds no journal and every call
/// is a no-op (a commit drops what the engine reported).
#[derive(Debug, Default)]
pub(super) struct JournalDriver {
    journal: Option<Journal>,
    /// The last commit failed; replies wait and the loop retries soon.
    failing: bool,
    /// A compaction has more slices to do.
    compacting: bool,
    /// Handle numbers below this are reserved in the data directory.
    handles_reserved: u64,
    /// Handles of new background jobs in the batch being committed (reused).
    added: Vec<Bytes>,
    /// Commits that failed since start.
    errors: u64,
    /// Commits that wrote records or fsynced.
    commits: u64,
    /// The fsyncs of those commits.
    fsync: FsyncHistogram,
}

impl JournalDriver {
    /// The files the journal holds open (none without one).
    pub(super) fn open_files(&self) -> u64 {
        self.journal.as_ref().map_or(0, Journal::open_files)
    }

    /// Open (creating) the journal in `dir`, put its jobs back into `engine` and remember its
    /// schedule runs. With `repair`, damaged records are dropped first. Returns a line for the
    /// log.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open(
        &mut self,
        dir: &Path,
        fsync: Fsync,
        repair: bool,
        config: &Config,
        engine: &mut Engine,
        outbox: &mut Outbox,
        now: u64,
    ) -> Result<String, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create --data-dir {}: {e}", dir.display()))?;
        if repair {
            let report = store::repair(dir).map_err(|e| e.to_string())?;
            crate::logger::announce(log::Level::Warn, &report.to_string());
        }
        let opts = Options {
            fsync: match fsync {
                Fsync::Always => FsyncMode::Always,
                Fsync::EveryMs(ms) => FsyncMode::Every(ms),
                Fsync::Never => FsyncMode::Never,
            },
            segment_bytes: config.journal_segment_bytes,
            compact_min_bytes: config.journal_compact_min,
            ..Options::default()
        };
        let started = std::time::Instant::now();
        // Damage messages name `--repair` themselves; a lock held by a live server or an I/O
        // error must not suggest repairing a journal: nothing in it is damaged, and the fix is
        // elsewhere (stop the other server, free the disk).
        let (journal, replayed) = Journal::open(dir, opts).map_err(|e| e.to_string())?;
        let jobs = replayed.jobs.len();
        let future = replayed
            .jobs
            .iter()
            .filter(|r| r.job.due_ms.is_some_and(|d| d > now))
            .count();
        let stats = replayed.stats.clone();
        engine.restore(replayed, now, outbox);
        // Past every handle reserved by an earlier run (restore put it past every job).
        engine.set_next_handle(store::read_reserved(dir));
        self.reserve_handles(engine, dir)
            .map_err(|e| format!("cannot write {}: {e}", store::handles_path(dir).display()))?;
        // Replay wakes nobody yet; the outbox is empty of replies but may hold none anyway.
        outbox.clear_replies();
        self.journal = Some(journal);
        let count = crate::plural::count;
        Ok(format!(
            "journal {}: {} bytes in {}, {} replayed, {} ({future} of them future) recovered in {} ms",
            dir.display(),
            stats.bytes,
            count(stats.files as u64, "file", "files"),
            count(stats.records, "record", "records"),
            count(jobs as u64, "job", "jobs"),
            started.elapsed().as_millis()
        ))
    }

    /// Make sure the next handles are reserved on disk before any is handed out.
    fn reserve_handles(&mut self, engine: &Engine, dir: &Path) -> std::io::Result<()> {
        let upto = engine.next_handle() + HANDLE_BLOCK;
        store::write_reserved(dir, upto)?;
        self.handles_reserved = upto;
        Ok(())
    }

    /// Append this turn's durable changes and commit them. A failed commit does not hold the
    /// turn's replies back: the new background jobs it could not write are refused (their
    /// JOB_CREATED become QUEUE_ERROR) and the batch is written again next turn.
    pub(super) fn commit(&mut self, engine: &mut Engine, outbox: &mut Outbox, now: u64) {
        let Some(j) = self.journal.as_mut() else {
            // Nothing is kept without a journal; drop what the engine reported.
            engine.take_durable().for_each(drop);
            return;
        };
        // The handles of this batch's new jobs, in case the write fails.
        let mut added = std::mem::take(&mut self.added);
        for d in engine.take_durable() {
            if let Record::JobAdded(job) = &d {
                added.push(job.handle.clone());
            }
            if let Err(e) = j.append(&d) {
                error!("journal: {e}");
            }
        }
        // Handles near the end of the reserved block: reserve the next before replying.
        if engine.next_handle() + HANDLE_BLOCK / 2 > self.handles_reserved {
            let dir = j.dir().to_path_buf();
            if let Err(e) = self.reserve_handles(engine, &dir) {
                error!("journal: cannot reserve handles in {}: {e}", dir.display());
            }
        }
        let Some(j) = self.journal.as_mut() else {
            return;
        };
        let due = j.next_fsync_deadline().is_some_and(|d| d <= now);
        if !j.has_pending() && !due {
            return;
        }
        match j.commit(now) {
            Ok(out) => {
                if out.bytes_written > 0 || out.fsynced {
                    self.commits += 1;
                }
                if out.fsynced {
                    self.fsync.observe(out.fsync_us);
                }
                if self.failing {
                    crate::notice!("journal: writing again");
                    self.failing = false;
                }
                added.clear();
                self.added = added;
            }
            Err(e) => {
                self.errors += 1;
                if !self.failing {
                    error!(
                        "journal: {e}; new background jobs are refused with QUEUE_ERROR until it can write again"
                    );
                    self.failing = true;
                }
                self.refuse_unwritten(engine, outbox, &added, &e.to_string());
                added.clear();
                self.added = added;
                // Everything else of the turn may go out: it promises nothing the journal
                // must hold (the batch stays buffered and is written again next turn).
            }
        }
    }

    /// The journal could not write: the turn's new jobs that no worker has yet are taken
    /// back, and their JOB_CREATED replies become `ERROR QUEUE_ERROR` with the reason.
    fn refuse_unwritten(
        &mut self,
        engine: &mut Engine,
        outbox: &mut Outbox,
        handles: &[Bytes],
        reason: &str,
    ) {
        if handles.is_empty() {
            return;
        }
        let refused = engine.refuse_jobs(handles);
        // The engine reports their ends; they follow the buffered adds in the journal.
        if let Some(j) = self.journal.as_mut() {
            for d in engine.take_durable() {
                if let Err(e) = j.append(&d) {
                    error!("journal: {e}");
                }
            }
        }
        if refused.is_empty() {
            return;
        }
        warn!(
            "journal: {} new background jobs refused: {reason}",
            refused.len()
        );
        let text = format!("Job queue is full: the journal cannot write ({reason})");
        for (_, r) in outbox.replies.iter_mut() {
            if let crate::proto::response::Response::JobCreated { handle } = r {
                if refused.iter().any(|b| *handle == *b) {
                    *r = crate::proto::response::Response::error("QUEUE_ERROR", text.clone());
                }
            }
        }
    }

    /// One slice of compaction, if one is due (`compacting` says whether more remains).
    pub(super) fn compact_step(&mut self) {
        let Some(j) = self.journal.as_mut() else {
            return;
        };
        self.compacting = match j.compact_step(COMPACT_SLICE) {
            Ok(more) => more,
            Err(e) => {
                warn!("journal: compaction failed and was abandoned: {e}");
                false
            }
        };
    }

    /// A compaction has more slices to do: the loop must not sleep.
    pub(super) fn compacting(&self) -> bool {
        self.compacting
    }

    /// The last commit failed: replies wait and the loop retries soon.
    pub(super) fn failing(&self) -> bool {
        self.failing
    }

    /// Is there a journal (`--data-dir`)?
    pub(super) fn enabled(&self) -> bool {
        self.journal.is_some()
    }

    /// `show journal`: one `name\tvalue` line per figure, then `.`.
    pub(super) fn listing(&self) -> String {
        let Some(j) = self.journal.as_ref() else {
            return "ERR NO_JOURNAL The+server+runs+without+--data-dir\r\n".into();
        };
        let st = j.stats();
        let fsync = match st.fsync {
            FsyncMode::Always => "always".to_string(),
            FsyncMode::Every(ms) => format!("every {ms} ms"),
            FsyncMode::Never => "never".to_string(),
        };
        let last = if st.fsyncs == 0 {
            "-".to_string()
        } else {
            chrono::DateTime::from_timestamp_millis(st.last_fsync_ms as i64)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_default()
        };
        let rows: [(&str, String); 15] = [
            ("dir", j.dir().display().to_string()),
            ("fsync", fsync),
            ("files", st.files.to_string()),
            ("live_jobs", st.live_jobs.to_string()),
            ("schedule_entries", st.schedule_entries.to_string()),
            ("live_bytes", st.live_bytes.to_string()),
            (
                "dead_bytes",
                st.total_bytes.saturating_sub(st.live_bytes).to_string(),
            ),
            ("total_bytes", st.total_bytes.to_string()),
            ("unsynced_bytes", st.unsynced_bytes.to_string()),
            ("writes", st.writes.to_string()),
            ("fsyncs", st.fsyncs.to_string()),
            ("last_fsync", last),
            ("last_fsync_us", st.last_fsync_us.to_string()),
            (
                "write_errors",
                (st.write_errors.max(self.errors)).to_string(),
            ),
            (
                "compactions",
                format!(
                    "{}{}",
                    st.compactions,
                    if st.compacting { " (one running)" } else { "" }
                ),
            ),
        ];
        let mut s = String::new();
        for (k, v) in rows {
            s.push_str(k);
            s.push('\t');
            s.push_str(&v);
            s.push('\n');
        }
        s.push_str(".\n");
        s
    }

    /// The journal's numbers for `/metrics`; None without `--data-dir`.
    pub(super) fn metrics(&self) -> Option<JournalMetrics> {
        let st = self.journal.as_ref()?.stats();
        Some(JournalMetrics {
            files: st.files as u64,
            live_jobs: st.live_jobs as u64,
            live_bytes: st.live_bytes,
            total_bytes: st.total_bytes,
            commits: self.commits,
            write_errors: st.write_errors.max(self.errors),
            fsync: self.fsync.clone(),
        })
    }

    /// When the loop must wake for the journal (a pending fsync under `--fsync MS`).
    pub(super) fn deadline(&self) -> Option<u64> {
        self.journal.as_ref().and_then(|j| j.next_fsync_deadline())
    }

    /// Write and fsync everything at exit.
    pub(super) fn close(&mut self, engine: &mut Engine, outbox: &mut Outbox, now: u64) {
        self.commit(engine, outbox, now);
        if let Some(j) = self.journal.take() {
            if let Err(e) = j.close(now) {
                error!("journal: closing: {e}");
            }
        }
    }
}
