//! `GET /failed` (the failed list as JSON), `POST /failed/HANDLE/retry` and `DELETE
//! /failed/HANDLE`: the path to an operation on one failed job, and the JSON replies.
//! Everything under `/failed/` is this module's: no job is submitted there, whatever the method.

use bytes::Bytes;

use super::endpoint::{Endpoint, FailedOp, Route};
use super::json::{self, Obj};
use super::parse::Method;
use super::response::Reply;
use crate::engine::FailedList;

const USE: &str = "use GET /failed, POST /failed/HANDLE/retry or DELETE /failed/HANDLE";

/// The route for a decoded path (without its leading `/`), or `None` when it is not
/// a read of `failed` or under `failed/`. A change is a POST or a DELETE only: a link followed or a page
/// prefetched never retries or drops a job.
pub fn route(method: &Method, path: &[u8]) -> Option<Route> {
    // As every read-only endpoint: POST and PUT of `/failed` submit to a function `failed`.
    if path == b"failed" {
        return match method {
            Method::Get | Method::Head => Some(Route::Read {
                endpoint: Endpoint::Failed,
                head_only: *method == Method::Head,
            }),
            _ => None,
        };
    }
    let rest = path.strip_prefix(b"failed/")?;
    let delete = matches!(method, Method::Other(m) if m == "DELETE");
    let (handle, op) = match rest.strip_suffix(b"/retry") {
        Some(h) => (h, FailedOp::Retry),
        None => (rest, FailedOp::Drop),
    };
    if handle.is_empty() {
        return Some(Route::Reply(Reply::text(404, USE)));
    }
    let allowed = match op {
        FailedOp::Retry => *method == Method::Post,
        FailedOp::Drop => delete,
    };
    if !allowed {
        let allow = if op == FailedOp::Retry {
            "POST"
        } else {
            "DELETE"
        };
        return Some(Route::Reply(Reply::text(405, USE).header("Allow", allow)));
    }
    Some(Route::Failed {
        op,
        handle: Bytes::copy_from_slice(handle),
    })
}

/// `/failed`: `{"failed":[...],"total":N,"bytes":B}`, oldest first; times RFC 3339 UTC.
pub fn list(failed: &FailedList) -> String {
    let mut out = String::with_capacity(128 + failed.bytes() + failed.len() * 160);
    let mut o = Obj::new(&mut out);
    let l = o.key("failed");
    l.push('[');
    for (i, j) in failed.iter().enumerate() {
        if i > 0 {
            l.push(',');
        }
        let mut e = Obj::new(l);
        e.bytes("handle", &j.handle)
            .bytes("function", &j.func)
            .bytes("unique", &j.unique)
            .bytes("workload", &j.data)
            .bytes("error", &j.error)
            .num("attempts", j.attempts);
        json::time(&mut e, "first_failure", Some(j.first_ms));
        json::time(&mut e, "last_failure", Some(j.last_ms));
        e.opt_str("entry", j.entry.as_deref());
        e.end();
    }
    l.push(']');
    o.num("total", failed.len()).num("bytes", failed.bytes());
    o.end();
    out.push('\n');
    out
}

/// The answer to `op` on one handle: `200` with the new job's handle (retry), `404` when the
/// handle is not listed, `503` when its queue is full (it stays listed).
pub fn reply(op: FailedOp, handle: &[u8], done: Result<Option<String>, bool>) -> Reply {
    let mut out = String::with_capacity(256);
    let mut o = Obj::new(&mut out);
    o.str(
        "op",
        match op {
            FailedOp::Retry => "retry",
            FailedOp::Drop => "drop",
        },
    )
    .bytes("handle", handle);
    let status = match done {
        Ok(new) => {
            if op == FailedOp::Retry {
                o.opt_str("job", new.as_deref());
            }
            200
        }
        Err(true) => {
            o.str(
                "error",
                "the queue of its function is full; it stays listed",
            );
            503
        }
        Err(false) => {
            o.str("error", "no failed job has this handle");
            404
        }
    };
    o.end();
    out.push('\n');
    Reply::json(status, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(r: Option<Route>) -> u16 {
        match r {
            Some(Route::Reply(r)) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_to_operations() {
        let delete = Method::Other("DELETE".into());
        assert_eq!(
            route(&Method::Post, b"failed/H:x:1/retry"),
            Some(Route::Failed {
                op: FailedOp::Retry,
                handle: Bytes::from_static(b"H:x:1"),
            })
        );
        assert_eq!(
            route(&delete, b"failed/H:x:1"),
            Some(Route::Failed {
                op: FailedOp::Drop,
                handle: Bytes::from_static(b"H:x:1"),
            })
        );
        assert!(matches!(
            route(&Method::Get, b"failed"),
            Some(Route::Read {
                endpoint: Endpoint::Failed,
                head_only: false
            })
        ));
        assert_eq!(route(&Method::Get, b"failedx"), None);
        assert_eq!(route(&Method::Get, b"status"), None);
        // A GET never changes anything.
        assert_eq!(status(route(&Method::Get, b"failed/H:x:1/retry")), 405);
        assert_eq!(status(route(&Method::Get, b"failed/H:x:1")), 405);
        assert_eq!(status(route(&Method::Post, b"failed/H:x:1")), 405);
        assert_eq!(status(route(&delete, b"failed/H:x:1/retry")), 405);
        assert_eq!(route(&Method::Post, b"failed"), None, "a submission");
        assert_eq!(status(route(&Method::Post, b"failed//retry")), 404);
    }

    #[test]
    fn the_list_as_json() {
        let mut l = FailedList::new(10, 0);
        l.push(crate::engine::FailedJob {
            handle: Bytes::from_static(b"H:x:1"),
            func: Bytes::from_static(b"f"),
            unique: Bytes::from_static(b"u"),
            data: Bytes::from_static(b"a\"b"),
            error: Bytes::from_static(b"disk\nfull"),
            attempts: 2,
            first_ms: 0,
            last_ms: 1000,
            entry: Some("nightly".into()),
        });
        assert_eq!(
            list(&l),
            "{\"failed\":[{\"handle\":\"H:x:1\",\"function\":\"f\",\"unique\":\"u\",\
             \"workload\":\"a\\\"b\",\"error\":\"disk\\nfull\",\"attempts\":2,\
             \"first_failure\":\"1970-01-01T00:00:00Z\",\"last_failure\":\"1970-01-01T00:00:01Z\",\
             \"entry\":\"nightly\"}],\"total\":1,\"bytes\":26}\n"
        );
        assert_eq!(reply(FailedOp::Drop, b"H:x:9", Err(false)).status, 404);
    }
}
