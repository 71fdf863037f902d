//! The admin lines about what the loop owns (the journal, the schedules file), answered by the
//! loop the moment the line is read, so that every reply on a connection keeps the order of its
//! requests; every other line goes to the engine.

use crate::access::classify;
use crate::proto::admin::AdminCommand;
use crate::proto::response::Response;

use super::Server;
use crate::engine::ConnId;

impl Server {
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
            self.audit_admin(idx, line, first);
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
