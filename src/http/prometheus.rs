//! The Prometheus text exposition format (version 0.0.4): a writer of metric families
//! (HELP, TYPE, labelled samples, histograms), with no knowledge of what the numbers are;
//! metrics.rs renders the server's numbers through it.

use std::fmt::Write as _;

/// A label value with `\`, `"` and newlines escaped, as the format requires.
fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Gauge,
    Counter,
}

/// A number as the format writes it.
#[derive(Clone, Copy)]
pub(super) enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

pub(super) struct Writer {
    pub(super) out: String,
}

impl Writer {
    /// One metric family: HELP, TYPE and its samples; nothing at all when it has no sample.
    pub(super) fn family<L: AsRef<str>>(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        samples: impl IntoIterator<Item = (Vec<(&'static str, L)>, Value)>,
    ) {
        let mut header = false;
        for (labels, value) in samples {
            if !header {
                header = true;
                let k = match kind {
                    Kind::Gauge => "gauge",
                    Kind::Counter => "counter",
                };
                let _ = writeln!(self.out, "# HELP {name} {help}");
                let _ = writeln!(self.out, "# TYPE {name} {k}");
            }
            self.out.push_str(name);
            if !labels.is_empty() {
                self.out.push('{');
                for (i, (k, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.out.push_str(k);
                    self.out.push_str("=\"");
                    escape_label(&mut self.out, v.as_ref());
                    self.out.push('"');
                }
                self.out.push('}');
            }
            let _ = match value {
                Value::Int(n) => writeln!(self.out, " {n}"),
                Value::Float(f) => writeln!(self.out, " {f}"),
            };
        }
    }

    pub(super) fn single(&mut self, name: &str, kind: Kind, help: &str, v: impl Into<Value>) {
        self.family::<&str>(name, kind, help, [(vec![], v.into())]);
    }

    /// A histogram without labels: cumulative `_bucket{le}` samples, `_sum` and `_count`.
    /// `bounds` and `counts` are in seconds and per bucket; `counts` has one more entry
    /// (+Inf) than `bounds`.
    pub(super) fn histogram(
        &mut self,
        name: &str,
        help: &str,
        bounds: &[f64],
        counts: &[u64],
        sum: f64,
        count: u64,
    ) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, c) in counts.iter().enumerate() {
            cumulative += c;
            let _ = match bounds.get(i) {
                Some(le) => writeln!(self.out, "{name}_bucket{{le=\"{le}\"}} {cumulative}"),
                None => writeln!(self.out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}"),
            };
        }
        let _ = writeln!(self.out, "{name}_sum {sum}");
        let _ = writeln!(self.out, "{name}_count {count}");
    }
}
