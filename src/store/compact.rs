//! Compaction: close the active segment, copy the live records of the older files into a
//! new snapshot a budget of bytes at a time, then fsync, rename and delete what it replaces;
//! and, at open or repair, remove what an interrupted compaction or repair left behind.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::file::{self, FILE_HEADER_LEN, FileHeader, Kind, SegInfo, write_all_at};
use super::live::{LiveKey, LiveSet};
use super::record::{self, HEADER_LEN};
use super::{Journal, KEEP_BUF, Record, StoreError};

/// An unsynced temp snapshot is fsynced once it holds this much, so the final fsync is short.
const COMPACT_SYNC_EVERY: u64 = 8 << 20;

#[derive(Debug)]
pub(super) struct Compaction {
    no: u64,
    tmp_path: PathBuf,
    final_path: PathBuf,
    tmp: File,
    tmp_unsynced: u64,
    renamed: bool,
    pub(super) inputs: Vec<SegInfo>,
    input: usize,
    reader: Option<File>,
    read_off: u64,
    rbuf: Vec<u8>,
    snap: SnapOut,
}

impl Compaction {
    /// The files it holds open: the snapshot it writes and the segment it reads.
    pub(super) fn open_files(&self) -> u64 {
        1 + u64::from(self.reader.is_some())
    }
}

/// The snapshot being written: its length so far, bytes not yet written, and where each
/// copied record landed (applied to the live set once the snapshot is durable).
#[derive(Debug, Default)]
pub(super) struct SnapOut {
    len: u64,
    out: Vec<u8>,
    /// Jobs apart: there may be millions, and a job id is smaller than a `LiveKey`.
    moved_jobs: Vec<(u64, u64)>,
    moved: Vec<(LiveKey, u64)>,
}

#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    TmpSynced,
    Renamed,
    DeletedOne,
}

impl Journal {
    /// True when a compaction should start (the next `compact_step` starts it).
    pub fn needs_compaction(&self) -> bool {
        if self.compaction.is_some() {
            return false;
        }
        let total = self.total_bytes();
        let live = self.live.live_bytes;
        self.compactable()
            && total >= self.opts.compact_min_bytes
            && total >= self.compact_retry_at
            && (total - live) as f64 >= self.opts.compact_dead_factor * live as f64
    }

    pub fn is_compacting(&self) -> bool {
        self.compaction.is_some()
    }

    /// Does a bounded slice of compaction: starts one if `needs_compaction()`, then reads at
    /// most `budget_bytes` of old files (at least one record) and copies the live records.
    /// Returns Ok(true) while more work remains. Call it after `commit` (it does not start
    /// while appended records are unwritten). On Err the compaction is abandoned, its temp
    /// file deleted, and the journal goes on as before; it is tried again once the journal
    /// has grown a little.
    pub fn compact_step(&mut self, budget_bytes: usize) -> Result<bool, StoreError> {
        if self.compaction.is_none() {
            if !self.needs_compaction() {
                return Ok(false);
            }
            if self.unwritten() {
                return Ok(true);
            }
            match self.start_compaction() {
                Ok(Some(c)) => self.compaction = Some(c),
                Ok(None) => return Ok(false),
                Err(e) => {
                    self.compaction_failed();
                    return Err(e);
                }
            }
        }
        let Some(mut c) = self.compaction.take() else {
            return Ok(false);
        };
        let r = match self.compact_slice(&mut c, budget_bytes) {
            Ok(true) => {
                self.compaction = Some(c);
                return Ok(true);
            }
            Ok(false) => self.finish_compaction(&mut c),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => Ok(false),
            #[cfg(test)]
            Err(StoreError::Crash) => Err(StoreError::Crash),
            Err(e) => {
                self.abort_compaction(c);
                self.compaction_failed();
                Err(e)
            }
        }
    }

    /// Something was written since the last snapshot. (Without this, a snapshot N with no
    /// segment after it would be compacted into a new snapshot N: itself.)
    fn compactable(&self) -> bool {
        (self.cur.is_some() && self.file_len > 0)
            || self.closed.last().is_some_and(|s| s.kind == Kind::Log)
    }

    fn compaction_failed(&mut self) {
        let step = (self.opts.compact_min_bytes / 4).max(1 << 20);
        self.compact_retry_at = self.total_bytes().saturating_add(step);
    }

    fn start_compaction(&mut self) -> Result<Option<Compaction>, StoreError> {
        if !self.compactable() {
            return Ok(None);
        }
        // An active file with nothing written stays active: closed, it would be a segment
        // without a header in the middle of the sequence.
        if self.cur.is_some() && self.file_len > 0 {
            if !self.buf.is_empty() {
                // Every mode: written, not yet synced; the old segment must be complete.
                self.fsync_active()?;
            }
            self.rotate()?;
        }
        let no = self.cur_no - 1;
        if no == 0
            || !self
                .closed
                .last()
                .is_some_and(|s| s.kind == Kind::Log && s.no == no)
        {
            return Ok(None);
        }
        let tmp_path = self.dir.join(format!(
            "{}{}",
            file::name(Kind::Snapshot, no),
            file::TMP_SUFFIX
        ));
        let tmp = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp_path)
            .map_err(StoreError::io(&tmp_path, "create"))?;
        let mut snap = SnapOut::default();
        snap.out.extend_from_slice(&file::encode_header(FileHeader {
            kind: Kind::Snapshot,
            no,
            floor: self.live.max_id,
        }));
        log::info!(
            "journal: compacting {} bytes ({} live) into {}",
            self.total_bytes(),
            self.live.live_bytes,
            file::name(Kind::Snapshot, no)
        );
        Ok(Some(Compaction {
            no,
            final_path: self.dir.join(file::name(Kind::Snapshot, no)),
            tmp_path,
            tmp,
            tmp_unsynced: 0,
            renamed: false,
            inputs: std::mem::take(&mut self.closed),
            input: 0,
            reader: None,
            read_off: 0,
            rbuf: Vec::new(),
            snap,
        }))
    }

    /// Reads about `budget` bytes of old files and copies their live records. Ok(false) when
    /// every input has been read.
    fn compact_slice(&mut self, c: &mut Compaction, budget: usize) -> Result<bool, StoreError> {
        let budget = budget.max(HEADER_LEN) as u64;
        let mut read = 0u64;
        let mut chunk = std::mem::take(&mut c.rbuf);
        let r = loop {
            if c.input >= c.inputs.len() {
                break Ok(false);
            }
            if read >= budget {
                break Ok(true);
            }
            let (fid, seg_len) = (c.inputs[c.input].id(), c.inputs[c.input].len);
            if c.reader.is_none() {
                let p = &c.inputs[c.input].path;
                match File::open(p) {
                    Ok(f) => c.reader = Some(f),
                    Err(e) => break Err(StoreError::io(p, "open")(e)),
                }
                c.read_off = FILE_HEADER_LEN;
            }
            if c.read_off >= seg_len {
                c.input += 1;
                c.reader = None;
                continue;
            }
            match self.copy_chunk(c, &mut chunk, fid, seg_len, budget - read) {
                Ok(n) => read += n,
                Err(e) => break Err(e),
            }
        };
        c.rbuf = chunk;
        if c.rbuf.capacity() > KEEP_BUF {
            c.rbuf = Vec::new();
        }
        r?;
        self.flush_compaction_out(c)?;
        Ok(c.input < c.inputs.len())
    }

    /// Reads one chunk of the current input at `c.read_off` and copies its live records.
    /// Returns the bytes consumed (whole records only).
    fn copy_chunk(
        &mut self,
        c: &mut Compaction,
        chunk: &mut Vec<u8>,
        fid: u32,
        seg_len: u64,
        want: u64,
    ) -> Result<u64, StoreError> {
        let path = &c.inputs[c.input].path;
        let base = c.read_off;
        let rest = seg_len - base;
        let want = want.max(HEADER_LEN as u64).min(rest) as usize;
        chunk.resize(want, 0);
        let Some(reader) = c.reader.as_ref() else {
            return Ok(0);
        };
        reader
            .read_exact_at(chunk, base)
            .map_err(StoreError::io(path, "read"))?;
        let mut p = 0usize;
        while p + HEADER_LEN <= chunk.len() {
            let at = base + p as u64;
            let h = record::parse_header(&chunk[p..]).ok_or_else(|| {
                StoreError::corrupt(path, at, "damaged record header (found while compacting)")
            })?;
            if at + h.total() > seg_len {
                return Err(StoreError::corrupt(
                    path,
                    at,
                    "record runs past the end of the file",
                ));
            }
            let end = p + h.total() as usize;
            if end > chunk.len() {
                if p > 0 {
                    break;
                }
                // One record larger than the budget: read all of it.
                let have = chunk.len();
                chunk.resize(end, 0);
                reader
                    .read_exact_at(&mut chunk[have..], base + have as u64)
                    .map_err(StoreError::io(path, "read"))?;
            }
            if !h.body_ok(&chunk[p + HEADER_LEN..end]) {
                return Err(StoreError::corrupt(
                    path,
                    at,
                    format!(
                        "checksum mismatch in a {} record (found while compacting)",
                        h.ty.name()
                    ),
                ));
            }
            copy_if_live(&self.live, &mut c.snap, &h, &chunk[p..end], fid, at);
            p = end;
        }
        if p == 0 {
            return Err(StoreError::corrupt(
                path,
                base,
                "file ends inside a record header",
            ));
        }
        c.read_off += p as u64;
        Ok(p as u64)
    }

    fn flush_compaction_out(&mut self, c: &mut Compaction) -> Result<(), StoreError> {
        let s = &mut c.snap;
        if s.out.is_empty() {
            return Ok(());
        }
        write_all_at(&c.tmp, &s.out, s.len, &mut self.counters.compaction_writes)
            .map_err(StoreError::io(&c.tmp_path, "write"))?;
        s.len += s.out.len() as u64;
        c.tmp_unsynced += s.out.len() as u64;
        s.out.clear();
        if s.out.capacity() > KEEP_BUF {
            s.out = Vec::new();
        }
        if c.tmp_unsynced >= COMPACT_SYNC_EVERY {
            c.tmp
                .sync_data()
                .map_err(StoreError::io(&c.tmp_path, "fsync"))?;
            c.tmp_unsynced = 0;
        }
        Ok(())
    }

    fn finish_compaction(&mut self, c: &mut Compaction) -> Result<(), StoreError> {
        self.flush_compaction_out(c)?;
        c.tmp
            .sync_data()
            .map_err(StoreError::io(&c.tmp_path, "fsync"))?;
        #[cfg(test)]
        if self.faults.crash_at == Some(Stage::TmpSynced) {
            return Err(StoreError::Crash);
        }
        fs::rename(&c.tmp_path, &c.final_path).map_err(StoreError::io(&c.final_path, "rename"))?;
        c.renamed = true;
        file::sync_dir(&self.dir)?;
        #[cfg(test)]
        if self.faults.crash_at == Some(Stage::Renamed) {
            return Err(StoreError::Crash);
        }

        // The snapshot is durable: it now holds the live records of every input.
        let snap_id = file::file_id(Kind::Snapshot, c.no);
        let is_input = |f: u32| f & file::SNAP_BIT != 0 || u64::from(f) <= c.no;
        for (id, off) in c.snap.moved_jobs.drain(..) {
            if let Some(l) = self.live.jobs.get_mut(&id).filter(|l| is_input(l.file)) {
                l.file = snap_id;
                l.off = off;
            }
        }
        for (key, off) in c.snap.moved.drain(..) {
            if let Some((file, o)) = self.live.place(&key).filter(|(f, _)| is_input(**f)) {
                *file = snap_id;
                *o = off;
            }
        }
        let before: u64 = c.inputs.iter().map(|s| s.len).sum();
        for seg in c.inputs.drain(..) {
            if let Err(e) = remove_if_present(&seg.path) {
                // Covered by the snapshot: the next open deletes it.
                log::warn!("{e}");
            }
            #[cfg(test)]
            if self.faults.crash_at == Some(Stage::DeletedOne) {
                return Err(StoreError::Crash);
            }
        }
        self.closed.insert(
            0,
            SegInfo {
                kind: Kind::Snapshot,
                no: c.no,
                path: c.final_path.clone(),
                len: c.snap.len,
            },
        );
        self.counters.compactions += 1;
        self.compact_retry_at = 0;
        log::info!(
            "journal: compacted {before} bytes into {} ({} bytes)",
            c.final_path.display(),
            c.snap.len
        );
        Ok(())
    }

    /// Gives up a compaction: deletes its output and puts its inputs back.
    pub(super) fn abort_compaction(&mut self, c: Compaction) {
        drop(c.tmp);
        let _ = fs::remove_file(&c.tmp_path);
        if c.renamed {
            // Every input still exists, so the snapshot can go.
            let _ = fs::remove_file(&c.final_path);
        }
        let mut inputs = c.inputs;
        inputs.append(&mut self.closed);
        self.closed = inputs;
    }
}

/// Copies one intact record from a compaction input to the snapshot if it is still live.
fn copy_if_live(
    live: &LiveSet,
    c: &mut SnapOut,
    h: &record::RecHeader,
    rec: &[u8],
    fid: u32,
    at: u64,
) {
    let payload = &rec[HEADER_LEN..];
    let Some(key) = live.live_key(h, payload, fid, at) else {
        return;
    };
    let new_off = c.len + c.out.len() as u64;
    c.out.extend_from_slice(rec);
    let LiveKey::Job(id) = key else {
        c.moved.push((key, new_off));
        return;
    };
    c.moved_jobs.push((id, new_off));
    let retries = live.jobs.get(&id).map_or(0, |l| l.retries);
    if retries > 0 {
        // Cannot fail: a retried record is 24 bytes.
        let _ = record::encode(&mut c.out, &Record::JobRetried { id, retries });
    }
}

/// Deletes what an interrupted compaction or repair left: temp files, snapshots older than
/// the newest, and log segments the newest snapshot covers. Returns how many.
pub(super) fn remove_leftovers(dir: &Path, listing: &file::Listing) -> Result<usize, StoreError> {
    let snap_no = listing.snaps.last_key_value().map_or(0, |(n, _)| *n);
    let mut leftovers = listing.temps.clone();
    leftovers.extend(listing.snaps.range(..snap_no).map(|(_, p)| p.clone()));
    leftovers.extend(listing.logs.range(..=snap_no).map(|(_, p)| p.clone()));
    for p in &leftovers {
        log::info!(
            "journal: removing {}, left over from an interrupted compaction or repair",
            p.display()
        );
        remove_if_present(p)?;
    }
    if !leftovers.is_empty() {
        file::sync_dir(dir)?;
    }
    Ok(leftovers.len())
}

fn remove_if_present(p: &Path) -> Result<(), StoreError> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(p, "delete")(e)),
        _ => Ok(()),
    }
}
