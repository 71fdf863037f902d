//! The write side of a turn: the engine's outbox encoded into write buffers, lazy replies
//! held for company, what one connection gave others handed on at once, and the flushes and
//! closes at the turn's end.

use crate::log_budget::Cause;
use crate::peer_log;
use crate::reactor::*;

impl Server {
    /// Write at once what one connection's requests gave other connections (a job for a
    /// worker, a result for a client), so that they start on it while this turn goes on; the
    /// replies to the connection itself wait for the turn's end, as it may have more to say.
    /// Not while changes wait for the journal: one commit per turn.
    pub(in crate::reactor) fn hand_on(&mut self, from: usize, now: u64) {
        if self.outbox.replies.is_empty() || self.engine.has_durable() || self.journal.failing() {
            return;
        }
        self.resume_paused(now);
        self.dispatch();
        // Only this event's replies are on the list: what earlier events left was flushed
        // or deferred, so the search is short.
        if let Some(p) = self.conns.pending_writes.iter().position(|&i| i == from) {
            self.conns.pending_writes.swap_remove(p);
            self.conns.deferred.push(from);
        }
        if !self.conns.pending_writes.is_empty() {
            self.finish_turn(now);
        }
    }

    /// Run the group commit (the turn's durable changes reach the journal first), then encode
    /// the outbox's replies into write buffers, and hand the replies for HTTP connections to
    /// the HTTP glue, which answers them (`http_deliver`).
    pub(in crate::reactor) fn dispatch(&mut self) {
        // Group commit: this turn's durable changes reach the journal (and, under
        // --fsync always, the disk) before any reply that depends on them is written.
        self.journal
            .commit(&mut self.engine, &mut self.outbox, self.time.now);
        let mut lazy = self.outbox.lazy.drain(..).peekable();
        for (i, (to, r)) in self.outbox.replies.drain(..).enumerate() {
            let is_lazy = lazy.next_if_eq(&i).is_some();
            let Some(c) = self.conns.slab.get_mut(to.index as usize) else {
                continue;
            };
            if c.id != to || c.closing() {
                continue;
            }
            if c.is_http() {
                // Answered as HTTP once the rest is written (http/mod.rs).
                self.http.inbox.push((to, r));
                continue;
            }
            crate::proto::response::encode(&r, &mut c.wbuf);
            // Counted at once, not at the flush: a turn reads many connections (and a capped
            // one twice), and each must see the total as it is to be held in time.
            self.conns.output.recount(&mut c.counted, c.wbuf.len());
            if is_lazy && !c.write_pending {
                if !c.corked {
                    c.corked = true;
                    self.conns.corked.push((to.index as usize, self.time.now));
                }
                continue;
            }
            if !c.write_pending {
                c.write_pending = true;
                self.conns.pending_writes.push(to.index as usize);
            }
        }
        drop(lazy);
        self.http_deliver();
    }

    /// Send what lazy replies wait in once they have waited `LAZY_HOLD_MS`. So a JOB_CREATED
    /// leaves with its job's result if that comes within a millisecond or two, and never much
    /// later. A clock that stepped back releases them too: no reply waits on the wall clock.
    pub(in crate::reactor) fn uncork(&mut self) {
        let now = self.time.now;
        self.conns.corked.retain(|&(idx, since)| {
            let Some(c) = self.conns.slab.get_mut(idx) else {
                return false;
            };
            if !c.corked {
                // Written already, in company; or the slot holds a newer connection.
                return false;
            }
            if !lazy_due(now, since, self.time.lazy_hold_ms) {
                return true;
            }
            if !c.write_pending {
                c.write_pending = true;
                self.conns.pending_writes.push(idx);
            }
            c.corked = false;
            false
        });
    }

    /// Flush writes, close what must close (which may produce more replies), repeat.
    pub(in crate::reactor) fn finish_turn(&mut self, now: u64) {
        loop {
            let mut list = std::mem::take(&mut self.conns.flushing);
            std::mem::swap(&mut list, &mut self.conns.pending_writes);
            for idx in list.drain(..) {
                let Some(c) = self.conns.slab.get_mut(idx) else {
                    continue;
                };
                c.write_pending = false;
                // Its lazy reply leaves now, in company; the entry on `corked` goes stale.
                c.corked = false;
                let flushed = c.flush();
                self.conns.output.recount(&mut c.counted, c.wbuf.len());
                match flushed {
                    Ok(()) => {
                        let token = Source::Conn(c.id).token();
                        if let Err(e) = c.update_interest(self.poll.registry(), token) {
                            info!("connection {idx}: cannot change its interest: {e}");
                            self.conns.to_close.push(idx);
                            continue;
                        }
                        if c.wbuf.len() > self.config.max_output_buffer {
                            peer_log!(
                                self.time.now,
                                Cause::Output,
                                Warn,
                                "closing connection {idx}: {} unsent bytes exceed --max-output-buffer",
                                c.wbuf.len()
                            );
                            self.conns.to_close.push(idx);
                        } else if c.flushed_to_close() {
                            self.conns.to_close.push(idx);
                        }
                    }
                    Err(e) => {
                        peer_log!(
                            self.time.now,
                            Cause::Connection,
                            Info,
                            "connection {idx} write error: {e}"
                        );
                        self.conns.to_close.push(idx);
                    }
                }
            }
            self.conns.flushing = list;
            if self.conns.to_close.is_empty() {
                return;
            }
            for idx in std::mem::take(&mut self.conns.to_close) {
                if let Some(mut c) = self.conns.slab.try_remove(idx) {
                    self.conns.output.forget(c.counted);
                    self.http_closed(&c);
                    self.gate_closed(&c);
                    if let Some(k) = c.handshake_deadline() {
                        self.deadlines.cancel(k);
                    }
                    c.deregister(self.poll.registry());
                    self.engine.disconnect(c.id, now, &mut self.outbox);
                }
            }
            self.resume_paused(now);
            self.dispatch();
        }
    }
}

/// Has a lazy reply held since `since` waited long enough at `now`? Also when the clock
/// stepped back: a reply never waits on the wall clock.
fn lazy_due(now: u64, since: u64, hold_ms: u64) -> bool {
    now < since || now >= since + hold_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lazy_reply_waits_one_to_two_clock_ticks() {
        // Held at tick 100: still held during ticks 100 and 101, due from tick 102 on.
        assert!(!lazy_due(100, 100, LAZY_HOLD_MS));
        assert!(!lazy_due(101, 100, LAZY_HOLD_MS));
        assert!(lazy_due(102, 100, LAZY_HOLD_MS));
        assert!(lazy_due(5_000, 100, LAZY_HOLD_MS));
        // The wall clock stepped back: due at once rather than after the step.
        assert!(lazy_due(99, 100, LAZY_HOLD_MS));
        assert!(lazy_due(0, 100, LAZY_HOLD_MS));
    }
}
