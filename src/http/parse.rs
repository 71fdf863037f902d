//! Request heads (through httparse) and bodies (Content-Length or chunked), each checked
//! against its bound before it is buffered. Incomplete input is not an error; every error
//! carries the status to answer with, after which the connection is closed.

use bytes::{Buf, BytesMut};

use super::{HttpLimits, MAX_HEADERS};

/// Why a request cannot be served. The connection is closed after the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    pub message: String,
}

impl HttpError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        HttpError {
            status,
            message: message.into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    /// Any other token; answered with 405 once its body (if any) is read.
    Other(String),
}

impl Method {
    fn parse(s: &str) -> Method {
        match s {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            other => Method::Other(other.to_string()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// How the body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Length(usize),
    Chunked,
}

/// gearmand's headers (and ours), raw; `route` checks their values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GearmanHeaders {
    pub unique: Option<Vec<u8>>,
    pub background: Option<Vec<u8>>,
    pub priority: Option<Vec<u8>>,
    pub epoch: Option<Vec<u8>>,
    pub timeout: Option<Vec<u8>>,
}

/// The headers that tell a browser's request from a script's (see `guard`), raw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteHeaders {
    pub host: Option<Vec<u8>>,
    pub origin: Option<Vec<u8>>,
    pub sec_fetch_site: Option<Vec<u8>>,
    /// `X-Gearwheel-Console` was sent: a header no other site's page can make a browser send
    /// without a CORS preflight we never answer (the console's actions require it).
    pub console: bool,
}

/// The secret of `Authorization: Bearer SECRET`. Its Debug shows no byte of it, so that no
/// log line can carry it (the ACL compares its SHA-256, src/access/token.rs).
#[derive(Clone, PartialEq, Eq)]
pub struct Bearer(pub Vec<u8>);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<secret>)")
    }
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub method: Method,
    /// The request target as sent (`/function?x`).
    pub target: String,
    pub version: Version,
    /// The connection stays open after the response (1.1 unless `Connection: close`; 1.0
    /// only with `Connection: keep-alive`).
    pub keep_alive: bool,
    pub body: BodyKind,
    pub expect_continue: bool,
    pub gearman: GearmanHeaders,
    pub site: SiteHeaders,
    /// `Authorization: Bearer SECRET` (other schemes are not read).
    pub bearer: Option<Bearer>,
}

fn bad(message: &str) -> HttpError {
    HttpError::new(400, message)
}

/// Where the request line starts (RFC 9112 lets a server skip empty lines before it).
fn line_start(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b != b'\r' && b != b'\n')
}

/// The request line is longer than allowed, from what has arrived so far.
fn line_too_long(buf: &[u8], limits: &HttpLimits) -> bool {
    let Some(start) = line_start(buf) else {
        return false;
    };
    let rest = &buf[start..];
    match rest.iter().position(|&b| b == b'\n') {
        Some(end) => end > limits.max_line,
        None => rest.len() > limits.max_line,
    }
}

/// Parse the head at the front of `buf`: `Ok(None)` while it is incomplete, else the head and
/// its length in bytes. Checks the bounds on what has arrived, so a peer cannot make the
/// server buffer more than `max_head` bytes of head.
pub fn parse_head(buf: &[u8], limits: &HttpLimits) -> Result<Option<(Head, usize)>, HttpError> {
    if line_too_long(buf, limits) {
        return Err(HttpError::new(414, "request line too long"));
    }
    let window = &buf[..buf.len().min(limits.max_head)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(window) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= limits.max_head {
                if line_start(window).is_none() {
                    return Err(bad("no request line"));
                }
                return Err(HttpError::new(431, "request header fields too large"));
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::new(431, "too many header fields"));
        }
        Err(httparse::Error::Version) if names_a_version(buf) => {
            return Err(HttpError::new(505, "only HTTP/1.0 and HTTP/1.1 are served"));
        }
        Err(e) => return Err(HttpError::new(400, format!("malformed request: {e}"))),
    };
    let version = match req.version {
        Some(0) => Version::Http10,
        Some(1) => Version::Http11,
        _ => return Err(HttpError::new(505, "only HTTP/1.0 and HTTP/1.1 are served")),
    };
    let method = Method::parse(req.method.unwrap_or(""));
    let target = req.path.unwrap_or("").to_string();
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut expect_continue = false;
    let mut g = GearmanHeaders::default();
    let mut site = SiteHeaders::default();
    let mut bearer = None;
    let mut authorization = false;
    for h in req.headers.iter() {
        let name = h.name;
        let value = trim(h.value);
        if name.eq_ignore_ascii_case("content-length") {
            let n = parse_length(value).ok_or_else(|| bad("bad Content-Length"))?;
            if content_length.is_some_and(|c| c != n) {
                return Err(bad("conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
            // Only `chunked` is implemented, and it must be the last coding.
            for coding in tokens(value) {
                if coding.eq_ignore_ascii_case(b"chunked") {
                    if chunked {
                        return Err(bad("chunked applied twice"));
                    }
                    chunked = true;
                } else {
                    return Err(HttpError::new(
                        501,
                        format!(
                            "transfer coding {:?} is not implemented",
                            String::from_utf8_lossy(coding)
                        ),
                    ));
                }
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for t in tokens(value) {
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive_token = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            if value.eq_ignore_ascii_case(b"100-continue") {
                expect_continue = true;
            } else {
                return Err(HttpError::new(
                    417,
                    "only Expect: 100-continue is supported",
                ));
            }
        } else if name.eq_ignore_ascii_case("host") {
            // Two Host headers could pass one check and mean another (RFC 9112, 3.2).
            if site.host.is_some() {
                return Err(bad("more than one Host header"));
            }
            site.host = Some(value.to_vec());
        } else if name.eq_ignore_ascii_case("origin") {
            if site.origin.is_some() {
                return Err(bad("more than one Origin header"));
            }
            site.origin = Some(value.to_vec());
        } else if name.eq_ignore_ascii_case("sec-fetch-site") {
            site.sec_fetch_site = Some(value.to_vec());
        } else if name.eq_ignore_ascii_case("authorization") {
            // Two could pass one check and mean another, as with Host.
            if std::mem::replace(&mut authorization, true) {
                return Err(bad("more than one Authorization header"));
            }
            if value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer ") {
                bearer = Some(Bearer(trim(&value[7..]).to_vec()));
            }
        } else if name.eq_ignore_ascii_case("x-gearwheel-console") {
            site.console = true;
        } else if let Some(x) = strip_prefix_ci(name, "x-gearman-") {
            let slot = if x.eq_ignore_ascii_case("unique") {
                &mut g.unique
            } else if x.eq_ignore_ascii_case("background") {
                &mut g.background
            } else if x.eq_ignore_ascii_case("priority") {
                &mut g.priority
            } else if x.eq_ignore_ascii_case("epoch") {
                &mut g.epoch
            } else if x.eq_ignore_ascii_case("timeout") {
                &mut g.timeout
            } else {
                continue;
            };
            *slot = Some(value.to_vec());
        }
    }
    let body = match (transfer_encoding, content_length) {
        // A message with both is how requests are smuggled past proxies: refuse it.
        (true, Some(_)) => return Err(bad("both Transfer-Encoding and Content-Length")),
        (true, None) if version == Version::Http10 => {
            return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
        }
        (true, None) if !chunked => return Err(bad("a body without chunked framing")),
        (true, None) => BodyKind::Chunked,
        (false, n) => BodyKind::Length(n.unwrap_or(0)),
    };
    if let BodyKind::Length(n) = body {
        if n > limits.max_body {
            return Err(HttpError::new(
                413,
                format!("body of {n} bytes is over the limit of {}", limits.max_body),
            ));
        }
    }
    let keep_alive = match version {
        Version::Http11 => !close,
        Version::Http10 => keep_alive_token && !close,
    };
    Ok(Some((
        Head {
            method,
            target,
            version,
            keep_alive,
            body,
            // A 1.0 client does not know 100 Continue.
            expect_continue: expect_continue && version == Version::Http11,
            gearman: g,
            site,
            bearer,
        },
        len,
    )))
}

/// The request line ends in a well-formed `HTTP/x.y` that is not one we serve (505), rather
/// than in something else (400).
fn names_a_version(buf: &[u8]) -> bool {
    let start = line_start(buf).unwrap_or(0);
    let line = &buf[start..];
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut words = line.split(|&b| b == b' ');
    let (Some(_), Some(_), Some(v), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return false;
    };
    matches!(v, [b'H', b'T', b'T', b'P', b'/', a, b'.', b] if a.is_ascii_digit() && b.is_ascii_digit())
        || v == b"HTTP/2"
        || v == b"HTTP/3"
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &v[start..end.max(start)]
}

/// The non-empty comma-separated tokens of a header value.
fn tokens(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    v.split(|&b| b == b',').map(trim).filter(|t| !t.is_empty())
}

fn parse_length(v: &[u8]) -> Option<usize> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines up to the empty line.
    Trailers,
    Done,
}

/// An incremental decoder of a chunked body: consumes from the read buffer as bytes arrive
/// and appends the data to `body`, never more than `max_body` in all.
#[derive(Debug)]
pub struct Chunked {
    state: ChunkState,
    pub body: BytesMut,
    max_body: usize,
    /// Bytes of trailers seen, bounded like a head.
    trailer_bytes: usize,
    max_trailers: usize,
}

/// A chunk-size line (with extensions) longer than this is refused.
const MAX_CHUNK_LINE: usize = 1024;

impl Chunked {
    pub fn new(limits: &HttpLimits) -> Self {
        Chunked {
            state: ChunkState::Size,
            body: BytesMut::new(),
            max_body: limits.max_body,
            trailer_bytes: 0,
            max_trailers: limits.max_head,
        }
    }

    /// Consume what can be consumed of `buf`; `Ok(true)` once the last chunk and the
    /// trailers are in.
    pub fn feed(&mut self, buf: &mut BytesMut) -> Result<bool, HttpError> {
        loop {
            match self.state {
                ChunkState::Done => return Ok(true),
                ChunkState::Size => match httparse::parse_chunk_size(buf) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        buf.advance(n);
                        if size == 0 {
                            self.state = ChunkState::Trailers;
                        } else {
                            let total = (self.body.len() as u64).saturating_add(size);
                            if total > self.max_body as u64 {
                                return Err(HttpError::new(
                                    413,
                                    format!(
                                        "chunked body over the limit of {} bytes",
                                        self.max_body
                                    ),
                                ));
                            }
                            self.body.reserve(size.min(1 << 20) as usize);
                            self.state = ChunkState::Data(size);
                        }
                    }
                    Ok(httparse::Status::Partial) => {
                        if buf.len() > MAX_CHUNK_LINE {
                            return Err(bad("chunk size line too long"));
                        }
                        return Ok(false);
                    }
                    Err(_) => return Err(bad("bad chunk size")),
                },
                ChunkState::Data(left) => {
                    if buf.is_empty() {
                        return Ok(false);
                    }
                    let n = (buf.len() as u64).min(left) as usize;
                    self.body.extend_from_slice(&buf[..n]);
                    buf.advance(n);
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::DataEnd => match &buf[..] {
                    [] | [b'\r'] => return Ok(false),
                    [b'\r', b'\n', ..] => {
                        buf.advance(2);
                        self.state = ChunkState::Size;
                    }
                    _ => return Err(bad("chunk data longer than its size")),
                },
                ChunkState::Trailers => {
                    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
                        if self.trailer_bytes + buf.len() > self.max_trailers {
                            return Err(HttpError::new(431, "trailers too large"));
                        }
                        return Ok(false);
                    };
                    let line_len = end + 1;
                    self.trailer_bytes += line_len;
                    if self.trailer_bytes > self.max_trailers {
                        return Err(HttpError::new(431, "trailers too large"));
                    }
                    let empty = buf[..end].iter().all(|&b| b == b'\r');
                    buf.advance(line_len);
                    if empty {
                        self.state = ChunkState::Done;
                    }
                    // Trailer fields are read and dropped: none of ours may come late.
                }
            }
        }
    }
}

/// Percent-decode a path segment or a query value; `None` for a broken escape.
pub fn percent_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let hi = (hex[0] as char).to_digit(16)?;
            let lo = (hex[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> HttpLimits {
        HttpLimits {
            max_line: 64,
            max_head: 256,
            max_body: 100,
        }
    }

    fn head(s: &str) -> Result<Option<(Head, usize)>, HttpError> {
        parse_head(s.as_bytes(), &lim())
    }

    fn status(s: &str) -> u16 {
        head(s).unwrap_err().status
    }

    #[test]
    fn a_gearmand_style_post() {
        let raw = "POST /reverse HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\
                   x-gearman-unique: u1\r\nX-Gearman-Background: true\r\n\
                   X-GEARMAN-PRIORITY: high\r\nX-Gearman-Epoch: 99\r\nX-Gearman-Timeout: 250\r\n\r\nhello";
        let (h, n) = head(raw).unwrap().unwrap();
        assert_eq!(&raw[n..], "hello");
        assert_eq!(h.method, Method::Post);
        assert_eq!(h.target, "/reverse");
        assert_eq!(h.version, Version::Http11);
        assert!(h.keep_alive && !h.expect_continue);
        assert_eq!(h.body, BodyKind::Length(5));
        assert_eq!(h.gearman.unique.as_deref(), Some(&b"u1"[..]));
        assert_eq!(h.gearman.background.as_deref(), Some(&b"true"[..]));
        assert_eq!(h.gearman.priority.as_deref(), Some(&b"high"[..]));
        assert_eq!(h.gearman.epoch.as_deref(), Some(&b"99"[..]));
        assert_eq!(h.gearman.timeout.as_deref(), Some(&b"250"[..]));
    }

    #[test]
    fn a_bearer_secret_is_read_and_never_shown() {
        let b = |s: &str| head(s).unwrap().unwrap().0.bearer;
        let h = b("GET / HTTP/1.1\r\nAuthorization: bearer  s3cret \r\n\r\n");
        assert_eq!(h, Some(Bearer(b"s3cret".to_vec())));
        assert!(!format!("{h:?}").contains("s3cret"));
        assert_eq!(
            b("GET / HTTP/1.1\r\nAuthorization: Basic eDp5\r\n\r\n"),
            None
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nAuthorization: Basic x\r\nAuthorization: Bearer y\r\n\r\n"),
            400
        );
    }

    #[test]
    fn keep_alive_rules_for_both_versions() {
        let ka = |s: &str| head(s).unwrap().unwrap().0.keep_alive;
        assert!(ka("GET / HTTP/1.1\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
        assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            "GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n"
        ));
        let h = head("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap().0;
        assert_eq!(h.version, Version::Http10);
    }

    #[test]
    fn incomplete_is_not_an_error() {
        let raw = "POST /f HTTP/1.1\r\nContent-Length: 1\r\n\r\n";
        for i in 0..raw.len() {
            assert_eq!(head(&raw[..i]), Ok(None), "at {i}");
        }
        assert!(head(raw).unwrap().is_some());
        // Empty lines before the request line are skipped.
        assert!(head("\r\n\r\nGET / HTTP/1.1\r\n\r\n").unwrap().is_some());
    }

    #[test]
    fn bad_input_gets_its_status() {
        assert_eq!(status("GET / HTTP/2.0\r\n\r\n"), 505);
        assert_eq!(status("GET / FTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.2\r\n\r\n"), 505);
        assert_eq!(status("GET /a b HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET /\x01 HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nBad Header\r\n\r\n"), 400);
        assert_eq!(status("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), 400);
        assert_eq!(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501
        );
        assert_eq!(
            status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"),
            413
        );
        assert_eq!(status("POST / HTTP/1.1\r\nExpect: magic\r\n\r\n"), 417);
        // Equal duplicates are fine.
        assert!(
            head("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n")
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn bounds_on_line_head_and_header_count() {
        let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(80));
        assert_eq!(status(&long_line), 414);
        // Known to be too long before its end arrives.
        assert_eq!(status(&format!("GET /{}", "a".repeat(80))), 414);
        let big_head = format!("GET / HTTP/1.1\r\nX-A: {}\r\n", "b".repeat(300));
        assert_eq!(status(&big_head), 431);
        let many: String = (0..70).map(|i| format!("H{i}: v\r\n")).collect();
        let l = HttpLimits {
            max_head: 4096,
            ..lim()
        };
        let raw = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(parse_head(raw.as_bytes(), &l).unwrap_err().status, 431);
    }

    #[test]
    fn expect_continue_only_for_http11() {
        let h = head("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n")
            .unwrap()
            .unwrap()
            .0;
        assert!(h.expect_continue);
        let h = head("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
            .unwrap()
            .unwrap()
            .0;
        assert!(!h.expect_continue);
    }

    fn dechunk(raw: &[u8], step: usize) -> Result<Option<Vec<u8>>, HttpError> {
        let mut c = Chunked::new(&lim());
        let mut buf = BytesMut::new();
        for piece in raw.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            if c.feed(&mut buf)? {
                assert!(buf.is_empty(), "left over: {buf:?}");
                return Ok(Some(c.body.to_vec()));
            }
        }
        Ok(None)
    }

    #[test]
    fn chunked_bodies_at_every_split() {
        let raw = b"5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        for step in 1..raw.len() {
            assert_eq!(
                dechunk(raw, step).unwrap().as_deref(),
                Some(&b"hello 0123456789"[..]),
                "step {step}"
            );
        }
        assert_eq!(dechunk(b"0\r\n\r\n", 1).unwrap(), Some(vec![]));
        // Chunk lines end with CRLF (httparse's rule); a bare LF is refused.
        assert_eq!(dechunk(b"2\nab\n0\n\n", 3).unwrap_err().status, 400);
        assert_eq!(dechunk(b"2\r\nab\r\n", 100).unwrap(), None);
    }

    #[test]
    fn chunked_errors() {
        assert_eq!(dechunk(b"zz\r\n", 10).unwrap_err().status, 400);
        assert_eq!(dechunk(b"2\r\nabc\r\n", 10).unwrap_err().status, 400);
        assert_eq!(dechunk(b"65\r\n", 10).unwrap_err().status, 413);
        assert_eq!(
            dechunk(b"40\r\n", 1).map(|_| ()),
            Ok(()),
            "64 bytes are within the limit"
        );
        let huge_size = b"ffffffffffffffffff\r\n";
        assert_eq!(dechunk(huge_size, 100).unwrap_err().status, 400);
        let long_ext = [b"1;".to_vec(), vec![b'x'; 2000]].concat();
        assert_eq!(dechunk(&long_ext, 3000).unwrap_err().status, 400);
        let mut trailers = b"0\r\n".to_vec();
        trailers.extend(std::iter::repeat_n(b"X-T: 1\r\n".iter().copied(), 50).flatten());
        assert_eq!(dechunk(&trailers, 7).unwrap_err().status, 431);
    }
}
