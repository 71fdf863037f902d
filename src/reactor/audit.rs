//! The audit hook: an operator's action (a request that `access::classify::audited` names)
//! that passed the gate is handed to the engine's audit trail (src/engine/audit.rs) with who
//! asked, from where, the command and what came of it, and logged at NOTICE. Called from the
//! two dispatch points, the admin lines (admin.rs) and HTTP (http/mod.rs), and for a schedules
//! file pushed through etcd; a refused attempt never gets here (the gate counts it).

use crate::engine::Action;
use crate::http::parse::{Bearer, Head, Method};
use crate::http::response::Reply;
use crate::peer_text::shown;
use crate::proto::response::Response;

use super::Server;

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

/// An admin line's outcome: the first line of its reply (`OK`, `OK 3`, `ERR CODE text`).
fn admin_outcome(r: Option<&Response>) -> String {
    match r {
        Some(Response::Text(t)) => {
            let line = t.split(|&b| b == b'\n').next().unwrap_or_default();
            shown(line.trim_ascii()).to_string()
        }
        Some(_) => "OK".into(),
        None => "no reply".into(),
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

impl Server {
    /// Who connection `idx` acts as, as the gate judged it: the bearer token's `token:NAME`
    /// under an ACL, else the connection's identity; and its peer's address.
    fn actor(&self, idx: usize, bearer: Option<&Bearer>) -> (String, String) {
        let Some(c) = self.conns.slab.get(idx) else {
            return ("-".into(), "-".into());
        };
        let token = bearer.and_then(|b| {
            let acl = self.access.acl()?;
            let name = acl.token_for_digest(&crate::access::token::digest(&b.0)?)?;
            Some(format!("token:{name}"))
        });
        let identity = token.unwrap_or_else(|| c.identity().to_string());
        (identity, c.peer().to_string())
    }

    /// Keep and log an action.
    fn audit_record(&mut self, action: Action) {
        crate::notice!(
            "audit: {} ({}) {}: {}",
            action.identity,
            action.peer,
            action.command,
            action.outcome
        );
        self.engine.record_action(action);
    }

    fn action(&self, idx: usize, bearer: Option<&Bearer>, command: String) -> Action {
        let (identity, peer) = self.actor(idx, bearer);
        Action {
            seq: 0,
            at_ms: self.time.now,
            identity,
            peer,
            command,
            outcome: String::new(),
        }
    }

    /// An admin line of connection `idx` was served: the replies from `first` on in the
    /// outbox are its answer. `line` is the line as sent.
    pub(super) fn audit_admin(&mut self, idx: usize, line: &[u8], first: usize) {
        let id = self.conns.slab.get(idx).map(|c| c.id);
        let reply = self.outbox.replies.get(first..).and_then(|rs| {
            rs.iter()
                .rev()
                .find(|(to, _)| Some(*to) == id)
                .map(|(_, r)| r)
        });
        let outcome = admin_outcome(reply);
        let command = shown(line.trim_ascii()).to_string();
        let action = Action {
            outcome,
            ..self.action(idx, None, command)
        };
        self.audit_record(action);
    }

    /// An HTTP action of connection `idx` passed the gate: kept until its answer.
    pub(super) fn audit_http_begin(&mut self, idx: usize, head: &Head, body: &[u8]) {
        let mut command = format!("{} {}", method_name(&head.method), head.target);
        if !body.is_empty() {
            command.push(' ');
            command.push_str(&String::from_utf8_lossy(body.trim_ascii()));
        }
        let action = self.action(idx, head.bearer.as_ref(), shown(&command).to_string());
        self.audit.pending = Some(Pending { idx, action });
    }

    /// HTTP connection `idx` is answered with `reply`: the action it asked for, if any, is done.
    pub(super) fn audit_http_answer(&mut self, idx: usize, reply: &Reply) {
        if let Some(p) = self.audit.pending.take_if(|p| p.idx == idx) {
            // Refused after the gate (the console's own check of its page): a refusal is
            // counted where it is made, not recorded.
            if matches!(reply.status, 401 | 403) {
                return;
            }
            let outcome = http_outcome(reply);
            self.audit_record(Action {
                outcome,
                ..p.action
            });
        }
    }

    /// The request is dispatched: an action not answered at once is recorded as accepted.
    pub(super) fn audit_http_end(&mut self) {
        if let Some(p) = self.audit.pending.take() {
            let outcome = "accepted".to_string();
            self.audit_record(Action {
                outcome,
                ..p.action
            });
        }
    }

    /// A schedules file pushed through etcd was loaded (or refused): an action on this server,
    /// by whoever wrote it to etcd.
    pub(super) fn audit_push(&mut self, result: &Result<usize, String>) {
        let outcome = match result {
            Ok(n) => format!("OK {n}"),
            Err(e) => shown(e).to_string(),
        };
        let action = Action {
            seq: 0,
            at_ms: self.time.now,
            identity: "etcd".into(),
            peer: "-".into(),
            command: "schedules push".into(),
            outcome,
        };
        self.audit_record(action);
    }
}
