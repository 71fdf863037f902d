//! Typed responses and their encoding into a connection's write buffer.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};

use super::packet::{Magic, PacketType};

/// One reply to a client or worker. Payloads are refcounted slices, so forwarding a worker's
/// result to several clients copies no bytes until the write buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Noop,
    NoJob,
    JobCreated {
        handle: Bytes,
    },
    JobAssign {
        handle: Bytes,
        func: Bytes,
        data: Bytes,
    },
    JobAssignUniq {
        handle: Bytes,
        func: Bytes,
        unique: Bytes,
        data: Bytes,
    },
    JobAssignAll {
        handle: Bytes,
        func: Bytes,
        unique: Bytes,
        reducer: Bytes,
        data: Bytes,
    },
    WorkStatus {
        handle: Bytes,
        numerator: Bytes,
        denominator: Bytes,
    },
    /// WORK_COMPLETE, WORK_DATA, WORK_WARNING and WORK_EXCEPTION: a handle and data.
    WorkWithData {
        ptype: PacketType,
        handle: Bytes,
        data: Bytes,
    },
    WorkFail {
        handle: Bytes,
    },
    StatusRes {
        handle: Bytes,
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

fn flag(b: bool) -> &'static [u8] {
    if b { b"1" } else { b"0" }
}

/// Append the wire form of `r` to `out`.
pub fn encode(r: &Response, out: &mut BytesMut) {
    use PacketType as T;
    match r {
        Response::Noop => packet(out, T::Noop, &[]),
        Response::NoJob => packet(out, T::NoJob, &[]),
        Response::JobCreated { handle } => packet(out, T::JobCreated, &[handle]),
        Response::JobAssign { handle, func, data } => {
            packet(out, T::JobAssign, &[handle, func, data])
        }
        Response::JobAssignUniq {
            handle,
            func,
            unique,
            data,
        } => packet(out, T::JobAssignUniq, &[handle, func, unique, data]),
        Response::JobAssignAll {
            handle,
            func,
            unique,
            reducer,
            data,
        } => packet(out, T::JobAssignAll, &[handle, func, unique, reducer, data]),
        Response::WorkStatus {
            handle,
            numerator,
            denominator,
        } => packet(out, T::WorkStatus, &[handle, numerator, denominator]),
        Response::WorkWithData {
            ptype,
            handle,
            data,
        } => packet(out, *ptype, &[handle, data]),
        Response::WorkFail { handle } => packet(out, T::WorkFail, &[handle]),
        Response::StatusRes {
            handle,
            known,
            running,
            numerator,
            denominator,
        } => {
            let (mut a, mut b) = ([0u8; 10], [0u8; 10]);
            let parts: [&[u8]; 5] = [
                handle,
                flag(*known),
                flag(*running),
                num(*numerator, &mut a),
                num(*denominator, &mut b),
            ];
            packet(out, T::StatusRes, &parts)
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

    #[test]
    fn byte_exact_forms() {
        assert_eq!(enc(&Response::Noop), b"\0RES\0\0\0\x06\0\0\0\0");
        assert_eq!(
            enc(&Response::JobCreated {
                handle: b(b"H:vm:1")
            }),
            b"\0RES\0\0\0\x08\0\0\0\x06H:vm:1"
        );
        assert_eq!(
            enc(&Response::error("INVALID_COMMAND", "Command not expected")),
            b"\0RES\0\0\0\x13\0\0\0\x24INVALID_COMMAND\0Command not expected"
        );
        assert_eq!(
            enc(&Response::StatusRes {
                handle: b(b"H:vm:1"),
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
                Response::JobCreated { handle: b(b"h") },
                PacketType::JobCreated,
            ),
            (
                Response::JobAssign {
                    handle: b(b"h"),
                    func: b(b"f"),
                    data: b(b"d"),
                },
                PacketType::JobAssign,
            ),
            (
                Response::JobAssignUniq {
                    handle: b(b"h"),
                    func: b(b"f"),
                    unique: b(b""),
                    data: b(b"d"),
                },
                PacketType::JobAssignUniq,
            ),
            (
                Response::JobAssignAll {
                    handle: b(b"h"),
                    func: b(b"f"),
                    unique: b(b"u"),
                    reducer: b(b"r"),
                    data: b(b"d"),
                },
                PacketType::JobAssignAll,
            ),
            (
                Response::WorkStatus {
                    handle: b(b"h"),
                    numerator: b(b"1"),
                    denominator: b(b"2"),
                },
                PacketType::WorkStatus,
            ),
            (
                Response::WorkWithData {
                    ptype: PacketType::WorkComplete,
                    handle: b(b"h"),
                    data: b(b"x"),
                },
                PacketType::WorkComplete,
            ),
            (Response::WorkFail { handle: b(b"h") }, PacketType::WorkFail),
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
