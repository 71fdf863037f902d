//! A small blocking Gearman client and worker library for the `work`, `submit` and `admin`
//! commands: one TCP connection per `Conn`, request packets out, response packets and admin
//! lines in through the server's own codec. No async and no threads here; it must not touch
//! the engine or the reactor.
//!
//! - `conn`: one blocking connection to a Gearman server; `stream`: its socket, plain or TLS.
//! - `servers`: which servers the commands talk to (`-s`, `$GEARMAN_SERVERS`).
//! - `duration`: durations and points in time as the command line gives them.
//! - `etcd`: a blocking etcd client on the gateway codec.
//! - `ping`: one ping to a server's HTTP port, for `gearwheel ping`.

pub mod conn;
pub mod duration;
pub mod etcd;
pub mod ping;
pub mod servers;
mod stream;

/// `--ssl` settings of a client command (an empty type in a build without the `tls` feature,
/// whose commands refuse `--ssl`).
#[cfg(feature = "tls")]
pub use crate::tls::ClientTls;
pub use conn::{Assignment, Conn, Error, SubmitKind};
#[cfg(not(feature = "tls"))]
pub enum ClientTls {}

/// The `--ssl*` flags of `work`, `submit` and `admin` made into TLS settings (`None` without
/// `--ssl`).
pub fn tls_from_flags(
    ssl: bool,
    ca_file: &Option<String>,
    certificate: &Option<String>,
    key: &Option<String>,
) -> Result<Option<ClientTls>, String> {
    #[cfg(feature = "tls")]
    {
        let path = |f: &Option<String>| f.as_ref().map(std::path::PathBuf::from);
        let (ca, cert, k) = (path(ca_file), path(certificate), path(key));
        ClientTls::from_flags(ssl, ca.as_deref(), cert.as_deref(), k.as_deref())
    }
    #[cfg(not(feature = "tls"))]
    {
        match ssl || ca_file.is_some() || certificate.is_some() || key.is_some() {
            true => Err("this gearwheel was built without TLS (cargo feature tls)".into()),
            false => Ok(None),
        }
    }
}

pub use duration::{format_duration, parse_at, parse_duration};

use bytes::{BufMut, Bytes, BytesMut};

use crate::proto::packet::{Magic, PacketType};

/// The port a server address without one gets, as every Gearman client does.
pub const DEFAULT_PORT: u16 = 4730;

/// One request packet's bytes: `\0REQ`, the type, the length, and `args` joined with NUL.
pub fn encode_request(ptype: PacketType, args: &[&[u8]]) -> Bytes {
    let len = args.iter().map(|a| a.len()).sum::<usize>() + args.len().saturating_sub(1);
    let mut out = BytesMut::with_capacity(12 + len);
    out.put_slice(&Magic::REQ);
    out.put_u32(ptype as u32);
    out.put_u32(len as u32);
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.put_u8(0);
        }
        out.put_slice(a);
    }
    out.freeze()
}

/// Split a response body into at most `n` NUL-separated arguments; the last one keeps any
/// further NULs (it is the data). Missing arguments are empty.
pub fn split_args(body: &Bytes, n: usize) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    while out.len() + 1 < n {
        match body[start..].iter().position(|&b| b == 0) {
            Some(i) => {
                out.push(body.slice(start..start + i));
                start += i + 1;
            }
            None => break,
        }
    }
    out.push(body.slice(start..));
    out.resize(n, Bytes::new());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::frame::{Incoming, Limits, decode};

    #[test]
    fn requests_decode_with_the_servers_codec() {
        let b = encode_request(PacketType::SubmitJob, &[b"f", b"u", b"da\0ta"]);
        let mut buf = BytesMut::from(&b[..]);
        match decode(&mut buf, &Limits::default()) {
            Ok(Some(Incoming::Packet(f))) => {
                assert_eq!(f.magic, Magic::Req);
                assert_eq!(f.ptype, PacketType::SubmitJob);
                assert_eq!(&f.body[..], b"f\0u\0da\0ta");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            &encode_request(PacketType::GrabJobUniq, &[])[..],
            b"\0REQ\0\0\0\x1e\0\0\0\0"
        );
    }

    #[test]
    fn args_split_keeps_nuls_in_the_last() {
        let b = Bytes::from_static(b"H:x:1\0fn\0uniq\0a\0b");
        assert_eq!(
            split_args(&b, 4),
            vec![
                Bytes::from_static(b"H:x:1"),
                Bytes::from_static(b"fn"),
                Bytes::from_static(b"uniq"),
                Bytes::from_static(b"a\0b")
            ]
        );
        assert_eq!(
            split_args(&Bytes::from_static(b"H:x:1"), 2),
            vec![Bytes::from_static(b"H:x:1"), Bytes::new()]
        );
        assert_eq!(split_args(&Bytes::new(), 1), vec![Bytes::new()]);
    }
}
