//! The Gearman read path: a connection's bytes read, frames decoded, requests parsed and passed
//! through the gate to the engine, up to a fairness budget per turn; paused connections (a held
//! GRAB, an admin line waiting for the cluster's answer) resumed; the admin lines the loop answers itself. http/mod.rs is its HTTP
//! counterpart.

use super::audit;
use super::conn::ReadStatus;
use super::{FRAMES_PER_TURN, Server};
use crate::access::classify;
use crate::engine::ConnId;
use crate::log_budget::Cause;
use crate::peer_log;
use crate::proto::admin::AdminCommand;
use crate::proto::frame::{Incoming, decode};
use crate::proto::request::Request;
use crate::proto::response::Response;

impl Server {
    /// Read a connection and serve what came; for TLS, then see to its handshake and the
    /// records the session made.
    pub(super) fn read_conn(&mut self, idx: usize, now: u64) {
        let tls = self.conns.slab.get(idx).is_some_and(|c| c.is_tls());
        self.read_plaintext(idx, now);
        if tls {
            self.tls_handshake_check(idx);
            let now = self.time.now;
            self.tls
                .after_read(&mut self.conns, &mut self.deadlines, idx, now);
        }
    }

    pub(super) fn read_plaintext(&mut self, idx: usize, now: u64) {
        if self.conns.output_held(idx, self.time.now) {
            return;
        }
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        if c.is_http() {
            return self.read_http(idx, now);
        }
        if !c.serving() {
            return;
        }
        if c.paused {
            c.read_deferred = true;
            return;
        }
        let status = if c.read_closed() {
            Ok(ReadStatus::Eof)
        } else {
            c.fill(&self.config.limits)
        };
        if c.starts_with_tls_handshake() {
            // 0x16 never starts a Gearman packet or admin line; as an admin line it would
            // wait for a newline the TLS client never sends.
            peer_log!(
                now,
                Cause::Tls,
                Warn,
                "connection {idx} from {}: a TLS handshake on a plaintext Gearman port; closed",
                c.peer()
            );
            self.conns.mark_close(idx);
            return;
        }
        if c.handshake_deadline().is_some() {
            self.tls_handshake_check(idx);
        }
        self.process_frames(idx, now);
        let Some(c) = self.conns.slab.get_mut(idx) else {
            return;
        };
        match status {
            Ok(ReadStatus::Drained) => {}
            Ok(ReadStatus::Capped) => {
                if c.serving() {
                    self.conns.want_revisit(idx);
                }
            }
            Ok(ReadStatus::Eof) => {
                // Answer everything asked before the peer shut its side, then close.
                c.set_read_closed();
                if c.paused {
                    // Frames after a held GRAB are still to be served: on resumption.
                    c.read_deferred = true;
                    return;
                }
                if c.revisit {
                    return;
                }
                c.close_after_flush();
                if !c.write_pending {
                    c.write_pending = true;
                    self.conns.pending_writes.push(idx);
                }
            }
            Err(e) => {
                peer_log!(
                    now,
                    Cause::Connection,
                    Info,
                    "connection {idx} read error: {e}"
                );
                self.conns.mark_close(idx);
            }
        }
    }

    /// Decode and serve up to FRAMES_PER_TURN frames of one connection.
    pub(super) fn process_frames(&mut self, idx: usize, now: u64) {
        let mut served = 0;
        loop {
            let Some(c) = self.conns.slab.get_mut(idx) else {
                return;
            };
            if !c.serving() || c.paused || c.output_held {
                return;
            }
            if served == FRAMES_PER_TURN {
                self.conns.want_revisit(idx);
                return;
            }
            let id = c.id;
            match decode(&mut c.rbuf, &self.config.limits) {
                Ok(None) => {
                    c.release_idle_buffer();
                    return;
                }
                Ok(Some(Incoming::Packet(frame))) => match Request::parse(&frame) {
                    Ok(req) => {
                        self.enter_packet(idx, id, req, now);
                        if self.engine.input_paused(id) {
                            if let Some(c) = self.conns.slab.get_mut(idx) {
                                c.paused = true;
                            }
                            return;
                        }
                    }
                    Err(e) => self.engine.reject(id, e, &mut self.outbox),
                },
                Ok(Some(Incoming::Admin(line))) => {
                    self.admin(idx, id, &line, now);
                    // Its answer waits for the cluster's: the lines behind it wait too.
                    if self.engine.input_paused(id) {
                        if let Some(c) = self.conns.slab.get_mut(idx) {
                            c.paused = true;
                        }
                        return;
                    }
                }
                Err(e) => {
                    let reply = match e.error_packet() {
                        Some((code, text)) => Response::error(code, text),
                        None => Response::text("ERR LINE_TOO_LONG Admin+line+is+too+long\r\n"),
                    };
                    peer_log!(
                        now,
                        Cause::Protocol,
                        Warn,
                        "closing connection {idx}: {e:?}"
                    );
                    self.outbox.push(id, reply);
                    c.close_after_flush();
                    c.rbuf.clear();
                    return;
                }
            }
            served += 1;
        }
    }

    /// Serve the connections whose held GRAB (or admin line) the engine answered: what they
    /// sent after it is in their buffer (served now) or still in the socket (read on the
    /// next turn).
    pub(super) fn resume_paused(&mut self, now: u64) {
        while let Some(id) = self.outbox.resumed.pop() {
            let idx = id.index as usize;
            let Some(c) = self.conns.slab.get_mut(idx).filter(|c| c.id == id) else {
                continue;
            };
            c.paused = false;
            if std::mem::take(&mut c.read_deferred) {
                self.conns.want_revisit(idx);
            } else if !c.rbuf.is_empty() {
                self.process_frames(idx, now);
            }
        }
    }

    // ---- Admin lines about what the loop owns (the journal, the schedules file, the ACL,
    // the cluster): answered the moment the line is read, so that every reply on a
    // connection keeps the order of its requests; every other line goes to the engine.

    /// Serve one admin line. Answered here, not at the turn's end: a reply set aside for later
    /// would leave after the replies to lines sent behind it, and `show schedules` right after
    /// `reload schedules` would show the schedule from before.
    /// An operator's action (`classify::audited`) goes to the audit trail with its reply.
    pub(super) fn admin(&mut self, idx: usize, id: ConnId, line: &bytes::Bytes, now: u64) {
        let cmd = AdminCommand::parse(line);
        let need = classify::admin(&cmd);
        let audited = classify::audited(&need);
        if let Err(d) = self.gate(idx, need, None) {
            return self.refuse(idx, id, Response::text(d.admin_line()), d.closes());
        }
        if audited {
            let first = self.outbox.replies.len();
            self.admin_served(id, cmd, now);
            let seen = audit::Seen {
                conns: &self.conns,
                gate: &self.access,
                now: self.time.now,
            };
            audit::AuditHook::admin(&mut self.engine, &seen, &self.outbox, idx, line, first);
        } else {
            self.admin_served(id, cmd, now);
        }
    }

    fn admin_served(&mut self, id: ConnId, cmd: AdminCommand, now: u64) {
        let reply = match cmd {
            AdminCommand::ShowJournal => self.journal.listing(),
            AdminCommand::ShowCluster => match &self.cluster {
                Some(l) => crate::cluster::view::listing(&l.status(self.time.mono)),
                None => "ERR NOT_CLUSTERED this+server+runs+without+--etcd\r\n".into(),
            },
            AdminCommand::ReloadSchedules => match self.reload_schedules(now) {
                Ok(n) => format!("OK {n}\n"),
                Err(e) => format!("ERR SCHEDULE_ERROR {}\r\n", e.replace(' ', "+")),
            },
            AdminCommand::ReloadAcl => match self.reload_acl(now) {
                Ok(n) => format!("OK {n}\n"),
                Err(e) => format!("ERR ACL_ERROR {}\r\n", e.replace(' ', "+")),
            },
            cmd => return self.engine.admin(id, cmd, now, &mut self.outbox),
        };
        self.outbox.push(id, Response::text(reply));
    }
}
