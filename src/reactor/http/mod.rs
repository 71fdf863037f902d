//! The HTTP listener inside the reactor: its listening sockets, each HTTP connection's state,
//! and the glue between the sockets, the pure `crate::http` code and the engine.
//!
//! This file: the read path, requests answered, deadlines.
//!
//! - `glue`: `HttpGlue`, the listeners and what HTTP connections share.
//! - `conn`: one HTTP connection's state, kept in its `Connection`.
//! - `console`: the console's pages, JSON and actions, and its job-rate ring.
//! - `guard`: the 403s for the wrong Host or a cross-site browser, logged and counted.
//! - `reads`: the read-only endpoints' answers, from the parts they read.
//! - `ops`: the engine side of the actions the API and the console share (a function's
//!   limits, a failed job retried or dropped).
//!
//! The engine still never sees a socket: a job submitted over HTTP is a
//! `Request::SubmitJob` (or `SubmitJobEpoch`) from the HTTP connection's `ConnId`, and the
//! engine's replies to that id (JOB_CREATED, WORK_*, ERROR) come back through the outbox,
//! after the turn's group commit like every other reply, and become one HTTP response.
//! Deadlines (idle keep-alive, the header timeout, `X-Gearman-Timeout`, lingering) are the
//! reactor's own (deadlines.rs); `http_deadline` acts on them.
//!
//! One request is answered at a time per connection; pipelined requests wait in the read
//! buffer (at most `PIPELINE_CAP` bytes of them) until the one before is answered, so
//! responses go out in request order.

pub(super) mod conn;
mod console;
mod glue;
mod guard;
mod ops;
mod reads;

use std::net::SocketAddr;

use bytes::Bytes;
use log::{debug, info};

use super::conn::{Connection, Kind, READ_CAP, ReadStatus};
use super::deadlines::Deadline;
use super::{FRAMES_PER_TURN, Server};
use crate::engine::{Applied, ConnId};
use crate::http::endpoint::{Endpoint, Route, Submit};
use crate::http::job::{JobWait, Progress};
use crate::http::metrics::{self, NetStats};
use crate::http::parse::{Method, Version};
use crate::http::response::{self, Reply};
use crate::http::route;
use crate::http::session::Next;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::peer_text::shown;
use crate::proto::request::{JobBody, Request};
use crate::timer::TimerKey;
use conn::{HttpConn, InFlight, OpWait, Waited};
pub(super) use glue::HttpGlue;
use ops::Acted;

/// Pipelined bytes an HTTP connection may have buffered while its current request waits for
/// a job; reading pauses beyond this until the answer is out.
const PIPELINE_CAP: usize = 64 * 1024;

/// How long a connection refused with an error keeps draining what the client still sends.
const LINGER_MS: u64 = 2_000;

impl Server {
    /// The HTTP listeners' addresses (port 0 resolved); empty without `--http-port`.
    pub fn http_addrs(&self) -> &[SocketAddr] {
        self.http.addrs()
    }

    /// A connection was accepted at slot `idx`: count it, and set an HTTP one up.
    pub(super) fn http_accepted(&mut self, idx: usize, http: bool) {
        self.stats.accepted(http);
        if !http {
            return;
        }
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        let id = c.id;
        c.kind = Kind::Http(Box::new(HttpConn::new(self.http.limits)));
        let now = self.time.now;
        // WORK_EXCEPTION rather than WORK_FAIL, so that a 502 can carry the worker's text.
        // Its OPTION_RES reaches no waiting job and is dropped. The server asks it for the
        // connection, so the gate is asked quietly: a peer protected mode refuses is told so
        // at its first request.
        let req = Request::OptionReq {
            name: Bytes::from_static(b"exceptions"),
        };
        if self.permits(idx, crate::access::classify::packet(&req)) {
            self.engine.handle(id, req, now, &mut self.outbox);
        }
        self.http_set_timer(idx, Deadline::HttpIdle, now);
    }

    /// Read an HTTP connection and serve what came (the HTTP branch of `read_conn`).
    pub(super) fn read_http(&mut self, idx: usize, now: u64) {
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        if !c.serving() {
            return;
        }
        let Some(h) = c.http() else {
            return;
        };
        if h.lingering {
            c.rbuf.clear();
            match c.fill_upto(READ_CAP) {
                Ok(ReadStatus::Drained) => c.rbuf.clear(),
                Ok(ReadStatus::Capped) => {
                    c.rbuf.clear();
                    self.conns.want_revisit(idx);
                }
                Ok(ReadStatus::Eof) | Err(_) => self.conns.mark_close(idx),
            }
            return;
        }
        let waiting = h.answering() && !c.read_closed();
        let cap = if waiting {
            PIPELINE_CAP
        } else {
            READ_CAP.max(h.session.needs())
        };
        let status = if c.read_closed() {
            Ok(ReadStatus::Eof)
        } else {
            c.fill_upto(cap)
        };
        if c.handshake_deadline().is_some() {
            self.tls_handshake_check(idx);
        }
        self.process_http(idx, now);
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        if !c.serving() {
            return;
        }
        let busy = c.http().is_some_and(HttpConn::answering);
        // The peer closed (a FIN with the request or after it, maybe behind pipelined bytes
        // not read yet; or a reset) while its foreground job waits: as nginx takes it, and as a
        // Gearman client that leaves, the client gave the job up. Waiting for a half-close's
        // answer instead would let a peer pin a connection and its descriptor for as long as
        // no worker comes. A background answer comes within the turn and is still given.
        let closed = matches!(status, Ok(ReadStatus::Eof)) || c.hung_up();
        if closed && c.http().is_some_and(HttpConn::waits_for_a_result) {
            // An operator's ask stays with the cluster: only its answer is given up.
            let what = match c.http().is_some_and(|h| h.op.is_some()) {
                true => "the cluster's answer to its ask; it gives the answer up",
                false => "its job; it gives the job up",
            };
            peer_log!(
                now,
                Cause::Connection,
                Info,
                "HTTP connection {idx}: the client closed while waiting for {what}"
            );
            self.stats.left_waiting += 1;
            self.conns.mark_close(idx);
            return;
        }
        match status {
            Ok(ReadStatus::Drained) => {}
            Ok(ReadStatus::Capped) => {
                // While a job answers, the pipelined rest waits; the answer revisits.
                if !busy {
                    self.conns.want_revisit(idx);
                }
            }
            Ok(ReadStatus::Eof) => {
                c.set_read_closed();
                // Requests that came with the close (a half-close) are still answered.
                if busy || c.revisit {
                    return;
                }
                let cut_short = c.http().is_some_and(|h| h.session.mid_request(&c.rbuf));
                if cut_short {
                    self.http_answer(
                        idx,
                        Version::Http11,
                        false,
                        Reply::fatal(400, "the request was cut short"),
                        false,
                        now,
                    );
                } else {
                    c.close_after_flush();
                    self.want_write(idx);
                }
            }
            Err(e) => {
                peer_log!(
                    now,
                    Cause::Connection,
                    Info,
                    "HTTP connection {idx} read error: {e}"
                );
                self.conns.mark_close(idx);
            }
        }
    }

    /// Serve the whole requests in an HTTP connection's read buffer, one at a time.
    fn process_http(&mut self, idx: usize, now: u64) {
        let mut served = 0;
        loop {
            let Some(c) = self.conns.slab.get_mut(idx) else {
                return;
            };
            if !c.serving() {
                return;
            }
            let Kind::Http(h) = &mut c.kind else {
                return;
            };
            if h.answering() || h.lingering || c.output_held {
                return;
            }
            if served == FRAMES_PER_TURN {
                self.conns.want_revisit(idx);
                return;
            }
            match h.session.poll(&mut c.rbuf) {
                Next::More => {
                    let kind = if h.session.mid_request(&c.rbuf) {
                        Deadline::HttpRequest
                    } else {
                        Deadline::HttpIdle
                    };
                    // The idle and head deadlines run from when they start; a body's is
                    // pushed back by every read that brings more of it.
                    let current = h.timer.map(|(_, d)| d);
                    let rearm = current != Some(kind(c.id)) || h.session.in_body();
                    c.release_idle_buffer();
                    if rearm {
                        self.http_set_timer(idx, kind, now);
                    }
                    return;
                }
                Next::Continue => {
                    c.wbuf.extend_from_slice(response::CONTINUE);
                    self.want_write(idx);
                }
                Next::Error(e) => {
                    peer_log!(
                        now,
                        Cause::Protocol,
                        Info,
                        "HTTP connection {idx}: {} {}",
                        e.status,
                        shown(&e.message)
                    );
                    self.http_answer(
                        idx,
                        Version::Http11,
                        false,
                        Reply::fatal(e.status, &e.message),
                        false,
                        now,
                    );
                    return;
                }
                Next::Request(head, body) => {
                    served += 1;
                    self.http_clear_timer(idx);
                    debug!(
                        "HTTP connection {idx}: {:?} {} ({} body bytes)",
                        head.method,
                        shown(&head.target),
                        body.len()
                    );
                    let (version, keep_alive) = (head.version, head.keep_alive);
                    // Any answer to HEAD, errors included, has no body.
                    let head_only = head.method == Method::Head;
                    let peer = self.conns.slab.get(idx).map(|c| c.peer());
                    let refused = self.http.guard(idx, peer, &head.site, self.time.now);
                    let sent = body.clone();
                    let mut route = match refused {
                        Some(refused) => Route::Reply(refused),
                        None => route::route(&head, body),
                    };
                    if self.drain.draining() {
                        route = route::while_draining(route);
                    }
                    let need = crate::access::classify::route(&route);
                    let audited = crate::access::classify::audited(&need);
                    match self.gate(idx, need, head.bearer.as_ref()) {
                        Err(d) => route = Route::Reply(d.http()),
                        Ok(()) if audited => {
                            let seen = super::audit::Seen {
                                conns: &self.conns,
                                gate: &self.access,
                                now: self.time.now,
                            };
                            self.audit.http_begin(&seen, idx, &head, &sent)
                        }
                        Ok(()) => {}
                    }
                    match route {
                        Route::Reply(r) => {
                            self.http_answer(idx, version, keep_alive, r, head_only, now)
                        }
                        Route::Read { endpoint, .. } => {
                            let r = self.http_endpoint(idx, &endpoint);
                            self.http_answer(idx, version, keep_alive, r, head_only, now);
                        }
                        Route::Submit(s) => self.http_submit(idx, version, keep_alive, s, now),
                        Route::Schedule { op, id } => {
                            let how = (version, keep_alive, head_only);
                            match self.engine.schedule_op(&id, op, now, &mut self.outbox) {
                                Ok(Applied::Asked(t)) => {
                                    let what = Waited::Op(op);
                                    self.http_op_wait(idx, OpWait::new(t, what, id, false, how))
                                }
                                done => {
                                    let done = done.map(Applied::handles);
                                    let r = ops::schedule(&self.engine, op, &id, &done);
                                    self.http_answer(idx, version, keep_alive, r, head_only, now);
                                }
                            }
                        }
                        Route::Backfill {
                            id,
                            from,
                            to,
                            dry_run,
                        } => {
                            let (engine, outbox) = (&mut self.engine, &mut self.outbox);
                            let done =
                                engine.backfill_text(&id, (&from, &to), dry_run, now, outbox);
                            match ops::backfilled(&self.engine, &id, done) {
                                Acted::Now(r) => {
                                    let r = r.uncached();
                                    self.http_answer(idx, version, keep_alive, r, head_only, now)
                                }
                                Acted::Asked(t, what, id) => {
                                    let how = (version, keep_alive, head_only);
                                    self.http_op_wait(idx, OpWait::new(t, what, id, false, how))
                                }
                            }
                        }
                        Route::Failed { op, handle } => {
                            let (engine, outbox) = (&mut self.engine, &mut self.outbox);
                            let r = ops::failed_op(engine, outbox, op, &handle, now).uncached();
                            self.http_answer(idx, version, keep_alive, r, head_only, now);
                        }
                        Route::Limits { func, changes } => {
                            let (engine, outbox) = (&mut self.engine, &mut self.outbox);
                            let r = ops::limits(engine, outbox, &func, &changes, now).uncached();
                            self.http_answer(idx, version, keep_alive, r, head_only, now);
                        }
                        Route::Ping(p) => {
                            let done =
                                self.engine
                                    .ping(&p.id, p.kind, &p.body, now, &mut self.outbox);
                            let r = crate::http::ping::reply(done);
                            self.http_answer(idx, version, keep_alive, r, head_only, now);
                        }
                        Route::Act(a) => match self.console_act(idx).act(&head.site, a, now) {
                            Acted::Now(r) => {
                                self.http_answer(idx, version, keep_alive, r, false, now)
                            }
                            Acted::Asked(t, what, id) => {
                                let how = (version, keep_alive, false);
                                self.http_op_wait(idx, OpWait::new(t, what, id, true, how))
                            }
                        },
                    }
                    self.audit.http_end(&mut self.engine);
                }
            }
        }
    }

    /// Hand a submission to the engine; the answer comes with its replies.
    fn http_submit(&mut self, idx: usize, version: Version, keep_alive: bool, s: Submit, now: u64) {
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        let id = c.id;
        let Some(h) = c.http_mut() else {
            return;
        };
        let timeout_ms = if s.background { None } else { s.timeout_ms };
        let timer = timeout_ms.map(|ms| {
            self.deadlines
                .arm(now.saturating_add(ms), Deadline::HttpJob(id))
        });
        h.job = Some(InFlight {
            wait: JobWait::new(s.background, self.config.max_output_buffer),
            version,
            keep_alive,
            timeout_ms: timeout_ms.unwrap_or(0),
            timer,
        });
        // The unique comes from the URL or a header, the data from the body: one copy joins
        // them into the job's one body.
        let body = JobBody::new(&s.unique, &s.data);
        let req = match s.epoch {
            Some(epoch) => Request::SubmitJobEpoch {
                func: s.func,
                body,
                epoch,
            },
            None => Request::SubmitJob {
                func: s.func,
                body,
                priority: s.priority,
                background: s.background,
            },
        };
        self.engine.handle(id, req, now, &mut self.outbox);
    }

    /// The answer of a read-only endpoint: outside the console (whose own headers are
    /// `console::guarded`), live data that no cache keeps.
    fn http_endpoint(&self, idx: usize, endpoint: &Endpoint) -> Reply {
        let reply = self.http_read(idx, endpoint);
        match endpoint {
            Endpoint::Console(_) => reply,
            _ => reply.uncached(),
        }
    }

    fn http_read(&self, idx: usize, endpoint: &Endpoint) -> Reply {
        let view = reads::ReadView {
            engine: &self.engine,
            conns: &self.conns,
            cluster: self.cluster.as_deref(),
            draining: self.drain.draining(),
            now: self.time.now,
            mono: self.time.mono,
        };
        if let Some(r) = view.read(endpoint) {
            return r;
        }
        match endpoint {
            Endpoint::Console(page) => self.console_view(idx).page(page.clone()),
            _ => self.http_metrics(),
        }
    }

    /// `/metrics`: the engine's, the connections', the process's and the journal's figures.
    fn http_metrics(&self) -> Reply {
        let net = self.net_stats();
        let mut process = crate::footprint::read_process();
        if let Some(p) = process.as_mut() {
            p.open_fds = self.open_fds().unwrap_or(0);
        }
        let functions = self.engine.function_statuses();
        let schedules = self.engine.schedule_statuses();
        let journal = self.journal.metrics();
        let body = metrics::render(&metrics::Input {
            version: env!("CARGO_PKG_VERSION"),
            functions: &functions,
            schedules: &schedules,
            totals: self.engine.totals(),
            net: &net,
            process: process.as_ref(),
            journal: journal.as_ref(),
            failed: Some(self.engine.failed_list()),
            limits: &self.engine.limit_statuses(self.time.now),
            webhooks: &self.engine.hook_status(),
        });
        let mut body = body;
        if let Some(l) = &self.cluster {
            crate::cluster::view::metrics(&l.status(self.time.mono), &mut body);
        }
        Reply::new(200, Some(response::PROMETHEUS), body)
    }

    /// What the console's pages read, for a request of connection `idx`.
    fn console_view(&self, idx: usize) -> console::ConsoleView<'_> {
        console::ConsoleView {
            engine: &self.engine,
            conns: &self.conns,
            time: &self.time,
            journal: &self.journal,
            cluster: self.cluster.as_deref(),
            http: &self.http,
            on: console::on(&self.config),
            may_act: self.console_may_act(idx),
        }
    }

    /// What a console action of connection `idx` changes.
    fn console_act(&mut self, idx: usize) -> console::ConsoleAct<'_> {
        let peer = self.conns.slab.get(idx).map(|c| c.peer());
        console::ConsoleAct {
            engine: &mut self.engine,
            outbox: &mut self.outbox,
            http: &mut self.http,
            on: console::on(&self.config),
            idx,
            peer: peer.map_or("?".into(), |a| a.ip().to_string()),
        }
    }

    /// Connections and bytes, open connections included.
    fn net_stats(&self) -> NetStats {
        NetStats {
            access_denied: self.access.denial_rows(),
            http_refused: {
                let mut r = self.http.refusals.by_reason();
                r.push(("console_action", self.http.console_refused));
                r
            },
            output: self.conns.output.stats(),
            tls: self.tls.stats(&self.conns, self.config.tls.is_some()),
            ..self.stats.net(&self.conns.slab)
        }
    }

    /// Write one response; close after it when it or the request says so.
    fn http_answer(
        &mut self,
        idx: usize,
        version: Version,
        keep_alive: bool,
        reply: Reply,
        head_only: bool,
        now: u64,
    ) {
        // The answer is the outcome of the action it asked for, if any.
        self.audit.http_answer(&mut self.engine, idx, &reply);
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        let date = response::http_date(now);
        let open = response::write(&mut c.wbuf, &reply, version, keep_alive, head_only, &date);
        *self.stats.responses.entry(reply.status).or_default() += 1;
        if !open {
            if let Some((k, _)) = c.http_mut().and_then(|h| h.timer.take()) {
                self.deadlines.cancel(k);
            }
            // Refused mid-request: the client may still be sending, and closing a socket
            // with unread bytes sends a RST that can destroy the answer before it is read.
            // So the answer goes out now, our side is shut, and the rest is drained for a
            // moment (a lingering close, as Apache and nginx do). Only once nothing waits
            // for the socket, TLS records the session still holds included: a half-close
            // cuts off whatever is not in the socket yet.
            if reply.close && c.flush().is_ok() && !c.has_unsent() {
                c.shutdown_write();
                c.rbuf.clear();
                let id = c.id;
                if let Some(h) = c.http_mut() {
                    h.lingering = true;
                    let linger = Deadline::HttpLinger(id);
                    let key = self.deadlines.arm(now.saturating_add(LINGER_MS), linger);
                    h.timer = Some((key, linger));
                }
                // Whatever is already in the socket is read now (edge-triggered).
                self.conns.want_revisit(idx);
                return;
            }
            c.close_after_flush();
        }
        self.want_write(idx);
    }

    /// Refuse HTTP connection `idx` before a request of it is read (protected mode after a
    /// TLS handshake): `reply`, then the close.
    pub(super) fn http_refuse(&mut self, idx: usize, reply: Reply) {
        if let Some(c) = self.conns.slab.get_mut(idx) {
            c.rbuf.clear();
        }
        let now = self.time.now;
        self.http_answer(idx, Version::Http11, false, reply, false, now);
    }

    /// Engine replies addressed to HTTP connections, set aside during `dispatch`.
    pub(super) fn http_deliver(&mut self) {
        if self.http.inbox.is_empty() {
            return;
        }
        let now = self.time.now;
        for (to, r) in std::mem::take(&mut self.http.inbox) {
            let idx = to.index as usize;
            let Some(c) = self.conns.slab.get_mut(idx) else {
                continue;
            };
            if c.id != to || c.closing() {
                continue;
            }
            // OPTION_RES, or a late packet of a job this connection no longer waits for.
            let Some(h) = c.http_mut() else { continue };
            let Some(f) = h.job.as_mut() else { continue };
            let Progress::Done { reply, job_over } = f.wait.on_response(&r) else {
                continue;
            };
            let Some(f) = h.job.take() else { continue };
            if let Some(k) = f.timer {
                self.deadlines.cancel(k);
            }
            if !job_over {
                if let Some(handle) = f.wait.handle() {
                    self.engine.release_client(to, &handle);
                }
            }
            self.http_answer(idx, f.version, f.keep_alive, reply, false, now);
            self.conns.want_revisit(idx);
        }
    }

    /// Connection `idx`'s request waits for the cluster's answer to its ask: nothing more of
    /// it is served until then (`http_ops_answered`).
    fn http_op_wait(&mut self, idx: usize, wait: OpWait) {
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        let id = c.id;
        let Some(h) = c.http_mut() else {
            return;
        };
        self.engine.cluster_op_wait(wait.ticket, id, false);
        h.op = Some(wait);
    }

    /// The cluster answered asks of HTTP connections: each is answered, with the entry as
    /// this server shows it now, and what it pipelined behind is served.
    pub(super) fn http_ops_answered(&mut self, now: u64) {
        for (to, ticket, result) in std::mem::take(&mut self.outbox.ops_answered) {
            let idx = to.index as usize;
            let Some(c) = self.conns.slab.get_mut(idx).filter(|c| c.id == to) else {
                continue;
            };
            let Some(w) = c
                .http_mut()
                .and_then(|h| h.op.take_if(|w| w.ticket == ticket))
            else {
                continue;
            };
            let r = ops::answer(&self.engine, &w, result);
            self.http_answer(idx, w.version, w.keep_alive, r, w.head_only, now);
            self.conns.want_revisit(idx);
        }
    }

    /// Act on an HTTP deadline that passed (armed under `key`).
    pub(super) fn http_deadline(&mut self, key: TimerKey, what: Deadline) {
        let id = match what {
            Deadline::HttpIdle(id)
            | Deadline::HttpRequest(id)
            | Deadline::HttpJob(id)
            | Deadline::HttpLinger(id) => id,
            // Not HTTP's (mod.rs sends them elsewhere).
            Deadline::TlsHandshake(_) | Deadline::AcceptRetry(_) => return,
        };
        let now = self.time.now;
        let idx = id.index as usize;
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        if c.id != id || !c.serving() {
            return;
        }
        let Kind::Http(h) = &mut c.kind else {
            return;
        };
        if let Deadline::HttpJob(_) = what {
            let Some(f) = h.job.take_if(|f| f.timer == Some(key)) else {
                return;
            };
            info!(
                "HTTP connection {idx}: no result within {} ms (X-Gearman-Timeout); 504, the job goes on",
                f.timeout_ms
            );
            if let Some(handle) = f.wait.handle() {
                self.engine.release_client(id, &handle);
            }
            let reply = f.wait.timeout_reply(f.timeout_ms);
            self.http_answer(idx, f.version, f.keep_alive, reply, false, now);
            self.conns.want_revisit(idx);
            return;
        }
        if h.timer.is_none_or(|(k, _)| k != key) {
            return;
        }
        h.timer = None;
        match what {
            Deadline::HttpLinger(_) => self.conns.mark_close(idx),
            Deadline::HttpIdle(_) => {
                debug!("HTTP connection {idx}: idle; closing");
                c.close_after_flush();
                self.want_write(idx);
            }
            Deadline::HttpRequest(_) => {
                peer_log!(
                    now,
                    Cause::Protocol,
                    Info,
                    "HTTP connection {idx}: request not complete in time; 408"
                );
                self.http_answer(
                    idx,
                    Version::Http11,
                    false,
                    Reply::fatal(408, "the request did not arrive in time"),
                    false,
                    now,
                );
            }
            // Answered above (HttpJob), or not HTTP's.
            Deadline::HttpJob(_) | Deadline::TlsHandshake(_) | Deadline::AcceptRetry(_) => {}
        }
    }

    /// A connection is being closed: keep its byte counts, drop its deadlines.
    pub(super) fn http_closed(&mut self, c: &Connection) {
        self.stats.closed(c);
        if let Some(h) = c.http() {
            let job = h.job.as_ref().and_then(|f| f.timer);
            for k in h.timer.map(|(k, _)| k).into_iter().chain(job) {
                self.deadlines.cancel(k);
            }
        }
    }

    /// Arm the connection's next-request deadline (`HttpIdle` or `HttpRequest`), replacing
    /// the one it had.
    fn http_set_timer(&mut self, idx: usize, kind: fn(ConnId) -> Deadline, now: u64) {
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        let what = kind(c.id);
        let ms = match what {
            Deadline::HttpIdle(_) => self.http.idle_timeout_ms,
            Deadline::HttpRequest(_) => self.http.header_timeout_ms,
            // Armed elsewhere, each with its own time.
            Deadline::HttpJob(_)
            | Deadline::HttpLinger(_)
            | Deadline::TlsHandshake(_)
            | Deadline::AcceptRetry(_) => return,
        };
        let Some(h) = c.http_mut() else {
            return;
        };
        if let Some((k, _)) = h.timer.take() {
            self.deadlines.cancel(k);
        }
        h.timer = Some((self.deadlines.arm(now.saturating_add(ms), what), what));
    }

    fn http_clear_timer(&mut self, idx: usize) {
        if let Some((k, _)) = self
            .conns
            .slab
            .get_mut(idx)
            .and_then(|c| c.http_mut())
            .and_then(|h| h.timer.take())
        {
            self.deadlines.cancel(k);
        }
    }

    fn want_write(&mut self, idx: usize) {
        if let Some(c) = self.conns.slab.get_mut(idx) {
            if !c.write_pending {
                c.write_pending = true;
                self.conns.pending_writes.push(idx);
            }
        }
    }
}
