//! Journal files on disk: names, the 32-byte file header, a closed file's description
//! (`SegInfo`), the directory listing, the lock file, directory fsync and positioned writes.
//! No records and no journal state here.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::StoreError;

pub(crate) const FILE_HEADER_LEN: u64 = 32;
const MAGIC: &[u8; 6] = b"GWJRNL";
const FORMAT_VERSION: u8 = 1;
pub(crate) const LOCK_NAME: &str = "LOCK";
pub(crate) const TMP_SUFFIX: &str = ".tmp";
pub(crate) const CORRUPT_SUFFIX: &str = ".corrupt";

/// File ids in the in-memory index: a log segment is its number, a snapshot its number with
/// the top bit set, so a segment and the snapshot that replaces it never share an id.
pub(crate) const SNAP_BIT: u32 = 1 << 31;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Log,
    Snapshot,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Log => 1,
            Kind::Snapshot => 2,
        }
    }
}

pub(crate) fn file_id(kind: Kind, no: u64) -> u32 {
    // Numbers are checked to stay below 2^31 when files are listed or created.
    match kind {
        Kind::Log => no as u32,
        Kind::Snapshot => no as u32 | SNAP_BIT,
    }
}

/// The largest segment number: ids keep one bit for the kind.
pub(crate) const MAX_NO: u64 = (SNAP_BIT - 1) as u64;

pub(crate) fn name(kind: Kind, no: u64) -> String {
    match kind {
        Kind::Log => format!("wal-{no:020}.log"),
        Kind::Snapshot => format!("snap-{no:020}.snap"),
    }
}

fn parse_name(n: &str) -> Option<(Kind, u64)> {
    let (kind, digits) =
        if let Some(d) = n.strip_prefix("wal-").and_then(|r| r.strip_suffix(".log")) {
            (Kind::Log, d)
        } else {
            let d = n.strip_prefix("snap-")?.strip_suffix(".snap")?;
            (Kind::Snapshot, d)
        };
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((kind, digits.parse().ok()?))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileHeader {
    pub kind: Kind,
    pub no: u64,
    /// Every job id up to this one was handed out before the file was started.
    pub floor: u64,
}

pub(crate) fn encode_header(h: FileHeader) -> [u8; FILE_HEADER_LEN as usize] {
    let mut b = [0u8; FILE_HEADER_LEN as usize];
    b[0..6].copy_from_slice(MAGIC);
    b[6] = FORMAT_VERSION;
    b[7] = h.kind.code();
    b[8..16].copy_from_slice(&h.no.to_le_bytes());
    b[16..24].copy_from_slice(&h.floor.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(crate) fn parse_header(b: &[u8]) -> Result<FileHeader, String> {
    let Some(b) = b.get(..FILE_HEADER_LEN as usize) else {
        return Err("the file is shorter than its 32-byte header".into());
    };
    if &b[0..6] != MAGIC {
        return Err("not a gearwheel journal file (bad magic)".into());
    }
    let crc = u32::from_le_bytes([b[28], b[29], b[30], b[31]]);
    if crc32c::crc32c(&b[0..28]) != crc {
        return Err("file header checksum mismatch".into());
    }
    if b[6] != FORMAT_VERSION {
        return Err(format!(
            "journal format version {} (this gearwheel reads version {FORMAT_VERSION}; written by a newer one?)",
            b[6]
        ));
    }
    let kind = match b[7] {
        1 => Kind::Log,
        2 => Kind::Snapshot,
        k => return Err(format!("unknown file kind {k}")),
    };
    let u64_at = |i: usize| {
        let mut a = [0; 8];
        a.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(a)
    };
    Ok(FileHeader {
        kind,
        no: u64_at(8),
        floor: u64_at(16),
    })
}

/// What a data directory holds, by kind.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub logs: BTreeMap<u64, PathBuf>,
    pub snaps: BTreeMap<u64, PathBuf>,
    /// Unfinished snapshot or repair output: always safe to delete.
    pub temps: Vec<PathBuf>,
    /// Backups kept by `repair`.
    pub corrupt: Vec<PathBuf>,
    pub unknown: Vec<PathBuf>,
}

pub(crate) fn list(dir: &Path) -> Result<Listing, StoreError> {
    let mut l = Listing::default();
    for e in fs::read_dir(dir).map_err(StoreError::io(dir, "list"))? {
        let e = e.map_err(StoreError::io(dir, "list"))?;
        let path = e.path();
        let Some(n) = e.file_name().to_str().map(str::to_owned) else {
            l.unknown.push(path);
            continue;
        };
        // DIR/HANDLES belongs to the server (its reserved handle numbers), not to the journal.
        if n == LOCK_NAME || n == super::handles::HANDLES_NAME {
            continue;
        }
        if n.ends_with(TMP_SUFFIX) {
            l.temps.push(path);
        } else if n.ends_with(CORRUPT_SUFFIX) {
            l.corrupt.push(path);
        } else if let Some((kind, no)) = parse_name(&n) {
            if no == 0 || no > MAX_NO {
                return Err(StoreError::corrupt(&path, 0, "segment number out of range"));
            }
            match kind {
                Kind::Log => l.logs.insert(no, path),
                Kind::Snapshot => l.snaps.insert(no, path),
            };
        } else {
            l.unknown.push(path);
        }
    }
    l.temps.sort();
    Ok(l)
}

/// Makes renames, creations and deletions in `dir` survive a power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io(dir, "fsync directory"))
}

/// Creates `dir` (and parents) if missing; a new directory's entry is fsynced in its parent.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(StoreError::io(dir, "create directory"))?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(())
}

/// An exclusive `flock` on DIR/LOCK, held while the value lives (the kernel drops it when the
/// descriptor closes, also on kill -9). The file holds the owner's pid for the error message.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

pub(crate) fn lock(dir: &Path) -> Result<DirLock, StoreError> {
    let path = dir.join(LOCK_NAME);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(StoreError::io(&path, "open"))?;
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut s = String::new();
            let holder = file
                .read_to_string(&mut s)
                .ok()
                .and_then(|_| s.trim().parse().ok());
            return Err(StoreError::Locked {
                dir: dir.to_path_buf(),
                holder,
            });
        }
        return Err(StoreError::io(&path, "lock")(e));
    }
    // The pid is a courtesy for the message above; failing to write it is harmless.
    let _ = file
        .set_len(0)
        .and_then(|_| writeln!(file, "{}", std::process::id()));
    Ok(DirLock { _file: file })
}

/// A closed file: the snapshot or a log segment that is no longer appended to.
#[derive(Clone, Debug)]
pub(super) struct SegInfo {
    pub(super) kind: Kind,
    pub(super) no: u64,
    pub(super) path: PathBuf,
    pub(super) len: u64,
}

impl SegInfo {
    pub(super) fn id(&self) -> u32 {
        file_id(self.kind, self.no)
    }
}

/// `pwrite` until done, counting the calls; EINTR is retried.
pub(super) fn write_all_at(
    f: &File,
    mut data: &[u8],
    mut off: u64,
    calls: &mut u64,
) -> std::io::Result<()> {
    while !data.is_empty() {
        *calls += 1;
        match f.write_at(data, off) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                data = &data[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(name(Kind::Log, 7), "wal-00000000000000000007.log");
        assert_eq!(parse_name(&name(Kind::Log, 7)), Some((Kind::Log, 7)));
        assert_eq!(
            parse_name(&name(Kind::Snapshot, 9)),
            Some((Kind::Snapshot, 9))
        );
        assert_eq!(parse_name("wal-7.log"), None);
        assert_eq!(parse_name("snap-00000000000000000009.snap.tmp"), None);
    }

    #[test]
    fn header_round_trip_and_damage() {
        let h = FileHeader {
            kind: Kind::Snapshot,
            no: 42,
            floor: 1000,
        };
        let mut b = encode_header(h);
        assert_eq!(parse_header(&b), Ok(h));
        b[20] ^= 1;
        assert!(parse_header(&b).unwrap_err().contains("checksum"));
        assert!(parse_header(&b[..10]).unwrap_err().contains("shorter"));
    }
}
