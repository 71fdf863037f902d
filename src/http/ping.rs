//! `/ping/ID`, `/ping/ID/start`, `/ping/ID/fail` and `/ping/ID/EXIT_CODE`: a job that runs
//! elsewhere reports a run of its heartbeat entry (`expect=ping`). Everything under `/ping/`
//! is this module's: no job is submitted there, whatever the method.

use bytes::Bytes;

use super::parse::Method;
use super::response::Reply;
use crate::engine::{PingError, PingKind};

/// A ping, as the route gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ping {
    /// The heartbeat entry's id.
    pub id: Bytes,
    pub kind: PingKind,
    /// What the pinger sent: its output (the tail is kept as a failed run's error text).
    pub body: Bytes,
}

const USE: &str = "use /ping/ID, /ping/ID/start, /ping/ID/fail or /ping/ID/EXIT_CODE";

/// The ping for a decoded path (without its leading `/`), or the reply to give at once, or
/// `None` when the path is not under `ping/`. GET is taken as well as POST, for the simplest clients (`curl URL`, `wget`); the
/// last segment says what happened when it is `start`, `fail` or a number, else the whole
/// rest is the entry's id.
pub fn route(method: &Method, path: &[u8], body: &Bytes) -> Option<Result<Ping, Reply>> {
    let rest = path.strip_prefix(b"ping/")?;
    if !matches!(method, Method::Get | Method::Post) {
        return Some(Err(
            Reply::text(405, "a ping is a GET or a POST").header("Allow", "GET, POST")
        ));
    }
    let (id, kind) = match rest.iter().rposition(|&c| c == b'/') {
        Some(slash) if slash > 0 => {
            let (id, word) = (&rest[..slash], &rest[slash + 1..]);
            match kind_of(word) {
                Ok(Some(kind)) => (id, kind),
                Ok(None) => (rest, PingKind::Success),
                Err(r) => return Some(Err(r)),
            }
        }
        _ => (rest, PingKind::Success),
    };
    if id.is_empty() {
        return Some(Err(Reply::text(404, USE)));
    }
    Some(Ok(Ping {
        id: Bytes::copy_from_slice(id),
        kind,
        body: body.clone(),
    }))
}

/// The last segment as what a ping says; `None` when it is part of the id.
fn kind_of(word: &[u8]) -> Result<Option<PingKind>, Reply> {
    Ok(Some(match word {
        b"start" => PingKind::Start,
        b"fail" => PingKind::Fail,
        w if !w.is_empty() && w.iter().all(u8::is_ascii_digit) => {
            match std::str::from_utf8(w)
                .ok()
                .and_then(|t| t.parse::<u8>().ok())
            {
                Some(code) => PingKind::Exit(code),
                None => return Err(Reply::text(400, "an exit code is a number from 0 to 255")),
            }
        }
        _ => return Ok(None),
    }))
}

/// The answer to a ping: `200 OK`, `404` for an id no entry has, `409` for an entry that is
/// not a heartbeat (its runs are gearwheel's own jobs).
pub fn reply(result: Result<(), PingError>) -> Reply {
    match result {
        Ok(()) => Reply::text(200, "OK"),
        Err(PingError::UnknownEntry) => Reply::text(404, "no schedule entry has this id"),
        Err(PingError::NotWatched) => Reply::text(
            409,
            "this schedule entry runs its own jobs; only an expect=ping entry takes pings",
        ),
    }
    .uncached()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping(method: Method, path: &str) -> Option<Result<Ping, Reply>> {
        route(&method, path.as_bytes(), &Bytes::from_static(b"out"))
    }

    fn said(id: &str, kind: PingKind) -> Option<Result<Ping, Reply>> {
        Some(Ok(Ping {
            id: Bytes::copy_from_slice(id.as_bytes()),
            kind,
            body: Bytes::from_static(b"out"),
        }))
    }

    fn status(r: Option<Result<Ping, Reply>>) -> u16 {
        match r {
            Some(Err(r)) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn paths_to_pings() {
        assert_eq!(
            ping(Method::Post, "ping/backup"),
            said("backup", PingKind::Success)
        );
        assert_eq!(
            ping(Method::Get, "ping/backup"),
            said("backup", PingKind::Success)
        );
        assert_eq!(
            ping(Method::Post, "ping/b/start"),
            said("b", PingKind::Start)
        );
        assert_eq!(ping(Method::Post, "ping/b/fail"), said("b", PingKind::Fail));
        assert_eq!(ping(Method::Post, "ping/b/0"), said("b", PingKind::Exit(0)));
        assert_eq!(
            ping(Method::Post, "ping/b/255"),
            said("b", PingKind::Exit(255))
        );
        // An id may hold a slash (percent-encoded in the URL, decoded before this).
        assert_eq!(
            ping(Method::Post, "ping/a/b"),
            said("a/b", PingKind::Success)
        );
        assert_eq!(
            ping(Method::Post, "ping/a/b/3"),
            said("a/b", PingKind::Exit(3))
        );
        assert_eq!(
            ping(Method::Post, "ping/start"),
            said("start", PingKind::Success)
        );
        assert_eq!(ping(Method::Post, "ping"), None, "not ours");
        assert_eq!(ping(Method::Post, "pingx/a"), None);
        assert_eq!(status(ping(Method::Post, "ping/")), 404);
        assert_eq!(status(ping(Method::Post, "ping/b/256")), 400);
        assert_eq!(
            status(ping(Method::Post, "ping/b/99999999999999999999999")),
            400
        );
        for m in [Method::Head, Method::Put, Method::Other("DELETE".into())] {
            assert_eq!(status(ping(m.clone(), "ping/b")), 405, "{m:?}");
        }
    }

    #[test]
    fn replies() {
        assert_eq!(reply(Ok(())).status, 200);
        assert_eq!(reply(Err(PingError::UnknownEntry)).status, 404);
        assert_eq!(reply(Err(PingError::NotWatched)).status, 409);
    }
}
