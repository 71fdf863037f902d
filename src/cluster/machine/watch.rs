//! The watch on the cluster's keys: who leads (a deleted leader key starts the failover; a
//! campaign won or a fence lost), who is a member, the run records, the accounts, `@after`
//! sets and backfills, a pushed schedules file, and the comparison of this server's schedules
//! digests with the leader's.

use super::*;
use crate::cluster::etcd::WatchEvent;

impl Machine {
    pub(super) fn leader_seen(&mut self, kv: Option<&Kv>) {
        self.leader = kv.map(|kv| LeaderView {
            member: Member::parse(&kv.value),
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
        });
        self.say_leader();
        if self
            .leader
            .as_ref()
            .is_some_and(|l| l.member.id != self.s.id)
        {
            self.safety_stopped = false;
        }
        match &self.leader {
            None => self.want_campaign = true,
            Some(l) if self.fence.is_some() && Some(l.create_revision) != self.fence => {
                self.fence_lost()
            }
            Some(_) => {}
        }
        self.compare_with_leader();
    }

    /// A follower says who leads, and at which term (the leader key's create revision, the
    /// fence), once per leadership; this server's own leadership is said where it begins.
    fn say_leader(&mut self) {
        let Some(l) = &self.leader else { return };
        let seen = (l.member.id.clone(), l.create_revision);
        if self.leader_logged.as_ref() == Some(&seen) {
            return;
        }
        if l.member.id != self.s.id {
            crate::notice!(
                "cluster: {} leads now (term {}); this server ({}) follows",
                l.member.id,
                l.create_revision,
                self.s.id
            );
        }
        self.leader_logged = Some(seen);
    }

    /// Name the entries whose definition differs from the leader's (once per change).
    pub(super) fn compare_with_leader(&mut self) {
        let Some(l) = &self.leader else { return };
        if l.member.id == self.s.id || l.member.digest.is_empty() || self.me.digest.is_empty() {
            self.differing.clear();
            self.push_unconfirmed = None;
            return;
        }
        if l.member.digest == self.me.digest {
            self.differing.clear();
            return;
        }
        if self.push_loading {
            return;
        }
        if let Some(pushed) = self.push_unconfirmed {
            if l.mod_revision < pushed {
                // The leader has not published the pushed file's digests yet: every server
                // loads the push at its own pace, so this is the push on its way.
                return;
            }
            self.push_unconfirmed = None;
        }
        let differing = crate::cluster::digest::differing(&self.me.entries, &l.member.entries);
        if differing != self.differing {
            log::warn!(
                "cluster: this server's schedules file differs from the leader's ({}): {}",
                l.member.id,
                if differing.is_empty() {
                    "(the same entries, other file-wide settings)".to_string()
                } else {
                    differing.join(", ")
                }
            );
            self.differing = differing;
        }
    }

    /// The pushed file handed on was loaded, or refused: compare with the leader again.
    pub fn push_loaded(&mut self) {
        self.push_loading = false;
        self.compare_with_leader();
    }

    pub(super) fn schedules_seen(&mut self, kv: &Kv, out: &mut Output) {
        if kv.mod_revision <= self.schedules_revision {
            return;
        }
        self.schedules_revision = kv.mod_revision;
        match String::from_utf8(kv.value.clone()) {
            Ok(text) => {
                out.schedules_text = Some(text);
                self.push_unconfirmed = Some(kv.mod_revision);
                self.push_loading = true;
            }
            Err(_) => log::error!("cluster: the pushed schedules file is not UTF-8; ignored"),
        }
    }

    pub(super) fn watch_reply(&mut self, reply: Result<Reply, EtcdError>, out: &mut Output) {
        match reply {
            Ok(Reply::WatchCreated { .. }) => {
                // What happened before the watch began is read once.
                if !self.pending(|p| *p == Purpose::ReadState) {
                    self.enqueue(Purpose::ReadState);
                }
            }
            Ok(Reply::WatchEvents { events, .. }) => {
                for ev in events {
                    self.watch_event(ev, out);
                }
            }
            Ok(Reply::WatchCanceled { reason, .. }) => {
                log::warn!("cluster: etcd cancelled the watch ({reason}); watching again");
                out.reset.push(Link::Watch);
                self.watch_up = false;
            }
            Ok(other) => log::warn!("cluster: unexpected reply on the watch: {other:?}"),
            Err(e) => {
                log::warn!("cluster: the watch failed: {e}; watching again");
                out.reset.push(Link::Watch);
                self.watch_up = false;
            }
        }
    }

    pub(super) fn watch_event(&mut self, ev: WatchEvent, out: &mut Output) {
        let key = String::from_utf8_lossy(&ev.kv.key).into_owned();
        let Some(rest) = key.strip_prefix(&self.prefix) else {
            return;
        };
        if rest == "leader" {
            if ev.deleted {
                if self.fence.is_some() {
                    self.fence_lost();
                } else if let Some(l) = &self.leader {
                    crate::notice!(
                        "cluster: the leader {} (term {}) is gone; electing the next",
                        l.member.id,
                        l.create_revision
                    );
                }
                self.leader_seen(None);
                // Campaign now, not at the next periodic try: this is the failover.
                self.next_campaign = 0;
            } else {
                self.leader_seen(Some(&ev.kv));
            }
        } else if let Some(id) = rest.strip_prefix("members/") {
            if ev.deleted {
                self.members.remove(id);
            } else {
                let m = Member::parse(&ev.kv.value);
                self.members.insert(id.to_string(), m);
            }
        } else if let Some(id) = rest.strip_prefix("runs/") {
            if !ev.deleted {
                self.cache_run(&ev.kv);
                // A claim spends a pending skip.
                self.ops_changed(id, out);
            }
        } else if let Some(id) = rest.strip_prefix("ops/") {
            let id = id.to_string();
            self.ops_seen(&id, (!ev.deleted).then_some(&ev.kv), out);
        } else if let Some(id) = rest.strip_prefix("backfill/") {
            let id = id.to_string();
            self.backfill_seen(&id, (!ev.deleted).then_some(&ev.kv), out);
        } else if rest.starts_with("history/") || rest.starts_with("after/") {
            if ev.deleted {
                self.after_revs.remove(rest);
            } else {
                let rel = rest.to_string();
                self.history_seen(&rel, &ev.kv, out);
            }
        } else if rest == "schedules" && !ev.deleted {
            self.schedules_seen(&ev.kv, out);
        }
    }

    pub(super) fn campaign_result(&mut self, kv: Option<Kv>, now: u64) {
        self.leader_seen(kv.as_ref());
        let Some(kv) = kv else {
            // No key even after the txn: try again soon.
            self.want_campaign = true;
            return;
        };
        let mine =
            self.lease.is_some_and(|l| l == kv.lease) && Member::parse(&kv.value).id == self.s.id;
        if mine && self.lease_ok(now) && self.fence != Some(kv.create_revision) {
            self.fence = Some(kv.create_revision);
            self.runs_loaded = false;
        }
    }

    pub(super) fn fence_lost(&mut self) {
        self.stats.fence_failures += 1;
        log::error!(
            "cluster: etcd says this server no longer holds the leader key (fence {}); it stops firing",
            self.fence.unwrap_or(0)
        );
        self.step_down();
        self.want_campaign = true;
    }
}
