//! The store's one error type. Every message names the file (or directory) and, for damage,
//! the byte offset, so a sysadmin can act on it without reading code.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum StoreError {
    /// An operating-system call on a journal file or directory failed (disk full, I/O error,
    /// permission). `op` is a verb: "write", "fsync", "open", ...
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    /// Another process holds the data directory's lock file.
    Locked { dir: PathBuf, holder: Option<u32> },
    /// Damage that cutting off could lose acknowledged jobs: a bad record in the middle of a
    /// file, in a file that is not the last, or a bad file header.
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    /// A segment is missing from the middle of the sequence (deleted by hand?).
    MissingSegment { dir: PathBuf, name: String },
    /// A record too large for the 32-bit length field (over 4 GiB).
    TooLarge { bytes: u64 },
    /// A simulated crash in the unit tests.
    #[cfg(test)]
    Crash,
}

impl StoreError {
    pub(crate) fn io(path: &Path, op: &'static str) -> impl FnOnce(io::Error) -> StoreError {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, op, source }
    }

    pub(crate) fn corrupt(path: &Path, offset: u64, what: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            offset,
            what: what.into(),
        }
    }

    /// True when the disk (or the process's file-size limit) is full: the submit should get
    /// `ERROR QUEUE_ERROR` and the server should retry later.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
            ),
            _ => false,
        }
    }

    /// True for damage that `repair` can fix (start-up should point at `--repair`).
    pub fn is_repairable(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. } | StoreError::MissingSegment { .. }
        )
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, op, source } => {
                write!(f, "journal: cannot {op} {}: {source}", path.display())
            }
            StoreError::Locked { dir, holder } => {
                write!(
                    f,
                    "journal directory {} is in use by another gearwheel",
                    dir.display()
                )?;
                if let Some(pid) = holder {
                    write!(f, " (pid {pid})")?;
                }
                write!(f, "; two servers cannot share one data directory")
            }
            StoreError::Corrupt { path, offset, what } => write!(
                f,
                "journal file {} is damaged at byte offset {offset}: {what}; start-up stopped \
                 so that no job is lost silently (`gearwheel serve --repair` keeps every intact \
                 record and drops the damaged ones)",
                path.display()
            ),
            StoreError::MissingSegment { dir, name } => write!(
                f,
                "journal segment {name} is missing from {} while files before and after it \
                 exist; its records are lost (`gearwheel serve --repair` replaces it with an \
                 empty one)",
                dir.display()
            ),
            StoreError::TooLarge { bytes } => write!(
                f,
                "journal: a record of {bytes} bytes is over the 4 GiB record limit"
            ),
            #[cfg(test)]
            StoreError::Crash => write!(f, "simulated crash"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
