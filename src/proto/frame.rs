//! The frame decoder: splits a connection's read buffer into binary packets and admin text
//! lines. It checks, then parses, then consumes; an incomplete frame is not an error.

use bytes::{Buf, Bytes, BytesMut};

use super::packet::{Magic, PacketType};

/// Size of the binary header: magic, type, body length.
pub const HEADER_LEN: usize = 12;

/// One binary packet whose body is a refcounted slice of the read buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub magic: Magic,
    pub ptype: PacketType,
    pub body: Bytes,
}

/// What the decoder found at the front of the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    Packet(Frame),
    /// An admin text line without its `\n` (and without one trailing `\r`).
    Admin(Bytes),
}

/// A framing error. Each one leaves the stream out of sync, so the connection gets an error
/// reply and is closed after it is flushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    BadMagic([u8; 4]),
    UnknownType(u32),
    TooLarge { declared: u64, limit: usize },
    AdminLineTooLong { limit: usize },
}

impl DecodeError {
    /// The ERROR packet's code and text for a binary framing error, or `None` for an admin one.
    pub fn error_packet(&self) -> Option<(&'static str, String)> {
        match self {
            DecodeError::BadMagic(m) => Some((
                "INVALID_MAGIC",
                format!("Request magic expected, got {}", m.escape_ascii()),
            )),
            DecodeError::UnknownType(t) => {
                Some(("INVALID_COMMAND", format!("Unknown command number {t}")))
            }
            DecodeError::TooLarge { declared, limit } => Some((
                "ARGUMENT_TOO_LARGE",
                format!("Packet of {declared} bytes is over the limit of {limit} bytes"),
            )),
            DecodeError::AdminLineTooLong { .. } => None,
        }
    }
}

/// Limits the decoder enforces before anything is buffered.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest body a binary packet may declare.
    pub max_packet: usize,
    /// Longest admin text line, including its line ending.
    pub max_admin_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_packet: 64 << 20,
            max_admin_line: 8192,
        }
    }
}

/// How many bytes the frame at the front of `buf` needs in all, when the header says so; the
/// reactor reserves exactly that for a large body instead of growing the buffer step by step.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    if buf.len() < HEADER_LEN || buf[0] != 0 {
        return None;
    }
    let len = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
    Some(HEADER_LEN + len)
}

/// Take one frame off the front of `buf`. `Ok(None)` means more bytes are needed.
pub fn decode(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Incoming>, DecodeError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first != 0 {
        return decode_admin(buf, limits);
    }
    if buf.len() < 4 {
        // A short prefix that cannot become a valid magic is already an error.
        if !Magic::REQ.starts_with(&buf[..]) && !Magic::RES.starts_with(&buf[..]) {
            let mut m = [0u8; 4];
            m[..buf.len()].copy_from_slice(buf);
            return Err(DecodeError::BadMagic(m));
        }
        return Ok(None);
    }
    let magic = Magic::from_bytes(&buf[..4])
        .ok_or_else(|| DecodeError::BadMagic([buf[0], buf[1], buf[2], buf[3]]))?;
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let num = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let ptype = PacketType::from_u32(num).ok_or(DecodeError::UnknownType(num))?;
    let len = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
    if len > limits.max_packet {
        return Err(DecodeError::TooLarge {
            declared: len as u64,
            limit: limits.max_packet,
        });
    }
    if buf.len() < HEADER_LEN + len {
        return Ok(None);
    }
    buf.advance(HEADER_LEN);
    let body = buf.split_to(len).freeze();
    Ok(Some(Incoming::Packet(Frame { magic, ptype, body })))
}

fn decode_admin(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Incoming>, DecodeError> {
    let window = &buf[..buf.len().min(limits.max_admin_line)];
    match window.iter().position(|&b| b == b'\n') {
        Some(nl) => {
            let mut line = buf.split_to(nl + 1);
            line.truncate(nl);
            if line.last() == Some(&b'\r') {
                line.truncate(nl - 1);
            }
            Ok(Some(Incoming::Admin(line.freeze())))
        }
        None if buf.len() >= limits.max_admin_line => Err(DecodeError::AdminLineTooLong {
            limit: limits.max_admin_line,
        }),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(magic: &[u8; 4], t: u32, body: &[u8]) -> Vec<u8> {
        let mut v = magic.to_vec();
        v.extend_from_slice(&t.to_be_bytes());
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn decode_all(input: &[u8], limits: &Limits) -> (Vec<Incoming>, Option<DecodeError>, usize) {
        let mut buf = BytesMut::from(input);
        let mut out = vec![];
        loop {
            match decode(&mut buf, limits) {
                Ok(Some(i)) => out.push(i),
                Ok(None) => return (out, None, buf.len()),
                Err(e) => return (out, Some(e), buf.len()),
            }
        }
    }

    #[test]
    fn decodes_packets_and_admin_lines_mixed() {
        let mut s = packet(b"\0REQ", 16, b"hello");
        s.extend_from_slice(b"status\r\n");
        s.extend_from_slice(&packet(b"\0REQ", 9, b""));
        s.extend_from_slice(b"workers\n");
        let (out, err, rest) = decode_all(&s, &Limits::default());
        assert_eq!(err, None);
        assert_eq!(rest, 0);
        assert_eq!(
            out,
            vec![
                Incoming::Packet(Frame {
                    magic: Magic::Req,
                    ptype: PacketType::EchoReq,
                    body: Bytes::from_static(b"hello")
                }),
                Incoming::Admin(Bytes::from_static(b"status")),
                Incoming::Packet(Frame {
                    magic: Magic::Req,
                    ptype: PacketType::GrabJob,
                    body: Bytes::new()
                }),
                Incoming::Admin(Bytes::from_static(b"workers")),
            ]
        );
    }

    #[test]
    fn a_stream_split_at_every_offset_decodes_the_same() {
        let mut s = packet(b"\0REQ", 7, b"fn\0uniq\0payload");
        s.extend_from_slice(b"status\n");
        s.extend_from_slice(&packet(b"\0REQ", 3, b""));
        s.extend_from_slice(&packet(b"\0RES", 16, b"x"));
        let limits = Limits::default();
        let (whole, _, _) = decode_all(&s, &limits);
        assert_eq!(whole.len(), 4);
        for cut in 0..=s.len() {
            let mut buf = BytesMut::new();
            let mut out = vec![];
            for part in [&s[..cut], &s[cut..]] {
                buf.extend_from_slice(part);
                while let Some(i) = decode(&mut buf, &limits).expect("valid stream") {
                    out.push(i);
                }
            }
            assert_eq!(out, whole, "split at {cut}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn byte_by_byte_feeding_works() {
        let s = packet(b"\0REQ", 12, b"H:x:1\x001\x002");
        let mut buf = BytesMut::new();
        let mut got = None;
        for b in &s {
            buf.extend_from_slice(&[*b]);
            if let Some(i) = decode(&mut buf, &Limits::default()).unwrap() {
                got = Some(i);
            }
        }
        assert!(matches!(
            got,
            Some(Incoming::Packet(Frame {
                ptype: PacketType::WorkStatus,
                ..
            }))
        ));
    }

    #[test]
    fn oversize_is_refused_from_the_header_alone() {
        let limits = Limits {
            max_packet: 100,
            max_admin_line: 64,
        };
        let mut header = b"\0REQ".to_vec();
        header.extend_from_slice(&16u32.to_be_bytes());
        header.extend_from_slice(&101u32.to_be_bytes());
        let (_, err, _) = decode_all(&header, &limits);
        assert_eq!(
            err,
            Some(DecodeError::TooLarge {
                declared: 101,
                limit: 100
            })
        );
        // Exactly the limit is fine.
        let ok = packet(b"\0REQ", 16, &[7u8; 100]);
        let (out, err, _) = decode_all(&ok, &limits);
        assert_eq!((out.len(), err), (1, None));
    }

    #[test]
    fn bad_magic_and_unknown_types_are_errors() {
        let l = Limits::default();
        assert_eq!(
            decode_all(&packet(b"\0XYZ", 16, b""), &l).1,
            Some(DecodeError::BadMagic(*b"\0XYZ"))
        );
        assert_eq!(
            decode_all(b"\0Q", &l).1,
            Some(DecodeError::BadMagic(*b"\0Q\0\0"))
        );
        assert_eq!(
            decode_all(&packet(b"\0REQ", 0, b""), &l).1,
            Some(DecodeError::UnknownType(0))
        );
        assert_eq!(
            decode_all(&packet(b"\0REQ", 99, b""), &l).1,
            Some(DecodeError::UnknownType(99))
        );
        // Incomplete headers are not errors.
        assert_eq!(decode_all(b"\0RE", &l), (vec![], None, 3));
        assert_eq!(decode_all(b"\0REQ\0\0", &l), (vec![], None, 6));
    }

    #[test]
    fn admin_lines_are_bounded() {
        let l = Limits {
            max_packet: 100,
            max_admin_line: 16,
        };
        assert_eq!(
            decode_all(b"0123456789abcdef", &l).1,
            Some(DecodeError::AdminLineTooLong { limit: 16 })
        );
        let (out, err, rest) = decode_all(b"0123456789abcd\r\n", &l);
        assert_eq!((out.len(), err, rest), (1, None, 0));
        assert_eq!(decode_all(b"short", &l), (vec![], None, 5));
        // Only one trailing CR is stripped.
        let (out, _, _) = decode_all(b"x\r\r\n", &l);
        assert_eq!(out, vec![Incoming::Admin(Bytes::from_static(b"x\r"))]);
    }

    #[test]
    fn frame_len_reads_the_header() {
        let p = packet(b"\0REQ", 16, &[0u8; 300]);
        assert_eq!(frame_len(&p[..12]), Some(312));
        assert_eq!(frame_len(&p[..11]), None);
        assert_eq!(frame_len(b"status\nxxxxxx"), None);
    }
}
