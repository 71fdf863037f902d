//! `POST /schedules/ID/run`, `/skip`, `/pause`, `/resume` and `/backfill?from=..&to=..`: the
//! path to an operation on a schedule entry, and the engine's answer to a JSON reply. Everything under `/schedules/` is
//! this module's: no job is submitted there, whatever the method.

use bytes::Bytes;

use super::endpoint::Route;
use super::json::{self, Obj};
use super::parse::Method;
use super::response::Reply;
use crate::engine::{BackfillError, Backfilled, ScheduleOpError, ScheduleStatus};
use crate::proto::admin::ScheduleOp;

const USE: &str = "use POST /schedules/ID/run, /skip, /pause or /resume";

/// The route for a decoded path (without its leading `/`), or `None` when it is not under
/// `schedules/`. A change of state is a POST only: anything else is `405` (a link followed or
/// a page prefetched never runs or pauses an entry).
pub fn route(method: &Method, path: &[u8]) -> Option<Route> {
    let rest = path.strip_prefix(b"schedules/")?;
    let op = rest
        .iter()
        .rposition(|&c| c == b'/')
        .map(|slash| (&rest[..slash], &rest[slash + 1..]))
        .filter(|(id, _)| !id.is_empty())
        .and_then(|(id, word)| Some((id, ScheduleOp::from_word(word)?)));
    let Some((id, op)) = op else {
        return Some(Route::Reply(Reply::text(404, USE)));
    };
    if *method != Method::Post {
        return Some(Route::Reply(
            Reply::text(405, "changing a schedule entry takes POST").header("Allow", "POST"),
        ));
    }
    Some(Route::Schedule {
        op,
        id: Bytes::copy_from_slice(id),
    })
}

const USE_BACKFILL: &str =
    "use POST /schedules/ID/backfill?from=FROM&to=TO[&dry_run=1] (RFC 3339 times or dates)";

/// `POST /schedules/ID/backfill`, its parameters from the query or a form body (`from`, `to`,
/// `dry_run`); `None` when the path is not a backfill's.
pub fn backfill_route(method: &Method, path: &[u8], query: &str, body: &[u8]) -> Option<Route> {
    let id = path
        .strip_prefix(b"schedules/")?
        .strip_suffix(b"/backfill")
        .filter(|id| !id.is_empty())?;
    if *method != Method::Post {
        return Some(Route::Reply(
            Reply::text(405, "changing a schedule entry takes POST").header("Allow", "POST"),
        ));
    }
    let (mut from, mut to, mut dry_run) = (None, None, false);
    for pair in query
        .as_bytes()
        .split(|&c| c == b'&')
        .chain(body.split(|&c| c == b'&'))
    {
        let (k, v) = match pair.iter().position(|&c| c == b'=') {
            Some(eq) => (&pair[..eq], &pair[eq + 1..]),
            None => (pair, &b""[..]),
        };
        // `+` stays a plus: it is an RFC 3339 offset's sign far more often than a space.
        let Some(v) = super::parse::percent_decode(v).and_then(|v| String::from_utf8(v).ok())
        else {
            return Some(Route::Reply(Reply::text(400, USE_BACKFILL)));
        };
        match k {
            b"from" => from = Some(v),
            b"to" => to = Some(v),
            b"dry_run" => dry_run = matches!(v.as_str(), "1" | "true" | "on" | "yes"),
            _ => {}
        }
    }
    let (Some(from), Some(to)) = (from, to) else {
        return Some(Route::Reply(Reply::text(400, USE_BACKFILL)));
    };
    Some(Route::Backfill {
        id: Bytes::copy_from_slice(id),
        from,
        to,
        dry_run,
    })
}

/// The answer to a backfill: `200` with the times it stands for (all of them for a dry run)
/// and the entry after it; an error's status and text otherwise.
pub fn backfill_reply(
    result: &Result<Backfilled, BackfillError>,
    entry: Option<&ScheduleStatus>,
) -> Reply {
    let mut out = String::with_capacity(256);
    let mut o = Obj::new(&mut out);
    o.str("op", "backfill");
    let status = match (result, entry) {
        (Ok(done), Some(entry)) => {
            o.bool("dry_run", done.dry_run)
                .num("runs", done.times.len() as u64);
            let list = o.key("times");
            list.push('[');
            for (i, &t) in done.times.iter().enumerate() {
                if i > 0 {
                    list.push(',');
                }
                json::string(list, &crate::engine::rfc3339(t));
            }
            list.push(']');
            json::schedule(o.key("schedule"), entry);
            200
        }
        (Ok(_), None) => {
            o.str("error", "no schedule entry has this id");
            404
        }
        (Err(e), _) => {
            o.str("error", &e.code_and_text().1);
            e.http_status()
        }
    };
    o.end();
    out.push('\n');
    Reply::json(status, out)
}

/// The answer to `op`: `200` with the entry as `/schedules` shows it after the operation (and
/// a run's job handles); `404` for an unknown entry, `409` for a run refused by
/// `overlap=skip`, `503` for a full queue or an ask the cluster did not take, each with an
/// `error` text.
pub fn reply(
    op: ScheduleOp,
    result: &Result<Vec<String>, ScheduleOpError>,
    entry: Option<&ScheduleStatus>,
) -> Reply {
    let mut out = String::with_capacity(512);
    let mut o = Obj::new(&mut out);
    o.str("op", op.word());
    let status = match (result, entry) {
        (Ok(handles), Some(entry)) => {
            let list = o.key("handles");
            list.push('[');
            for (i, h) in handles.iter().enumerate() {
                if i > 0 {
                    list.push(',');
                }
                json::string(list, h);
            }
            list.push(']');
            json::schedule(o.key("schedule"), entry);
            200
        }
        (Err(ScheduleOpError::RunInProgress(h)), _) => {
            o.str(
                "error",
                &format!("the previous run {h} is still queued or running (overlap=skip)"),
            )
            .str("running", h);
            409
        }
        (Err(ScheduleOpError::Heartbeat), _) => {
            o.str("error", crate::engine::HEARTBEAT_NOT_RUN);
            409
        }
        (Err(ScheduleOpError::QueueFull), _) => {
            o.str("error", "the queue of the entry's function is full");
            503
        }
        (Err(ScheduleOpError::ClusterUnreachable(why)), _) => {
            o.str("error", why);
            503
        }
        (Err(ScheduleOpError::UnknownEntry), _) | (Ok(_), None) => {
            o.str("error", "no schedule entry has this id");
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

    fn post(path: &str) -> Option<Route> {
        route(&Method::Post, path.as_bytes())
    }

    fn status(r: Option<Route>) -> u16 {
        match r {
            Some(Route::Reply(r)) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_to_operations() {
        assert_eq!(
            post("schedules/nightly/run"),
            Some(Route::Schedule {
                op: ScheduleOp::Run,
                id: Bytes::from_static(b"nightly"),
            })
        );
        // An id may hold a slash (percent-encoded in the URL, decoded before this).
        assert_eq!(
            post("schedules/a/b/PAUSE"),
            Some(Route::Schedule {
                op: ScheduleOp::Pause,
                id: Bytes::from_static(b"a/b"),
            })
        );
        assert_eq!(post("schedules"), None, "the listing is not ours");
        assert_eq!(post("schedulesx/a/run"), None);
        for bad in [
            "schedules/",
            "schedules/a",
            "schedules//run",
            "schedules/a/rerun",
        ] {
            assert_eq!(status(post(bad)), 404, "{bad}");
        }
        for m in [Method::Get, Method::Head, Method::Put] {
            let r = route(&m, b"schedules/a/resume");
            assert_eq!(status(r), 405, "{m:?}");
        }
    }

    #[test]
    fn replies() {
        let entry = ScheduleStatus {
            id: "n".into(),
            spec: "@hourly".into(),
            says: "every hour at minute 0 (UTC)".into(),
            function: "f".into(),
            next_ms: None,
            last_run_ms: None,
            last_outcome: None,
            last_duration_ms: None,
            runs: 0,
            failures: 0,
            skips: 0,
            too_long: 0,
            too_short: 0,
            paused: true,
            skip_next: false,
            last_run_manual: false,
            last_error: None,
            recent_runs: Vec::new(),
            recent_after: Vec::new(),
            after_pending: None,
            recent_outputs: Vec::new(),
            retries_pending: 0,
            runs_waiting: 0,
        };
        let r = reply(ScheduleOp::Run, &Ok(vec!["H:x:1".into()]), Some(&entry));
        assert_eq!(r.status, 200);
        let body = String::from_utf8_lossy(&r.body).into_owned();
        assert!(
            body.starts_with("{\"op\":\"run\",\"handles\":[\"H:x:1\"],\"schedule\":{\"id\":\"n\""),
            "{body}"
        );
        assert!(body.contains("\"paused\":true"), "{body}");
        let busy = ScheduleOpError::RunInProgress("H:x:1".into());
        assert_eq!(reply(ScheduleOp::Run, &Err(busy), None).status, 409);
        assert_eq!(
            reply(ScheduleOp::Run, &Err(ScheduleOpError::QueueFull), None).status,
            503
        );
        let unknown = reply(ScheduleOp::Skip, &Err(ScheduleOpError::UnknownEntry), None);
        assert_eq!(unknown.status, 404);
        assert_eq!(
            &unknown.body[..],
            b"{\"op\":\"skip\",\"error\":\"no schedule entry has this id\"}\n"
        );
    }
}
