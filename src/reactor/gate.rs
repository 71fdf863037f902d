//! The one gate into the engine: every Gearman packet, admin line and HTTP request passes
//! `Gate::check` (through `Server::gate`) before the engine (or the loop's own admin lines)
//! acts on it. The gate knows the connection's identity, which the engine never sees;
//! `crate::access::classify` says what a request needs, and the rules stand here, in order. It
//! also owns the `--acl` file's loading and reloads, the denials' log lines (bounded per
//! connection) and their counts.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use log::{error, warn};

use super::conn::{Connection, Conns};
use crate::access::classify::{Need, Scope};
use crate::access::denials::DenialCounts;
use crate::access::peer::Peer;
use crate::access::{self, AccessConfig, Acl, Identity, Operation};
use crate::engine::{Engine, Outbox};
use crate::http::console;
use crate::http::parse::{Bearer, Version};
use crate::http::response::Reply;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::peer_text::shown;
use crate::proto::request::Request;
use crate::proto::response::Response;

/// What protected mode says, once, to a peer it refuses.
const PROTECTED: &str = "protected mode: this server serves peers beyond loopback on a listener that does not authenticate them (plaintext, or TLS without --ssl-ca-file) only with an access list; configure TLS (--ssl-certificate, --ssl-key, --ssl-ca-file) and --acl FILE, or start it with --protected-mode no on a network you trust";

/// The access state of the server: the flags, the rules in force, the denials counted.
pub(super) struct Gate {
    config: AccessConfig,
    /// The console is on (`--no-console` not given): its actions exist to be guarded.
    console: bool,
    acl: Option<Acl>,
    denials: DenialCounts,
}

impl Gate {
    pub(super) fn new(config: AccessConfig, console: bool) -> Gate {
        Gate {
            console,
            denials: DenialCounts::new(config.metric_identities),
            config,
            acl: None,
        }
    }

    /// Does protected mode refuse peers beyond loopback on a listener at `local` that does not
    /// authenticate them?
    pub(super) fn protects(&self, local: std::net::SocketAddr) -> bool {
        self.config.protected_mode && self.config.acl.is_none() && !local.ip().is_loopback()
    }

    /// An ACL decides (`--acl` was given).
    pub(super) fn has_acl(&self) -> bool {
        self.acl.is_some()
    }

    /// The ACL in force, if any (the audit hook names a bearer token by it).
    pub(super) fn acl(&self) -> Option<&Acl> {
        self.acl.as_ref()
    }

    /// (identity, operation, denials) for /metrics.
    pub(super) fn denial_rows(&self) -> Vec<(String, &'static str, u64)> {
        self.denials.rows()
    }
}

/// Why the gate refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Denial {
    /// Protected mode: the peer is told how to configure access, and the connection closes.
    Protected,
    /// `shutdown` from a non-loopback peer while no ACL decides.
    ShutdownRefused,
    /// A console action from a non-loopback peer while no ACL decides.
    ConsoleNotLoopback,
    /// `Authorization: Bearer` with a secret no `token` line has.
    UnknownToken,
    /// The ACL grants `op` on `function` (`None`: every function) to no rule of `identity`.
    Denied {
        op: Operation,
        function: Option<String>,
        identity: Identity,
    },
    /// No connection holds the slot asked about: with no peer to judge, nothing is served.
    NoConnection,
}

impl Denial {
    /// What the denial says, in words.
    fn text(&self) -> String {
        match self {
            Denial::Protected => PROTECTED.to_string(),
            Denial::ShutdownRefused => "shutdown is only accepted from a loopback address".into(),
            Denial::ConsoleNotLoopback => {
                "console actions are served to loopback peers only".into()
            }
            Denial::UnknownToken => "the bearer token is not known".into(),
            Denial::Denied {
                op,
                function,
                identity,
            } => match function {
                Some(f) => format!("{} on function {f} is not granted to {identity}", op.name()),
                None => format!(
                    "{} on every function is not granted to {identity}",
                    op.name()
                ),
            },
            Denial::NoConnection => "the connection is gone".into(),
        }
    }

    /// The operation label it is counted under in /metrics.
    fn operation(&self) -> &'static str {
        match self {
            Denial::Protected => "protected_mode",
            Denial::ShutdownRefused | Denial::ConsoleNotLoopback => "admin",
            Denial::UnknownToken => "unknown_token",
            Denial::Denied { op, .. } => op.name(),
            Denial::NoConnection => "no_connection",
        }
    }

    /// The connection is closed after the reply.
    pub(super) fn closes(&self) -> bool {
        matches!(self, Denial::Protected | Denial::NoConnection)
    }

    /// The reply to an admin line.
    pub(super) fn admin_line(&self) -> Bytes {
        let code = match self {
            Denial::ShutdownRefused => "SHUTDOWN_REFUSED",
            Denial::Protected => "PROTECTED_MODE",
            Denial::UnknownToken
            | Denial::Denied { .. }
            | Denial::ConsoleNotLoopback
            | Denial::NoConnection => "PERMISSION_DENIED",
        };
        format!("ERR {code} {}\r\n", self.text().replace(' ', "+")).into()
    }

    /// The reply to a Gearman packet: an ERROR packet.
    pub(super) fn packet(&self) -> Response {
        match self {
            Denial::Protected => Response::error("PROTECTED_MODE", self.text()),
            Denial::ShutdownRefused => Response::text(self.admin_line()),
            Denial::UnknownToken
            | Denial::Denied { .. }
            | Denial::ConsoleNotLoopback
            | Denial::NoConnection => Response::error("PERMISSION_DENIED", self.text()),
        }
    }

    /// The reply to an HTTP request: 403 (401 for an unknown token).
    pub(super) fn http(&self) -> Reply {
        match self {
            Denial::Protected => Reply::fatal(403, PROTECTED),
            Denial::UnknownToken => Reply::text(401, &format!("unauthorized: {}", self.text()))
                .header("WWW-Authenticate", "Bearer"),
            // With the console's own headers, as its other refusals.
            Denial::ConsoleNotLoopback => {
                console::guarded(Reply::text(403, &format!("forbidden: {}", self.text())))
            }
            Denial::ShutdownRefused | Denial::Denied { .. } | Denial::NoConnection => {
                Reply::text(403, &format!("forbidden: {}", self.text()))
            }
        }
    }
}

/// The rules, first match wins:
/// 1. protected mode refuses the peer (it is told why and closed);
/// 2. without an ACL, `shutdown` and (while the console is on) its actions only from a
///    loopback address, and everything else;
/// 3. with an ACL, an unknown bearer token is refused, then the ACL alone decides, for the
///    bearer's `token:NAME` or the connection's identity, loopback peers too.
///
/// Inlined, with rule 3 out of line: every packet passes here, most often on rule 2.
#[inline]
fn judge(
    gate: &Gate,
    engine: &Engine,
    c: &Connection,
    need: Need<'_>,
    bearer: Option<&Bearer>,
) -> Result<(), Denial> {
    let a = &c.access;
    if a.protected {
        return Err(Denial::Protected);
    }
    match &gate.acl {
        None => match need {
            Need::Shutdown if !a.loopback => Err(Denial::ShutdownRefused),
            // Under --no-console there is no action to guard: its 404 says so to everyone.
            Need::ConsoleAct if gate.console && !a.loopback => Err(Denial::ConsoleNotLoopback),
            // Every need is named, so that a new one cannot pass here unseen: the gate
            // decides each one on purpose.
            Need::Shutdown | Need::ConsoleAct | Need::Free | Need::Op(..) => Ok(()),
        },
        Some(acl) => judge_by_acl(acl, engine, c, need, bearer),
    }
}

/// Rule 3: the ACL decides.
#[inline(never)]
fn judge_by_acl(
    acl: &Acl,
    engine: &Engine,
    c: &Connection,
    need: Need<'_>,
    bearer: Option<&Bearer>,
) -> Result<(), Denial> {
    let identity = match bearer {
        Some(b) => {
            let name = access::token::digest(&b.0)
                .and_then(|d| acl.token_for_digest(&d))
                .ok_or(Denial::UnknownToken)?;
            Cow::Owned(Identity::Token(name.to_string()))
        }
        None => c.identity(),
    };
    let (op, scope) = match need {
        Need::Free => return Ok(()),
        Need::Shutdown | Need::ConsoleAct => (Operation::Admin, Scope::Every),
        Need::Op(op, scope) => (op, scope),
    };
    let function = match scope {
        Scope::Function(f) => Some(f),
        // An unknown job has nothing to guard: the engine answers that it does not know it.
        Scope::Job(handle) => match engine.job_function(handle) {
            Some(f) => Some(&f[..]),
            None => return Ok(()),
        },
        Scope::Every => None,
    };
    if acl.allows(&identity, op, function) {
        return Ok(());
    }
    Err(Denial::Denied {
        op,
        function: function.map(|f| shown(f).to_string()),
        identity: identity.into_owned(),
    })
}

impl Gate {
    /// May connection `c` have `need` served (`bearer`: an HTTP request's token)? The rules
    /// are `judge`'s; a denial is counted here, and logged up to `--acl-denials-logged` a
    /// connection, within the server's budget of peer-caused lines (`crate::log_budget`);
    /// a console action refused without an ACL counts in `console_refused` (HTTP's).
    #[inline]
    pub(super) fn check(
        &mut self,
        c: &mut Connection,
        engine: &Engine,
        need: Need<'_>,
        bearer: Option<&Bearer>,
        console_refused: &mut u64,
        now: u64,
    ) -> Result<(), Denial> {
        match judge(self, engine, c, need, bearer) {
            Ok(()) => Ok(()),
            Err(d) => Err(self.denied(c, d, console_refused, now)),
        }
    }

    /// Count and log a denial of connection `c`.
    #[cold]
    #[inline(never)]
    pub(super) fn denied(
        &mut self,
        c: &mut Connection,
        d: Denial,
        console_refused: &mut u64,
        now: u64,
    ) -> Denial {
        let idx = c.id.index;
        if d == Denial::ConsoleNotLoopback {
            // No ACL is in force: counted and logged with the console's other refusals
            // (gearman_http_refused_total{reason="console_action"}), not as an ACL denial.
            *console_refused += 1;
            peer_log!(
                now,
                Cause::Console,
                Warn,
                "HTTP connection {idx} from {}: 403 (console action): NotLoopback",
                c.access.ip()
            );
            return d;
        }
        let who = match &d {
            Denial::Denied { identity, .. } => identity.to_string(),
            Denial::Protected
            | Denial::ShutdownRefused
            | Denial::ConsoleNotLoopback
            | Denial::UnknownToken
            | Denial::NoConnection => c.identity().to_string(),
        };
        let a = &mut c.access;
        a.denials = a.denials.saturating_add(1);
        self.denials.count(&who, d.operation());
        let cap = self.config.denials_logged;
        if a.denials <= cap {
            peer_log!(
                now,
                Cause::Denied,
                Warn,
                "denied: connection {idx} ({who}, from {}): {}",
                a.ip(),
                d.text()
            );
        } else if a.denials == cap.saturating_add(1) {
            peer_log!(
                now,
                Cause::Denied,
                Warn,
                "denied: connection {idx} ({who}, from {}): more than {cap} denials; the rest are counted in /metrics, not logged",
                a.ip()
            );
        }
        d
    }

    /// Would the gate let `need` through for connection `c`? Asked without logging or
    /// counting, for what the server does on a connection's behalf (the HTTP connection's
    /// OPTION_REQ at accept) and for what the console offers.
    pub(super) fn permits(&self, c: &Connection, engine: &Engine, need: Need<'_>) -> bool {
        judge(self, engine, c, need, None).is_ok()
    }

    /// Protected mode applies to peers of the listener bound at `local`, which does not
    /// authenticate them.
    pub(super) fn access_for(&self, peer: SocketAddr, local: SocketAddr) -> Peer {
        Peer::new(peer, self.protects(local))
    }

    /// Protected mode refuses `peer` at accept, on a plaintext listener (`http`: an HTTP
    /// one): counted and logged as at a first request, and the one refusal to write before
    /// the close, an ERROR packet or a 403. Nothing of the peer is read.
    #[cold]
    pub(super) fn protected_at_accept(&mut self, peer: &Peer, http: bool, now: u64) -> BytesMut {
        let d = Denial::Protected;
        let who = Identity::Addr(peer.ip()).to_string();
        self.denials.count(&who, d.operation());
        peer_log!(
            now,
            Cause::Denied,
            Warn,
            "denied: connection from {} ({who}) at accept: {}",
            peer.peer(),
            d.text()
        );
        let mut out = BytesMut::new();
        if http {
            let date = crate::http::response::http_date(now);
            let reply = d.http();
            crate::http::response::write(&mut out, &reply, Version::Http11, false, false, &date);
        } else {
            crate::proto::response::encode(&d.packet(), &mut out);
        }
        out
    }

    /// A connection is closing: say how many of its denials were not logged.
    pub(super) fn closed(&self, c: &Connection, now: u64) {
        let a = &c.access;
        let cap = self.config.denials_logged;
        if a.denials > cap {
            peer_log!(
                now,
                Cause::Denied,
                Warn,
                "connection {} ({}, from {}) closed after {} denials, {} of them not logged",
                c.id.index,
                c.identity(),
                a.ip(),
                a.denials,
                a.denials - cap
            );
        }
    }

    /// After a reload: a worker whose identity lost `work` on a function it registered is
    /// unregistered from it, as if it had sent CANT_DO, so that no job of it (and no workload)
    /// reaches the worker any more. A job it already holds is not taken from it: its WORK_*
    /// are refused, and the job is given back when the worker leaves (or its lease ends).
    fn withdraw_work(&self, conns: &Conns, engine: &mut Engine, outbox: &mut Outbox, now: u64) {
        let Some(acl) = &self.acl else {
            return;
        };
        let mut lost = Vec::new();
        for (idx, c) in &conns.slab {
            for func in engine.functions_of(c.id) {
                if !acl.allows(&c.identity(), Operation::Work, Some(&func)) {
                    lost.push((idx, c.id, func));
                }
            }
        }
        for (idx, id, func) in lost {
            if let Some(c) = conns.slab.get(idx) {
                warn!(
                    "access list reloaded: connection {idx} ({}, from {}) no longer works on {}",
                    c.identity(),
                    c.access.ip(),
                    shown(&func)
                );
            }
            engine.handle(id, Request::CantDo { func }, now, outbox);
        }
    }

    /// Read `--acl` for the first time (before any connection); the error is
    /// `FILE:LINE:COL: message`. Says at start what protected mode does on `beyond`, the
    /// listeners beyond loopback that do not authenticate their peers; `open_http`: the
    /// plaintext HTTP listeners beyond loopback (see `read_acl`).
    pub(super) fn load(
        &mut self,
        beyond: &[SocketAddr],
        open_http: &[SocketAddr],
    ) -> Result<Option<usize>, String> {
        let cfg = &self.config;
        if cfg.acl.is_none() && !beyond.is_empty() {
            let list = beyond
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let line = if cfg.protected_mode {
                format!(
                    "protected mode: no --acl, so peers beyond loopback are refused on {list}; give --acl FILE (and TLS), or --protected-mode no on a trusted network"
                )
            } else {
                format!(
                    "--protected-mode no: peers beyond loopback are served on {list} without an access list"
                )
            };
            crate::logger::announce(log::Level::Warn, &line);
        }
        let Some(path) = cfg.acl.clone() else {
            return Ok(None);
        };
        let acl = read_acl(&path, open_http)?;
        let n = acl.rule_count();
        crate::notice!(
            "access list: {} from {}",
            crate::plural::count(n as u64, "rule", "rules"),
            path.display()
        );
        self.acl = Some(acl);
        Ok(Some(n))
    }

    /// Read `--acl` again (SIGHUP, `reload acl`): the new rules replace the old at once, or a
    /// bad file changes nothing and the error says why. `open_http` as for `load`.
    pub(super) fn reload(
        &mut self,
        open_http: &[SocketAddr],
        conns: &Conns,
        engine: &mut Engine,
        outbox: &mut Outbox,
        now: u64,
    ) -> Result<usize, String> {
        let Some(path): Option<PathBuf> = self.config.acl.clone() else {
            return Err("no --acl file was given".into());
        };
        match read_acl(&path, open_http) {
            Ok(acl) => {
                let n = acl.rule_count();
                crate::notice!(
                    "reloaded {}: {}",
                    path.display(),
                    crate::plural::count(n as u64, "rule", "rules")
                );
                self.acl = Some(acl);
                self.withdraw_work(conns, engine, outbox, now);
                Ok(n)
            }
            Err(e) => {
                error!("{e}");
                error!(
                    "reload of {} refused; the access list in force is unchanged",
                    path.display()
                );
                Err(e)
            }
        }
    }
}

/// Read and parse the `--acl` file, and refuse one that defines bearer tokens while an HTTP
/// listener is plaintext beyond loopback (`open_http`): a secret sent there crosses the
/// network in the clear, where anyone on the path may take it, so tokens are for HTTPS (or
/// loopback).
fn read_acl(path: &std::path::Path, open_http: &[SocketAddr]) -> Result<Acl, String> {
    let acl = access::read_acl(path)?;
    if acl.defines_tokens() && !open_http.is_empty() {
        let open: Vec<String> = open_http.iter().map(|a| a.to_string()).collect();
        return Err(format!(
            "{}: bearer tokens are defined, but the HTTP listener {} is plaintext beyond loopback, where a secret crosses the network in the clear; serve HTTP over TLS (--ssl) or on loopback only (--http-listen 127.0.0.1)",
            path.display(),
            open.join(", ")
        ));
    }
    Ok(acl)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use argh::FromArgs;

    use super::*;
    use crate::clock::ManualClock;
    use crate::config::{Config, ServeArgs};
    use crate::reactor::Server;
    use crate::reactor::TlsSetup;
    use crate::reactor::token::Listener;

    /// A server bound on loopback, not running: the test turns its handles by hand.
    fn server(args: &[&str]) -> Server {
        let a = ServeArgs::from_args(&["gearwheel", "serve"], args).expect("flags");
        let config = Config::from_args(a, None).expect("config");
        let tls = TlsSetup::load(&config).expect("no TLS");
        Server::bind_on(config, tls, Arc::new(ManualClock::new(0))).expect("bind")
    }

    #[test]
    fn a_slot_without_a_connection_is_refused() {
        let mut s = server(&["-p", "0"]);
        // Nothing needed, nobody there: refused all the same.
        assert_eq!(s.gate(0, Need::Free, None), Err(Denial::NoConnection));
        assert!(!s.permits(0, Need::Free));
        assert!(Denial::NoConnection.closes());
        // A loopback peer in the slot is served.
        let _peer = std::net::TcpStream::connect(s.local_addrs()[0]).expect("connect");
        s.accept(Listener::Gearman(0), false);
        assert_eq!(s.conns.slab.len(), 1);
        assert_eq!(s.gate(0, Need::Free, None), Ok(()));
        assert!(s.permits(0, Need::Free));
        // The slot next to it is still empty.
        assert_eq!(s.gate(1, Need::Free, None), Err(Denial::NoConnection));
    }
}
