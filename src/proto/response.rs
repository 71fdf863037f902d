//! Typed responses and their encoding into a connection's write buffer.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};

use super::packet::{Magic, PacketType};

/// A job handle in a reply: one of this server's own (`<prefix>:<n>`, the prefix shared by
/// every job, so making, keeping and sending one allocates nothing), or any other handle by
/// its bytes (a job restored from a journal written under another prefix). Two handles are
/// equal when their bytes are.
#[derive(Clone, Debug)]
pub enum Handle {
    Own {
        /// `<prefix>:`, one block for every handle of the run.
        prefix: Bytes,
        n: u64,
    },
    Other(Bytes),
}

impl Handle {
    /// A handle given by its bytes.
    pub const fn from_static(b: &'static [u8]) -> Handle {
        Handle::Other(Bytes::from_static(b))
    }

    pub fn len(&self) -> usize {
        match self {
            Handle::Own { prefix, n } => prefix.len() + num64(*n, &mut [0u8; 20]).len(),
            Handle::Other(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append the handle's bytes to `out`.
    pub fn put(&self, out: &mut BytesMut) {
        match self {
            Handle::Own { prefix, n } => {
                out.put_slice(prefix);
                out.put_slice(num64(*n, &mut [0u8; 20]));
            }
            Handle::Other(b) => out.put_slice(b),
        }
    }

    /// The handle as bytes of its own (allocates for an own handle: not for hot paths).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Handle::Own { .. } => {
                let mut b = BytesMut::with_capacity(self.len());
                self.put(&mut b);
                b.freeze()
            }
            Handle::Other(b) => b.clone(),
        }
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Handle::Own { prefix, n } => write!(f, "{}{n}", String::from_utf8_lossy(prefix)),
            Handle::Other(b) => write!(f, "{}", String::from_utf8_lossy(b)),
        }
    }
}

impl PartialEq<[u8]> for Handle {
    fn eq(&self, other: &[u8]) -> bool {
        match self {
            Handle::Own { prefix, n } => other
                .strip_prefix(&prefix[..])
                .is_some_and(|d| d == num64(*n, &mut [0u8; 20])),
            Handle::Other(b) => b[..] == *other,
        }
    }
}

impl PartialEq<&[u8]> for Handle {
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Handle {
    fn eq(&self, other: &&[u8; N]) -> bool {
        *self == other[..]
    }
}

impl PartialEq<Bytes> for Handle {
    fn eq(&self, other: &Bytes) -> bool {
        *self == other[..]
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Handle) -> bool {
        match (self, other) {
            (Handle::Own { prefix: p, n }, Handle::Own { prefix: q, n: m }) => n == m && p == q,
            (Handle::Other(b), h) | (h, Handle::Other(b)) => *h == b[..],
        }
    }
}

impl Eq for Handle {}

impl From<Bytes> for Handle {
    fn from(b: Bytes) -> Handle {
        Handle::Other(b)
    }
}

impl From<&Handle> for Bytes {
    fn from(h: &Handle) -> Bytes {
        h.to_bytes()
    }
}

/// One reply to a client or worker. Payloads are refcounted slices, so forwarding a worker's
/// result to several clients copies no bytes until the write buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Noop,
    NoJob,
    JobCreated {
        handle: Handle,
    },
    JobAssign {
        handle: Handle,
        func: Bytes,
        data: Bytes,
    },
    JobAssignUniq {
        handle: Handle,
        func: Bytes,
        unique: Bytes,
        data: Bytes,
    },
    JobAssignAll {
        handle: Handle,
        func: Bytes,
        unique: Bytes,
        reducer: Bytes,
        data: Bytes,
    },
    WorkStatus {
        handle: Handle,
        numerator: Bytes,
        denominator: Bytes,
    },
    /// WORK_COMPLETE, WORK_DATA, WORK_WARNING and WORK_EXCEPTION: a handle and data.
    WorkWithData {
        ptype: PacketType,
        handle: Handle,
        data: Bytes,
    },
    WorkFail {
        handle: Handle,
    },
    StatusRes {
        handle: Handle,
        known: bool,
        running: bool,
        numerator: u32,
        denominator: u32,
    },
    StatusResUnique {
        unique: Bytes,
        known: bool,
        running: bool,
        numerator: u32,
        denominator: u32,
        clients: u32,
    },
    EchoRes {
        data: Bytes,
    },
    OptionRes {
        name: Bytes,
    },
    Error {
        code: &'static str,
        text: Cow<'static, str>,
    },
    /// Admin protocol output, already formatted with its line endings.
    Text(Bytes),
}

impl Response {
    pub fn error(code: &'static str, text: impl Into<Cow<'static, str>>) -> Response {
        Response::Error {
            code,
            text: text.into(),
        }
    }

    pub fn text(s: impl Into<Bytes>) -> Response {
        Response::Text(s.into())
    }
}

fn packet(out: &mut BytesMut, ptype: PacketType, parts: &[&[u8]]) {
    let len = parts.iter().map(|p| p.len()).sum::<usize>() + parts.len().saturating_sub(1);
    out.reserve(12 + len);
    out.put_slice(&Magic::RES);
    out.put_u32(ptype as u32);
    out.put_u32(len as u32);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.put_u8(0);
        }
        out.put_slice(p);
    }
}

/// A packet whose first argument is a handle, the handle's digits written straight in.
fn packet_h(out: &mut BytesMut, ptype: PacketType, handle: &Handle, rest: &[&[u8]]) {
    let mut buf = [0u8; 20];
    let (head, tail): (&[u8], &[u8]) = match handle {
        Handle::Own { prefix, n } => (prefix, num64(*n, &mut buf)),
        Handle::Other(b) => (b, b""),
    };
    let len = head.len() + tail.len() + rest.iter().map(|p| p.len() + 1).sum::<usize>();
    out.reserve(12 + len);
    out.put_slice(&Magic::RES);
    out.put_u32(ptype as u32);
    out.put_u32(len as u32);
    out.put_slice(head);
    out.put_slice(tail);
    for p in rest {
        out.put_u8(0);
        out.put_slice(p);
    }
}

fn num(n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

fn num64(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

fn flag(b: bool) -> &'static [u8] {
    if b { b"1" } else { b"0" }
}

/// Append the wire form of `r` to `out`.
pub fn encode(r: &Response, out: &mut BytesMut) {
    use PacketType as T;
    match r {
        Response::Noop => packet(out, T::Noop, &[]),
        Response::NoJob => packet(out, T::NoJob, &[]),
        Response::JobCreated { handle } => packet_h(out, T::JobCreated, handle, &[]),
        Response::JobAssign { handle, func, data } => {
            packet_h(out, T::JobAssign, handle, &[func, data])
        }
        Response::JobAssignUniq {
            handle,
            func,
            unique,
            data,
        } => packet_h(out, T::JobAssignUniq, handle, &[func, unique, data]),
        Response::JobAssignAll {
            handle,
            func,
            unique,
            reducer,
            data,
        } => packet_h(out, T::JobAssignAll, handle, &[func, unique, reducer, data]),
        Response::WorkStatus {
            handle,
            numerator,
            denominator,
        } => packet_h(out, T::WorkStatus, handle, &[numerator, denominator]),
        Response::WorkWithData {
            ptype,
            handle,
            data,
        } => packet_h(out, *ptype, handle, &[data]),
        Response::WorkFail { handle } => packet_h(out, T::WorkFail, handle, &[]),
        Response::StatusRes {
            handle,
            known,
            running,
            numerator,
            denominator,
        } => {
            let (mut a, mut b) = ([0u8; 10], [0u8; 10]);
            let parts: [&[u8]; 4] = [
                flag(*known),
                flag(*running),
                num(*numerator, &mut a),
                num(*denominator, &mut b),
            ];
            packet_h(out, T::StatusRes, handle, &parts)
        }
        Response::StatusResUnique {
            unique,
            known,
            running,
            numerator,
            denominator,
            clients,
        } => {
            let (mut a, mut b, mut c) = ([0u8; 10], [0u8; 10], [0u8; 10]);
            let parts: [&[u8]; 6] = [
                unique,
                flag(*known),
                flag(*running),
                num(*numerator, &mut a),
                num(*denominator, &mut b),
                num(*clients, &mut c),
            ];
            packet(out, T::StatusResUnique, &parts)
        }
        Response::EchoRes { data } => packet(out, T::EchoRes, &[data]),
        Response::OptionRes { name } => packet(out, T::OptionRes, &[name]),
        Response::Error { code, text } => {
            packet(out, T::Error, &[code.as_bytes(), text.as_bytes()])
        }
        Response::Text(t) => out.put_slice(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::frame::{Incoming, Limits, decode};

    fn enc(r: &Response) -> Vec<u8> {
        let mut b = BytesMut::new();
        encode(r, &mut b);
        b.to_vec()
    }

    fn b(s: &'static [u8]) -> Bytes {
        Bytes::from_static(s)
    }

    fn h(s: &'static [u8]) -> Handle {
        Handle::from_static(s)
    }

    #[test]
    fn own_handles_encode_and_compare_as_their_bytes() {
        let own = Handle::Own {
            prefix: b(b"H:vm:"),
            n: 1234567,
        };
        assert_eq!(own.len(), 12);
        assert_eq!(own.to_bytes(), b(b"H:vm:1234567"));
        assert_eq!(own.to_string(), "H:vm:1234567");
        assert_eq!(own, h(b"H:vm:1234567"));
        assert_eq!(h(b"H:vm:1234567"), own);
        assert_ne!(own, h(b"H:vm:123456"));
        assert_ne!(own, h(b"H:vm:12345678"));
        assert!(own == b(b"H:vm:1234567"));
        let zero = Handle::Own {
            prefix: b(b"H:vm:"),
            n: 0,
        };
        assert_eq!(zero.to_string(), "H:vm:0");
        let max = Handle::Own {
            prefix: b(b"p:"),
            n: u64::MAX,
        };
        assert_eq!(max.to_string(), format!("p:{}", u64::MAX));
        for (a, o) in [
            (
                Response::JobCreated {
                    handle: own.clone(),
                },
                Response::JobCreated {
                    handle: h(b"H:vm:1234567"),
                },
            ),
            (
                Response::JobAssignAll {
                    handle: own.clone(),
                    func: b(b"f"),
                    unique: b(b"u"),
                    reducer: b(b"r"),
                    data: b(b"d"),
                },
                Response::JobAssignAll {
                    handle: h(b"H:vm:1234567"),
                    func: b(b"f"),
                    unique: b(b"u"),
                    reducer: b(b"r"),
                    data: b(b"d"),
                },
            ),
            (
                Response::StatusRes {
                    handle: own.clone(),
                    known: true,
                    running: false,
                    numerator: 3,
                    denominator: 7,
                },
                Response::StatusRes {
                    handle: h(b"H:vm:1234567"),
                    known: true,
                    running: false,
                    numerator: 3,
                    denominator: 7,
                },
            ),
        ] {
            assert_eq!(enc(&a), enc(&o));
            assert_eq!(a, o);
        }
    }

    #[test]
    fn byte_exact_forms() {
        assert_eq!(enc(&Response::Noop), b"\0RES\0\0\0\x06\0\0\0\0");
        assert_eq!(
            enc(&Response::JobCreated {
                handle: h(b"H:vm:1")
            }),
            b"\0RES\0\0\0\x08\0\0\0\x06H:vm:1"
        );
        assert_eq!(
            enc(&Response::error("INVALID_COMMAND", "Command not expected")),
            b"\0RES\0\0\0\x13\0\0\0\x24INVALID_COMMAND\0Command not expected"
        );
        assert_eq!(
            enc(&Response::StatusRes {
                handle: h(b"H:vm:1"),
                known: true,
                running: true,
                numerator: 1,
                denominator: 4
            })[12..],
            b"H:vm:1\x001\x001\x001\x004"[..]
        );
        assert_eq!(
            enc(&Response::StatusResUnique {
                unique: b(b"U1"),
                known: true,
                running: false,
                numerator: 0,
                denominator: 4294967295,
                clients: 3
            })[12..],
            b"U1\x001\x000\x000\x004294967295\x003"[..]
        );
        assert_eq!(enc(&Response::text("OK\r\n")), b"OK\r\n");
    }

    #[test]
    fn every_packet_response_decodes_back_with_its_type() {
        let all = [
            (Response::Noop, PacketType::Noop),
            (Response::NoJob, PacketType::NoJob),
            (
                Response::JobCreated { handle: h(b"h") },
                PacketType::JobCreated,
            ),
            (
                Response::JobAssign {
                    handle: h(b"h"),
                    func: b(b"f"),
                    data: b(b"d"),
                },
                PacketType::JobAssign,
            ),
            (
                Response::JobAssignUniq {
                    handle: h(b"h"),
                    func: b(b"f"),
                    unique: b(b""),
                    data: b(b"d"),
                },
                PacketType::JobAssignUniq,
            ),
            (
                Response::JobAssignAll {
                    handle: h(b"h"),
                    func: b(b"f"),
                    unique: b(b"u"),
                    reducer: b(b"r"),
                    data: b(b"d"),
                },
                PacketType::JobAssignAll,
            ),
            (
                Response::WorkStatus {
                    handle: h(b"h"),
                    numerator: b(b"1"),
                    denominator: b(b"2"),
                },
                PacketType::WorkStatus,
            ),
            (
                Response::WorkWithData {
                    ptype: PacketType::WorkComplete,
                    handle: h(b"h"),
                    data: b(b"x"),
                },
                PacketType::WorkComplete,
            ),
            (Response::WorkFail { handle: h(b"h") }, PacketType::WorkFail),
            (Response::EchoRes { data: b(b"e") }, PacketType::EchoRes),
            (
                Response::OptionRes {
                    name: b(b"exceptions"),
                },
                PacketType::OptionRes,
            ),
            (Response::error("X", "y"), PacketType::Error),
        ];
        for (r, t) in all {
            let mut buf = BytesMut::from(&enc(&r)[..]);
            // A response carries the RES magic; the decoder accepts it and keeps the type.
            match decode(&mut buf, &Limits::default()) {
                Ok(Some(Incoming::Packet(f))) => assert_eq!(f.ptype, t),
                other => panic!("{other:?}"),
            }
            assert!(buf.is_empty());
        }
    }
}
