//! A complete request to what it asks for: a read-only endpoint, a job submission with
//! gearmand's `X-Gearman-*` headers (and ours), or an error reply.
//!
//! `GET`/`HEAD` of `/status`, `/workers`, `/jobs/HANDLE`, `/schedules`, `/webhooks`, `/metrics`
//! and `/healthz` are the endpoints; `/` and everything under `/ui/` are the console's, whatever
//! the method; `/schedules/ID/OP` operates a schedule entry (`schedule_ops`); any other path
//! names a function. `POST` and `PUT` always submit (so a function called `status` can still
//! be reached with POST).

use bytes::Bytes;

use super::console;
use super::console::action;
use super::endpoint::{Endpoint, Route, Submit};
use super::parse::{Head, HttpError, Method};
use super::response::Reply;
use crate::proto::request::{MAX_UNIQUE, Priority};

const ALLOW_SUBMIT: &str = "GET, POST, PUT";
const ALLOW_READ: &str = "GET, HEAD, POST, PUT";

fn bad(message: &str) -> Route {
    Route::Reply(Reply::text(400, message))
}

pub use super::parse::percent_decode;

/// The path of a request target: origin form (`/a?q`) or absolute form (`http://h/a`).
fn path_of(target: &str) -> Result<&str, HttpError> {
    let t = match target.find("://") {
        Some(p) if !target.starts_with('/') => {
            let after = &target[p + 3..];
            after.find('/').map_or("/", |s| &after[s..])
        }
        _ => target,
    };
    if !t.starts_with('/') {
        return Err(HttpError::new(400, "the request target must be a path"));
    }
    Ok(t.split(['?', '#']).next().unwrap_or(t))
}

fn flag(v: &[u8]) -> Option<bool> {
    let v = std::str::from_utf8(v).ok()?.trim();
    if ["true", "1", "yes", "on"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
    {
        Some(true)
    } else if ["false", "0", "no", "off"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
    {
        Some(false)
    } else {
        None
    }
}

fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// What a complete request asks for.
pub fn route(head: &Head, body: Bytes) -> Route {
    let (read_ok, submit_ok, head_only) = match &head.method {
        Method::Get => (true, true, false),
        Method::Head => (true, false, true),
        Method::Post | Method::Put => (false, true, false),
        // Only a failed job is ever deleted; `failed_ops` takes it, anything else is 405 below.
        Method::Other(m) if m == "DELETE" => (false, false, false),
        Method::Other(_) => {
            return Route::Reply(
                Reply::text(405, "method not allowed: use GET, HEAD, POST or PUT")
                    .header("Allow", ALLOW_READ),
            );
        }
    };
    let path = match path_of(&head.target) {
        Ok(p) => p,
        Err(e) => return Route::Reply(Reply::text(e.status, &e.message)),
    };
    let Some(name) = percent_decode(&path.as_bytes()[1..]) else {
        return bad("bad percent-escape in the path");
    };
    if console::owns(&name) {
        let post = head.method == Method::Post;
        if let Some(act) = action::action(&name, post, &body) {
            return act.map_or_else(Route::Reply, Route::Act);
        }
        if !read_ok {
            return Route::Reply(
                Reply::text(405, "the console is read with GET or HEAD")
                    .header("Allow", "GET, HEAD"),
            );
        }
        let query = head.target.split_once('?').map_or("", |(_, q)| q);
        let query = query.split('#').next().unwrap_or("");
        return match console::page(&name, query.as_bytes()) {
            Ok(page) => Route::Read {
                endpoint: Endpoint::Console(page),
                head_only,
            },
            Err(r) => Route::Reply(r),
        };
    }
    if let Some(r) = super::ping::route(&head.method, &name, &body) {
        return r.map_or_else(Route::Reply, Route::Ping);
    }
    let query = head.target.split_once('?').map_or("", |(_, q)| q);
    let query = query.split('#').next().unwrap_or("");
    if let Some(r) = super::schedule_ops::backfill_route(&head.method, &name, query, &body) {
        return r;
    }
    if let Some(r) = super::schedule_ops::route(&head.method, &name) {
        return r;
    }
    if let Some(r) = super::failed_ops::route(&head.method, &name) {
        return r;
    }
    if let Some(r) = super::limit_ops::route(&head.method, &name, &body) {
        return r;
    }
    if let Method::Other(_) = head.method {
        return Route::Reply(
            Reply::text(405, "method not allowed: use GET, HEAD, POST or PUT")
                .header("Allow", ALLOW_READ),
        );
    }
    if read_ok {
        let endpoint = match &name[..] {
            b"status" => Some(Endpoint::Status),
            b"workers" => Some(Endpoint::Workers),
            b"schedules" => Some(Endpoint::Schedules),
            b"metrics" => Some(Endpoint::Metrics),
            b"healthz" => Some(Endpoint::Healthz),
            b"cluster" => Some(Endpoint::Cluster),
            b"audit" => Some(Endpoint::Audit),
            b"webhooks" => Some(Endpoint::Webhooks),
            n if n.starts_with(b"jobs/") => {
                let handle = &n[5..];
                if handle.is_empty() {
                    return Route::Reply(Reply::text(404, "no job handle in the path"));
                }
                match handle.strip_suffix(b"/output") {
                    Some(h) if !h.is_empty() => {
                        Some(Endpoint::JobOutput(Bytes::copy_from_slice(h)))
                    }
                    _ => Some(Endpoint::Job(Bytes::copy_from_slice(handle))),
                }
            }
            _ => None,
        };
        if let Some(endpoint) = endpoint {
            return Route::Read {
                endpoint,
                head_only,
            };
        }
    }
    if !submit_ok {
        return Route::Reply(
            Reply::text(405, "HEAD does not submit jobs; use GET, POST or PUT")
                .header("Allow", ALLOW_SUBMIT),
        );
    }
    // No name with a byte that forges a line or an argument: CR, LF, NUL (proto/names.rs).
    if crate::proto::names::is_bad_name(&name) {
        return bad("a function name cannot contain CR, LF or NUL");
    }
    let g = &head.gearman;
    let unique = match &g.unique {
        // gearmand's default: `-`, the workload is the coalescing key.
        None => Bytes::from_static(b"-"),
        Some(u) if u.len() > MAX_UNIQUE => {
            return bad("X-Gearman-Unique is longer than 64 bytes");
        }
        Some(u) => Bytes::copy_from_slice(u),
    };
    let background = match &g.background {
        None => false,
        Some(v) => match flag(v) {
            Some(b) => b,
            None => return bad("X-Gearman-Background must be true or false"),
        },
    };
    let priority = match g.priority.as_deref() {
        None => Priority::Normal,
        Some(v) if v.eq_ignore_ascii_case(b"high") => Priority::High,
        Some(v) if v.eq_ignore_ascii_case(b"normal") => Priority::Normal,
        Some(v) if v.eq_ignore_ascii_case(b"low") => Priority::Low,
        Some(_) => return bad("X-Gearman-Priority must be high, normal or low"),
    };
    let epoch = match &g.epoch {
        None => None,
        Some(v) if digits(v).is_some() => Some(Bytes::copy_from_slice(v)),
        Some(_) => return bad("X-Gearman-Epoch must be whole seconds since 1970"),
    };
    if epoch.is_some() && priority != Priority::Normal {
        return bad("future jobs (X-Gearman-Epoch) run at normal priority");
    }
    let timeout_ms = match &g.timeout {
        None => None,
        Some(v) => match digits(v) {
            Some(0) => None,
            Some(n) => Some(n),
            None => return bad("X-Gearman-Timeout must be a number of milliseconds"),
        },
    };
    // As gearmand: a GET has no workload.
    let data = match head.method {
        Method::Get => Bytes::new(),
        _ => body,
    };
    Route::Submit(Submit {
        func: Bytes::from(name),
        unique,
        data,
        priority,
        background: background || epoch.is_some(),
        epoch,
        timeout_ms,
    })
}

/// What a request gets during a graceful shutdown: the health check (which says `draining`) and
/// the metrics, so that load balancers and dashboards see the drain to its end, and the pings of
/// heartbeat entries (a run elsewhere is reported, not lost); everything else
/// is `503 draining` (a job submitted now would never be handed out).
pub fn while_draining(route: Route) -> Route {
    match route {
        Route::Read {
            endpoint: Endpoint::Healthz | Endpoint::Metrics,
            ..
        }
        | Route::Reply(_) => route,
        // A ping starts no work: a run's report is taken to the end, not lost.
        Route::Ping(_) => route,
        Route::Read { .. }
        | Route::Submit(_)
        | Route::Schedule { .. }
        | Route::Backfill { .. }
        | Route::Failed { .. }
        | Route::Limits { .. }
        | Route::Act(_) => Route::Reply(Reply::text(503, "draining")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpLimits;
    use crate::http::console::Page;
    use crate::http::console::action::Action;
    use crate::http::parse::parse_head;

    fn r(raw: &str, body: &str) -> Route {
        let (h, _) = parse_head(raw.as_bytes(), &HttpLimits::default())
            .unwrap()
            .unwrap();
        route(&h, Bytes::copy_from_slice(body.as_bytes()))
    }

    fn status(route: Route) -> u16 {
        match route {
            Route::Reply(r) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn submissions_as_gearmand_reads_them() {
        let Route::Submit(s) = r("POST /reverse HTTP/1.1\r\n\r\n", "abc") else {
            panic!()
        };
        assert_eq!(
            s,
            Submit {
                func: Bytes::from_static(b"reverse"),
                unique: Bytes::from_static(b"-"),
                data: Bytes::from_static(b"abc"),
                priority: Priority::Normal,
                background: false,
                epoch: None,
                timeout_ms: None,
            }
        );
        let Route::Submit(s) = r(
            "PUT /a%20b?x=1 HTTP/1.1\r\nX-Gearman-Unique: u\r\nX-Gearman-Background: TRUE\r\n\
             X-Gearman-Priority: low\r\nX-Gearman-Timeout: 1500\r\n\r\n",
            "d",
        ) else {
            panic!()
        };
        assert_eq!(&s.func[..], b"a b");
        assert_eq!(&s.unique[..], b"u");
        assert!(s.background);
        assert_eq!(s.priority, Priority::Low);
        assert_eq!(s.timeout_ms, Some(1500));
        // GET submits with an empty workload.
        let Route::Submit(s) = r("GET /f HTTP/1.1\r\n\r\n", "ignored") else {
            panic!()
        };
        assert!(s.data.is_empty());
        let Route::Submit(s) = r(
            "POST /f HTTP/1.1\r\nX-Gearman-Epoch: 4102444800\r\n\r\n",
            "",
        ) else {
            panic!()
        };
        assert_eq!(s.epoch.as_deref(), Some(&b"4102444800"[..]));
        assert!(s.background);
        let Route::Submit(s) = r("POST http://host:8080/f HTTP/1.1\r\n\r\n", "") else {
            panic!()
        };
        assert_eq!(&s.func[..], b"f");
    }

    #[test]
    fn endpoints_for_get_and_head_only() {
        let read = |raw: &str| match r(raw, "") {
            Route::Read {
                endpoint,
                head_only,
            } => (endpoint, head_only),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            read("GET /status HTTP/1.1\r\n\r\n"),
            (Endpoint::Status, false)
        );
        assert_eq!(
            read("HEAD /metrics HTTP/1.1\r\n\r\n"),
            (Endpoint::Metrics, true)
        );
        assert_eq!(read("GET /workers HTTP/1.1\r\n\r\n").0, Endpoint::Workers);
        assert_eq!(
            read("GET /schedules HTTP/1.1\r\n\r\n").0,
            Endpoint::Schedules
        );
        assert_eq!(read("GET /healthz HTTP/1.1\r\n\r\n").0, Endpoint::Healthz);
        assert_eq!(read("GET /audit HTTP/1.1\r\n\r\n").0, Endpoint::Audit);
        assert_eq!(read("GET /webhooks HTTP/1.1\r\n\r\n").0, Endpoint::Webhooks);
        assert_eq!(
            read("GET /jobs/H:box:12 HTTP/1.1\r\n\r\n").0,
            Endpoint::Job(Bytes::from_static(b"H:box:12"))
        );
        assert_eq!(
            read("GET /jobs/H%3Abox%3A1 HTTP/1.1\r\n\r\n").0,
            Endpoint::Job(Bytes::from_static(b"H:box:1"))
        );
        assert_eq!(
            read("GET /jobs/H:box:1/output HTTP/1.1\r\n\r\n").0,
            Endpoint::JobOutput(Bytes::from_static(b"H:box:1"))
        );
        assert_eq!(
            read("GET /jobs//output HTTP/1.1\r\n\r\n").0,
            Endpoint::Job(Bytes::from_static(b"/output"))
        );
        // POST to a reserved name submits to the function of that name.
        assert!(matches!(
            r("POST /status HTTP/1.1\r\n\r\n", ""),
            Route::Submit(_)
        ));
    }

    #[test]
    fn errors() {
        assert_eq!(status(r("POST / HTTP/1.1\r\n\r\n", "")), 405);
        assert_eq!(status(r("GET /jobs/ HTTP/1.1\r\n\r\n", "")), 404);
        assert_eq!(status(r("DELETE /f HTTP/1.1\r\n\r\n", "")), 405);
        assert_eq!(status(r("TRACE /f HTTP/1.1\r\n\r\n", "")), 405);
        assert_eq!(status(r("HEAD /f HTTP/1.1\r\n\r\n", "")), 405);
        assert_eq!(status(r("GET /%zz HTTP/1.1\r\n\r\n", "")), 400);
        assert_eq!(status(r("GET /a%00 HTTP/1.1\r\n\r\n", "")), 400);
        assert_eq!(
            status(r("GET /status%0d%0ashutdown HTTP/1.1\r\n\r\n", "")),
            400
        );
        assert_eq!(status(r("POST /a%00b HTTP/1.1\r\n\r\n", "")), 400);
        assert_eq!(status(r("GET * HTTP/1.1\r\n\r\n", "")), 400);
        let long = format!(
            "POST /f HTTP/1.1\r\nX-Gearman-Unique: {}\r\n\r\n",
            "u".repeat(65)
        );
        assert_eq!(status(r(&long, "")), 400);
        let ok = format!(
            "POST /f HTTP/1.1\r\nX-Gearman-Unique: {}\r\n\r\n",
            "u".repeat(64)
        );
        assert!(matches!(r(&ok, ""), Route::Submit(_)));
        for h in [
            "X-Gearman-Background: maybe",
            "X-Gearman-Priority: urgent",
            "X-Gearman-Epoch: soon",
            "X-Gearman-Epoch: -5",
            "X-Gearman-Timeout: 1s",
        ] {
            assert_eq!(
                status(r(&format!("POST /f HTTP/1.1\r\n{h}\r\n\r\n"), "")),
                400,
                "{h}"
            );
        }
        assert_eq!(
            status(r(
                "POST /f HTTP/1.1\r\nX-Gearman-Epoch: 5\r\nX-Gearman-Priority: high\r\n\r\n",
                ""
            )),
            400
        );
    }

    #[test]
    fn the_console_owns_the_root_and_ui() {
        let read = |raw: &str| match r(raw, "") {
            Route::Read { endpoint, .. } => endpoint,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            read("GET / HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Asset(0))
        );
        assert_eq!(
            read("HEAD /ui/ HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Asset(0))
        );
        assert_eq!(
            read("GET /ui/console.css?v=1 HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Asset(1))
        );
        assert_eq!(
            read("GET /ui/api/server HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Server)
        );
        assert_eq!(
            read("GET /ui%2Fapi%2Ffuture HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Future)
        );
        // The lists take their query.
        assert!(matches!(
            read("GET /ui/api/jobs?function=a%20b&state=running HTTP/1.1\r\n\r\n"),
            Endpoint::Console(Page::Jobs(q)) if &q.function[..] == b"a b" && q.offset == 0
        ));
        assert_eq!(
            status(r("GET /ui/api/jobs?state=x HTTP/1.1\r\n\r\n", "")),
            400
        );
        // A browser's own request for the icon gets it and submits nothing.
        assert!(matches!(
            r("GET /favicon.ico HTTP/1.1\r\n\r\n", ""),
            Route::Read {
                endpoint: Endpoint::Console(Page::Asset(_)),
                ..
            }
        ));
        // Nothing under /ui/ submits a job, whatever the method.
        assert_eq!(status(r("GET /ui/reverse HTTP/1.1\r\n\r\n", "")), 404);
        assert_eq!(status(r("POST /ui/x HTTP/1.1\r\n\r\n", "")), 405);
        assert_eq!(status(r("PUT /ui HTTP/1.1\r\n\r\n", "")), 405);
        // The one action.
        assert_eq!(
            r("POST /ui/api/cancel HTTP/1.1\r\n\r\n", "H:x:1"),
            Route::Act(Action::Cancel(Bytes::from_static(b"H:x:1")))
        );
        assert_eq!(status(r("GET /ui/api/cancel HTTP/1.1\r\n\r\n", "")), 405);
        // A name that merely starts with "ui" is a function as before.
        assert!(matches!(
            r("GET /uix HTTP/1.1\r\n\r\n", ""),
            Route::Submit(_)
        ));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode(b"a%2Fb%41").unwrap(), b"a/bA");
        assert!(percent_decode(b"%4").is_none());
        assert!(percent_decode(b"%g0").is_none());
    }

    #[test]
    fn draining_leaves_health_and_metrics_only() {
        let draining = |raw: &str, body: &str| while_draining(r(raw, body));
        let get = |p: &str| format!("GET {p} HTTP/1.1\r\n\r\n");
        for p in ["/healthz", "/metrics"] {
            assert_eq!(draining(&get(p), ""), r(&get(p), ""), "{p}");
        }
        let refused = Route::Reply(Reply::text(503, "draining"));
        for p in ["/status", "/workers", "/schedules", "/jobs/H:x:1", "/fn"] {
            assert_eq!(draining(&get(p), ""), refused, "{p}");
        }
        let post = "POST /fn HTTP/1.1\r\nContent-Length: 1\r\n\r\n";
        assert_eq!(draining(post, "x"), refused);
        let run = "POST /schedules/a%2Fb/run HTTP/1.1\r\n\r\n";
        assert!(matches!(r(run, ""), Route::Schedule { ref id, .. } if &id[..] == b"a/b"));
        assert_eq!(draining(run, ""), refused);
        // Errors are answered as ever.
        let delete = "DELETE /fn HTTP/1.1\r\n\r\n";
        assert_eq!(draining(delete, ""), r(delete, ""));
    }
}
