//! Names in line-based text: which bytes a function name may hold, and how the bytes of
//! names, uniques and client ids are written into admin replies so that none can forge a line.
//! Pure functions; no I/O.
//!
//! The rule: a function name takes every byte gearmand takes except those that forge a
//! text-protocol line or a binary argument: CR, LF (an admin reply's line) and NUL (the
//! binary protocol's argument separator, which no CAN_DO or JOB_ASSIGN could carry). Such a
//! name is refused where it enters (ERROR, HTTP 400, `ERR` for admin lines). Every other byte,
//! TAB and the other controls included, is kept: Perl's Gearman::Client joins its `prefix`
//! option and the function with a TAB. gearmand's own admin replies (`status`,
//! `prioritystatus`, `workers`) show a name as its bytes, as gearmand does, so a name shown
//! can be typed back into `drop function`, `maxqueue` and CAN_DO (admin words are split on
//! spaces only). Uniques and client ids are only ever shown, and binary ones are legitimate,
//! so they are accepted and written with their control characters as `\xHH`, as are names
//! in the middle of gearwheel's own tab-separated listings, where a TAB would shift columns.

/// A byte that would end or split a line-based reply (CR, LF, TAB and the other controls).
pub fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// Whether `b` holds a control character.
pub fn has_control(b: &[u8]) -> bool {
    b.iter().any(|&c| is_control(c))
}

/// A byte no function name may hold: it ends a text line (CR, LF) or a binary argument (NUL).
pub fn forges_line(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | 0)
}

/// Whether `name` cannot be a function name (see `forges_line`).
pub fn is_bad_name(name: &[u8]) -> bool {
    name.iter().any(|&b| forges_line(b))
}

/// Append a function name to a gearmand-format reply as its bytes. A name never holds CR, LF
/// or NUL (refused where it enters), so nothing here is escaped but those, should one come
/// from elsewhere.
pub fn push_name(out: &mut Vec<u8>, name: &[u8]) {
    for &c in name {
        if forges_line(c) {
            out.extend_from_slice(format!("\\x{c:02x}").as_bytes());
        } else {
            out.push(c);
        }
    }
}

/// Append `b` to a text reply: control characters as `\xHH`, every other byte as it is.
pub fn push_escaped(out: &mut Vec<u8>, b: &[u8]) {
    for &c in b {
        if is_control(c) {
            out.extend_from_slice(format!("\\x{c:02x}").as_bytes());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_other_bytes_kept() {
        let mut v = Vec::new();
        push_escaped(&mut v, b"a\r\nb\tc\x7f\xe9\\");
        assert_eq!(v, b"a\\x0d\\x0ab\\x09c\\x7f\xe9\\");
    }

    #[test]
    fn a_name_may_hold_a_tab_but_no_line_break_or_nul() {
        assert!(!is_bad_name(b"pre\tfn"));
        assert!(!is_bad_name(b"bell\x07\x7f\xff"));
        for bad in [&b"a\rb"[..], b"a\nb", b"a\0b"] {
            assert!(is_bad_name(bad), "{bad:?}");
        }
        let mut v = Vec::new();
        push_name(&mut v, b"pre\tfn\x07");
        assert_eq!(v, b"pre\tfn\x07");
    }
}
