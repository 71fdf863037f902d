//! `Conns`: every connection (the slab) and the lists a turn keeps about them: who has bytes
//! to write, who is read again before the turn ends, who closes at its end, whose replies
//! wait for the turn's end or for company; and the bound on all their unsent output: whom it
//! holds back, closes and releases at the turn's end. One part, so that the turn's
//! bookkeeping about connections is in one place, borrowed apart from the engine, the outbox
//! and the other parts.

use slab::Slab;

use super::Connection;
use super::output_bound::{HOLD_MIN, OutputBound};
use crate::log_budget::Cause;
use crate::peer_log;

pub(in crate::reactor) struct Conns {
    pub(in crate::reactor) slab: Slab<Connection>,
    /// The generation of the connection accepted last (token.rs).
    pub(in crate::reactor) last_generation: u32,
    /// Connections with bytes to write this turn.
    pub(in crate::reactor) pending_writes: Vec<usize>,
    /// The list being flushed, kept to reuse its allocation: no allocation per turn.
    pub(in crate::reactor) flushing: Vec<usize>,
    /// Connections whose fairness budget ran out with frames still buffered.
    pub(in crate::reactor) revisit: Vec<usize>,
    /// Connections to close at the end of this turn.
    pub(in crate::reactor) to_close: Vec<usize>,
    /// Connections whose replies to their own requests wait for the turn's end (`hand_on`).
    pub(in crate::reactor) deferred: Vec<usize>,
    /// Connections whose write waits for a lazy reply's company, with the time it came.
    pub(in crate::reactor) corked: Vec<(usize, u64)>,
    /// Unsent output of all connections against `--max-total-output` (output_bound.rs).
    pub(in crate::reactor) output: OutputBound,
}

impl Conns {
    /// No connection yet; `max_total_output` is `--max-total-output`.
    pub(in crate::reactor) fn new(max_total_output: usize) -> Conns {
        Conns {
            slab: Slab::new(),
            last_generation: 0,
            pending_writes: Vec::new(),
            flushing: Vec::new(),
            revisit: Vec::new(),
            to_close: Vec::new(),
            deferred: Vec::new(),
            corked: Vec::new(),
            output: OutputBound::new(max_total_output),
        }
    }

    /// Read connection `idx` again before this turn ends (a read stopped at its cap, frames
    /// left for the next pass, or a connection let go by a hold). Once per turn: the
    /// connection's flag says whether it is on the list already.
    pub(in crate::reactor) fn want_revisit(&mut self, idx: usize) {
        if let Some(c) = self.slab.get_mut(idx) {
            if !c.revisit {
                c.revisit = true;
                self.revisit.push(idx);
            }
        }
    }

    /// Close connection `idx` at the end of this turn (once).
    pub(in crate::reactor) fn mark_close(&mut self, idx: usize) {
        if let Some(c) = self.slab.get_mut(idx) {
            if c.set_closing() {
                self.to_close.push(idx);
            }
        }
    }

    /// Best effort before exit: what is in the write buffers goes out.
    pub(in crate::reactor) fn flush_all(&mut self) {
        for (_, c) in self.slab.iter_mut() {
            let _ = c.flush();
        }
    }

    /// Whether connection `idx` must not be read now: it is held, or the total is over the
    /// bound and it holds its share. A peer that hung up is read on, to its EOF and close.
    pub(in crate::reactor) fn output_held(&mut self, idx: usize, now: u64) -> bool {
        let Some(c) = self.slab.get_mut(idx) else {
            return false;
        };
        if c.output_held {
            return true;
        }
        if c.hung_up() || !self.output.holds(c.wbuf.len()) {
            return false;
        }
        c.output_held = true;
        self.output.held.push(idx);
        self.output.holds += 1;
        peer_log!(
            now,
            Cause::Output,
            Info,
            "connection {idx}: not read while its {} unsent bytes wait (--max-total-output {} reached)",
            c.wbuf.len(),
            self.output.max
        );
        true
    }

    /// At the turn's end, first: past twice the bound, mark the largest holders to close.
    /// `true` when some were: the caller closes them (`finish_turn`) before `release_held`.
    pub(in crate::reactor) fn close_over_bound(&mut self, now: u64) -> bool {
        let Some(excess) = self.output.excess() else {
            return false;
        };
        let mut largest: Vec<(usize, usize)> = self
            .slab
            .iter()
            .filter(|(_, c)| !c.closing() && c.wbuf.len() > HOLD_MIN)
            .map(|(i, c)| (c.wbuf.len(), i))
            .collect();
        largest.sort_unstable_by(|a, b| b.cmp(a));
        let mut gone = 0;
        for (unsent, idx) in largest {
            if gone >= excess {
                break;
            }
            gone += unsent;
            self.output.closes += 1;
            peer_log!(
                now,
                Cause::Output,
                Warn,
                "closing connection {idx}: {unsent} unsent bytes, and all connections hold more than twice --max-total-output {}",
                self.output.max
            );
            self.mark_close(idx);
        }
        true
    }

    /// At the turn's end, then: read again the held connections that may be, and give freed
    /// memory back.
    pub(in crate::reactor) fn release_held(&mut self, now: u64) {
        if !self.output.held.is_empty() {
            let mut held = std::mem::take(&mut self.output.held);
            held.retain(|&idx| {
                let Some(c) = self.slab.get_mut(idx).filter(|c| c.output_held) else {
                    return false;
                };
                if self.output.holds(c.wbuf.len()) && !c.hung_up() {
                    return true;
                }
                c.output_held = false;
                if !c.revisit {
                    c.revisit = true;
                    self.revisit.push(idx);
                }
                false
            });
            self.output.held = held;
        }
        if self.output.trim_due(now) {
            crate::footprint::trim_heap();
        }
    }
}
