//! Idle functions are kept, as gearmand keeps every name (`status` still lists `f 0 0 0` after
//! its workers left, monitoring reads exactly that row, and `/metrics` keeps its series), up to
//! `--max-idle-functions`: past it the least recently used idle ones are forgotten, so names
//! from workers that came and went cost a bounded amount.
//!
//! Idle: no queued, running or future job, no registered worker, and no setting an operator
//! made for it (`create function`, `maxqueue` with limits, `retry FUNCTION`). A function with
//! such a setting is never forgotten and is not counted among the idle ones: an operator's
//! setting must not vanish because traffic moved on (and `retry` policies are bounded on their
//! own; admin lines are an operator's). The idle functions are an intrusive doubly linked list
//! through `Function::idle_prev`/`idle_next`, oldest first: a function joins at the tail when
//! its last use ends and leaves when it is used again, each O(1), so no step of a job scans
//! anything. Trimming happens once per turn (`on_time`), at the turn's `now`.

use super::timers::TimerEvent;
use super::types::NIL;
use super::{Engine, FuncId};

/// Tables of functions below this capacity are not shrunk: not worth the rehash.
const SHRINK_FLOOR: usize = 1024;

/// Forgotten functions are logged at most this often (a summary with the count).
const LOG_EVERY_MS: u64 = 60_000;

/// The idle functions, oldest first, and what forgetting them did.
#[derive(Debug)]
pub(super) struct IdleFunctions {
    head: u32,
    tail: u32,
    len: usize,
    /// Functions made or taken off the list this turn: checked at the turn's end, so one that
    /// ends up unused (a refused submit) still joins the list.
    touched: Vec<FuncId>,
    /// Forgotten since start, and since the last log line.
    pub(super) forgotten: u64,
    unlogged: u64,
    /// When the last summary was logged, and whether a timer waits to log the next.
    logged_ms: Option<u64>,
    log_armed: bool,
}

impl Default for IdleFunctions {
    fn default() -> Self {
        IdleFunctions {
            head: NIL,
            tail: NIL,
            len: 0,
            touched: Vec::new(),
            forgotten: 0,
            unlogged: 0,
            logged_ms: None,
            log_armed: false,
        }
    }
}

impl IdleFunctions {
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

impl Engine {
    fn is_idle(&self, f: FuncId) -> bool {
        self.functions
            .get(f)
            .is_some_and(|func| !func.pinned && func.workers.is_empty() && func.total() == 0)
    }

    /// Put `f` at the tail of the idle list if nothing uses it any more. Call after anything
    /// that may have been its last use ends: a job, a worker's registration.
    pub(super) fn settle(&mut self, f: FuncId) {
        if !self.is_idle(f) {
            return;
        }
        self.unlink_idle(f);
        let tail = self.idle.tail;
        let func = &mut self.functions[f];
        func.idle_listed = true;
        func.idle_prev = tail;
        func.idle_next = NIL;
        match self.functions.get_mut(tail as usize) {
            Some(t) if tail != NIL => t.idle_next = f as u32,
            _ => self.idle.head = f as u32,
        }
        self.idle.tail = f as u32;
        self.idle.len += 1;
    }

    /// `f` is used again (looked up by name for a job, a worker, a setting): off the idle list.
    /// A made or used function is remembered until the turn's end, when it joins the list
    /// again if it ended up unused.
    pub(super) fn touch(&mut self, f: FuncId) {
        if self.functions.get(f).is_some_and(|func| func.idle_listed) {
            self.unlink_idle(f);
            self.idle.touched.push(f);
        }
    }

    /// A function just made: checked at the turn's end like a touched one.
    pub(super) fn made(&mut self, f: FuncId) {
        self.idle.touched.push(f);
    }

    /// Take `f` off the idle list, if it is on it (before it is removed, or used).
    pub(super) fn unlink_idle(&mut self, f: FuncId) {
        let Some(func) = self.functions.get_mut(f) else {
            return;
        };
        if !func.idle_listed {
            return;
        }
        func.idle_listed = false;
        let (prev, next) = (func.idle_prev, func.idle_next);
        func.idle_prev = NIL;
        func.idle_next = NIL;
        match self.functions.get_mut(prev as usize) {
            Some(p) if prev != NIL => p.idle_next = next,
            _ => self.idle.head = next,
        }
        match self.functions.get_mut(next as usize) {
            Some(n) if next != NIL => n.idle_prev = prev,
            _ => self.idle.tail = prev,
        }
        self.idle.len -= 1;
    }

    /// The turn's end: the functions touched this turn that ended up unused join the list;
    /// past `--max-idle-functions` the oldest are forgotten, and a summary is logged at most
    /// once a minute.
    pub(super) fn trim_idle(&mut self, now: u64) {
        for f in std::mem::take(&mut self.idle.touched) {
            if self.functions.get(f).is_some_and(|func| !func.idle_listed) {
                self.settle(f);
            }
        }
        let max = self.config.max_idle_functions;
        let mut forgot = 0;
        while self.idle.len > max {
            let f = self.idle.head as FuncId;
            self.unlink_idle(f);
            let func = self.functions.remove(f);
            self.func_by_name.remove(&func.name);
            forgot += 1;
        }
        if forgot > 0 {
            self.idle.forgotten += forgot;
            self.idle.unlogged += forgot;
            self.give_function_memory_back();
        }
        self.log_forgotten(now);
    }

    /// Log the functions forgotten since the last summary, if a minute has passed since it;
    /// else make sure a timer logs them when it has (an idle server does not tick).
    pub(super) fn log_forgotten(&mut self, now: u64) {
        if self.idle.unlogged == 0 {
            return;
        }
        let due = self
            .idle
            .logged_ms
            .map_or(0, |t| t.saturating_add(LOG_EVERY_MS));
        if now >= due {
            log::info!(
                "{} forgotten since {}: past --max-idle-functions {}, the least recently used \
                 functions with no job, worker or setting go ({} since start)",
                crate::plural::count(self.idle.unlogged, "idle function", "idle functions"),
                self.idle
                    .logged_ms
                    .map_or_else(|| "start".to_string(), super::rfc3339),
                self.config.max_idle_functions,
                self.idle.forgotten
            );
            self.idle.unlogged = 0;
            self.idle.logged_ms = Some(now);
        } else if !self.idle.log_armed {
            self.idle.log_armed = true;
            self.timers.insert(due, TimerEvent::ForgetLog);
        }
    }

    /// The summary's timer fired.
    pub(super) fn forget_log_due(&mut self, now: u64) {
        self.idle.log_armed = false;
        self.log_forgotten(now);
    }

    /// Tests: the idle list is consistent, and holds idle functions only.
    #[cfg(test)]
    pub(super) fn check_idle(&self) {
        let (mut prev, mut f, mut n) = (NIL, self.idle.head, 0);
        while f != NIL {
            let func = &self.functions[f as usize];
            assert!(func.idle_listed && func.idle_prev == prev);
            assert!(self.is_idle(f as usize), "{:?} is listed idle", func.name);
            (prev, f, n) = (f, func.idle_next, n + 1);
        }
        assert_eq!((self.idle.tail, self.idle.len), (prev, n));
        let listed = self.functions.iter().filter(|(_, f)| f.idle_listed).count();
        assert_eq!(listed, n);
    }

    /// Tables that held many more functions than now give their memory back.
    fn give_function_memory_back(&mut self) {
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
