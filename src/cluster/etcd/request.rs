//! Request encoding: one HTTP/1.1 POST per request, its JSON body written with the crate's
//! small JSON writer (the shapes are few and fixed).

use super::{Compare, Op, Request};
use crate::json::{self, Obj};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

/// Append `req` as an HTTP/1.1 POST to `out`: Host header, Content-Length, keep-alive (the
/// HTTP/1.1 default), so several requests may follow one another on one connection.
pub fn encode(req: &Request, host: &str, out: &mut Vec<u8>) {
    let mut body = String::new();
    let path = match req {
        Request::LeaseGrant { ttl_secs } => {
            let mut o = Obj::new(&mut body);
            int(&mut o, "TTL", *ttl_secs);
            o.end();
            "/v3/lease/grant"
        }
        Request::LeaseKeepAlive { lease } => {
            lease_id(&mut body, *lease);
            "/v3/lease/keepalive"
        }
        Request::LeaseRevoke { lease } => {
            lease_id(&mut body, *lease);
            "/v3/lease/revoke"
        }
        Request::Get { key } => {
            range(&mut body, key, false);
            "/v3/kv/range"
        }
        Request::GetPrefix { prefix } => {
            range(&mut body, prefix, true);
            "/v3/kv/range"
        }
        Request::Put { key, value, lease } => {
            put(&mut body, key, value, *lease);
            "/v3/kv/put"
        }
        Request::Delete { key } => {
            let mut o = Obj::new(&mut body);
            b64(&mut o, "key", key);
            o.end();
            "/v3/kv/deleterange"
        }
        Request::Txn(t) => {
            let mut o = Obj::new(&mut body);
            json::array(o.key("compare"), &t.compare, compare);
            json::array(o.key("success"), &t.success, op);
            json::array(o.key("failure"), &t.failure, op);
            o.end();
            "/v3/kv/txn"
        }
        Request::Compact { revision } => {
            let mut o = Obj::new(&mut body);
            int(&mut o, "revision", *revision);
            o.end();
            "/v3/kv/compaction"
        }
        Request::Watch {
            key,
            prefix,
            start_revision,
        } => {
            let mut o = Obj::new(&mut body);
            let mut c = Obj::new(o.key("create_request"));
            b64(&mut c, "key", key);
            if *prefix {
                b64(&mut c, "range_end", &prefix_end(key));
            }
            if *start_revision > 0 {
                int(&mut c, "start_revision", *start_revision);
            }
            c.end();
            o.end();
            "/v3/watch"
        }
    };
    out.extend_from_slice(b"POST ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\nContent-Type: application/json\r\nContent-Length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body.as_bytes());
}

/// int64 travels as a JSON string in the gateway's protobuf mapping.
fn int(o: &mut Obj<'_>, k: &str, v: i64) {
    o.str(k, &v.to_string());
}

fn b64(o: &mut Obj<'_>, k: &str, v: &[u8]) {
    o.str(k, &B64.encode(v));
}

fn lease_id(body: &mut String, lease: i64) {
    let mut o = Obj::new(body);
    int(&mut o, "ID", lease);
    o.end();
}

fn range(body: &mut String, key: &[u8], prefix: bool) {
    let mut o = Obj::new(body);
    b64(&mut o, "key", key);
    if prefix {
        b64(&mut o, "range_end", &prefix_end(key));
    }
    o.end();
}

fn put(body: &mut String, key: &[u8], value: &[u8], lease: i64) {
    let mut o = Obj::new(body);
    b64(&mut o, "key", key);
    b64(&mut o, "value", value);
    if lease != 0 {
        int(&mut o, "lease", lease);
    }
    o.end();
}

fn compare(out: &mut String, c: &Compare) {
    let mut o = Obj::new(out);
    match c {
        Compare::CreateRevision { key, revision } => {
            o.str("target", "CREATE");
            b64(&mut o, "key", key);
            int(&mut o, "create_revision", *revision);
        }
        Compare::ModRevision { key, revision } => {
            o.str("target", "MOD");
            b64(&mut o, "key", key);
            int(&mut o, "mod_revision", *revision);
        }
        Compare::Value { key, value } => {
            o.str("target", "VALUE");
            b64(&mut o, "key", key);
            b64(&mut o, "value", value);
        }
    }
    o.str("result", "EQUAL");
    o.end();
}

fn op(out: &mut String, op: &Op) {
    let mut o = Obj::new(out);
    match op {
        Op::Put { key, value, lease } => put(o.key("request_put"), key, value, *lease),
        Op::Get { key } => range(o.key("request_range"), key, false),
        Op::GetPrefix { prefix } => range(o.key("request_range"), prefix, true),
        Op::Delete { key } => {
            let mut d = Obj::new(o.key("request_delete_range"));
            b64(&mut d, "key", key);
            d.end();
        }
    }
    o.end();
}

/// etcd's range end for "every key starting with `prefix`": the prefix with its last byte
/// that is not 0xff incremented and the rest cut; "\0" (every key) when there is none.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}
