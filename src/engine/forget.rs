//! Functions nobody uses any more are forgotten (issue 14 item 5): a name with no queued,
//! running or future job, no registered worker, and no setting an admin made for it
//! (`maxqueue`, `create function`) is removed, and the tables that held many such names give
//! their memory back. gearmand keeps every name it ever saw for the life of the process.

use super::{Engine, FuncId};

/// Tables of functions below this capacity are not shrunk: not worth the rehash.
const SHRINK_FLOOR: usize = 1024;

impl Engine {
    /// Forget `f` if nothing refers to it any more. Call after anything that may have been
    /// its last use ends: a job, a worker's registration, a refused submit.
    pub(super) fn forget_if_unused(&mut self, f: FuncId) {
        let Some(func) = self.functions.get(f) else {
            return;
        };
        if func.pinned || !func.workers.is_empty() || func.total() > 0 {
            return;
        }
        let func = self.functions.remove(f);
        self.func_by_name.remove(&func.name);
        let cap = self.func_by_name.capacity();
        if cap > SHRINK_FLOOR && self.func_by_name.len() < cap / 4 {
            if self.functions.is_empty() {
                // Keys are free to change only when none is in use.
                self.functions = slab::Slab::new();
            } else {
                self.functions.shrink_to_fit();
            }
            self.func_by_name.shrink_to_fit();
            crate::footprint::trim_heap();
            log::debug!(
                "functions dropped to {}: memory given back",
                self.functions.len()
            );
        }
    }
}
