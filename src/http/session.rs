//! One connection's request framing: heads and bodies taken off the front of the read buffer
//! one request at a time, so that pipelined requests are answered in order, with
//! `100 Continue` when a client waits for it. Pure: the reactor owns the buffer and the socket.

use bytes::{Buf, Bytes, BytesMut};

use super::HttpLimits;
use super::parse::{BodyKind, Chunked, Head, HttpError, parse_head};

enum State {
    Head,
    Body {
        head: Box<Head>,
        body: BodyState,
        /// `100 Continue` was sent (or is not wanted).
        continued: bool,
    },
}

enum BodyState {
    /// The body stays in the read buffer until all of it is there, then is split off
    /// without a copy.
    Length(usize),
    Chunked(Chunked),
}

/// What the front of the read buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Not a whole request yet.
    More,
    /// Write `100 Continue`, then poll again.
    Continue,
    /// A whole request: its head and (decoded) body.
    Request(Box<Head>, Bytes),
    /// Bad input: answer with its status and close.
    Error(HttpError),
}

pub struct Session {
    limits: HttpLimits,
    state: State,
}

impl Session {
    pub fn new(limits: HttpLimits) -> Self {
        Session {
            limits,
            state: State::Head,
        }
    }

    /// Take the next request off the front of `buf`, if it is all there.
    pub fn poll(&mut self, buf: &mut BytesMut) -> Next {
        loop {
            match &mut self.state {
                State::Head => match parse_head(buf, &self.limits) {
                    Ok(None) => return Next::More,
                    Err(e) => return Next::Error(e),
                    Ok(Some((head, n))) => {
                        buf.advance(n);
                        let body = match head.body {
                            BodyKind::Length(n) => BodyState::Length(n),
                            BodyKind::Chunked => BodyState::Chunked(Chunked::new(&self.limits)),
                        };
                        let continued = !head.expect_continue;
                        self.state = State::Body {
                            head: Box::new(head),
                            body,
                            continued,
                        };
                    }
                },
                State::Body {
                    body, continued, ..
                } => {
                    let complete = match body {
                        BodyState::Length(n) => buf.len() >= *n,
                        BodyState::Chunked(c) => match c.feed(buf) {
                            Ok(done) => done,
                            Err(e) => return Next::Error(e),
                        },
                    };
                    if !complete {
                        // Only a client that has sent nothing of its body yet is waiting.
                        let untouched = match body {
                            BodyState::Length(_) => buf.is_empty(),
                            BodyState::Chunked(c) => buf.is_empty() && c.body.is_empty(),
                        };
                        if !*continued && untouched {
                            *continued = true;
                            return Next::Continue;
                        }
                        return Next::More;
                    }
                    let State::Body { head, body, .. } =
                        std::mem::replace(&mut self.state, State::Head)
                    else {
                        return Next::More;
                    };
                    let data = match body {
                        BodyState::Length(n) => buf.split_to(n).freeze(),
                        BodyState::Chunked(c) => c.body.freeze(),
                    };
                    return Next::Request(head, data);
                }
            }
        }
    }

    /// Bytes the read buffer must be able to hold for the request in progress: a
    /// Content-Length body waits there whole.
    pub fn needs(&self) -> usize {
        match &self.state {
            State::Body {
                body: BodyState::Length(n),
                ..
            } => *n,
            _ => 0,
        }
    }

    /// A request has begun: some of its head, or its body, is in.
    pub fn mid_request(&self, buf: &[u8]) -> bool {
        match self.state {
            State::Body { .. } => true,
            State::Head => buf.iter().any(|&b| b != b'\r' && b != b'\n'),
        }
    }

    /// Its body is being read.
    pub fn in_body(&self) -> bool {
        matches!(self.state, State::Body { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::parse::Method;

    fn lim() -> HttpLimits {
        HttpLimits {
            max_line: 256,
            max_head: 1024,
            max_body: 64,
        }
    }

    type Seen = Vec<(Method, String, Vec<u8>)>;

    /// Feed `raw` in pieces of `step` bytes; collect (method, target, body) of every request.
    fn run(raw: &[u8], step: usize) -> (Seen, Vec<Next>) {
        let mut s = Session::new(lim());
        let mut buf = BytesMut::new();
        let mut reqs = Vec::new();
        let mut other = Vec::new();
        for piece in raw.chunks(step.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match s.poll(&mut buf) {
                    Next::More => break,
                    Next::Request(h, b) => reqs.push((h.method, h.target, b.to_vec())),
                    n @ Next::Continue => other.push(n),
                    n @ Next::Error(_) => {
                        other.push(n);
                        return (reqs, other);
                    }
                }
            }
        }
        (reqs, other)
    }

    const PIPELINE: &[u8] = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc\
GET /status HTTP/1.1\r\n\r\n\
PUT /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n\
POST /c HTTP/1.0\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn pipelined_requests_split_at_every_byte() {
        let want = vec![
            (Method::Post, "/a".to_string(), b"abc".to_vec()),
            (Method::Get, "/status".to_string(), vec![]),
            (Method::Put, "/b".to_string(), b"xy".to_vec()),
            (Method::Post, "/c".to_string(), vec![]),
        ];
        for step in 1..=PIPELINE.len() {
            let (reqs, other) = run(PIPELINE, step);
            assert_eq!(reqs, want, "step {step}");
            assert!(other.is_empty(), "step {step}: {other:?}");
        }
        // Split into two pieces at every offset.
        for cut in 0..PIPELINE.len() {
            let mut s = Session::new(lim());
            let mut buf = BytesMut::new();
            let mut n = 0;
            for piece in [&PIPELINE[..cut], &PIPELINE[cut..]] {
                buf.extend_from_slice(piece);
                while let Next::Request(..) = s.poll(&mut buf) {
                    n += 1;
                }
            }
            assert_eq!(n, 4, "cut at {cut}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn continue_once_when_the_body_has_not_started() {
        let mut s = Session::new(lim());
        let mut buf = BytesMut::from(
            &b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"[..],
        );
        assert_eq!(s.poll(&mut buf), Next::Continue);
        assert_eq!(s.poll(&mut buf), Next::More);
        assert!(s.mid_request(&buf) && s.in_body());
        assert_eq!(s.needs(), 2);
        buf.extend_from_slice(b"hi");
        assert!(matches!(s.poll(&mut buf), Next::Request(_, b) if &b[..] == b"hi"));
        // The body came with the head: no 100.
        let mut buf = BytesMut::from(
            &b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"[..],
        );
        assert!(matches!(s.poll(&mut buf), Next::Request(..)));
        // No body: no 100.
        let mut buf = BytesMut::from(&b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"[..]);
        assert!(matches!(s.poll(&mut buf), Next::Request(..)));
    }

    /// Random bytes and mutated requests never panic the session or the router, and every
    /// poll either makes progress or stops.
    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet =
            b"GETPOSHAD /\r\n:0123456789abcdefxX-%;chunkedContent-LengthTransfer-Encoding\0\xff ";
        for round in 0..3000 {
            let mut input = if round % 2 == 0 {
                PIPELINE.to_vec()
            } else {
                Vec::new()
            };
            for _ in 0..(rnd() % 40) {
                let pos = if input.is_empty() {
                    0
                } else {
                    (rnd() as usize) % input.len()
                };
                let byte = alphabet[(rnd() as usize) % alphabet.len()];
                match rnd() % 3 {
                    0 if !input.is_empty() => input[pos] = byte,
                    1 if !input.is_empty() => {
                        input.remove(pos);
                    }
                    _ => input.insert(pos, byte),
                }
            }
            let mut s = Session::new(lim());
            let mut buf = BytesMut::new();
            'feed: for piece in input.chunks(1 + (rnd() % 17) as usize) {
                buf.extend_from_slice(piece);
                for _ in 0..1000 {
                    match s.poll(&mut buf) {
                        Next::More => break,
                        Next::Continue => {}
                        Next::Request(h, body) => {
                            let _ = crate::http::route::route(&h, body);
                        }
                        Next::Error(e) => {
                            assert!((400..600).contains(&e.status));
                            break 'feed;
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn errors_and_state() {
        let (_, other) = run(b"POST /a HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 7);
        assert!(matches!(&other[..], [Next::Error(e)] if e.status == 413));
        let (_, other) = run(
            b"PUT /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n",
            3,
        );
        assert!(matches!(&other[..], [Next::Error(e)] if e.status == 413));
        let (reqs, other) = run(b"GET / HTTP/1.1\r\n\r\nBLAH\r\n\r\n", 5);
        assert_eq!(reqs.len(), 1);
        assert!(matches!(&other[..], [Next::Error(e)] if e.status == 400 || e.status == 505));
        let s = Session::new(lim());
        assert!(!s.mid_request(b"\r\n"));
        assert!(s.mid_request(b"G"));
        assert_eq!(s.needs(), 0);
    }
}
