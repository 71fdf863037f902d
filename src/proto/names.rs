//! Names in line-based text: which bytes a function name may hold, and how the bytes of
//! names, uniques and client ids are written into admin replies so that none can forge a line
//! or a column. Pure functions; no I/O.
//!
//! The rule (issue 14 items 6 and 7): a function name is an argument of admin commands
//! (`drop function`, `maxqueue`) and of CAN_DO, so it must come back out exactly as it went in:
//! a name with a control character (a byte below 0x20, or 0x7f) is refused where it enters
//! (ERROR, HTTP 400, `ERR` for admin lines), and every other byte is shown as it is, UTF-8 or
//! not, as gearmand does. Uniques and client ids are only ever shown, and binary ones are
//! legitimate, so they are accepted and their control characters written as `\xHH`.

/// A byte that would end or split a line-based reply (CR, LF, TAB and the other controls).
pub fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// Whether `name` holds a control character.
pub fn has_control(name: &[u8]) -> bool {
    name.iter().any(|&b| is_control(b))
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
}
