//! Offline salvage of a damaged data directory (`gearwheel serve --repair`), run before
//! `Journal::open`. Keeps every intact record, drops the damaged bytes between them, and says
//! what it dropped. Never touches a file that is intact.
//!
//! How it finds records after damage: every record header carries its own 16-bit check and a
//! known type and version, and the record a CRC-32C over header and payload, so the scan tries
//! each byte offset after the damage until a whole record verifies ("scan for the next valid
//! header", not "truncate at the first bad record"). A record found this way inside the damaged
//! span could in theory be bytes inside a job's data that happen to form a valid record; the
//! report lists every dropped range so the admin can judge.
//!
//! A damaged file is rewritten through `NAME.repair.tmp` + rename, and the original is kept as
//! `NAME.corrupt` for inspection (open warns about it until it is deleted). A segment missing
//! from the middle of the sequence is replaced with an empty one; its records are lost.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::StoreError;
use super::compact::remove_leftovers;
use super::file::{self, FILE_HEADER_LEN, FileHeader, Kind};
use super::record;

/// Bytes dropped from one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DroppedRange {
    pub offset: u64,
    pub len: u64,
}

/// A file that `repair` changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairedFile {
    pub path: PathBuf,
    pub records_kept: u64,
    pub dropped: Vec<DroppedRange>,
    /// The 32-byte file header was damaged and was written anew from the file name.
    pub header_rebuilt: bool,
    /// Where the original (damaged) file was kept.
    pub backup: PathBuf,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    pub dir: PathBuf,
    pub files_checked: usize,
    pub records_kept: u64,
    pub bytes_dropped: u64,
    /// Files that were changed; empty when the journal was intact.
    pub files: Vec<RepairedFile>,
    /// Empty segments written in place of missing ones.
    pub segments_recreated: Vec<PathBuf>,
    pub leftovers_removed: usize,
    /// Handles of the jobs that may run a second time: added before dropped bytes of a log
    /// and not finished by any kept record, so their "finished" record may have been among
    /// the dropped bytes (no record says which). In journal order.
    pub may_run_twice: Vec<Bytes>,
}

/// The most handles the report's text lists (the struct keeps them all).
const LISTED_HANDLES: usize = 1000;

impl RepairReport {
    /// True when nothing had to be dropped or recreated.
    pub fn is_clean(&self) -> bool {
        self.files.is_empty() && self.segments_recreated.is_empty()
    }
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "journal repair of {}: {} files checked, {} records kept, {} bytes dropped",
            self.dir.display(),
            self.files_checked,
            self.records_kept,
            self.bytes_dropped
        )?;
        for r in &self.files {
            write!(
                f,
                "\n  {}: kept {} records",
                r.path.display(),
                r.records_kept
            )?;
            for d in &r.dropped {
                write!(f, "; dropped {} bytes at byte offset {}", d.len, d.offset)?;
            }
            if r.header_rebuilt {
                write!(f, "; file header rebuilt")?;
            }
            write!(f, "; original kept as {}", r.backup.display())?;
        }
        for p in &self.segments_recreated {
            write!(
                f,
                "\n  {}: was missing; replaced with an empty segment (its records are lost)",
                p.display()
            )?;
        }
        if !self.may_run_twice.is_empty() {
            write!(
                f,
                "\n  {} jobs may run again: each was added before the dropped bytes and no kept \
                 record finishes it, so its \"finished\" record may have been dropped: ",
                self.may_run_twice.len()
            )?;
            for (i, h) in self.may_run_twice.iter().take(LISTED_HANDLES).enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}{}", h.escape_ascii())?;
            }
            if self.may_run_twice.len() > LISTED_HANDLES {
                write!(f, " and {} more", self.may_run_twice.len() - LISTED_HANDLES)?;
            }
        }
        Ok(())
    }
}

/// Salvages every intact record under `dir`. Takes the directory lock, so it refuses to run
/// while a server uses the directory.
pub fn repair(dir: impl AsRef<Path>) -> Result<RepairReport, StoreError> {
    let dir = dir.as_ref();
    if !dir.is_dir() {
        return Err(StoreError::io(dir, "open directory")(
            std::io::ErrorKind::NotFound.into(),
        ));
    }
    let _lock = file::lock(dir)?;
    let listing = file::list(dir)?;
    let mut report = RepairReport {
        dir: dir.to_path_buf(),
        leftovers_removed: remove_leftovers(dir, &listing)?,
        ..RepairReport::default()
    };
    let snap = listing.snaps.last_key_value().map(|(n, p)| (*n, p.clone()));
    let snap_no = snap.as_ref().map_or(0, |s| s.0);
    let mut files: Vec<(Kind, u64, PathBuf)> = Vec::new();
    let mut doubt = Doubt::default();
    if let Some((no, p)) = snap {
        files.push((Kind::Snapshot, no, p));
    }
    let logs: Vec<(u64, PathBuf)> = listing
        .logs
        .range(snap_no + 1..)
        .map(|(n, p)| (*n, p.clone()))
        .collect();
    if let (Some(first), Some(last)) = (logs.first(), logs.last()) {
        let start = if snap_no > 0 { snap_no + 1 } else { first.0 };
        let mut have = logs.iter().peekable();
        for no in start..=last.0 {
            match have.peek() {
                Some((n, p)) if *n == no => {
                    files.push((Kind::Log, no, p.clone()));
                    have.next();
                }
                _ => {
                    let p = dir.join(file::name(Kind::Log, no));
                    write_new(
                        &p,
                        &file::encode_header(FileHeader {
                            kind: Kind::Log,
                            no,
                            floor: 0,
                        }),
                    )?;
                    report.segments_recreated.push(p.clone());
                    doubt.damage();
                    files.push((Kind::Log, no, p));
                }
            }
        }
    }

    for (kind, no, path) in files {
        report.files_checked += 1;
        let data = fs::read(&path).map_err(StoreError::io(&path, "read"))?;
        let header = file::parse_header(&data).ok();
        let header_ok = header.is_some_and(|h| h.kind == kind && h.no == no);
        let floor = header.map_or(0, |h| h.floor);
        let len = data.len();
        let mut out = Vec::with_capacity(len.max(FILE_HEADER_LEN as usize));
        out.extend_from_slice(&file::encode_header(FileHeader { kind, no, floor }));
        let mut dropped = Vec::new();
        let mut kept = 0u64;
        let mut off = (FILE_HEADER_LEN as usize).min(len);
        while off < len {
            if let Some(end) = record::intact_at(&data, off) {
                doubt.record(&data[off..end]);
                out.extend_from_slice(&data[off..end]);
                kept += 1;
                off = end;
            } else {
                let next = record::next_intact(&data, off + 1).unwrap_or(len);
                // A snapshot holds no "finished" records: its damage loses jobs, never
                // brings one back.
                if kind == Kind::Log {
                    doubt.damage();
                }
                dropped.push(DroppedRange {
                    offset: off as u64,
                    len: (next - off) as u64,
                });
                off = next;
            }
        }
        report.records_kept += kept;
        if header_ok && dropped.is_empty() {
            continue;
        }
        report.bytes_dropped += dropped.iter().map(|d| d.len).sum::<u64>();
        let backup = with_suffix(&path, file::CORRUPT_SUFFIX);
        let tmp = with_suffix(&path, ".repair.tmp");
        write_new(&tmp, &out)?;
        let _ = fs::remove_file(&backup);
        if fs::hard_link(&path, &backup).is_err() {
            fs::copy(&path, &backup).map_err(StoreError::io(&backup, "copy"))?;
        }
        fs::rename(&tmp, &path).map_err(StoreError::io(&path, "rename"))?;
        log::warn!(
            "journal repair: {}: kept {kept} records, dropped {} bytes; original kept as {}",
            path.display(),
            dropped.iter().map(|d| d.len).sum::<u64>(),
            backup.display()
        );
        report.files.push(RepairedFile {
            path,
            records_kept: kept,
            dropped,
            header_rebuilt: !header_ok,
            backup,
        });
    }
    file::sync_dir(dir)?;
    report.may_run_twice = doubt.into_handles();
    Ok(report)
}

/// Which jobs a repair may bring back after they finished: the live jobs (after the kept
/// records) that were added before the last dropped bytes of a log.
#[derive(Default)]
struct Doubt {
    /// Live jobs by id: the order their JobAdded was seen in, and the handle.
    live: BTreeMap<u64, (u64, Bytes)>,
    /// JobAdded records seen so far.
    seen: u64,
    /// `seen` at the last dropped bytes: jobs added before it are in doubt.
    damaged_at: u64,
}

impl Doubt {
    /// One intact record, in journal order.
    fn record(&mut self, rec: &[u8]) {
        let Some(h) = record::parse_header(rec) else {
            return;
        };
        let Ok(r) = record::decode(&h, rec.get(record::HEADER_LEN..).unwrap_or_default()) else {
            return;
        };
        match r {
            record::Record::JobAdded(j) => {
                self.live.insert(j.id, (self.seen, j.handle));
                self.seen += 1;
            }
            record::Record::JobFinished { id, .. } => {
                self.live.remove(&id);
            }
            _ => {}
        }
    }

    fn damage(&mut self) {
        self.damaged_at = self.seen;
    }

    fn into_handles(self) -> Vec<Bytes> {
        let mut v: Vec<(u64, Bytes)> = self
            .live
            .into_values()
            .filter(|(seq, _)| *seq < self.damaged_at)
            .collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, h)| h).collect()
    }
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes a whole file and fsyncs it.
fn write_new(p: &Path, data: &[u8]) -> Result<(), StoreError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(p)
        .map_err(StoreError::io(p, "create"))?;
    f.write_all(data).map_err(StoreError::io(p, "write"))?;
    f.sync_data().map_err(StoreError::io(p, "fsync"))
}
