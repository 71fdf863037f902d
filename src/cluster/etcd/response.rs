//! HTTP/1.1 response framing for etcd's gateway: heads, Content-Length and chunked bodies,
//! keep-alive (responses follow one another in request order), and a watch's never-ending
//! chunked stream of newline-separated JSON messages.
//!
//! Bounded: the reader holds at most one head or one message (`max_message` bytes) plus one
//! chunk-size or trailer line, whatever the peer sends; past that it fails with `TooLarge`.

use super::{EtcdError, Reply, RequestKind, wire};
use std::collections::VecDeque;

/// Longest chunk-size or trailer line accepted (etcd's are a few bytes and one header).
const MAX_LINE: usize = 1024;
/// Headers read from one response head (etcd sends about ten).
const MAX_HEADERS: usize = 32;

/// Incremental reader of the responses on one connection. Tell it what each request was
/// (`expect`, in the order sent), `feed` it bytes as they arrive (one at a time is fine),
/// and take replies with `next` until it says `None`.
pub struct ResponseReader {
    max: usize,
    expected: VecDeque<RequestKind>,
    /// Raw bytes not yet framed: at most a partial head or line.
    buf: Vec<u8>,
    /// How far `buf` was searched for the end of a head.
    scanned: usize,
    state: State,
    /// The body so far (unary), or the current partial message (a watch stream).
    body: Vec<u8>,
    /// Trailer bytes read after the last chunk.
    trailer: usize,
    ready: VecDeque<Result<Reply, EtcdError>>,
    /// The framing is lost: nothing more is read.
    broken: bool,
}

#[derive(Clone, Copy)]
enum State {
    Head,
    Length {
        kind: RequestKind,
        status: u16,
        left: usize,
    },
    Chunked {
        kind: RequestKind,
        status: u16,
        part: Chunk,
    },
}

#[derive(Clone, Copy)]
enum Chunk {
    Size,
    Data(usize),
    DataEnd,
    Trailers,
}

enum Step {
    /// Progress was made; try again.
    Go,
    /// More bytes are needed.
    Wait,
}

impl ResponseReader {
    /// `max_message`: the largest head, unary body, or watch message accepted.
    pub fn new(max_message: usize) -> Self {
        ResponseReader {
            max: max_message,
            expected: VecDeque::new(),
            buf: Vec::new(),
            scanned: 0,
            state: State::Head,
            body: Vec::new(),
            trailer: 0,
            ready: VecDeque::new(),
            broken: false,
        }
    }

    /// The next response on this connection answers a request of this kind.
    pub fn expect(&mut self, req_kind: RequestKind) {
        self.expected.push_back(req_kind);
        self.advance();
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        if self.broken {
            return;
        }
        self.buf.extend_from_slice(bytes);
        self.advance();
    }

    /// The next reply or error, in order; `None` until more bytes arrive.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Reply, EtcdError>> {
        self.ready.pop_front()
    }

    /// Requests sent whose responses have not fully arrived (a live watch counts).
    pub fn pending(&self) -> usize {
        self.expected.len()
    }

    fn advance(&mut self) {
        let mut pos = 0;
        while !self.broken {
            match self.step(&mut pos) {
                Ok(Step::Go) => {}
                Ok(Step::Wait) => break,
                Err(e) => {
                    self.broken = true;
                    self.ready.push_back(Err(e));
                }
            }
        }
        self.buf.drain(..pos);
        self.scanned = self.scanned.saturating_sub(pos);
        if self.broken {
            self.buf = Vec::new();
            self.body = Vec::new();
        }
    }

    fn step(&mut self, pos: &mut usize) -> Result<Step, EtcdError> {
        let avail = &self.buf[*pos..];
        match self.state {
            State::Head => {
                if avail.is_empty() {
                    return Ok(Step::Wait);
                }
                let Some(&kind) = self.expected.front() else {
                    return Err(EtcdError::Malformed("a response to no request".into()));
                };
                let from = self.scanned.saturating_sub(*pos).saturating_sub(3);
                let Some(end) = avail[from..].windows(4).position(|w| w == b"\r\n\r\n") else {
                    if avail.len() > self.max {
                        return Err(EtcdError::TooLarge);
                    }
                    self.scanned = *pos + avail.len();
                    return Ok(Step::Wait);
                };
                let len = from + end + 4;
                if len > self.max {
                    return Err(EtcdError::TooLarge);
                }
                let head = head(&avail[..len])?;
                *pos += len;
                self.scanned = *pos;
                if (100..200).contains(&head.status) {
                    return Ok(Step::Go); // an interim response; the real one follows
                }
                self.body.clear();
                self.state = if head.chunked {
                    self.trailer = 0;
                    State::Chunked {
                        kind,
                        status: head.status,
                        part: Chunk::Size,
                    }
                } else {
                    let left = match head.length {
                        Some(n) => n,
                        None if head.status == 204 || head.status == 304 => 0,
                        None => {
                            return Err(EtcdError::Malformed(
                                "a response with neither Content-Length nor chunked".into(),
                            ));
                        }
                    };
                    if left > self.max {
                        return Err(EtcdError::TooLarge);
                    }
                    State::Length {
                        kind,
                        status: head.status,
                        left,
                    }
                };
                Ok(Step::Go)
            }
            State::Length { kind, status, left } => {
                let n = left.min(avail.len());
                self.body.extend_from_slice(&avail[..n]);
                *pos += n;
                if n < left {
                    self.state = State::Length {
                        kind,
                        status,
                        left: left - n,
                    };
                    return Ok(Step::Wait);
                }
                self.finish(kind, status);
                Ok(Step::Go)
            }
            State::Chunked { kind, status, part } => {
                let streaming = kind == RequestKind::Watch && status == 200;
                match part {
                    Chunk::Size => {
                        let Some(line) = line(avail)? else {
                            return Ok(Step::Wait);
                        };
                        let text = std::str::from_utf8(&avail[..line])
                            .ok()
                            .map(|l| l.split(';').next().unwrap_or("").trim())
                            .filter(|l| !l.is_empty() && l.len() <= 16)
                            .ok_or_else(|| EtcdError::Malformed("a bad chunk size".into()))?;
                        let size = usize::from_str_radix(text, 16)
                            .map_err(|_| EtcdError::Malformed("a bad chunk size".into()))?;
                        *pos += line + 2;
                        let part = if size == 0 {
                            Chunk::Trailers
                        } else {
                            Chunk::Data(size)
                        };
                        self.state = State::Chunked { kind, status, part };
                        Ok(Step::Go)
                    }
                    Chunk::Data(left) => {
                        if avail.is_empty() {
                            return Ok(Step::Wait);
                        }
                        let n = left.min(avail.len());
                        self.body.extend_from_slice(&avail[..n]);
                        *pos += n;
                        if streaming {
                            self.split_messages();
                        }
                        if self.body.len() > self.max {
                            return Err(EtcdError::TooLarge);
                        }
                        let part = if n < left {
                            Chunk::Data(left - n)
                        } else {
                            Chunk::DataEnd
                        };
                        self.state = State::Chunked { kind, status, part };
                        Ok(Step::Go)
                    }
                    Chunk::DataEnd => {
                        if avail.len() < 2 {
                            return Ok(Step::Wait);
                        }
                        if &avail[..2] != b"\r\n" {
                            return Err(EtcdError::Malformed("a chunk without its CRLF".into()));
                        }
                        *pos += 2;
                        self.state = State::Chunked {
                            kind,
                            status,
                            part: Chunk::Size,
                        };
                        Ok(Step::Go)
                    }
                    Chunk::Trailers => {
                        let Some(line) = line(avail)? else {
                            return Ok(Step::Wait);
                        };
                        *pos += line + 2;
                        self.trailer += line + 2;
                        if self.trailer > self.max {
                            return Err(EtcdError::TooLarge);
                        }
                        if line > 0 {
                            return Ok(Step::Go); // a trailer field: not needed
                        }
                        if streaming {
                            let rest = std::mem::take(&mut self.body);
                            if !blank(&rest) {
                                self.ready.push_back(wire::watch(&rest));
                            }
                            self.expected.pop_front();
                            self.state = State::Head;
                            return Err(EtcdError::Malformed("the watch stream ended".into()));
                        }
                        self.finish(kind, status);
                        Ok(Step::Go)
                    }
                }
            }
        }
    }

    /// A unary body is complete: decode it and await the next response.
    fn finish(&mut self, kind: RequestKind, status: u16) {
        let body = std::mem::take(&mut self.body);
        self.ready.push_back(wire::unary(kind, status, &body));
        self.expected.pop_front();
        self.state = State::Head;
    }

    /// Each complete line of a watch stream is one message.
    fn split_messages(&mut self) {
        let mut start = 0;
        while let Some(nl) = self.body[start..].iter().position(|&b| b == b'\n') {
            let msg = &self.body[start..start + nl];
            if !blank(msg) {
                self.ready.push_back(wire::watch(msg));
            }
            start += nl + 1;
        }
        self.body.drain(..start);
    }
}

struct Head {
    status: u16,
    length: Option<usize>,
    chunked: bool,
}

fn head(bytes: &[u8]) -> Result<Head, EtcdError> {
    let bad = |what: &str| EtcdError::Malformed(format!("a bad response head: {what}"));
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(bad("incomplete")),
        Err(e) => return Err(bad(&e.to_string())),
    }
    let status = resp.code.ok_or_else(|| bad("no status"))?;
    let mut length = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| bad("Content-Length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(bad("two Content-Lengths"));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            if v.trim() != "chunked" {
                return Err(bad("a transfer coding other than chunked"));
            }
            chunked = true;
        }
    }
    if chunked && length.is_some() {
        return Err(bad("both Content-Length and chunked"));
    }
    Ok(Head {
        status,
        length,
        chunked,
    })
}

/// The length of the CRLF-ended line at the start of `avail`, if it is all there.
fn line(avail: &[u8]) -> Result<Option<usize>, EtcdError> {
    match avail.windows(2).position(|w| w == b"\r\n") {
        Some(n) if n <= MAX_LINE => Ok(Some(n)),
        Some(_) => Err(EtcdError::Malformed("a chunk line too long".into())),
        None if avail.len() > MAX_LINE + 1 => {
            Err(EtcdError::Malformed("a chunk line too long".into()))
        }
        None => Ok(None),
    }
}

fn blank(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
impl ResponseReader {
    /// Bytes held between calls (raw and decoded): the bound the tests check.
    pub(super) fn held(&self) -> usize {
        self.buf.len() + self.body.len()
    }
}
