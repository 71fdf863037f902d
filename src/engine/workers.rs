//! Who can take a job: workers' registrations (CAN_DO), the workers waiting for a job
//! (asleep after PRE_SLEEP, or holding a GRAB), the queues that have jobs, and the wake-ups
//! between them: `--worker-wakeup` sleepers per job, and the next one whenever a woken worker
//! has not asked for a job `--worker-wakeup-next` ms after its NOOP (busy on another server,
//! or hung), so that a job never waits on a worker that does not come while another sleeps.
//!
//! No step a job takes here scans a worker's functions or a function's workers: a worker's
//! functions are a map, a function's workers a list in which each worker knows its place, the
//! waiting workers and the non-empty queues are lists in which each member knows its place,
//! and a search looks at the smaller of two sides (a worker's functions or the functions with
//! jobs; a function's workers or the waiting workers). See docs for the bounds.

use bytes::Bytes;

use super::timers::TimerEvent;
use super::types::{Ability, Conn, NIL};
use super::{ConnId, Engine, FuncId, Outbox};
use crate::proto::request::Priority;
use crate::proto::response::Response;

/// The connection `id` in `conns`, if it is still that connection.
fn conn_in(conns: &mut [Option<Conn>], id: ConnId) -> Option<&mut Conn> {
    conns
        .get_mut(id.index as usize)?
        .as_mut()
        .filter(|c| c.id == id)
}

/// A worker's order key for `--round-robin` as an ascending `u64`: the highest `order` (the
/// newest registration, or the function served longest ago) comes first.
fn rr_key(order: i64) -> u64 {
    !((order as u64) ^ (1 << 63))
}

impl Engine {
    /// CAN_DO and CAN_DO_TIMEOUT. Past `--max-functions-per-worker` registrations the
    /// connection gets an ERROR, nothing is registered, and it stays open.
    pub(super) fn can_do(
        &mut self,
        id: ConnId,
        func: Bytes,
        timeout_ms: Option<u64>,
        now: u64,
        out: &mut Outbox,
    ) {
        let limit = self.config.max_functions_per_worker;
        let Some(c) = self.conn_mut(id) else { return };
        if limit > 0 && c.registrations >= limit {
            c.refused_functions += 1;
            if c.refused_functions == 1 {
                crate::peer_log!(
                    now,
                    crate::log_budget::Cause::Worker,
                    Warn,
                    "worker {} ({}) registered {limit} functions: refusing more \
                     (--max-functions-per-worker)",
                    id.index,
                    c.info.ip
                );
            }
            self.functions_refused += 1;
            out.push(
                id,
                Response::error(
                    "TOO_MANY_FUNCTIONS",
                    format!(
                        "A worker may register at most {limit} functions \
                         (--max-functions-per-worker)"
                    ),
                ),
            );
            return;
        }
        let f = self.func_id(&func);
        let at = self.functions[f].workers.len() as u32;
        let Some(c) = conn_in(&mut self.conns, id) else {
            return;
        };
        c.registrations += 1;
        c.order_hi += 1;
        let order = c.order_hi;
        let mut first = false;
        c.abilities
            .entry(f)
            .and_modify(|a| {
                // The newest registration decides the timeout, as gearmand's newest-first list.
                a.count += 1;
                a.order = order;
                a.timeout_ms = timeout_ms;
            })
            .or_insert_with(|| {
                first = true;
                Ability {
                    count: 1,
                    timeout_ms,
                    order,
                    pos: at,
                    held: 0,
                }
            });
        let asleep = c.sleeping && !c.noop_sent;
        let func = &mut self.functions[f];
        func.registrations += 1;
        if first {
            func.workers.push(id);
        }
        // A worker that is already asleep learns at once that there is work for it.
        if asleep && func.queued_total() > 0 && !func.held {
            self.send_noop(id, f, now, out);
        }
    }

    /// Remove the registrations of `only` (or all) from a connection. Costs the number of
    /// functions removed: a RESET pays back what its CAN_DOs built.
    pub(super) fn drop_abilities(&mut self, id: ConnId, only: Option<FuncId>) {
        let Some(c) = conn_in(&mut self.conns, id) else {
            return;
        };
        let dropped: Vec<(FuncId, Ability)> = match only {
            Some(f) => c.abilities.remove(&f).map(|a| (f, a)).into_iter().collect(),
            None => c.abilities.drain().collect(),
        };
        for (f, a) in &dropped {
            c.registrations -= a.count;
            if c.woken_for == Some(*f) {
                c.woken_for = None;
            }
        }
        if c.abilities.len() < c.abilities.capacity() / 4 {
            c.abilities.shrink_to_fit();
        }
        for (f, a) in dropped {
            self.remove_worker_of(f, id, a);
        }
    }

    /// Take worker `id` (whose registration of `f` was `a`) off the function's list.
    fn remove_worker_of(&mut self, f: FuncId, id: ConnId, a: Ability) {
        let Some(func) = self.functions.get_mut(f) else {
            return;
        };
        func.registrations -= a.count;
        let pos = a.pos as usize;
        if func.workers.get(pos) != Some(&id) {
            debug_assert!(false, "worker list out of step");
            return;
        }
        func.workers.swap_remove(pos);
        if let Some(&moved) = func.workers.get(pos) {
            if let Some(m) = conn_in(&mut self.conns, moved).and_then(|m| m.abilities.get_mut(&f)) {
                m.pos = pos as u32;
            }
        }
        if func.workers.len() < func.workers.capacity() / 4 {
            func.workers.shrink_to_fit();
        }
        self.settle(f);
    }

    /// Put a connection on the list of waiting workers, or take it off, after its state
    /// changed (call after every change of `sleeping`, `noop_sent`, `held_grab` or
    /// `grab_retry_queued`).
    pub(super) fn sync_waiting(&mut self, id: ConnId) {
        let Some(c) = conn_in(&mut self.conns, id) else {
            return;
        };
        let want = c.waits();
        if want == (c.waiting_pos != NIL) {
            return;
        }
        if want {
            c.waiting_pos = self.waiting.len() as u32;
            self.waiting.push(id);
            return;
        }
        let pos = c.waiting_pos as usize;
        c.waiting_pos = NIL;
        self.waiting.swap_remove(pos);
        if let Some(&moved) = self.waiting.get(pos) {
            if let Some(m) = conn_in(&mut self.conns, moved) {
                m.waiting_pos = pos as u32;
            }
        }
    }

    /// Queue (f, p) just got its first job.
    pub(super) fn queue_filled(&mut self, f: FuncId, p: Priority) {
        let list = &mut self.nonempty[p.index()];
        self.functions[f].nonempty_pos[p.index()] = list.len() as u32;
        list.push(f);
    }

    /// Queue (f, p) just gave up its last job.
    pub(super) fn queue_emptied(&mut self, f: FuncId, p: Priority) {
        let i = p.index();
        let pos = std::mem::replace(&mut self.functions[f].nonempty_pos[i], NIL) as usize;
        let list = &mut self.nonempty[i];
        if list.get(pos) != Some(&f) {
            debug_assert!(false, "non-empty list out of step");
            return;
        }
        list.swap_remove(pos);
        if let Some(&moved) = list.get(pos) {
            self.functions[moved].nonempty_pos[i] = pos as u32;
        }
    }

    fn send_noop(&mut self, id: ConnId, f: FuncId, now: u64, out: &mut Outbox) {
        if let Some(c) = self.conn_mut(id) {
            c.noop_sent = true;
            c.woken_for = Some(f);
            out.push(id, Response::Noop);
            self.sync_waiting(id);
            self.expect_grab(id, f, now);
        }
    }

    /// A NOOP went to `id` for a job of `f`: unless the worker asks for a job within
    /// `--worker-wakeup-next`, the next sleeper is woken for it. A worker connected to several
    /// servers reads none of them while it runs another server's job, and a process may hang;
    /// the job must not wait for it while another worker sleeps. With `--worker-wakeup 0`
    /// every sleeper was woken already: nobody is left to pass it to.
    pub(super) fn expect_grab(&mut self, id: ConnId, f: FuncId, now: u64) {
        let ms = self.config.wakeup_next_ms;
        if ms == 0 || self.config.worker_wakeup == 0 {
            return;
        }
        let Some(c) = conn_in(&mut self.conns, id) else {
            return;
        };
        let event = TimerEvent::WakeupNext { conn: id, func: f };
        let timer = self.timers.insert(now.saturating_add(ms), event);
        if let Some(old) = c.wake_timer.replace(timer) {
            self.timers.cancel(old);
        }
    }

    /// The worker asked for a job (GRAB, PRE_SLEEP) or left: its NOOP is answered.
    pub(super) fn answered_wakeup(&mut self, id: ConnId) {
        if let Some(t) = conn_in(&mut self.conns, id).and_then(|c| c.wake_timer.take()) {
            self.timers.cancel(t);
        }
    }

    /// Worker `id`, woken for a job of `f`, has not asked for it in `--worker-wakeup-next`:
    /// while a job of `f` waits, the next sleepers hear of it (and they, if they do not come
    /// either, pass it on in turn). The late worker is served as any other when it comes.
    pub(super) fn wakeup_overdue(&mut self, id: ConnId, f: FuncId, now: u64, out: &mut Outbox) {
        if let Some(c) = conn_in(&mut self.conns, id) {
            c.wake_timer = None;
            if c.woken_for == Some(f) {
                c.woken_for = None;
            }
        }
        if self
            .functions
            .get(f)
            .is_some_and(|func| func.queued_total() > 0)
        {
            log::debug!(
                "worker {} did not ask for a job {} ms after its NOOP: waking the next",
                id.index,
                self.config.wakeup_next_ms
            );
            self.wakeups_overdue += 1;
            self.wake_workers(f, now, out);
        }
    }

    /// The queued job this worker would get: highest priority across all its functions, then
    /// oldest (or, with `--round-robin`, the function it was served from longest ago). Looks at
    /// the smaller of the worker's functions and the functions with jobs of that priority.
    pub(super) fn find_job_for(&self, id: ConnId) -> Option<(FuncId, Priority)> {
        if self.draining {
            return None;
        }
        let conn = self.conn(id)?;
        let rr = self.config.round_robin;
        for p in Priority::ALL {
            let i = p.index();
            let key = |f: FuncId, a: &Ability| -> Option<u64> {
                let func = self.functions.get(f)?;
                let head = func.queues[i].head;
                // A held function is off `nonempty`; from the worker's side, one flag.
                if head == NIL || func.held {
                    return None;
                }
                Some(if rr {
                    rr_key(a.order)
                } else {
                    self.jobs.get(head as usize)?.id
                })
            };
            let nonempty = &self.nonempty[i];
            let best = if conn.abilities.len() <= nonempty.len() {
                conn.abilities
                    .iter()
                    .filter_map(|(&f, a)| Some((key(f, a)?, f)))
                    .min()
            } else {
                nonempty
                    .iter()
                    .filter_map(|&f| Some((key(f, conn.abilities.get(&f)?)?, f)))
                    .min()
            };
            if let Some((_, f)) = best {
                return Some((f, p));
            }
        }
        None
    }

    /// With `--round-robin`, the function just served goes behind all of this worker's others.
    pub(super) fn rotate(&mut self, id: ConnId, f: FuncId) {
        if !self.config.round_robin {
            return;
        }
        if let Some(c) = conn_in(&mut self.conns, id) {
            c.order_lo -= 1;
            let lo = c.order_lo;
            if let Some(a) = c.abilities.get_mut(&f) {
                a.order = lo;
            }
        }
    }

    /// Wake waiting workers of `f`: as many as `--worker-wakeup` says (0 = all); held GRABs
    /// first (they need no NOOP round trip), then sleepers. Looks at the smaller of the
    /// function's workers (rotating, so that the same one is not always woken) and the
    /// waiting workers.
    pub(super) fn wake_workers(&mut self, f: FuncId, now: u64, out: &mut Outbox) {
        let Some(func) = self.functions.get(f) else {
            return;
        };
        let n = func.workers.len();
        if n == 0 || self.waiting.is_empty() || func.held {
            return;
        }
        let limit = match self.config.worker_wakeup {
            0 => usize::MAX,
            w => w as usize,
        };
        let mut woken = 0;
        if self.waiting.len() < n {
            for held in [true, false] {
                let mut i = 0;
                while i < self.waiting.len() && woken < limit {
                    // A woken worker leaves the list, and another takes its place at `i`.
                    if self.try_wake(self.waiting[i], f, held, now, out) {
                        woken += 1;
                    } else {
                        i += 1;
                    }
                }
            }
            return;
        }
        let start = func.wake_cursor % n;
        let mut last = start;
        for held in [true, false] {
            for i in 0..n {
                if woken >= limit {
                    break;
                }
                let pos = (start + i) % n;
                let Some(&w) = self.functions[f].workers.get(pos) else {
                    break;
                };
                if self.try_wake(w, f, held, now, out) {
                    woken += 1;
                    if !held {
                        last = pos + 1;
                    }
                }
            }
        }
        if woken > 0 {
            self.functions[f].wake_cursor = last % n;
        }
    }

    /// Wake worker `w` for a job of `f` if it waits that way (`held`: with a held GRAB, else
    /// asleep) and can do `f`.
    fn try_wake(&mut self, w: ConnId, f: FuncId, held: bool, now: u64, out: &mut Outbox) -> bool {
        let Some(c) = conn_in(&mut self.conns, w) else {
            return false;
        };
        if !c.can_do(f) {
            return false;
        }
        if held {
            if c.held_grab.is_none() || c.grab_retry_queued {
                return false;
            }
            c.grab_retry_queued = true;
            c.woken_for = Some(f);
            self.grab_retries.push(w);
        } else {
            if !c.sleeping || c.noop_sent {
                return false;
            }
            c.noop_sent = true;
            c.woken_for = Some(f);
            out.push(w, Response::Noop);
            self.expect_grab(w, f, now);
        }
        self.sync_waiting(w);
        true
    }

    /// A worker woken for a job of one function that took another (or left): whoever else can
    /// do the job it was woken for hears of it now. One function, so O(1) in its functions.
    pub(super) fn pass_wakeups_on(
        &mut self,
        id: ConnId,
        skip: Option<FuncId>,
        now: u64,
        out: &mut Outbox,
    ) {
        let Some(f) = self.conn_mut(id).and_then(|c| c.woken_for.take()) else {
            return;
        };
        if Some(f) != skip
            && self
                .functions
                .get(f)
                .is_some_and(|func| func.queued_total() > 0)
        {
            self.wake_workers(f, now, out);
        }
    }

    /// Every structure here agrees with the connections and queues (tests only).
    #[cfg(test)]
    pub(super) fn check_workers(&self) {
        for (i, &w) in self.waiting.iter().enumerate() {
            let c = self.conn(w).expect("waiting worker is connected");
            assert!(c.waits());
            assert_eq!(c.waiting_pos as usize, i);
        }
        let waiting = self.conns.iter().flatten().filter(|c| c.waits()).count();
        assert_eq!(waiting, self.waiting.len());
        for (f, func) in self.functions.iter() {
            let mut regs = 0;
            for (pos, &w) in func.workers.iter().enumerate() {
                let a = self
                    .conn(w)
                    .and_then(|c| c.abilities.get(&f))
                    .expect("ability");
                assert_eq!(a.pos as usize, pos);
                regs += a.count;
            }
            assert_eq!(regs, func.registrations);
            for p in Priority::ALL {
                let i = p.index();
                let listed = func.nonempty_pos[i] != NIL;
                assert_eq!(listed, func.queued[i] > 0 && !func.held);
                if listed {
                    assert_eq!(self.nonempty[i][func.nonempty_pos[i] as usize], f);
                }
            }
        }
        for c in self.conns.iter().flatten() {
            // A wake-up deadline runs only while a NOOP is unanswered.
            assert!(c.wake_timer.is_none() || c.noop_sent);
            let regs: u32 = c.abilities.values().map(|a| a.count).sum();
            assert_eq!(regs, c.registrations);
            for (&f, a) in &c.abilities {
                let held = c
                    .holding
                    .keys()
                    .filter(|&&k| self.jobs.get(k as usize).is_some_and(|j| j.func() == f))
                    .count();
                assert_eq!(a.held as usize, held);
            }
            assert!(c.holding.keys().all(|&k| {
                self.jobs
                    .get(k as usize)
                    .is_some_and(|j| c.can_do(j.func()))
            }));
        }
    }
}
