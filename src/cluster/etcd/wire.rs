//! etcd's JSON bodies (the gateway's protobuf-to-JSON mapping) and their decoding into
//! replies. Every field may be absent (zero values are left out); int64 fields come as
//! strings; keys and values as base64.

use super::{EtcdError, Kv, Reply, RequestKind, WatchEvent};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use std::fmt;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Header {
    #[serde(deserialize_with = "int")]
    revision: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireKv {
    #[serde(deserialize_with = "bytes")]
    key: Vec<u8>,
    #[serde(deserialize_with = "bytes")]
    value: Vec<u8>,
    #[serde(deserialize_with = "int")]
    create_revision: i64,
    #[serde(deserialize_with = "int")]
    mod_revision: i64,
    #[serde(deserialize_with = "int")]
    version: i64,
    #[serde(deserialize_with = "int")]
    lease: i64,
}

impl From<WireKv> for Kv {
    fn from(w: WireKv) -> Kv {
        Kv {
            key: w.key,
            value: w.value,
            create_revision: w.create_revision,
            mod_revision: w.mod_revision,
            version: w.version,
            lease: w.lease,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Lease {
    #[serde(rename = "ID", deserialize_with = "int")]
    id: i64,
    #[serde(rename = "TTL", deserialize_with = "int")]
    ttl: i64,
    /// LeaseGrant's own error string (a grant etcd could not make).
    error: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Range {
    header: Header,
    kvs: Vec<WireKv>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Deleted {
    header: Header,
    #[serde(deserialize_with = "int")]
    deleted: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TxnResponse {
    header: Header,
    succeeded: bool,
    responses: Vec<ResponseOp>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ResponseOp {
    response_range: Option<Range>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Watch {
    header: Header,
    created: bool,
    canceled: bool,
    #[serde(deserialize_with = "int")]
    compact_revision: i64,
    cancel_reason: String,
    events: Vec<Event>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Event {
    /// "PUT" is the zero value, so it is left out; "DELETE" is written.
    #[serde(rename = "type")]
    kind: String,
    kv: WireKv,
}

/// A streamed message (keepalive, watch): `{"result":...}` or `{"error":...}`.
#[derive(Deserialize)]
struct Streamed<T> {
    result: Option<T>,
    error: Option<StreamError>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StreamError {
    #[serde(deserialize_with = "int")]
    grpc_code: i64,
    message: String,
}

/// The body of a failed unary call: `{"error":"...","code":5,"message":"..."}`.
#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default, deserialize_with = "int")]
    code: i64,
    message: String,
}

/// Decode the whole body of a unary response with HTTP status `status`.
pub(super) fn unary(kind: RequestKind, status: u16, body: &[u8]) -> Result<Reply, EtcdError> {
    if status != 200 {
        return Err(failure(status, body));
    }
    Ok(match kind {
        RequestKind::LeaseGrant => {
            let l: Lease = parse(body)?;
            if !l.error.is_empty() {
                return Err(EtcdError::Grpc {
                    code: 0,
                    message: l.error,
                });
            }
            Reply::LeaseGranted {
                lease: l.id,
                ttl_secs: l.ttl,
            }
        }
        RequestKind::LeaseKeepAlive => {
            let l: Lease = streamed(body)?;
            Reply::LeaseKeptAlive {
                lease: l.id,
                ttl_secs: l.ttl,
            }
        }
        RequestKind::LeaseRevoke => {
            let _: Range = parse(body)?;
            Reply::LeaseRevoked
        }
        RequestKind::Range => {
            let r: Range = parse(body)?;
            Reply::Range {
                revision: r.header.revision,
                kvs: r.kvs.into_iter().map(Kv::from).collect(),
            }
        }
        RequestKind::Put => {
            let r: Range = parse(body)?;
            Reply::Put {
                revision: r.header.revision,
            }
        }
        RequestKind::Delete => {
            let d: Deleted = parse(body)?;
            Reply::Deleted {
                revision: d.header.revision,
                deleted: d.deleted,
            }
        }
        RequestKind::Txn => {
            let t: TxnResponse = parse(body)?;
            Reply::Txn {
                succeeded: t.succeeded,
                revision: t.header.revision,
                ranges: t
                    .responses
                    .into_iter()
                    .filter_map(|r| r.response_range)
                    .map(|r| r.kvs.into_iter().map(Kv::from).collect())
                    .collect(),
            }
        }
        RequestKind::Watch => watch(body)?,
    })
}

/// Decode one message of a watch stream.
pub(super) fn watch(msg: &[u8]) -> Result<Reply, EtcdError> {
    let w: Watch = streamed(msg)?;
    Ok(if w.canceled {
        Reply::WatchCanceled {
            compact_revision: w.compact_revision,
            reason: w.cancel_reason,
        }
    } else if w.created {
        Reply::WatchCreated {
            revision: w.header.revision,
        }
    } else {
        Reply::WatchEvents {
            revision: w.header.revision,
            events: w
                .events
                .into_iter()
                .map(|e| WatchEvent {
                    deleted: e.kind == "DELETE",
                    kv: e.kv.into(),
                })
                .collect(),
        }
    })
}

/// A non-200 answer: etcd's JSON error when it is one, else the start of the body.
pub(super) fn failure(status: u16, body: &[u8]) -> EtcdError {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(e) => EtcdError::Grpc {
            code: e.code,
            message: e.message,
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let cut = text.char_indices().nth(200).map_or(text.len(), |(i, _)| i);
            EtcdError::Http {
                status,
                message: text[..cut].to_string(),
            }
        }
    }
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, EtcdError> {
    serde_json::from_slice(body).map_err(|e| EtcdError::Malformed(e.to_string()))
}

fn streamed<T: DeserializeOwned>(body: &[u8]) -> Result<T, EtcdError> {
    let s: Streamed<T> = parse(body)?;
    match (s.result, s.error) {
        (_, Some(e)) => Err(EtcdError::Grpc {
            code: e.grpc_code,
            message: e.message,
        }),
        (Some(r), None) => Ok(r),
        (None, None) => Err(EtcdError::Malformed(
            "a streamed message with neither result nor error".into(),
        )),
    }
}

/// An int64: a JSON string in the gateway's mapping, a number accepted too.
fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct Int;
    impl Visitor<'_> for Int {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an int64 as a string or number")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
            i64::try_from(v).map_err(|_| E::custom("int64 out of range"))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
            v.parse().map_err(|_| E::custom("not an int64"))
        }
    }
    d.deserialize_any(Int)
}

/// Bytes: a base64 JSON string.
fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl Visitor<'_> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("base64 bytes")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
            B64.decode(v).map_err(|_| E::custom("not base64"))
        }
    }
    d.deserialize_str(Bytes)
}
