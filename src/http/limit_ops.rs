//! `GET /limits` (every function's limits as JSON), `PUT /limits/FUNCTION` (change some of
//! them) and `DELETE /limits/FUNCTION` (lift them all): the path and body to the change, and
//! the JSON replies. Everything under `/limits/` is this module's: no job is submitted there.

use bytes::Bytes;

use super::endpoint::{Endpoint, Route};
use super::json::{self, Obj};
use super::parse::Method;
use super::response::Reply;
use crate::engine::{LimitChange, LimitStatus};

const USE: &str = "use GET /limits, PUT /limits/FUNCTION with a body such as \
                   limit=4&rate=100/1m&paused=true&expire=1h (off lifts one), or DELETE \
                   /limits/FUNCTION";

/// At most this many settings in one PUT body (there are four).
const MAX_CHANGES: usize = 4;

/// The route for a decoded path (without its leading `/`) and its body, or `None` when it is
/// not a read of `limits` or under `limits/`.
pub fn route(method: &Method, path: &[u8], body: &[u8]) -> Option<Route> {
    // As every read-only endpoint: POST and PUT of `/limits` submit to a function `limits`.
    if path == b"limits" {
        return match method {
            Method::Get | Method::Head => Some(Route::Read {
                endpoint: Endpoint::Limits,
                head_only: *method == Method::Head,
            }),
            _ => None,
        };
    }
    let func = path.strip_prefix(b"limits/")?;
    if func.is_empty() || crate::proto::names::is_bad_name(func) {
        return Some(Route::Reply(Reply::text(404, USE)));
    }
    let func = Bytes::copy_from_slice(func);
    let changes = match method {
        Method::Put => match changes(body) {
            Ok(c) => c,
            Err(e) => return Some(Route::Reply(Reply::text(400, &format!("{e}; {USE}")))),
        },
        Method::Other(m) if m == "DELETE" => vec![
            LimitChange::Limit(None),
            LimitChange::Rate(None),
            LimitChange::Paused(false),
            LimitChange::Expire(None),
        ],
        _ => {
            return Some(Route::Reply(
                Reply::text(405, USE).header("Allow", "PUT, DELETE"),
            ));
        }
    };
    Some(Route::Limits { func, changes })
}

/// `limit=4&rate=100/1m&paused=true&expire=1h`: each names a setting to change (`off`, or
/// `paused=false`, lifts it); at least one, each once.
fn changes(body: &[u8]) -> Result<Vec<LimitChange>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let mut out: Vec<LimitChange> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for pair in text.trim().split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not NAME=VALUE"))?;
        if seen.contains(&k) || out.len() >= MAX_CHANGES {
            return Err(format!("{k} given twice"));
        }
        seen.push(k);
        // Every value is plain ASCII (`4`, `100/1m`, `true`, `off`): nothing to unescape.
        out.push(LimitChange::parse(k, v)?);
    }
    if out.is_empty() {
        return Err("the body names no setting".into());
    }
    Ok(out)
}

fn status_obj(l: &mut String, r: &LimitStatus) {
    let s = &r.settings;
    let mut e = Obj::new(l);
    e.bytes("function", &r.name)
        .opt_num("limit", s.limit.map(u64::from))
        .num("running", r.running);
    match s.rate {
        Some(rate) => {
            e.num("rate_count", rate.count)
                .num("rate_window_ms", rate.window_ms);
        }
        None => {
            e.null("rate_count").null("rate_window_ms");
        }
    }
    e.num("window", r.window)
        .bool("paused", s.paused)
        .opt_num("expire_ms", s.expire_ms)
        .num("held", r.held);
    e.end();
}

/// `/limits`: `{"limits":[{"function":...,"limit":N|null,"running":N,"rate_count":N|null,
/// "rate_window_ms":MS|null,"window":N,"paused":B,"expire_ms":MS|null,"held":N}, ...]}`.
pub fn list(rows: &[LimitStatus]) -> String {
    let mut out = String::with_capacity(64 + rows.len() * 160);
    let mut o = Obj::new(&mut out);
    let l = o.key("limits");
    json::array(l, rows, status_obj);
    o.end();
    out.push('\n');
    out
}

/// The answer to a change: `200` with the function's limits now, `400` for a name no client
/// could send or a rate past `--max-rate-count`, `503` when `--max-function-settings`
/// functions have settings already.
pub fn reply(done: Result<Option<LimitStatus>, crate::engine::LimitError>) -> Reply {
    use crate::engine::LimitError;
    match done {
        Ok(Some(r)) => {
            let mut out = String::with_capacity(200);
            status_obj(&mut out, &r);
            out.push('\n');
            Reply::json(200, out)
        }
        Ok(None) => Reply::json(200, "{\"limits\":null}\n".into()),
        Err(LimitError::BadName) => {
            Reply::text(400, "a function name cannot contain CR, LF or NUL")
        }
        Err(LimitError::TooMany(max)) => Reply::text(
            503,
            &format!(
                "{max} functions have limits already (--max-function-settings): lift some with DELETE /limits/FUNCTION"
            ),
        ),
        Err(LimitError::RateTooLarge(max)) => {
            Reply::text(400, &format!("a rate's N is 1 to {max} (--max-rate-count)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::LimitRate;

    fn put(path: &str, body: &str) -> Option<Route> {
        route(&Method::Put, path.as_bytes(), body.as_bytes())
    }

    #[test]
    fn put_names_the_settings_it_changes() {
        assert_eq!(
            put(
                "limits/resize",
                "limit=4&rate=100/1m&paused=true&expire=off"
            ),
            Some(Route::Limits {
                func: Bytes::from_static(b"resize"),
                changes: vec![
                    LimitChange::Limit(Some(4)),
                    LimitChange::Rate(Some(LimitRate {
                        count: 100,
                        window_ms: 60_000
                    })),
                    LimitChange::Paused(true),
                    LimitChange::Expire(None),
                ],
            })
        );
        for bad in [
            "",
            "limit",
            "limit=0",
            "limit=1&limit=2",
            "speed=3",
            "rate=5",
        ] {
            assert!(
                matches!(put("limits/f", bad), Some(Route::Reply(r)) if r.status == 400),
                "{bad}"
            );
        }
    }

    #[test]
    fn reads_deletes_and_the_rest() {
        assert!(matches!(
            route(&Method::Get, b"limits", b""),
            Some(Route::Read {
                endpoint: Endpoint::Limits,
                head_only: false
            })
        ));
        // POST /limits submits to a function named `limits`, as for every endpoint.
        assert_eq!(route(&Method::Post, b"limits", b""), None);
        let del = route(&Method::Other("DELETE".into()), b"limits/f", b"");
        assert!(matches!(del, Some(Route::Limits { changes, .. }) if changes.len() == 4));
        assert!(matches!(
            route(&Method::Post, b"limits/f", b"limit=1"),
            Some(Route::Reply(r)) if r.status == 405
        ));
        assert!(matches!(
            route(&Method::Get, b"limits/", b""),
            Some(Route::Reply(r)) if r.status == 404
        ));
        assert_eq!(route(&Method::Get, b"limitsx", b""), None);
    }
}
