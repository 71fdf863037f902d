//! Admin reply bytes made safe for a terminal: printable text as it is, anything else (control
//! characters, bytes that are not UTF-8, the backslash itself) as `\xNN`. Pure.

use std::fmt::Write as _;

/// One admin reply line as text, each tab-separated field escaped on its own (the tabs are the
/// layout, not data).
pub fn line(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for (i, field) in bytes.split(|&b| b == b'\t').enumerate() {
        if i > 0 {
            out.push('\t');
        }
        push_escaped(&mut out, field);
    }
    out
}

fn push_escaped(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' || c.is_control() {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn text_stays_and_the_rest_is_escaped() {
        assert_eq!(line(b"H:x:1\tresize\timg-1"), "H:x:1\tresize\timg-1");
        assert_eq!(line("caf\u{e9}".as_bytes()), "caf\u{e9}");
        assert_eq!(line(b"a\x1b[2Jb\tc\x00d"), "a\\x1b[2Jb\tc\\x00d");
        assert_eq!(line(b"\xff\xfe ok"), "\\xff\\xfe ok");
        assert_eq!(line(b"back\\slash"), "back\\x5cslash");
        assert_eq!(line("\u{85}".as_bytes()), "\\xc2\\x85");
    }
}
