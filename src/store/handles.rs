//! DIR/HANDLES: the handle numbers the server has reserved, one decimal number. Foreground jobs
//! are not journalled, so without it a restart could hand out a foreground job's handle again.
//! How far ahead to reserve is the caller's policy; this module only reads and writes the file.

use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) const HANDLES_NAME: &str = "HANDLES";

/// The file's path in `dir`, for error messages.
pub fn handles_path(dir: &Path) -> PathBuf {
    dir.join(HANDLES_NAME)
}

/// The handle numbers reserved so far (0 if none).
pub fn read_reserved(dir: &Path) -> u64 {
    std::fs::read_to_string(handles_path(dir))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Reserve handle numbers below `upto`: write, fsync, rename, fsync the directory.
pub fn write_reserved(dir: &Path, upto: u64) -> std::io::Result<()> {
    let tmp = dir.join(format!("{HANDLES_NAME}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "{upto}")?;
    f.sync_all()?;
    std::fs::rename(&tmp, handles_path(dir))?;
    std::fs::File::open(dir)?.sync_all()
}
