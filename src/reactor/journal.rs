//! The journal in the loop: open and replay at start, append the engine's durable changes and
//! commit them once per turn before replies are flushed (group commit), fsync deadlines,
//! compaction in slices, and the final sync at exit.

use std::path::Path;

use bytes::Bytes;
use log::{error, info, warn};

use super::Server;
use crate::clock::{Clock, SystemClock};
use crate::config::Fsync;
use crate::engine::{Durable, FinishKind, RestoredJob};
use crate::proto::request::Priority;
use crate::store::{self, FinishReason, FsyncMode, JobAdded, Journal, Options, Record};

/// Bytes of old files one loop turn may copy while compacting.
const COMPACT_SLICE: usize = 1 << 20;
/// Handle numbers reserved at a time in DIR/HANDLES. Foreground jobs are not journalled, so
/// without this a restart could hand out a foreground job's handle again.
const HANDLE_BLOCK: u64 = 1 << 16;
const HANDLES_FILE: &str = "HANDLES";

/// The handle numbers reserved so far (0 if none).
fn read_reserved(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join(HANDLES_FILE))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Reserve handle numbers below `upto`: write, fsync, rename, fsync the directory.
fn write_reserved(dir: &Path, upto: u64) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{HANDLES_FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "{upto}")?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(HANDLES_FILE))?;
    std::fs::File::open(dir)?.sync_all()
}

fn priority_from(b: u8) -> Priority {
    match b {
        0 => Priority::High,
        2 => Priority::Low,
        _ => Priority::Normal,
    }
}

fn record(d: Durable) -> Record {
    match d {
        Durable::JobAdded {
            id,
            handle,
            func,
            unique,
            reducer,
            priority,
            due_ms,
            data,
        } => Record::JobAdded(JobAdded {
            id,
            handle,
            func,
            unique,
            reducer,
            priority: priority as u8,
            due_ms,
            data,
        }),
        Durable::JobFinished { id, how } => Record::JobFinished {
            id,
            reason: match how {
                FinishKind::Complete => FinishReason::Complete,
                FinishKind::Fail | FinishKind::Abandoned => FinishReason::Fail,
                FinishKind::Exception => FinishReason::Exception,
                FinishKind::Cancel => FinishReason::Cancel,
                FinishKind::RetriesSpent => FinishReason::RetriesSpent,
                FinishKind::Timeout => FinishReason::Timeout,
            },
        },
        Durable::JobRetried { id, retries } => Record::JobRetried { id, retries },
        Durable::ScheduleRan { entry, fire_ms } => Record::ScheduleRan {
            entry: Bytes::copy_from_slice(entry.as_bytes()),
            fire_ms,
            outcome: 0,
        },
    }
}

impl Server {
    /// Open (creating) the journal in `dir`, put its jobs back and remember its schedule runs.
    /// With `repair`, damaged records are dropped first. Returns a line for the log.
    pub fn open_journal(
        &mut self,
        dir: &Path,
        fsync: Fsync,
        repair: bool,
    ) -> Result<String, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create --data-dir {}: {e}", dir.display()))?;
        if repair {
            let report = store::repair(dir).map_err(|e| e.to_string())?;
            warn!("{report}");
            eprintln!("gearwheel: {report}");
        }
        let opts = Options {
            fsync: match fsync {
                Fsync::Always => FsyncMode::Always,
                Fsync::EveryMs(ms) => FsyncMode::Every(ms),
                Fsync::Never => FsyncMode::Never,
            },
            ..Options::default()
        };
        let (journal, replayed) = Journal::open(dir, opts).map_err(|e| {
            format!(
                "{e}\n(start with --repair to drop the damaged records and keep every intact one)"
            )
        })?;
        let now = SystemClock.now_ms();
        let jobs = replayed.jobs.len();
        for r in replayed.jobs {
            let j = r.job;
            self.engine.restore_job(
                RestoredJob {
                    id: j.id,
                    handle: j.handle,
                    func: j.func,
                    unique: j.unique,
                    reducer: j.reducer,
                    priority: priority_from(j.priority),
                    due_ms: j.due_ms,
                    data: j.data,
                    retries: r.retries,
                },
                now,
                &mut self.outbox,
            );
        }
        for s in &replayed.schedules {
            self.engine
                .restore_schedule_run(&String::from_utf8_lossy(&s.entry), s.fire_ms);
        }
        // Past every journalled job and every handle reserved by an earlier run.
        self.engine
            .set_next_handle((replayed.max_id + 1).max(read_reserved(dir)));
        self.reserve_handles(dir)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(HANDLES_FILE).display()))?;
        // Replay wakes nobody yet; the outbox is empty of replies but may hold none anyway.
        self.outbox.replies.clear();
        self.journal = Some(journal);
        Ok(format!(
            "journal {}: {jobs} jobs and {} schedule entries restored from {} files ({} bytes)",
            dir.display(),
            replayed.schedules.len(),
            replayed.stats.files,
            replayed.stats.bytes
        ))
    }

    /// Make sure the next handles are reserved on disk before any is handed out.
    fn reserve_handles(&mut self, dir: &Path) -> std::io::Result<()> {
        let upto = self.engine.next_handle() + HANDLE_BLOCK;
        write_reserved(dir, upto)?;
        self.handles_reserved = upto;
        Ok(())
    }

    /// Append this turn's durable changes and commit them. False when the commit failed:
    /// the replies that promise durability must wait.
    pub(super) fn commit_journal(&mut self, now: u64) -> bool {
        let Some(j) = self.journal.as_mut() else {
            // Nothing is kept without a journal; drop what the engine reported.
            self.engine.take_durable().for_each(drop);
            return true;
        };
        for d in self.engine.take_durable() {
            if let Err(e) = j.append(&record(d)) {
                error!("journal: {e}");
            }
        }
        // Handles near the end of the reserved block: reserve the next before replying.
        if self.engine.next_handle() + HANDLE_BLOCK / 2 > self.handles_reserved {
            let dir = j.dir().to_path_buf();
            if let Err(e) = self.reserve_handles(&dir) {
                error!("journal: cannot reserve handles in {}: {e}", dir.display());
            }
        }
        let Some(j) = self.journal.as_mut() else {
            return true;
        };
        let due = j.next_fsync_deadline().is_some_and(|d| d <= now);
        if !j.has_pending() && !due {
            return true;
        }
        match j.commit(now) {
            Ok(_) => {
                if self.journal_failing {
                    info!("journal: writing again");
                    self.journal_failing = false;
                }
                true
            }
            Err(e) => {
                if !self.journal_failing {
                    error!("journal: {e}; replies that promise durability wait until it can write");
                    self.journal_failing = true;
                }
                false
            }
        }
    }

    /// One slice of compaction, if one is due. True while more remains.
    pub(super) fn compact_journal(&mut self) -> bool {
        let Some(j) = self.journal.as_mut() else {
            return false;
        };
        match j.compact_step(COMPACT_SLICE) {
            Ok(more) => more,
            Err(e) => {
                warn!("journal: compaction failed and was abandoned: {e}");
                false
            }
        }
    }

    /// When the loop must wake for the journal (a pending fsync under `--fsync MS`).
    pub(super) fn journal_deadline(&self) -> Option<u64> {
        self.journal.as_ref().and_then(|j| j.next_fsync_deadline())
    }

    /// Write and fsync everything at exit.
    pub(super) fn close_journal(&mut self) {
        let now = SystemClock.now_ms();
        self.commit_journal(now);
        if let Some(j) = self.journal.take() {
            if let Err(e) = j.close(now) {
                error!("journal: closing: {e}");
            }
        }
    }
}
