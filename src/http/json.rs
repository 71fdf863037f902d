//! A small JSON writer (no serde: four fixed shapes do not need it) and the bodies of
//! `/status`, `/workers`, `/jobs/HANDLE` and `/schedules`, formatted from the engine's query
//! structs. Strings are escaped per RFC 8259; bytes that are not UTF-8 become U+FFFD.

use std::fmt::Write as _;

use crate::engine::{FunctionStatus, JobStatus, ScheduleStatus, WorkerStatus};
use crate::proto::request::Priority;

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

pub fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::High => "high",
        Priority::Normal => "normal",
        Priority::Low => "low",
    }
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

fn function(out: &mut String, f: &FunctionStatus) {
    let mut o = Obj::new(out);
    o.bytes("name", &f.name)
        .num("total", f.total())
        .num("queued", f.queued_total())
        .num("running", f.running)
        .num("future", f.future)
        .num("workers", f.workers);
    {
        let p = o.key("priority");
        let mut po = Obj::new(p);
        po.num("high", f.queued[0])
            .num("normal", f.queued[1])
            .num("low", f.queued[2]);
        po.end();
    }
    {
        let c = &f.counters;
        let p = o.key("counters");
        let mut co = Obj::new(p);
        co.num("submitted", c.submitted)
            .num("completed", c.completed)
            .num("failed", c.failed)
            .num("exceptions", c.exceptions)
            .num("retried", c.retried);
        co.end();
    }
    o.end();
}

/// `/status`: every function with its queued, running, future and worker counts.
pub fn status(functions: &[FunctionStatus], server: &[(&str, u64)]) -> String {
    let mut out = String::with_capacity(64 + functions.len() * 192);
    let mut o = Obj::new(&mut out);
    for (k, v) in server {
        o.num(k, v);
    }
    array(o.key("functions"), functions, function);
    o.end();
    out.push('\n');
    out
}

/// `/workers`: connections that registered functions.
pub fn workers(list: &[WorkerStatus]) -> String {
    let mut out = String::with_capacity(32 + list.len() * 96);
    let mut o = Obj::new(&mut out);
    array(o.key("workers"), list, |out, w| {
        let mut o = Obj::new(out);
        o.num("fd", w.fd)
            .str("ip", &w.ip)
            .bytes("client_id", &w.client_id);
        array(o.key("functions"), &w.functions, |out, f| bytes(out, f));
        array(o.key("running"), &w.running, |out, h| bytes(out, h));
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

/// `/jobs/HANDLE`: GET_STATUS, plus where the job is when it is known.
pub fn job(s: &JobStatus) -> String {
    let mut out = String::with_capacity(256);
    let mut o = Obj::new(&mut out);
    o.bytes("handle", &s.handle)
        .bool("known", s.known)
        .bool("running", s.running)
        .num("numerator", s.numerator)
        .num("denominator", s.denominator);
    if let Some(d) = &s.detail {
        o.bytes("function", &d.function)
            .bytes("unique", &d.unique)
            .str("state", d.phase.name())
            .str("priority", priority_name(d.priority))
            .bool("background", d.background)
            .num("retries", d.retries)
            .num("clients", d.clients);
        time(&mut o, "due", d.due_ms);
    }
    o.end();
    out.push('\n');
    out
}

/// `/schedules`: `show schedules` with next and last runs and the last outcome.
pub fn schedules(list: &[ScheduleStatus]) -> String {
    let mut out = String::with_capacity(32 + list.len() * 256);
    let mut o = Obj::new(&mut out);
    array(o.key("schedules"), list, schedule);
    o.end();
    out.push('\n');
    out
}

/// One entry of `/schedules` (also the answer to an operation on it).
pub fn schedule(out: &mut String, s: &ScheduleStatus) {
    let mut o = Obj::new(out);
    o.str("id", &s.id)
        .str("spec", &s.spec)
        .str("function", &s.function);
    time(&mut o, "next_run", s.next_ms);
    time(&mut o, "last_run", s.last_run_ms);
    o.opt_str("last_outcome", s.last_outcome.as_deref())
        .opt_num("last_duration_ms", s.last_duration_ms)
        .num("runs", s.runs)
        .num("failures", s.failures)
        .num("skips", s.skips)
        .bool("paused", s.paused)
        .bool("skip_next", s.skip_next)
        .bool("last_run_manual", s.last_run_manual);
    o.end();
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::engine::{JobCounters, JobDetail, JobPhase};

    fn s(v: &str) -> String {
        let mut o = String::new();
        string(&mut o, v);
        o
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(s("plain"), r#""plain""#);
        assert_eq!(s("a\"b\\c/d"), r#""a\"b\\c/d""#);
        assert_eq!(s("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(s("\0\u{1}\u{1f}\u{7f}"), r#""\u0000\u0001\u001f\u007f""#);
        assert_eq!(s("é\u{2028}x"), "\"é\\u2028x\"");
        let mut o = String::new();
        bytes(&mut o, b"a\xffb");
        assert_eq!(o, "\"a\u{fffd}b\"");
    }

    #[test]
    fn escaped_output_is_valid_json_for_every_char() {
        // Every code point below 0x800 survives as something a strict parser accepts: no raw
        // control character is left in the literal.
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        let lit = s(&all);
        assert!(!lit.chars().any(|c| (c as u32) < 0x20));
        assert!(lit.starts_with('"') && lit.ends_with('"'));
    }

    #[test]
    fn status_shape() {
        let f = FunctionStatus {
            name: Bytes::from_static(b"re\"v"),
            queued: [1, 2, 3],
            running: 4,
            future: 5,
            workers: 6,
            counters: JobCounters {
                submitted: 7,
                ..JobCounters::default()
            },
        };
        assert_eq!(
            status(&[f], &[("jobs", 15)]),
            "{\"jobs\":15,\"functions\":[{\"name\":\"re\\\"v\",\"total\":15,\"queued\":6,\
             \"running\":4,\"future\":5,\"workers\":6,\"priority\":{\"high\":1,\"normal\":2,\
             \"low\":3},\"counters\":{\"submitted\":7,\"completed\":0,\"failed\":0,\
             \"exceptions\":0,\"retried\":0}}]}\n"
        );
        assert_eq!(status(&[], &[]), "{\"functions\":[]}\n");
    }

    #[test]
    fn workers_job_and_schedules_shapes() {
        let w = WorkerStatus {
            fd: 7,
            ip: "::1".into(),
            client_id: Bytes::from_static(b"-"),
            functions: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
            running: vec![Bytes::from_static(b"H:x:1")],
        };
        assert_eq!(
            workers(&[w]),
            "{\"workers\":[{\"fd\":7,\"ip\":\"::1\",\"client_id\":\"-\",\"functions\":[\"a\",\"b\"],\"running\":[\"H:x:1\"]}]}\n"
        );
        let unknown = JobStatus {
            handle: Bytes::from_static(b"H:x:9"),
            known: false,
            running: false,
            numerator: 0,
            denominator: 0,
            detail: None,
        };
        assert_eq!(
            job(&unknown),
            "{\"handle\":\"H:x:9\",\"known\":false,\"running\":false,\"numerator\":0,\"denominator\":0}\n"
        );
        let future = JobStatus {
            known: true,
            detail: Some(JobDetail {
                function: Bytes::from_static(b"f"),
                unique: Bytes::from_static(b"u"),
                phase: JobPhase::Future,
                priority: Priority::Normal,
                background: true,
                retries: 0,
                clients: 0,
                due_ms: Some(4_102_444_800_000),
            }),
            ..unknown
        };
        assert!(job(&future).ends_with(
            "\"state\":\"future\",\"priority\":\"normal\",\"background\":true,\"retries\":0,\
             \"clients\":0,\"due\":\"2100-01-01T00:00:00Z\"}\n"
        ));
        let sc = ScheduleStatus {
            id: "nightly".into(),
            spec: "0 3 * * *".into(),
            function: "backup".into(),
            next_ms: Some(0),
            last_run_ms: None,
            last_outcome: Some("exception: \"disk\"".into()),
            last_duration_ms: None,
            runs: 1,
            failures: 1,
            skips: 0,
            paused: true,
            skip_next: false,
            last_run_manual: true,
        };
        assert_eq!(
            schedules(&[sc]),
            "{\"schedules\":[{\"id\":\"nightly\",\"spec\":\"0 3 * * *\",\"function\":\"backup\",\
             \"next_run\":\"1970-01-01T00:00:00Z\",\"last_run\":null,\
             \"last_outcome\":\"exception: \\\"disk\\\"\",\"last_duration_ms\":null,\"runs\":1,\
             \"failures\":1,\"skips\":0,\"paused\":true,\"skip_next\":false,\"last_run_manual\":true}]}\n"
        );
    }
}
