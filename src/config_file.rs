//! Reading a file the server reads at start and again while it runs (`--acl`, `--schedules`,
//! the TLS certificate, key and CA files, the etcd TLS files): a regular file only, opened
//! without blocking, so that a FIFO or a device at the path cannot stall the loop.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The bytes of the regular file at `path` (symlinks followed). Anything else (a FIFO, a
/// socket, a device, a directory) is refused without reading a byte; the error starts with
/// the path. The file is opened with `O_NONBLOCK` (opening a FIFO would otherwise wait for
/// a writer) and its type is taken from the opened descriptor, so that a file swapped for a
/// FIFO between a check and the open is refused too.
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(&e))?;
    let kind = file.metadata().map_err(|e| fail(&e))?.file_type();
    if !kind.is_file() {
        return Err(fail(&format_args!(
            "not a regular file ({}); refused",
            what(kind)
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| fail(&e))?;
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, String> {
    String::from_utf8(read(path)?).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

fn what(kind: std::fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_anything_else_refused_without_waiting() {
        let dir =
            std::env::temp_dir().join(format!("gearwheel-config-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("acl");
        std::fs::write(&file, "addr:127.0.0.1 admin *\n").unwrap();
        assert_eq!(read_text(&file).unwrap(), "addr:127.0.0.1 admin *\n");
        // Through a symlink: what it points at decides.
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read(&link).unwrap(), b"addr:127.0.0.1 admin *\n");
        // A FIFO with no writer: refused at once (a blocking open would wait for ever).
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read(&fifo).unwrap_err();
        assert!(
            err.ends_with("fifo: not a regular file (a FIFO); refused"),
            "{err}"
        );
        let fifo_link = dir.join("fifo-link");
        std::os::unix::fs::symlink(&fifo, &fifo_link).unwrap();
        assert!(read(&fifo_link).unwrap_err().contains("(a FIFO)"));
        assert!(read(&dir).unwrap_err().contains("(a directory)"));
        assert!(
            read(Path::new("/dev/zero"))
                .unwrap_err()
                .contains("(a character device)")
        );
        assert!(
            read(&dir.join("missing"))
                .unwrap_err()
                .contains("missing: ")
        );
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(
            read_text(&file)
                .unwrap_err()
                .ends_with("acl: not UTF-8 text")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
