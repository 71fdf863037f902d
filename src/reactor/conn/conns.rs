//! `Conns`: every connection (the slab) and the lists a turn keeps about them: who has bytes
//! to write, who is read again before the turn ends, who closes at its end, whose replies
//! wait for the turn's end or for company, and the bound on all their unsent output. One
//! part, so that the turn's bookkeeping about connections is in one place and borrowed apart
//! from the engine, the outbox and the other parts.

use slab::Slab;

use super::Connection;
use super::output_bound::OutputBound;

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
}
