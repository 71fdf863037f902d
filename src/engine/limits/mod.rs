//! Governing the work per function, enforced at handout: `limit` (jobs running at once),
//! `rate` (handouts in a sliding window), `pause function` and `expire` (a queued job past
//! its time fails instead of running).
//!
//! - `gate`: one function's settings and what they count; pure.
//! - `admin`: a change by admin line or HTTP, journalled; `show limits` and its view; the
//!   settings read back from the journal.
//!
//! A function whose gate is closed leaves the engine's lists of non-empty queues and wakes no
//! worker, so a handout never looks at it: the search stays as cheap with any number of
//! closed functions, and a function with no setting pays one flag test. A closed rate reopens
//! by a deadline in the timer wheel, never by polling.

mod admin;
mod gate;

pub use admin::{LimitChange, LimitError, LimitStatus, settings_of};
pub use gate::{Gate, Hold, Rate, Settings};

use super::timers::TimerEvent;
use super::{Engine, FailReason, FuncId, JobKey, NIL, Outbox};
use crate::proto::request::Priority;

impl Engine {
    /// Ask `f`'s gate again after what it counts changed (a handout, a setting, its rate's
    /// deadline): a function that closes leaves the lists a handout searches, one that opens
    /// comes back and wakes its sleeping workers, as a new job would.
    pub(super) fn regate(&mut self, f: FuncId, now: u64, out: &mut Outbox) {
        let Some(func) = self.functions.get_mut(f) else {
            return;
        };
        let hold = match func.gate.as_deref() {
            Some(g) => g.check(func.running, now),
            None => None,
        };
        match (func.held, hold) {
            (false, Some(h)) => {
                func.held = true;
                if let Some(g) = func.gate.as_deref_mut() {
                    g.count_hold(h);
                }
                for p in Priority::ALL {
                    if self.functions[f].queued[p.index()] > 0 {
                        self.queue_emptied(f, p);
                    }
                }
            }
            (true, None) => {
                func.held = false;
                for p in Priority::ALL {
                    if self.functions[f].queued[p.index()] > 0 {
                        self.queue_filled(f, p);
                    }
                }
                self.wake_workers(f, now, out);
            }
            _ => {}
        }
        if let Some(Hold::Rate(at)) = hold {
            self.arm_gate(f, at);
        }
    }

    /// The rate of `f` reopens at `at`: one deadline in the wheel per function.
    fn arm_gate(&mut self, f: FuncId, at: u64) {
        let Some(g) = self
            .functions
            .get_mut(f)
            .and_then(|x| x.gate.as_deref_mut())
        else {
            return;
        };
        if let Some(t) = g.timer {
            if self.timers.deadline(t) == Some(at) {
                return;
            }
            self.timers.cancel(t);
        }
        g.timer = Some(self.timers.insert(at, TimerEvent::GateOpens { func: f }));
    }

    /// The deadline of `f`'s rate came.
    pub(super) fn gate_due(&mut self, f: FuncId, now: u64, out: &mut Outbox) {
        if let Some(g) = self
            .functions
            .get_mut(f)
            .and_then(|x| x.gate.as_deref_mut())
        {
            g.timer = None;
        }
        self.regate(f, now, out);
    }

    /// A job of `f` was handed out at `now`.
    pub(super) fn gate_handed_out(&mut self, f: FuncId, now: u64, out: &mut Outbox) {
        if let Some(g) = self.functions[f].gate.as_deref_mut() {
            g.handed_out(now);
            self.regate(f, now, out);
        }
    }

    /// A job of `f` stopped running (ended, or given back): the gate is asked again at the
    /// end of the request, when `now` and the outbox are at hand.
    pub(super) fn gate_job_ended(&mut self, f: FuncId) {
        if self.functions.get(f).is_some_and(|x| x.held) {
            self.gates_to_check.push(f);
        }
    }

    /// Ask the gates of the functions whose running jobs ended.
    pub(super) fn check_gates(&mut self, now: u64, out: &mut Outbox) {
        while let Some(f) = self.gates_to_check.pop() {
            self.regate(f, now, out);
        }
    }

    /// The job `k` of `f` starts its wait in the queue at `now`: its expiry counts from here.
    pub(super) fn note_queued(&mut self, k: JobKey, f: FuncId, now: u64) {
        let expires = self.functions[f]
            .gate
            .as_deref()
            .is_some_and(|g| g.settings.expire_ms.is_some());
        if expires {
            self.queued_since.insert(k as u32, now);
        }
    }

    /// The job at `k` leaves the engine.
    pub(super) fn forget_queued(&mut self, k: JobKey) {
        if !self.queued_since.is_empty() {
            self.queued_since.remove(&(k as u32));
        }
    }

    /// The head of queue (f, p) has waited past its function's `expire`: it fails (`expired`)
    /// rather than run. True when one did, so the caller looks for a job again.
    pub(super) fn expire_head(
        &mut self,
        (f, p): (FuncId, Priority),
        now: u64,
        out: &mut Outbox,
    ) -> bool {
        let Some(func) = self.functions.get(f) else {
            return false;
        };
        let Some(g) = func.gate.as_deref() else {
            return false;
        };
        let Some(ms) = g.settings.expire_ms else {
            return false;
        };
        let head = func.queues[p.index()].head;
        if head == NIL {
            return false;
        }
        let k = head as JobKey;
        let since = self
            .queued_since
            .get(&head)
            .copied()
            .unwrap_or(g.expire_since_ms);
        if now.saturating_sub(since) <= ms {
            return false;
        }
        log::info!(
            "job {} ({}) waited {} ms, past its function's expire of {ms} ms: failed as expired",
            self.by_handle.of(&self.jobs[k]),
            crate::peer_text::shown(&self.functions[f].name),
            now.saturating_sub(since)
        );
        self.fail_job(k, FailReason::Expired, now, out);
        true
    }
}
