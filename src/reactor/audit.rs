//! The audit hook: an operator's action (a request that `access::classify::audited` names)
//! that passed the gate is handed to the engine's audit trail (src/engine/audit.rs) with who
//! asked, from where, the command and what came of it, and logged at NOTICE. Called from the
//! two dispatch points, the admin lines (gearman.rs) and HTTP (http/mod.rs), and for a schedules
//! file pushed through etcd; a refused attempt never gets here (the gate counts it).

use crate::engine::Action;
use crate::http::parse::{Bearer, Head, Method};
use crate::http::response::Reply;
use crate::peer_text::shown;
use crate::proto::response::Response;

use super::conn::Conns;
use super::gate::Gate;
use crate::engine::{Engine, Outbox};

/// An HTTP action waiting for its answer (`http_answer` gives its outcome).
#[derive(Debug)]
pub(super) struct Pending {
    idx: usize,
    action: Action,
}

/// The audit hook's state: the HTTP action being answered.
#[derive(Debug, Default)]
pub(super) struct AuditHook {
    pending: Option<Pending>,
}

/// A reply's outcome: `OK` for a 2xx, else the status and the first line of its text.
fn http_outcome(r: &Reply) -> String {
    if (200..300).contains(&r.status) {
        return "OK".into();
    }
    let line = r.body.split(|&b| b == b'\n').next().unwrap_or_default();
    format!("{} {}", r.status, shown(line.trim_ascii()))
}

/// An admin line's outcome: the first line of its reply (`OK`, `OK 3`, `ERR CODE text`);
/// `accepted` when its answer waits (for the cluster's), as an HTTP action's.
fn admin_outcome(r: Option<&Response>) -> String {
    match r {
        Some(Response::Text(t)) => {
            let line = t.split(|&b| b == b'\n').next().unwrap_or_default();
            shown(line.trim_ascii()).to_string()
        }
        Some(_) => "OK".into(),
        None => "accepted".into(),
    }
}

fn method_name(m: &Method) -> &str {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Other(s) => s,
    }
}

/// What the hook reads to name who acted: the connections, the gate (whose ACL knows a
/// bearer token's name) and the turn's time.
pub(super) struct Seen<'a> {
    pub conns: &'a Conns,
    pub gate: &'a Gate,
    pub now: u64,
}

impl Seen<'_> {
    /// Who connection `idx` acts as, as the gate judged it: the bearer token's `token:NAME`
    /// under an ACL, else the connection's identity; and its peer's address.
    fn actor(&self, idx: usize, bearer: Option<&Bearer>) -> (String, String) {
        let Some(c) = self.conns.slab.get(idx) else {
            return ("-".into(), "-".into());
        };
        let token = bearer.and_then(|b| {
            let acl = self.gate.acl()?;
            let name = acl.token_for_digest(&crate::access::token::digest(&b.0)?)?;
            Some(format!("token:{name}"))
        });
        let identity = token.unwrap_or_else(|| c.identity().to_string());
        (identity, c.peer().to_string())
    }

    fn action(&self, idx: usize, bearer: Option<&Bearer>, command: String) -> Action {
        let (identity, peer) = self.actor(idx, bearer);
        Action {
            seq: 0,
            at_ms: self.now,
            identity,
            peer,
            command,
            outcome: String::new(),
        }
    }
}

/// Keep and log an action.
fn record(engine: &mut Engine, action: Action) {
    crate::notice!(
        "audit: {} ({}) {}: {}",
        action.identity,
        action.peer,
        action.command,
        action.outcome
    );
    engine.record_action(action);
}

impl AuditHook {
    /// An admin line of connection `idx` was served: the replies from `first` on in the
    /// outbox are its answer. `line` is the line as sent.
    pub(super) fn admin(
        engine: &mut Engine,
        seen: &Seen,
        outbox: &Outbox,
        idx: usize,
        line: &[u8],
        first: usize,
    ) {
        let id = seen.conns.slab.get(idx).map(|c| c.id);
        let reply = outbox.replies.get(first..).and_then(|rs| {
            rs.iter()
                .rev()
                .find(|(to, _)| Some(*to) == id)
                .map(|(_, r)| r)
        });
        let outcome = admin_outcome(reply);
        let command = shown(line.trim_ascii()).to_string();
        let action = Action {
            outcome,
            ..seen.action(idx, None, command)
        };
        record(engine, action);
    }

    /// An HTTP action of connection `idx` passed the gate: kept until its answer.
    pub(super) fn http_begin(&mut self, seen: &Seen, idx: usize, head: &Head, body: &[u8]) {
        let mut command = format!("{} {}", method_name(&head.method), head.target);
        if !body.is_empty() {
            command.push(' ');
            command.push_str(&String::from_utf8_lossy(body.trim_ascii()));
        }
        let action = seen.action(idx, head.bearer.as_ref(), shown(&command).to_string());
        self.pending = Some(Pending { idx, action });
    }

    /// HTTP connection `idx` is answered with `reply`: the action it asked for, if any, is done.
    pub(super) fn http_answer(&mut self, engine: &mut Engine, idx: usize, reply: &Reply) {
        if let Some(p) = self.pending.take_if(|p| p.idx == idx) {
            // Refused after the gate (the console's own check of its page): a refusal is
            // counted where it is made, not recorded.
            if matches!(reply.status, 401 | 403) {
                return;
            }
            let outcome = http_outcome(reply);
            record(
                engine,
                Action {
                    outcome,
                    ..p.action
                },
            );
        }
    }

    /// The request is dispatched: an action not answered at once is recorded as accepted.
    pub(super) fn http_end(&mut self, engine: &mut Engine) {
        if let Some(p) = self.pending.take() {
            let outcome = "accepted".to_string();
            record(
                engine,
                Action {
                    outcome,
                    ..p.action
                },
            );
        }
    }

    /// A schedules file pushed through etcd was loaded (or refused): an action on this server,
    /// by whoever wrote it to etcd.
    pub(super) fn push(engine: &mut Engine, now: u64, result: &Result<usize, String>) {
        let outcome = match result {
            Ok(n) => format!("OK {n}"),
            Err(e) => shown(e).to_string(),
        };
        let action = Action {
            seq: 0,
            at_ms: now,
            identity: "etcd".into(),
            peer: "-".into(),
            command: "schedules push".into(),
            outcome,
        };
        record(engine, action);
    }
}
