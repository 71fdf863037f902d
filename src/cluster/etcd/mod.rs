//! The etcd v3 JSON gateway codec (etcd 3.4's grpc-gateway over HTTP/1.1): requests in,
//! request bytes out; response bytes in, replies out. Pure: it never sees a socket, so the
//! reactor's connections, the blocking `schedules push` client and the tests share it.
//!
//! On the wire keys and values are base64 and int64 fields are JSON strings; fields equal to
//! their zero value are left out by etcd, so every decoded field defaults to zero.
//!
//! - `request`: a request into one HTTP/1.1 POST; `wire`: the JSON bodies into replies.
//! - `response`: HTTP response framing (Content-Length, chunked, a watch's stream).
//! - `endpoint`: `--etcd` URLs and `--cluster` names, checked in one place.
//! - `tests`: codec tests on bytes recorded from etcd's gateway.

mod endpoint;
mod request;
mod response;
mod wire;

#[cfg(test)]
mod tests;

pub use endpoint::{Endpoints, check_cluster_name, endpoints, host_name, prefix, schedules_key};
pub use request::encode;
pub use response::ResponseReader;

use std::fmt;

/// One key-value pair as etcd stores it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kv {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub version: i64,
    /// 0 = bound to no lease.
    pub lease: i64,
}

/// A transaction guard; every one is an EQUAL comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compare {
    /// revision 0 = the key is absent.
    CreateRevision {
        key: Vec<u8>,
        revision: i64,
    },
    /// revision 0 = the key is absent.
    ModRevision {
        key: Vec<u8>,
        revision: i64,
    },
    Value {
        key: Vec<u8>,
        value: Vec<u8>,
    },
}

/// One operation of a transaction branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// lease 0 = none.
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        lease: i64,
    },
    Get {
        key: Vec<u8>,
    },
    GetPrefix {
        prefix: Vec<u8>,
    },
    Delete {
        key: Vec<u8>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    pub compare: Vec<Compare>,
    pub success: Vec<Op>,
    pub failure: Vec<Op>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    LeaseGrant {
        ttl_secs: i64,
    },
    LeaseKeepAlive {
        lease: i64,
    },
    LeaseRevoke {
        lease: i64,
    },
    Get {
        key: Vec<u8>,
    },
    GetPrefix {
        prefix: Vec<u8>,
    },
    /// lease 0 = none.
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        lease: i64,
    },
    Delete {
        key: Vec<u8>,
    },
    Txn(Txn),
    /// Drop the history before `revision` (etcd keeps every past version of every key until
    /// something compacts it; the keys stay).
    Compact {
        revision: i64,
    },
    /// A long-lived streaming response: send it on its own connection. start_revision 0 =
    /// from now on.
    Watch {
        key: Vec<u8>,
        prefix: bool,
        start_revision: i64,
    },
}

/// What a response answers, so the reader knows how to read its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    LeaseGrant,
    LeaseKeepAlive,
    LeaseRevoke,
    Range,
    Put,
    Delete,
    Txn,
    Compact,
    Watch,
}

impl Request {
    pub fn kind(&self) -> RequestKind {
        match self {
            Request::LeaseGrant { .. } => RequestKind::LeaseGrant,
            Request::LeaseKeepAlive { .. } => RequestKind::LeaseKeepAlive,
            Request::LeaseRevoke { .. } => RequestKind::LeaseRevoke,
            Request::Get { .. } | Request::GetPrefix { .. } => RequestKind::Range,
            Request::Put { .. } => RequestKind::Put,
            Request::Delete { .. } => RequestKind::Delete,
            Request::Txn(_) => RequestKind::Txn,
            Request::Compact { .. } => RequestKind::Compact,
            Request::Watch { .. } => RequestKind::Watch,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    LeaseGranted {
        lease: i64,
        ttl_secs: i64,
    },
    /// ttl 0 = the lease is gone (expired or revoked).
    LeaseKeptAlive {
        lease: i64,
        ttl_secs: i64,
    },
    LeaseRevoked,
    Range {
        revision: i64,
        kvs: Vec<Kv>,
    },
    Put {
        revision: i64,
    },
    Deleted {
        revision: i64,
        deleted: i64,
    },
    /// `ranges`: the kvs of each Get/GetPrefix op of the branch that ran, in order.
    Txn {
        succeeded: bool,
        revision: i64,
        ranges: Vec<Vec<Kv>>,
    },
    /// The history before the asked revision is gone (`revision`: the store's now).
    Compacted {
        revision: i64,
    },
    WatchCreated {
        revision: i64,
    },
    WatchEvents {
        revision: i64,
        events: Vec<WatchEvent>,
    },
    /// The watch is over (etcd compacted past its start revision, or cancelled it): watch
    /// again from a fresh read.
    WatchCanceled {
        compact_revision: i64,
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// A delete event's kv carries only the key and its mod_revision.
    pub deleted: bool,
    pub kv: Kv,
}

/// Why a request got no reply. `Http` and `Grpc` fail one request and leave the connection
/// usable; after `Malformed` or `TooLarge` the reader stops (its framing is lost): close the
/// connection and start a new reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdError {
    /// A status other than 200 without etcd's JSON error body (a proxy, a wrong path).
    Http { status: u16, message: String },
    /// etcd's own error: a gRPC status code (5 = not found, 3 = invalid argument, 14 =
    /// unavailable, ...) and its message.
    Grpc { code: i64, message: String },
    /// Bytes that are not the HTTP or JSON etcd sends; also a watch stream that ended.
    Malformed(String),
    /// A head or message over the reader's limit.
    TooLarge,
}

impl fmt::Display for EtcdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtcdError::Http { status, message } => {
                write!(f, "etcd answered HTTP {status}: {message}")
            }
            EtcdError::Grpc { code, message } => write!(f, "etcd error (code {code}): {message}"),
            EtcdError::Malformed(what) => write!(f, "unreadable etcd response: {what}"),
            EtcdError::TooLarge => f.write_str("etcd response over the size limit"),
        }
    }
}

impl std::error::Error for EtcdError {}
