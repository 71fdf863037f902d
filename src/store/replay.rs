//! Replay at open: each file's records into the live set, in order, and the line between a
//! torn tail of the last segment (cut off with a warning) and damage anywhere else (an error
//! naming the file and the byte offset).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::file::{self, FILE_HEADER_LEN, Kind};
use super::live::LiveSet;
use super::record::{self, HEADER_LEN, RecordKind};
use super::{
    AfterSet, Audit, FailedKept, FunctionLease, FunctionLimits, FunctionRetry, HookQueued,
    JobAdded, JobAttempts, KEEP_BUF, OutputKept, Record, ReplayStats, Replayed, ReplayedJob,
    SchedulePending, ScheduleRan, StoreError, TornTail,
};
use bytes::Bytes;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub(super) struct Rebuild {
    pub(super) live: LiveSet,
    /// Jobs in the order they were added; finished ones become None.
    pub(super) slots: Vec<Option<Box<JobAdded>>>,
    /// Kept failed jobs by handle, with the order they were kept in (bounded by the
    /// server's `--keep-failed`, which wrote a FailedGone for each one past it).
    pub(super) failed: HashMap<Bytes, (u64, FailedKept)>,
    /// JobAttempts of live jobs, by job id.
    pub(super) attempts: HashMap<u64, JobAttempts>,
    /// The newest retry policy per function.
    pub(super) func_retries: HashMap<Bytes, FunctionRetry>,
    /// The newest state per schedule entry.
    pub(super) schedules: HashMap<Bytes, ScheduleRan>,
    /// The newest lease per function (0: none).
    pub(super) leases: HashMap<Bytes, FunctionLease>,
    /// Kept outputs by handle, with the order they were kept in (bounded by the server's
    /// `--keep-output-total`, which wrote an OutputGone for each one that left).
    pub(super) outputs: HashMap<Bytes, (u64, OutputKept)>,
    /// The newest limits per function.
    pub(super) limits: HashMap<Bytes, FunctionLimits>,
    /// The newest pending runs per schedule entry.
    pub(super) pending: HashMap<Bytes, SchedulePending>,
    /// The audit trail by seq, those below the newest floor dropped.
    pub(super) audit: std::collections::BTreeMap<u64, Audit>,
    /// The newest set per `@after` entry.
    pub(super) after_sets: HashMap<Bytes, AfterSet>,
    /// Webhook alerts not yet done, by id (the order they were queued in).
    pub(super) hooks: std::collections::BTreeMap<u64, HookQueued>,
}

impl Rebuild {
    pub(super) fn apply(&mut self, rec: Record, file: u32, off: u64, len: u32) {
        let slot = self.slots.len() as u32;
        if let Some(old) = self.live.apply(&rec, file, off, len, slot) {
            if let Some(s) = self.slots.get_mut(old.slot as usize) {
                *s = None;
            }
        }
        match rec {
            Record::JobAdded(j) => self.slots.push(Some(Box::new(j))),
            Record::JobAttempts(a) => {
                self.attempts.insert(a.id, a);
            }
            Record::JobFinished { id, .. } => {
                self.attempts.remove(&id);
            }
            Record::FunctionRetry(r) => {
                self.func_retries.insert(r.func.clone(), r);
            }
            Record::ScheduleRan(r) => {
                self.schedules.insert(r.entry.clone(), r);
            }
            Record::FunctionLease(l) => {
                self.leases.insert(l.func.clone(), l);
            }
            Record::FunctionLimits(l) => {
                self.limits.insert(l.func.clone(), l);
            }
            Record::AfterSet(s) => {
                self.after_sets.insert(s.entry.clone(), s);
            }
            Record::SchedulePending(p) => {
                self.pending.insert(p.entry.clone(), p);
            }
            Record::FailedKept(f) => {
                self.attempts.remove(&f.id);
                let seq = self.live.failed.get(&f.handle).map_or(0, |l| l.seq);
                self.failed.insert(f.handle.clone(), (seq, f));
            }
            Record::FailedGone { handle } => {
                self.failed.remove(&handle);
            }
            Record::OutputKept(o) => {
                let seq = self.live.outputs.get(&o.handle).map_or(0, |l| l.seq);
                self.outputs.insert(o.handle.clone(), (seq, o));
            }
            Record::OutputGone { handle } => {
                self.outputs.remove(&handle);
            }
            Record::Audit(a) => {
                self.audit = self.audit.split_off(&a.floor);
                if a.seq >= a.floor {
                    self.audit.insert(a.seq, a);
                }
            }
            Record::HookQueued(q) => {
                self.hooks.insert(q.id, q);
            }
            Record::HookDone { id } => {
                self.hooks.remove(&id);
            }
            // Kept by the live set alone (`Live::apply`, live.rs), read back from there.
            Record::JobRetried { .. } => {}
        }
    }
}

impl Rebuild {
    /// Every file is replayed: the live set the journal goes on with, and what start-up
    /// hands the engine (`Engine::restore`).
    pub(super) fn finish(self, stats: ReplayStats) -> (LiveSet, Replayed) {
        let Rebuild {
            live,
            slots,
            failed,
            mut attempts,
            func_retries,
            schedules,
            leases,
            outputs,
            limits,
            pending,
            audit,
            after_sets,
            hooks,
        } = self;
        let mut outputs: Vec<(u64, OutputKept)> = outputs.into_values().collect();
        outputs.sort_by_key(|(seq, _)| *seq);
        let outputs = outputs.into_iter().map(|(_, o)| o).collect();
        let mut func_retries: Vec<FunctionRetry> = func_retries.into_values().collect();
        func_retries.sort_by(|a, b| a.func.cmp(&b.func));
        let mut failed: Vec<(u64, FailedKept)> = failed.into_values().collect();
        failed.sort_by_key(|(seq, _)| *seq);
        let failed = failed.into_iter().map(|(_, f)| f).collect();
        let mut jobs = Vec::with_capacity(live.jobs.len());
        for j in slots.into_iter().flatten() {
            let retries = live.jobs.get(&j.id).map_or(0, |l| l.retries);
            let attempts = attempts.remove(&j.id);
            jobs.push(ReplayedJob {
                job: *j,
                retries,
                attempts,
            });
        }
        let mut schedules: Vec<ScheduleRan> = schedules.into_values().collect();
        schedules.sort_by(|a, b| a.entry.cmp(&b.entry));
        let mut leases: Vec<FunctionLease> = leases.into_values().filter(|l| l.ms > 0).collect();
        leases.sort_by(|a, b| a.func.cmp(&b.func));
        let mut limits: Vec<FunctionLimits> =
            limits.into_values().filter(|l| !l.is_none()).collect();
        limits.sort_by(|a, b| a.func.cmp(&b.func));
        let mut pending: Vec<SchedulePending> =
            pending.into_values().filter(|p| !p.is_empty()).collect();
        pending.sort_by(|a, b| a.entry.cmp(&b.entry));
        let replayed = Replayed {
            jobs,
            pending,
            schedules,
            failed,
            leases,
            limits,
            func_retries,
            outputs,
            audit: audit.into_values().collect(),
            after_sets: {
                let mut sets: Vec<AfterSet> = after_sets
                    .into_values()
                    .filter(|s| !s.parents.is_empty())
                    .collect();
                sets.sort_by(|a, b| a.entry.cmp(&b.entry));
                sets
            },
            hooks: hooks.into_values().collect(),
            max_id: live.max_id,
            stats,
        };
        (live, replayed)
    }
}

/// How a replayed file ends.
pub(super) struct FileEnd {
    /// Its length after any torn tail was cut.
    pub(super) len: u64,
    /// False when a torn header was cut (the file is now empty).
    pub(super) header_ok: bool,
}

#[derive(Clone, Copy)]
enum Damage {
    ShortHeader,
    BadHeader,
    ShortBody(RecordKind),
    BadChecksum { ty: RecordKind, end: u64 },
}

/// Replays one file into `rb`. Only the last log segment may have its tail cut.
pub(super) fn replay_file(
    rb: &mut Rebuild,
    path: &Path,
    kind: Kind,
    no: u64,
    last: bool,
    stats: &mut ReplayStats,
) -> Result<FileEnd, StoreError> {
    let f = File::open(path).map_err(StoreError::io(path, "open"))?;
    let len = f.metadata().map_err(StoreError::io(path, "stat"))?.len();
    let tail_ok = last && kind == Kind::Log;
    stats.files += 1;
    stats.bytes += len;
    let mut r = BufReader::with_capacity(256 << 10, f);
    let mut hb = [0u8; FILE_HEADER_LEN as usize];
    let header = if len >= FILE_HEADER_LEN {
        r.read_exact(&mut hb)
            .map_err(StoreError::io(path, "read"))?;
        file::parse_header(&hb)
    } else {
        Err("the file is shorter than its 32-byte header".to_string())
    };
    let header = match header {
        Ok(h) if h.kind == kind && h.no == no => h,
        Ok(h) => {
            return Err(StoreError::corrupt(
                path,
                0,
                format!("its header names {}", file::name(h.kind, h.no)),
            ));
        }
        Err(why) => {
            if tail_ok && find_intact(path, FILE_HEADER_LEN, len)?.is_none() {
                cut(path, 0, len, "a torn file header", stats)?;
                return Ok(FileEnd {
                    len: 0,
                    header_ok: false,
                });
            }
            return Err(StoreError::corrupt(path, 0, why));
        }
    };
    rb.live.max_id = rb.live.max_id.max(header.floor);
    let fid = file::file_id(kind, no);
    let mut off = FILE_HEADER_LEN;
    let mut scratch = Vec::new();
    loop {
        let remaining = len - off;
        if remaining == 0 {
            return Ok(FileEnd {
                len,
                header_ok: true,
            });
        }
        let damage = if remaining < HEADER_LEN as u64 {
            Damage::ShortHeader
        } else {
            let mut rh = [0u8; HEADER_LEN];
            r.read_exact(&mut rh)
                .map_err(StoreError::io(path, "read"))?;
            match record::parse_header(&rh) {
                None => Damage::BadHeader,
                Some(h) if h.total() > remaining => Damage::ShortBody(h.ty),
                Some(h) => {
                    scratch.resize(h.len as usize, 0);
                    r.read_exact(&mut scratch)
                        .map_err(StoreError::io(path, "read"))?;
                    if h.body_ok(&scratch) {
                        let rec = record::decode(&h, &scratch).map_err(|why| {
                            StoreError::corrupt(
                                path,
                                off,
                                format!(
                                    "a {} record passes its checksum but is malformed ({why})",
                                    h.ty.name()
                                ),
                            )
                        })?;
                        rb.apply(rec, fid, off, h.total() as u32);
                        stats.records += 1;
                        off += h.total();
                        if scratch.capacity() > KEEP_BUF {
                            scratch = Vec::new();
                        }
                        continue;
                    }
                    Damage::BadChecksum {
                        ty: h.ty,
                        end: off + h.total(),
                    }
                }
            }
        };
        let what = match damage {
            Damage::ShortHeader => "the file ends inside a record header".to_string(),
            Damage::BadHeader => "damaged record header".to_string(),
            Damage::ShortBody(ty) => {
                format!("the file ends inside a {} record", ty.name())
            }
            Damage::BadChecksum { ty, .. } => {
                format!("checksum mismatch in a {} record", ty.name())
            }
        };
        if !tail_ok {
            let why = if kind == Kind::Snapshot {
                " (in a snapshot, which is complete before it is used)"
            } else {
                " (not the last segment, so this is not a torn write)"
            };
            return Err(StoreError::corrupt(path, off, format!("{what}{why}")));
        }
        // A torn write leaves a short file; intact records after the damage mean it is not one.
        let scan_from = match damage {
            Damage::ShortHeader | Damage::ShortBody(_) => None,
            Damage::BadHeader => Some(off + 1),
            Damage::BadChecksum { end, .. } => (end < len).then_some(end),
        };
        if let Some(from) = scan_from {
            if let Some(at) = find_intact(path, from, len)? {
                return Err(StoreError::corrupt(
                    path,
                    off,
                    format!("{what}, and intact records follow at byte offset {at}"),
                ));
            }
        }
        cut(path, off, len, &what, stats)?;
        return Ok(FileEnd {
            len: off,
            header_ok: true,
        });
    }
}

/// The offset of the first intact record in `path` at or after `from`.
fn find_intact(path: &Path, from: u64, len: u64) -> Result<Option<u64>, StoreError> {
    if from >= len {
        return Ok(None);
    }
    let f = File::open(path).map_err(StoreError::io(path, "open"))?;
    let mut data = vec![0u8; (len - from) as usize];
    f.read_exact_at(&mut data, from)
        .map_err(StoreError::io(path, "read"))?;
    Ok(record::next_intact(&data, 0).map(|o| from + o as u64))
}

/// Cuts a torn tail off the last segment.
fn cut(
    path: &Path,
    off: u64,
    len: u64,
    what: &str,
    stats: &mut ReplayStats,
) -> Result<(), StoreError> {
    log::warn!(
        "journal: {}: cut {} bytes at byte offset {off} ({what}): a write the server did not finish before it stopped",
        path.display(),
        len - off
    );
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(StoreError::io(path, "open"))?;
    f.set_len(off).map_err(StoreError::io(path, "truncate"))?;
    f.sync_data().map_err(StoreError::io(path, "fsync"))?;
    stats.torn_tail = Some(TornTail {
        path: path.to_path_buf(),
        offset: off,
        bytes_cut: len - off,
    });
    Ok(())
}
