//! HTTP responses: a `Reply` (status, headers, body) written in the request's version with
//! the connection headers that say whether it stays open.

use bytes::{BufMut, Bytes, BytesMut};

use super::parse::Version;

/// The `Server` header.
pub const SERVER: &str = concat!("gearwheel/", env!("CARGO_PKG_VERSION"));

pub const TEXT: &str = "text/plain; charset=utf-8";
pub const JSON: &str = "application/json";
/// The Prometheus text exposition format.
pub const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The bytes of an interim `100 Continue`.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        414 => "URI Too Long",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// One response before it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: Option<&'static str>,
    /// Further headers. Values are the server's own (handles, numbers); control bytes are
    /// replaced when written all the same, so no value can split a header.
    pub headers: Vec<(&'static str, Bytes)>,
    pub body: Bytes,
    /// Close the connection after this reply, whatever the request asked.
    pub close: bool,
}

impl Reply {
    pub fn new(status: u16, content_type: Option<&'static str>, body: impl Into<Bytes>) -> Self {
        Reply {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
            close: false,
        }
    }

    /// A short plain-text reply, `message` plus a newline.
    pub fn text(status: u16, message: &str) -> Self {
        Reply::new(status, Some(TEXT), format!("{message}\n"))
    }

    pub fn json(status: u16, body: String) -> Self {
        Reply::new(status, Some(JSON), body)
    }

    /// An error reply after which the connection is closed.
    pub fn fatal(status: u16, message: &str) -> Self {
        Reply {
            close: true,
            ..Reply::text(status, message)
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<Bytes>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The server's live data (the JSON endpoints, /metrics, the answers to schedule and
    /// failed-job operations): never kept by a browser or a proxy (it changes, and /failed
    /// holds workloads), and never sniffed as another type than it says.
    pub fn uncached(self) -> Self {
        self.header("Cache-Control", "no-store")
            .header("X-Content-Type-Options", "nosniff")
    }
}

fn put_value(out: &mut BytesMut, v: &[u8]) {
    for &b in v {
        out.put_u8(if b < 0x20 || b == 0x7f { b'?' } else { b });
    }
}

/// The `Date` header's form (IMF-fixdate) of a millisecond timestamp.
pub fn http_date(now_ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(now_ms as i64)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// Write `r` as the answer to a request of `version`. `keep_alive` is what the request asked
/// for; the reply's `close` overrides it. With `head_only` the body is left out (HEAD), its
/// length still announced. Returns whether the connection stays open.
pub fn write(
    out: &mut BytesMut,
    r: &Reply,
    version: Version,
    keep_alive: bool,
    head_only: bool,
    date: &str,
) -> bool {
    let open = keep_alive && !r.close;
    out.reserve(160 + r.body.len());
    out.put_slice(version.as_str().as_bytes());
    out.put_slice(format!(" {} {}\r\n", r.status, reason(r.status)).as_bytes());
    out.put_slice(b"Server: ");
    out.put_slice(SERVER.as_bytes());
    out.put_slice(b"\r\nDate: ");
    out.put_slice(date.as_bytes());
    out.put_slice(b"\r\n");
    for (name, value) in &r.headers {
        out.put_slice(name.as_bytes());
        out.put_slice(b": ");
        put_value(out, value);
        out.put_slice(b"\r\n");
    }
    if let Some(ct) = r.content_type {
        out.put_slice(b"Content-Type: ");
        out.put_slice(ct.as_bytes());
        out.put_slice(b"\r\n");
    }
    out.put_slice(format!("Content-Length: {}\r\n", r.body.len()).as_bytes());
    match (version, open) {
        (Version::Http11, false) => out.put_slice(b"Connection: close\r\n"),
        (Version::Http10, true) => out.put_slice(b"Connection: keep-alive\r\n"),
        _ => {}
    }
    out.put_slice(b"\r\n");
    if !head_only {
        out.put_slice(&r.body);
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(r: &Reply, v: Version, ka: bool, head: bool) -> (String, bool) {
        let mut b = BytesMut::new();
        let open = write(&mut b, r, v, ka, head, "Thu, 01 Jan 1970 00:00:00 GMT");
        (String::from_utf8(b.to_vec()).unwrap(), open)
    }

    #[test]
    fn status_line_headers_and_body() {
        let r = Reply::new(200, None, "RESULT")
            .header("X-Gearman-Job-Handle", "H:vm:1")
            .header("X-Gearman-Command", "WORK_COMPLETE");
        let (s, open) = w(&r, Version::Http11, true, false);
        assert!(open);
        assert_eq!(
            s,
            format!(
                "HTTP/1.1 200 OK\r\nServer: {SERVER}\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\
                 X-Gearman-Job-Handle: H:vm:1\r\nX-Gearman-Command: WORK_COMPLETE\r\n\
                 Content-Length: 6\r\n\r\nRESULT"
            )
        );
    }

    #[test]
    fn connection_headers_follow_version_and_close() {
        let r = Reply::text(404, "no");
        let (s, open) = w(&r, Version::Http10, false, false);
        assert!(s.starts_with("HTTP/1.0 404 Not Found\r\n") && !open);
        assert!(!s.contains("Connection:"));
        let (s, open) = w(&r, Version::Http10, true, false);
        assert!(s.contains("Connection: keep-alive\r\n") && open);
        let (s, open) = w(&Reply::fatal(400, "bad"), Version::Http11, true, false);
        assert!(s.contains("Connection: close\r\n") && !open);
        assert!(s.ends_with("\r\n\r\nbad\n"));
    }

    #[test]
    fn head_leaves_the_body_out_and_values_cannot_split_headers() {
        let r = Reply::json(200, "{}".into()).header("X-A", "a\r\nInjected: 1");
        let (s, _) = w(&r, Version::Http11, true, true);
        assert!(s.ends_with("Content-Length: 2\r\n\r\n"));
        assert!(s.contains("X-A: a??Injected: 1\r\n"));
    }

    #[test]
    fn every_status_the_server_sends_has_its_phrase() {
        let (s, _) = w(&Reply::text(401, "who?"), Version::Http11, true, false);
        assert!(s.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{s}");
        // Every status a reply is made with (grep `Reply::` in src/http and src/reactor).
        for status in [
            100, 200, 400, 401, 403, 404, 405, 408, 409, 413, 414, 417, 431, 500, 501, 502, 503,
            504, 505,
        ] {
            assert_ne!(reason(status), "Unknown", "{status}");
        }
    }

    #[test]
    fn date_format() {
        assert_eq!(http_date(784_111_777_000), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
