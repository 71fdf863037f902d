//! Peer bytes as log text: the one way a name, unique, client id, certificate name, header,
//! path or admin line a peer sent is written into a log line, so that no peer can start a
//! line of its own (a newline), rewrite one (CR, ESC), or make one huge. Pure.
//!
//! Printable text stays as it is (names in any script read as they are); control characters,
//! the characters that reorder or break text on a terminal (line and paragraph separators,
//! bidirectional overrides), bytes that are not UTF-8 and the backslash itself are written
//! `\xNN`, so an escaped value reads back unambiguously. A value longer than `MAX` bytes is cut
//! there, on a character boundary, with a marker saying how many bytes were left out.

use std::fmt::{self, Write as _};

/// The most bytes of one peer value a log line shows.
pub const MAX: usize = 100;

/// `value` as log text: `format!("{}", shown(name))`. Writes as it formats: no allocation.
pub fn shown<T: AsRef<[u8]> + ?Sized>(value: &T) -> Shown<'_> {
    Shown(value.as_ref())
}

/// A peer value being written into a log line (`shown`).
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a>(&'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let mut end = v.len().min(MAX);
        // Not inside a character: one the cut would split is left out whole.
        while end > 0 && end < v.len() && end + 3 > MAX && (v[end] & 0xc0) == 0x80 {
            end -= 1;
        }
        let (cut, rest) = v.split_at(end);
        for chunk in cut.utf8_chunks() {
            for c in chunk.valid().chars() {
                if escaped(c) {
                    let mut buf = [0; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        write!(f, "\\x{b:02x}")?;
                    }
                } else {
                    f.write_char(c)?;
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        if !rest.is_empty() {
            write!(f, "...[{} more bytes]", rest.len())?;
        }
        Ok(())
    }
}

/// Written `\xNN` rather than as itself.
fn escaped(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> String {
        shown(b).to_string()
    }

    #[test]
    fn printable_text_is_kept() {
        assert_eq!(s(b"report.daily"), "report.daily");
        assert_eq!(s("café ☕ работа".as_bytes()), "café ☕ работа");
        assert_eq!(shown("web-1").to_string(), "web-1");
    }

    #[test]
    fn nothing_a_peer_sends_breaks_or_rewrites_a_line() {
        assert_eq!(s(b"a\nFORGED"), "a\\x0aFORGED");
        assert_eq!(s(b"a\r\x1b[2K\0\x7f\t"), "a\\x0d\\x1b[2K\\x00\\x7f\\x09");
        // Invalid UTF-8, byte by byte; the backslash too, so that `\x0a` typed by the peer
        // reads differently from an escaped newline.
        assert_eq!(s(b"\xff\xc3("), "\\xff\\xc3(");
        assert_eq!(s(b"\\x0a"), "\\x5cx0a");
        // C1 controls, separators and bidirectional overrides, as their UTF-8 bytes.
        assert_eq!(s("\u{85}".as_bytes()), "\\xc2\\x85");
        assert_eq!(s("a\u{2028}b".as_bytes()), "a\\xe2\\x80\\xa8b");
        assert_eq!(s("\u{202e}txt".as_bytes()), "\\xe2\\x80\\xaetxt");
        for b in 0..=255u8 {
            let line = s(&[b'x', b]);
            // Only the escapes' own backslashes are left of what `escaped` names.
            assert!(
                !line.chars().any(|c| c != '\\' && escaped(c)),
                "{b}: {line:?}"
            );
        }
    }

    #[test]
    fn a_long_value_is_cut_with_a_marker() {
        let long = vec![b'a'; MAX + 50];
        assert_eq!(s(&long), format!("{}...[50 more bytes]", "a".repeat(MAX)));
        assert_eq!(s(&long[..MAX]), "a".repeat(MAX));
        // A character the cut would split is left out whole, not shown as invalid bytes.
        let mut v = vec![b'a'; MAX - 1];
        v.extend_from_slice("é".as_bytes());
        assert_eq!(s(&v), format!("{}...[2 more bytes]", "a".repeat(MAX - 1)));
        // Escaping cannot make a line longer than four bytes of text per byte shown.
        let worst = vec![b'\n'; 10 * MAX];
        assert!(s(&worst).len() <= 4 * MAX + 32);
    }
}
