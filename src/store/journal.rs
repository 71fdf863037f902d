//! The `Journal` itself: `open` (lock, replay, pick up the active segment), the append and
//! commit API, and the write path: one write per commit, fsync per mode, cutting the file
//! back after a failed write or fsync, and starting a new segment.

use std::fs::{File, OpenOptions};
#[cfg(test)]
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[cfg(test)]
use super::compact::Stage;
use super::compact::{Compaction, remove_leftovers};
use super::file::{self, FILE_HEADER_LEN, FileHeader, Kind, SegInfo, write_all_at};
use super::live::LiveSet;
use super::record;
use super::replay::{Rebuild, replay_file};
use super::{
    CommitOutcome, FsyncMode, JournalStats, KEEP_BUF, Options, Record, ReplayStats, Replayed,
    StoreError,
};

#[derive(Debug, Default)]
pub(super) struct Counters {
    writes: u64,
    fsyncs: u64,
    write_errors: u64,
    last_fsync_us: u64,
    pub(super) compactions: u64,
    pub(super) compaction_writes: u64,
}

#[cfg(test)]
#[derive(Debug, Default)]
pub(super) struct Faults {
    /// The next write stops half way with ENOSPC.
    pub(super) fail_write: bool,
    /// The next fsync fails with EIO.
    pub(super) fail_fsync: bool,
    /// Compaction stops at this stage as if the process died (no clean-up).
    pub(super) crash_at: Option<Stage>,
}

/// The embedded journal. See the module documentation.
#[derive(Debug)]
pub struct Journal {
    pub(super) dir: PathBuf,
    pub(super) opts: Options,
    _lock: file::DirLock,
    pub(super) live: LiveSet,
    /// The snapshot (first) and closed log segments, oldest first; compaction inputs excluded.
    pub(super) closed: Vec<SegInfo>,
    pub(super) cur_no: u64,
    cur_path: PathBuf,
    /// `None` until the first write into a new segment creates the file.
    pub(super) cur: Option<File>,
    /// Bytes of the active file written so far.
    pub(super) file_len: u64,
    /// Bytes of the active file known to be on disk (fsynced).
    synced_len: u64,
    /// File offset of `buf[0]`: the active file's bytes from here on are in `buf`, so a
    /// failed write or fsync can be redone (all of them in Always/Every mode).
    buf_base: u64,
    pub(super) buf: Vec<u8>,
    written_in_buf: usize,
    batch_records: usize,
    /// Written since the last fsync.
    dirty: bool,
    /// A failed write could not be cut back: cut before the next write.
    needs_truncate: bool,
    dir_sync_pending: bool,
    last_fsync_ms: u64,
    pub(super) compaction: Option<Compaction>,
    /// After a failed compaction, wait until the journal reaches this size to try again.
    pub(super) compact_retry_at: u64,
    pub(super) counters: Counters,
    #[cfg(test)]
    pub(super) faults: Faults,
}

impl Journal {
    /// The files it holds open: the lock, the active segment once written, and a
    /// compaction's snapshot and input (counted in the server's open descriptors).
    pub fn open_files(&self) -> u64 {
        let compaction = self.compaction.as_ref().map_or(0, |c| c.open_files());
        1 + u64::from(self.cur.is_some()) + compaction
    }

    /// Locks DIR (creating it if missing), replays it, finishes or discards an interrupted
    /// compaction, cuts a torn tail, and returns the journal ready to append and the state to
    /// feed the engine.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<(Journal, Replayed), StoreError> {
        let dir = dir.as_ref().to_path_buf();
        file::ensure_dir(&dir)?;
        let lock = file::lock(&dir)?;
        let listing = file::list(&dir)?;
        let mut stats = ReplayStats {
            leftovers_removed: remove_leftovers(&dir, &listing)?,
            ..ReplayStats::default()
        };
        let snap = listing.snaps.last_key_value().map(|(n, p)| (*n, p.clone()));
        let snap_no = snap.as_ref().map_or(0, |s| s.0);
        for p in &listing.corrupt {
            log::warn!(
                "journal: {} is a copy of a damaged file kept by --repair; delete it once it is not needed",
                p.display()
            );
        }
        for p in &listing.unknown {
            log::warn!("journal: ignoring {}: not a journal file", p.display());
        }

        let logs: Vec<(u64, PathBuf)> = listing
            .logs
            .range(snap_no + 1..)
            .map(|(n, p)| (*n, p.clone()))
            .collect();
        let mut expect = snap.as_ref().map(|_| snap_no + 1);
        for (no, _) in &logs {
            if let Some(e) = expect.filter(|e| e != no) {
                return Err(StoreError::MissingSegment {
                    dir,
                    name: file::name(Kind::Log, e),
                });
            }
            expect = Some(no + 1);
        }

        let mut rb = Rebuild::default();
        let mut closed = Vec::new();
        if let Some((no, path)) = snap {
            let end = replay_file(&mut rb, &path, Kind::Snapshot, no, false, &mut stats)?;
            closed.push(SegInfo {
                kind: Kind::Snapshot,
                no,
                path,
                len: end.len,
            });
        }
        let mut active = None;
        let n_logs = logs.len();
        for (i, (no, path)) in logs.into_iter().enumerate() {
            let last = i + 1 == n_logs;
            let end = replay_file(&mut rb, &path, Kind::Log, no, last, &mut stats)?;
            if last {
                active = Some((no, path, end));
            } else {
                closed.push(SegInfo {
                    kind: Kind::Log,
                    no,
                    path,
                    len: end.len,
                });
            }
        }

        let (live, replayed) = rb.finish(stats);

        let mut j = Journal {
            dir,
            opts,
            _lock: lock,
            live,
            closed,
            cur_no: 0,
            cur_path: PathBuf::new(),
            cur: None,
            file_len: 0,
            synced_len: 0,
            buf_base: 0,
            buf: Vec::new(),
            written_in_buf: 0,
            batch_records: 0,
            dirty: false,
            needs_truncate: false,
            dir_sync_pending: false,
            last_fsync_ms: 0,
            compaction: None,
            compact_retry_at: 0,
            counters: Counters::default(),
            #[cfg(test)]
            faults: Faults::default(),
        };
        match active {
            Some((no, path, end)) => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(StoreError::io(&path, "open"))?;
                // What replay used may have been written but not synced before the crash.
                f.sync_data().map_err(StoreError::io(&path, "fsync"))?;
                j.cur_no = no;
                j.cur_path = path;
                j.cur = Some(f);
                if end.header_ok {
                    j.file_len = end.len;
                    j.synced_len = end.len;
                    j.buf_base = end.len;
                } else {
                    j.start_buffer_with_header();
                    j.dir_sync_pending = true;
                }
            }
            None => {
                j.cur_no = snap_no + 1;
                j.cur_path = j.dir.join(file::name(Kind::Log, j.cur_no));
                j.start_buffer_with_header();
            }
        }
        Ok((j, replayed))
    }

    /// Encodes `rec` into the write buffer and updates the live set. No I/O; the record is
    /// durable after the next successful `commit` (and fsync, per mode).
    pub fn append(&mut self, rec: &Record) -> Result<(), StoreError> {
        let off = self.buf_base + self.buf.len() as u64;
        let len =
            record::encode(&mut self.buf, rec).map_err(|b| StoreError::TooLarge { bytes: b })?;
        self.batch_records += 1;
        let fid = file::file_id(Kind::Log, self.cur_no);
        self.live.apply(rec, fid, off, len, 0);
        Ok(())
    }

    /// Writes everything appended since the last commit with one `write()`, then fsyncs if
    /// the mode says so (Always: now; Every(ms): if `ms` have passed since the last fsync).
    /// Nothing to write and no fsync due: a no-op.
    pub fn commit(&mut self, now_ms: u64) -> Result<CommitOutcome, StoreError> {
        self.commit_inner(now_ms, false)
    }

    /// Like `commit`, but fsyncs whatever the mode (graceful stop, tests).
    pub fn sync(&mut self, now_ms: u64) -> Result<CommitOutcome, StoreError> {
        self.commit_inner(now_ms, true)
    }

    /// Under `FsyncMode::Every`, when bytes are written but not yet synced: the time at which
    /// `commit` will fsync them. The loop should not sleep past it.
    pub fn next_fsync_deadline(&self) -> Option<u64> {
        match self.opts.fsync {
            FsyncMode::Every(ms) if self.dirty => Some(self.last_fsync_ms.saturating_add(ms)),
            _ => None,
        }
    }

    /// Records appended and not yet written.
    pub fn has_pending(&self) -> bool {
        self.unwritten()
    }

    /// Commits and fsyncs whatever the mode, abandons a compaction in progress, and unlocks.
    pub fn close(mut self, now_ms: u64) -> Result<(), StoreError> {
        if let Some(c) = self.compaction.take() {
            self.abort_compaction(c);
        }
        self.commit_inner(now_ms, true).map(|_| ())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True if the job's JobAdded was appended and no JobFinished since.
    pub fn is_live(&self, id: u64) -> bool {
        self.live.jobs.contains_key(&id)
    }

    pub fn stats(&self) -> JournalStats {
        let pending = (self.buf.len() - self.written_in_buf) as u64;
        let files = self.closed.len()
            + self.compaction.as_ref().map_or(0, |c| c.inputs.len())
            + usize::from(self.cur.is_some());
        JournalStats {
            fsync: self.opts.fsync,
            files,
            live_jobs: self.live.jobs.len(),
            schedule_entries: self.live.schedules.len(),
            live_bytes: self.live.live_bytes,
            total_bytes: self.total_bytes(),
            pending_bytes: if self.unwritten() { pending } else { 0 },
            unsynced_bytes: self.file_len.saturating_sub(self.synced_len),
            writes: self.counters.writes,
            fsyncs: self.counters.fsyncs,
            write_errors: self.counters.write_errors,
            last_fsync_us: self.counters.last_fsync_us,
            last_fsync_ms: self.last_fsync_ms,
            compactions: self.counters.compactions,
            compacting: self.compaction.is_some(),
        }
    }

    // ---- write path ----

    pub(super) fn total_bytes(&self) -> u64 {
        let closed: u64 = self.closed.iter().map(|s| s.len).sum();
        let inputs: u64 = self
            .compaction
            .as_ref()
            .map_or(0, |c| c.inputs.iter().map(|s| s.len).sum());
        closed + inputs + self.buf_base + self.buf.len() as u64
    }

    /// Appended bytes that are not in the file yet (a pending header alone does not count).
    pub(super) fn unwritten(&self) -> bool {
        let header_only = self.buf_base == 0
            && self.written_in_buf == 0
            && self.buf.len() == FILE_HEADER_LEN as usize;
        self.buf.len() > self.written_in_buf && !header_only
    }

    fn start_buffer_with_header(&mut self) {
        self.file_len = 0;
        self.synced_len = 0;
        self.buf_base = 0;
        self.written_in_buf = 0;
        self.buf.clear();
        self.buf.extend_from_slice(&file::encode_header(FileHeader {
            kind: Kind::Log,
            no: self.cur_no,
            floor: self.live.max_id,
        }));
    }

    fn commit_inner(&mut self, now_ms: u64, force_sync: bool) -> Result<CommitOutcome, StoreError> {
        let mut out = CommitOutcome::default();
        if self.unwritten() {
            out.bytes_written = self.write_buffered()?;
            out.records = std::mem::take(&mut self.batch_records);
        }
        let due = self.dirty
            && (force_sync
                || match self.opts.fsync {
                    FsyncMode::Always => true,
                    // A clock set back must not postpone the fsync.
                    FsyncMode::Every(ms) => {
                        now_ms < self.last_fsync_ms
                            || now_ms >= self.last_fsync_ms.saturating_add(ms)
                    }
                    FsyncMode::Never => false,
                });
        if due {
            out.fsync_us = self.fsync_active()?;
            out.fsynced = true;
            self.last_fsync_ms = now_ms;
        } else if self.opts.fsync == FsyncMode::Never {
            self.drop_written();
        }
        if self.cur.is_some() && self.buf.is_empty() && self.file_len >= self.opts.segment_bytes {
            self.rotate()?;
        }
        Ok(out)
    }

    /// Writes `buf[written_in_buf..]` at the end of the active file, creating it if needed.
    fn write_buffered(&mut self) -> Result<u64, StoreError> {
        if self.cur.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&self.cur_path)
                .map_err(StoreError::io(&self.cur_path, "create"))?;
            self.cur = Some(f);
            self.dir_sync_pending = true;
        }
        let Some(f) = self.cur.as_ref() else {
            return Ok(0);
        };
        if self.needs_truncate {
            f.set_len(self.file_len)
                .map_err(StoreError::io(&self.cur_path, "truncate"))?;
            self.needs_truncate = false;
        }
        let data = &self.buf[self.written_in_buf..];
        #[cfg(test)]
        let r = if std::mem::take(&mut self.faults.fail_write) {
            let _ = f.write_at(&data[..data.len() / 2], self.file_len);
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        } else {
            write_all_at(f, data, self.file_len, &mut self.counters.writes)
        };
        #[cfg(not(test))]
        let r = write_all_at(f, data, self.file_len, &mut self.counters.writes);
        match r {
            Ok(()) => {
                let n = data.len() as u64;
                self.file_len += n;
                self.written_in_buf = self.buf.len();
                self.dirty = true;
                Ok(n)
            }
            Err(e) => {
                self.counters.write_errors += 1;
                // Never leave half a batch in the file: later records would follow garbage.
                if f.set_len(self.file_len).is_err() {
                    self.needs_truncate = true;
                }
                Err(StoreError::io(&self.cur_path, "write")(e))
            }
        }
    }

    /// fsyncs the active file (and DIR after a new file). Returns the time taken in µs.
    pub(super) fn fsync_active(&mut self) -> Result<u64, StoreError> {
        let Some(f) = self.cur.as_ref() else {
            return Ok(0);
        };
        let t = Instant::now();
        let mut r = f
            .sync_data()
            .map_err(StoreError::io(&self.cur_path, "fsync"));
        #[cfg(test)]
        if std::mem::take(&mut self.faults.fail_fsync) {
            r = Err(StoreError::io(&self.cur_path, "fsync")(
                std::io::Error::from_raw_os_error(libc::EIO),
            ));
        }
        if r.is_ok() && self.dir_sync_pending {
            r = file::sync_dir(&self.dir);
            if r.is_ok() {
                self.dir_sync_pending = false;
            }
        }
        let us = t.elapsed().as_micros() as u64;
        match r {
            Ok(()) => {
                self.counters.fsyncs += 1;
                self.counters.last_fsync_us = us;
                self.dirty = false;
                self.synced_len = self.file_len;
                self.drop_written();
                Ok(us)
            }
            Err(e) => {
                self.counters.write_errors += 1;
                // The kernel may have dropped the pages it failed to write, and a second
                // fsync would not report them: cut the unsynced bytes and write them again.
                if self.written_in_buf > 0 {
                    self.file_len = self.buf_base;
                    self.written_in_buf = 0;
                    if f.set_len(self.file_len).is_err() {
                        self.needs_truncate = true;
                    }
                }
                Err(e)
            }
        }
    }

    /// Forgets buffered bytes that are in the file (after an fsync, or in Never mode).
    fn drop_written(&mut self) {
        if self.written_in_buf == 0 || self.written_in_buf != self.buf.len() {
            return;
        }
        self.buf.clear();
        self.written_in_buf = 0;
        self.buf_base = self.file_len;
        if self.buf.capacity() > KEEP_BUF {
            self.buf.shrink_to(KEEP_BUF / 4);
        }
    }

    /// Closes the active segment; the next one is created by the next write. Only called with
    /// nothing buffered.
    pub(super) fn rotate(&mut self) -> Result<(), StoreError> {
        if self.cur_no >= file::MAX_NO {
            return Err(StoreError::corrupt(
                &self.cur_path,
                self.file_len,
                "segment numbers are exhausted",
            ));
        }
        self.cur = None;
        self.closed.push(SegInfo {
            kind: Kind::Log,
            no: self.cur_no,
            path: std::mem::take(&mut self.cur_path),
            len: self.file_len,
        });
        self.cur_no += 1;
        self.cur_path = self.dir.join(file::name(Kind::Log, self.cur_no));
        self.dirty = false;
        self.start_buffer_with_header();
        Ok(())
    }
}
