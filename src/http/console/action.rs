//! The console's actions: cancel a queued or future job (the admin line `cancel job`), run
//! now, skip the next run of, pause or resume a schedule entry (`run|skip|pause|resume schedule
//! ID`), and retry or drop a failed job (`retry|drop failed HANDLE`, the same operations as
//! `POST /failed/HANDLE/retry` and `DELETE /failed/HANDLE`). POSTs to `/ui/api/cancel`,
//! `/ui/api/retry` and `/ui/api/drop` (body: the handle), `/ui/api/retry-all` and
//! `/ui/api/drop-all` (body: a filter, `function=F&entry=E`, either or both or neither: the
//! failed jobs it names), `/ui/api/schedule` (body: the word and the entry's id, `pause
//! nightly`) and `/ui/api/function` (body: `pause NAME` or `resume NAME`, the admin lines
//! `pause|resume function NAME`) and `/ui/api/backfill` (body: `ID FROM TO [dry-run]`, the
//! admin line `backfill schedule`), served only when they prove they come from the
//! console's own page (checked here), and without an ACL only to a loopback peer (the
//! listener has no authentication, so nothing that changes a job is offered to the network;
//! that rule is the gate's, src/reactor/gate.rs, with `admin` under an ACL).
//!
//! The CSRF defence is two checks on top of the listener's Host/Origin/Sec-Fetch-Site guard:
//! the request must carry `X-Gearwheel-Console` (a page of another origin cannot make a browser
//! send a custom header without a CORS preflight, which this server never answers), and it must
//! say where it comes from (`Origin`, which the guard has already matched to `Host`, or
//! `Sec-Fetch-Site: same-origin`); a request with neither is a script's, and scripts have the
//! admin port.

use bytes::Bytes;

use super::super::parse::SiteHeaders;
use super::super::response::Reply;
use super::lists::{FailedFilter, failed_filter};
use crate::proto::admin::ScheduleOp;

/// The longest body an action accepts (a handle, or a word and an entry id).
const MAX_BODY: usize = 256;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Cancel(Bytes),
    /// Queue a failed job again.
    Retry(Bytes),
    /// Forget a failed job.
    Drop(Bytes),
    /// Queue again every failed job the filter names (`retry failed`, for a filter).
    RetryAll(FailedFilter),
    /// Forget every failed job the filter names (`drop failed`, for a filter).
    DropAll(FailedFilter),
    Schedule {
        op: ScheduleOp,
        id: Bytes,
    },
    /// `backfill schedule ID FROM TO [dry-run]` (FROM and TO as typed; the engine reads them).
    Backfill {
        id: Bytes,
        from: String,
        to: String,
        dry_run: bool,
    },
    /// Pause (true) or resume a function's handouts (`pause|resume function FUNCTION`).
    Function {
        paused: bool,
        func: Bytes,
    },
}

/// Why an action was refused (403), for the log and `gearman_http_refused_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    NoConsoleHeader,
    NoOrigin,
}

impl Denied {
    pub fn message(self) -> &'static str {
        match self {
            Denied::NoConsoleHeader => {
                "forbidden: a console action needs the X-Gearwheel-Console header"
            }
            Denied::NoOrigin => {
                "forbidden: a console action must come from the console's page (Origin or Sec-Fetch-Site: same-origin)"
            }
        }
    }
}

fn bad(message: &str) -> Option<Result<Action, Reply>> {
    Some(Err(Reply::text(400, message)))
}

/// The action a console path names, if it names one (`None`: not an action path).
pub fn action(path: &[u8], post: bool, body: &[u8]) -> Option<Result<Action, Reply>> {
    let one_handle: Option<fn(Bytes) -> Action> = match path {
        b"ui/api/cancel" => Some(Action::Cancel),
        b"ui/api/retry" => Some(Action::Retry),
        b"ui/api/drop" => Some(Action::Drop),
        b"ui/api/schedule" | b"ui/api/function" | b"ui/api/retry-all" | b"ui/api/drop-all"
        | b"ui/api/backfill" => None,
        _ => return None,
    };
    if !post {
        return Some(Err(
            Reply::text(405, "console actions are POSTs").header("Allow", "POST")
        ));
    }
    // A filter as a form sends it (`function=F&entry=E`); empty: every failed job.
    let all: Option<fn(FailedFilter) -> Action> = match path {
        b"ui/api/retry-all" => Some(Action::RetryAll),
        b"ui/api/drop-all" => Some(Action::DropAll),
        _ => None,
    };
    if let Some(make) = all {
        if body.len() > MAX_BODY * 2 {
            return bad("the filter must be at most 512 bytes");
        }
        return Some(
            failed_filter(body.trim_ascii())
                .map(make)
                .map_err(|why| Reply::text(400, why)),
        );
    }
    let body = body.trim_ascii();
    if body.is_empty() || body.len() > MAX_BODY || crate::proto::names::has_control(body) {
        return bad("the body must be one line of at most 256 bytes, no control characters");
    }
    if let Some(make) = one_handle {
        return Some(Ok(make(Bytes::copy_from_slice(body))));
    }
    if path == b"ui/api/backfill" {
        let words: Vec<&[u8]> = body
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty())
            .collect();
        let text = |w: &[u8]| String::from_utf8_lossy(w).into_owned();
        return match words.as_slice() {
            [id, from, to, rest @ ..] if rest.is_empty() || rest == [b"dry-run"] => {
                Some(Ok(Action::Backfill {
                    id: Bytes::copy_from_slice(id),
                    from: text(from),
                    to: text(to),
                    dry_run: !rest.is_empty(),
                }))
            }
            _ => bad(
                "the body must be a schedule entry's id, FROM and TO, and dry-run for a dry run",
            ),
        };
    }
    let (word, id) = body.split_at(body.iter().position(|&b| b == b' ').unwrap_or(body.len()));
    let id = id.trim_ascii();
    if path == b"ui/api/function" {
        let paused = match word {
            b"pause" => true,
            b"resume" => false,
            _ => return bad("the body must be pause or resume, a space and a function name"),
        };
        if id.is_empty() {
            return bad("the body must be pause or resume, a space and a function name");
        }
        return Some(Ok(Action::Function {
            paused,
            func: Bytes::copy_from_slice(id),
        }));
    }
    match ScheduleOp::from_word(word) {
        Some(op) if !id.is_empty() => Some(Ok(Action::Schedule {
            op,
            id: Bytes::copy_from_slice(id),
        })),
        _ => bad("the body must be run, skip, pause or resume, a space and a schedule entry's id"),
    }
}

/// Does this request come from the console's page? (Whether its peer may act at all is the
/// gate's rule: `Need::ConsoleAct`.)
pub fn may_act(site: &SiteHeaders) -> Result<(), Denied> {
    if !site.console {
        return Err(Denied::NoConsoleHeader);
    }
    let same_origin = site
        .sec_fetch_site
        .as_deref()
        .is_some_and(|s| s.eq_ignore_ascii_case(b"same-origin"));
    if site.origin.is_none() && !same_origin {
        return Err(Denied::NoOrigin);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_post_with_one_handle() {
        assert_eq!(action(b"ui/api/server", true, b"x"), None);
        assert_eq!(
            action(b"ui/api/cancel", true, b" H:x:1\n"),
            Some(Ok(Action::Cancel(Bytes::from_static(b"H:x:1"))))
        );
        let status = |r: Option<Result<Action, Reply>>| r.unwrap().unwrap_err().status;
        assert_eq!(status(action(b"ui/api/cancel", false, b"")), 405);
        assert_eq!(status(action(b"ui/api/cancel", true, b"")), 400);
        assert_eq!(status(action(b"ui/api/cancel", true, b"H:x\x001")), 400);
        assert_eq!(status(action(b"ui/api/cancel", true, &[b'h'; 257])), 400);
        assert_eq!(
            action(b"ui/api/retry", true, b"H:x:2"),
            Some(Ok(Action::Retry(Bytes::from_static(b"H:x:2"))))
        );
        assert_eq!(
            action(b"ui/api/drop", true, b"H:x:3\r\n"),
            Some(Ok(Action::Drop(Bytes::from_static(b"H:x:3"))))
        );
        assert_eq!(status(action(b"ui/api/retry", false, b"H:x:2")), 405);
        assert_eq!(status(action(b"ui/api/drop", true, b"")), 400);
        assert_eq!(
            action(b"ui/api/schedule", true, b"Pause nightly-backup"),
            Some(Ok(Action::Schedule {
                op: ScheduleOp::Pause,
                id: Bytes::from_static(b"nightly-backup")
            }))
        );
        for bad in [&b"pause"[..], b"explode x", b"run "] {
            assert_eq!(
                status(action(b"ui/api/schedule", true, bad)),
                400,
                "{bad:?}"
            );
        }
        assert_eq!(status(action(b"ui/api/schedule", false, b"run x")), 405);
        assert_eq!(
            action(
                b"ui/api/backfill",
                true,
                b"nightly 2026-11-01 2026-11-02 dry-run"
            ),
            Some(Ok(Action::Backfill {
                id: Bytes::from_static(b"nightly"),
                from: "2026-11-01".into(),
                to: "2026-11-02".into(),
                dry_run: true,
            }))
        );
        for bad in [&b"nightly 2026-11-01"[..], b"a b c d", b"a b c dry-run x"] {
            assert_eq!(
                status(action(b"ui/api/backfill", true, bad)),
                400,
                "{bad:?}"
            );
        }
        assert_eq!(
            action(b"ui/api/retry-all", true, b"function=f&entry=nightly"),
            Some(Ok(Action::RetryAll(FailedFilter {
                function: Some(Bytes::from_static(b"f")),
                entry: Some(Bytes::from_static(b"nightly")),
                handle: None,
            })))
        );
        assert_eq!(
            action(b"ui/api/drop-all", true, b""),
            Some(Ok(Action::DropAll(FailedFilter::default())))
        );
        assert_eq!(status(action(b"ui/api/drop-all", true, b"entry=%0a")), 400);
        assert_eq!(status(action(b"ui/api/drop-all", false, b"")), 405);
        assert_eq!(status(action(b"ui/api/retry-all", true, &[b'a'; 513])), 400);
        assert_eq!(
            action(b"ui/api/function", true, b"pause email.send"),
            Some(Ok(Action::Function {
                paused: true,
                func: Bytes::from_static(b"email.send")
            }))
        );
        assert_eq!(
            action(b"ui/api/function", true, b"resume f"),
            Some(Ok(Action::Function {
                paused: false,
                func: Bytes::from_static(b"f")
            }))
        );
        for bad in [&b"stop f"[..], b"pause", b"pause "] {
            assert_eq!(
                status(action(b"ui/api/function", true, bad)),
                400,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_header_and_an_origin() {
        let page = SiteHeaders {
            host: Some(b"127.0.0.1:8080".to_vec()),
            origin: Some(b"http://127.0.0.1:8080".to_vec()),
            sec_fetch_site: Some(b"same-origin".to_vec()),
            console: true,
        };
        assert_eq!(may_act(&page), Ok(()));
        let no_header = SiteHeaders {
            console: false,
            ..page.clone()
        };
        assert_eq!(may_act(&no_header), Err(Denied::NoConsoleHeader));
        // curl with the header but no sign of a page.
        let script = SiteHeaders {
            host: Some(b"127.0.0.1:8080".to_vec()),
            console: true,
            ..SiteHeaders::default()
        };
        assert_eq!(may_act(&script), Err(Denied::NoOrigin));
        let fetch_only = SiteHeaders {
            origin: None,
            ..page
        };
        assert_eq!(may_act(&fetch_only), Ok(()));
    }
}
