//! The write side of a turn: the engine's outbox encoded into write buffers, lazy replies
//! held for company, what one connection gave others handed on at once, and the flushes and
//! closes at the turn's end: `Conns`' side of it (the loop's, which needs the engine and the
//! other parts as well, is `Server::dispatch`, `hand_on` and `finish_turn` in mod.rs).

use log::info;
use mio::Registry;

use super::{Connection, Conns};
use crate::engine::{ConnId, Outbox};
use crate::log_budget::Cause;
use crate::peer_log;
use crate::proto::response::Response;
use crate::reactor::token::Source;

impl Conns {
    /// Encode the outbox's replies into write buffers (the lazy ones held for company), and
    /// put the replies for HTTP connections on `http`, which answers them as HTTP once the
    /// rest is written (http/mod.rs).
    pub(in crate::reactor) fn deliver(
        &mut self,
        outbox: &mut Outbox,
        http: &mut Vec<(ConnId, Response)>,
        now: u64,
    ) {
        let mut lazy = outbox.lazy.drain(..).peekable();
        for (i, (to, r)) in outbox.replies.drain(..).enumerate() {
            let is_lazy = lazy.next_if_eq(&i).is_some();
            let Some(c) = self.slab.get_mut(to.index as usize) else {
                continue;
            };
            if c.id != to || c.closing() {
                continue;
            }
            if c.is_http() {
                http.push((to, r));
                continue;
            }
            crate::proto::response::encode(&r, &mut c.wbuf);
            // Counted at once, not at the flush: a turn reads many connections (and a capped
            // one twice), and each must see the total as it is to be held in time.
            self.output.recount(&mut c.counted, c.wbuf.len());
            if is_lazy && !c.write_pending {
                if !c.corked {
                    c.corked = true;
                    self.corked.push((to.index as usize, now));
                }
                continue;
            }
            if !c.write_pending {
                c.write_pending = true;
                self.pending_writes.push(to.index as usize);
            }
        }
    }

    /// Send what lazy replies wait in once they have waited `hold_ms` (`LAZY_HOLD_MS`). So a
    /// JOB_CREATED leaves with its job's result if that comes within a millisecond or two,
    /// and never much later. A clock that stepped back releases them too: no reply waits on
    /// the wall clock.
    pub(in crate::reactor) fn uncork(&mut self, now: u64, hold_ms: u64) {
        self.corked.retain(|&(idx, since)| {
            let Some(c) = self.slab.get_mut(idx) else {
                return false;
            };
            if !c.corked {
                // Written already, in company; or the slot holds a newer connection.
                return false;
            }
            if !lazy_due(now, since, hold_ms) {
                return true;
            }
            if !c.write_pending {
                c.write_pending = true;
                self.pending_writes.push(idx);
            }
            c.corked = false;
            false
        });
    }

    /// Flush the connections with bytes to write; those that fail, pass
    /// `max_output_buffer` (`--max-output-buffer`) unsent, or said all before closing go on
    /// `to_close`.
    pub(in crate::reactor) fn flush_pending(
        &mut self,
        registry: &Registry,
        max_output_buffer: usize,
        now: u64,
    ) {
        let mut list = std::mem::take(&mut self.flushing);
        std::mem::swap(&mut list, &mut self.pending_writes);
        for idx in list.drain(..) {
            let Some(c) = self.slab.get_mut(idx) else {
                continue;
            };
            c.write_pending = false;
            // Its lazy reply leaves now, in company; the entry on `corked` goes stale.
            c.corked = false;
            let flushed = c.flush();
            self.output.recount(&mut c.counted, c.wbuf.len());
            match flushed {
                Ok(()) => {
                    let token = Source::Conn(c.id).token();
                    if let Err(e) = c.update_interest(registry, token) {
                        info!("connection {idx}: cannot change its interest: {e}");
                        self.to_close.push(idx);
                        continue;
                    }
                    if c.wbuf.len() > max_output_buffer {
                        peer_log!(
                            now,
                            Cause::Output,
                            Warn,
                            "closing connection {idx}: {} unsent bytes exceed --max-output-buffer",
                            c.wbuf.len()
                        );
                        self.to_close.push(idx);
                    } else if c.flushed_to_close() {
                        self.to_close.push(idx);
                    }
                }
                Err(e) => {
                    peer_log!(
                        now,
                        Cause::Connection,
                        Info,
                        "connection {idx} write error: {e}"
                    );
                    self.to_close.push(idx);
                }
            }
        }
        self.flushing = list;
    }

    /// Take connection `idx` out of the slab to close it, its unsent output forgotten by the
    /// bound; the caller tells the other parts and deregisters it.
    pub(in crate::reactor) fn remove(&mut self, idx: usize) -> Option<Connection> {
        let c = self.slab.try_remove(idx)?;
        self.output.forget(c.counted);
        Some(c)
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
    use crate::reactor::time::LAZY_HOLD_MS;

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
