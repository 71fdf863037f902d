//! etcd's JSON bodies (the gateway's protobuf-to-JSON mapping) and their decoding into
//! replies. Every field may be absent (zero values are left out); int64 fields come as
//! strings; keys and values as base64. Read through `serde_json::Value` (the parser the
//! cluster's records use too) rather than derived structs, which cost more binary per shape.

use super::{EtcdError, Kv, Reply, RequestKind, WatchEvent};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value};

type Obj = Map<String, Value>;

/// Decode the whole body of a unary response with HTTP status `status`.
pub(super) fn unary(kind: RequestKind, status: u16, body: &[u8]) -> Result<Reply, EtcdError> {
    if status != 200 {
        return Err(failure(status, body));
    }
    if kind == RequestKind::Watch {
        return watch(body);
    }
    let o = object(body)?;
    Ok(match kind {
        RequestKind::LeaseGrant => {
            let error = string(&o, "error")?;
            if !error.is_empty() {
                return Err(EtcdError::Grpc {
                    code: 0,
                    message: error.to_string(),
                });
            }
            Reply::LeaseGranted {
                lease: int(&o, "ID")?,
                ttl_secs: int(&o, "TTL")?,
            }
        }
        RequestKind::LeaseKeepAlive => {
            let r = streamed(o)?;
            Reply::LeaseKeptAlive {
                lease: int(&r, "ID")?,
                ttl_secs: int(&r, "TTL")?,
            }
        }
        RequestKind::LeaseRevoke => Reply::LeaseRevoked,
        RequestKind::Range => Reply::Range {
            revision: revision(&o)?,
            kvs: kvs(&o)?,
        },
        RequestKind::Put => Reply::Put {
            revision: revision(&o)?,
        },
        RequestKind::Delete => Reply::Deleted {
            revision: revision(&o)?,
            deleted: int(&o, "deleted")?,
        },
        RequestKind::Txn => {
            let mut ranges = Vec::new();
            for r in list(&o, "responses")? {
                let r = r
                    .as_object()
                    .ok_or_else(|| bad("a txn response that is not an object"))?;
                if let Some(range) = member(r, "response_range")? {
                    ranges.push(kvs(range)?);
                }
            }
            Reply::Txn {
                succeeded: boolean(&o, "succeeded")?,
                revision: revision(&o)?,
                ranges,
            }
        }
        RequestKind::Compact => Reply::Compacted {
            revision: revision(&o)?,
        },
        RequestKind::Watch => unreachable!("handled above"),
    })
}

/// Decode one message of a watch stream.
pub(super) fn watch(msg: &[u8]) -> Result<Reply, EtcdError> {
    let w = streamed(object(msg)?)?;
    Ok(if boolean(&w, "canceled")? {
        Reply::WatchCanceled {
            compact_revision: int(&w, "compact_revision")?,
            reason: string(&w, "cancel_reason")?.to_string(),
        }
    } else if boolean(&w, "created")? {
        Reply::WatchCreated {
            revision: revision(&w)?,
        }
    } else {
        let mut events = Vec::new();
        for e in list(&w, "events")? {
            let e = e
                .as_object()
                .ok_or_else(|| bad("an event that is not an object"))?;
            events.push(WatchEvent {
                // "PUT" is the zero value, so it is left out; "DELETE" is written.
                deleted: string(e, "type")? == "DELETE",
                kv: match member(e, "kv")? {
                    Some(kv) => self::kv(kv)?,
                    None => Kv::default(),
                },
            });
        }
        Reply::WatchEvents {
            revision: revision(&w)?,
            events,
        }
    })
}

/// A non-200 answer: etcd's JSON error (`{"error","code","message"}`) when it is one, else
/// the start of the body.
pub(super) fn failure(status: u16, body: &[u8]) -> EtcdError {
    let etcd = object(body).ok().and_then(|o| {
        let message = o.get("message")?.as_str()?.to_string();
        Some(EtcdError::Grpc {
            code: int(&o, "code").unwrap_or(0),
            message,
        })
    });
    etcd.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let cut = text.char_indices().nth(200).map_or(text.len(), |(i, _)| i);
        EtcdError::Http {
            status,
            message: text[..cut].to_string(),
        }
    })
}

fn bad(what: &str) -> EtcdError {
    EtcdError::Malformed(what.to_string())
}

fn object(body: &[u8]) -> Result<Obj, EtcdError> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(bad("a body that is not a JSON object")),
        Err(e) => Err(EtcdError::Malformed(e.to_string())),
    }
}

/// A streamed message (keepalive, watch): `{"result":...}` or `{"error":...}`.
fn streamed(mut o: Obj) -> Result<Obj, EtcdError> {
    if let Some(e) = o.get("error").filter(|e| !e.is_null()) {
        let e = e
            .as_object()
            .ok_or_else(|| bad("a stream error that is not an object"))?;
        return Err(EtcdError::Grpc {
            code: int(e, "grpc_code")?,
            message: string(e, "message")?.to_string(),
        });
    }
    match o.remove("result") {
        Some(Value::Object(r)) => Ok(r),
        _ => Err(bad("a streamed message with neither result nor error")),
    }
}

/// `o[k]` as an object; absent or null is None.
fn member<'a>(o: &'a Obj, k: &str) -> Result<Option<&'a Obj>, EtcdError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(EtcdError::Malformed(format!("{k} is not an object"))),
    }
}

fn list<'a>(o: &'a Obj, k: &str) -> Result<&'a [Value], EtcdError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(EtcdError::Malformed(format!("{k} is not a list"))),
    }
}

fn string<'a>(o: &'a Obj, k: &str) -> Result<&'a str, EtcdError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(EtcdError::Malformed(format!("{k} is not a string"))),
    }
}

fn boolean(o: &Obj, k: &str) -> Result<bool, EtcdError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(EtcdError::Malformed(format!("{k} is not true or false"))),
    }
}

/// An int64: a JSON string in the gateway's mapping, a number accepted too.
fn int(o: &Obj, k: &str) -> Result<i64, EtcdError> {
    let n = match o.get(k) {
        None | Some(Value::Null) => return Ok(0),
        Some(Value::String(s)) => s.parse().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        Some(_) => None,
    };
    n.ok_or_else(|| EtcdError::Malformed(format!("{k} is not an int64")))
}

/// Bytes: a base64 JSON string.
fn bytes(o: &Obj, k: &str) -> Result<Vec<u8>, EtcdError> {
    B64.decode(string(o, k)?)
        .map_err(|_| EtcdError::Malformed(format!("{k} is not base64")))
}

fn revision(o: &Obj) -> Result<i64, EtcdError> {
    member(o, "header")?.map_or(Ok(0), |h| int(h, "revision"))
}

fn kvs(o: &Obj) -> Result<Vec<Kv>, EtcdError> {
    list(o, "kvs")?
        .iter()
        .map(|v| {
            v.as_object()
                .ok_or_else(|| bad("a kv that is not an object"))
                .and_then(kv)
        })
        .collect()
}

fn kv(o: &Obj) -> Result<Kv, EtcdError> {
    Ok(Kv {
        key: bytes(o, "key")?,
        value: bytes(o, "value")?,
        create_revision: int(o, "create_revision")?,
        mod_revision: int(o, "mod_revision")?,
        version: int(o, "version")?,
        lease: int(o, "lease")?,
    })
}
