//! A small JSON writer (no serde: a few fixed shapes do not need it), shared by the HTTP
//! bodies and the engine's alert workloads. Strings are escaped per RFC 8259; bytes that are
//! not UTF-8 become U+FFFD.

use std::fmt::Write as _;

/// Append `s` as a JSON string literal.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // The rest of C0, DEL, and the two separators JavaScript would read as newlines.
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Append bytes as a JSON string (lossy UTF-8).
pub fn bytes(out: &mut String, b: &[u8]) {
    string(out, &String::from_utf8_lossy(b));
}

/// An object writer: `{"k":v,...}` with the commas placed for you.
pub struct Obj<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Obj<'a> {
    pub fn new(out: &'a mut String) -> Self {
        out.push('{');
        Obj { out, first: true }
    }

    /// Start a member and return the buffer for its value.
    pub fn key(&mut self, k: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(self.out, k);
        self.out.push(':');
        self.out
    }

    pub fn str(&mut self, k: &str, v: &str) -> &mut Self {
        let o = self.key(k);
        string(o, v);
        self
    }

    pub fn bytes(&mut self, k: &str, v: &[u8]) -> &mut Self {
        let o = self.key(k);
        bytes(o, v);
        self
    }

    pub fn num(&mut self, k: &str, v: impl std::fmt::Display) -> &mut Self {
        let o = self.key(k);
        let _ = write!(o, "{v}");
        self
    }

    pub fn bool(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k).push_str(if v { "true" } else { "false" });
        self
    }

    pub fn opt_num(&mut self, k: &str, v: Option<u64>) -> &mut Self {
        match v {
            Some(n) => self.num(k, n),
            None => self.null(k),
        }
    }

    pub fn opt_str(&mut self, k: &str, v: Option<&str>) -> &mut Self {
        match v {
            Some(s) => self.str(k, s),
            None => self.null(k),
        }
    }

    pub fn null(&mut self, k: &str) -> &mut Self {
        self.key(k).push_str("null");
        self
    }

    pub fn end(self) {
        self.out.push('}');
    }
}

/// A millisecond timestamp as RFC 3339 UTC (to the second), or null.
pub fn time(o: &mut Obj<'_>, k: &str, ms: Option<u64>) {
    let s = ms.map(|ms| {
        chrono::DateTime::from_timestamp_millis(ms as i64)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default()
    });
    o.opt_str(k, s.as_deref());
}

pub fn array<T>(out: &mut String, items: &[T], mut each: impl FnMut(&mut String, &T)) {
    out.push('[');
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        each(out, it);
    }
    out.push(']');
}
