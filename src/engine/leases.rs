//! Time limits on running jobs beyond the worker's own CAN_DO_TIMEOUT: a function's job lease
//! (`timeout FUNCTION DURATION`, as Faktory's `reserve_for`), for workers that declared none,
//! so a hung worker cannot hold a job forever; and a schedule entry's `timeout=`. The server's
//! timer fails the job; the worker is told nothing, and its late result is refused.

use std::collections::BTreeMap;
use std::io::Write as _;

use bytes::Bytes;

use super::{Engine, FuncId, JobKey};
use crate::peer_text::shown;
use crate::proto::names::push_escaped;
use crate::schedule::duration::parse_duration;
use crate::store::{FunctionLease, Record};

/// Which limit a job ran past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLimit {
    /// The worker's CAN_DO_TIMEOUT.
    CanDo,
    /// The schedule entry's `timeout=` (ms).
    Entry(u64),
    /// The function's lease, `timeout FUNCTION DURATION` (ms).
    Lease(u64),
}

impl TimeLimit {
    /// How the failure reads (the failed list's error, an alert's `error`).
    pub fn error_text(self) -> String {
        match self {
            TimeLimit::CanDo => "timed out (CAN_DO_TIMEOUT)".into(),
            TimeLimit::Entry(ms) => {
                format!("timed out: not ended {ms} ms after it started (the entry's timeout=)")
            }
            TimeLimit::Lease(ms) => format!(
                "timed out: held {ms} ms by a worker without CAN_DO_TIMEOUT (timeout FUNCTION)"
            ),
        }
    }

    /// The outcome word of `show schedules`.
    pub fn outcome_text(self) -> String {
        match self {
            TimeLimit::CanDo => "timeout".into(),
            TimeLimit::Entry(ms) => format!("timeout ({ms} ms, timeout=)"),
            TimeLimit::Lease(ms) => format!("timeout ({ms} ms, lease)"),
        }
    }
}

/// The leases set, by function name (a function need not exist yet).
#[derive(Default)]
pub(crate) struct Leases {
    by_func: BTreeMap<Bytes, u64>,
}

impl Engine {
    /// `timeout FUNCTION [DURATION|off]`: the admin reply.
    pub(super) fn admin_timeout(&mut self, func: Bytes, set: Option<Bytes>) -> Bytes {
        let Some(set) = set else {
            return match self.leases.by_func.get(&func) {
                Some(ms) => format!("OK {ms}\n").into(),
                None => Bytes::from_static(b"OK none\n"),
            };
        };
        let text = std::str::from_utf8(&set).unwrap_or("");
        let ms = if text.eq_ignore_ascii_case("off") {
            0
        } else {
            match parse_duration(text) {
                Ok(ms) if ms > 0 => ms,
                _ => {
                    return Bytes::from_static(
                        b"ERR INVALID_ARGUMENTS Use+a+duration+such+as+30s,+5m+or+1h,+or+off\r\n",
                    );
                }
            }
        };
        // At most --max-function-settings functions have a lease (each one a name and a
        // number): a bound on what an admin connection can make the server keep.
        let max = self.config.max_function_settings;
        if ms > 0 && !self.leases.by_func.contains_key(&func) && self.leases.by_func.len() >= max {
            log::warn!(
                "timeout {}: refused, {max} functions have a lease already (--max-function-settings)",
                shown(&func)
            );
            return format!(
                "ERR TOO_MANY_LEASES {max}+functions+have+a+lease+already+(--max-function-settings):+clear+one+with+timeout+FUNCTION+off\r\n"
            )
            .into();
        }
        self.set_lease(func.clone(), ms);
        log::info!(
            "timeout {}: {}",
            shown(&func),
            if ms == 0 {
                "no lease".to_string()
            } else {
                format!("a job held {ms} ms by a worker without CAN_DO_TIMEOUT fails")
            }
        );
        if self.config.durable {
            self.durable
                .push(Record::FunctionLease(FunctionLease { func, ms }));
        }
        Bytes::from_static(b"OK\r\n")
    }

    fn set_lease(&mut self, func: Bytes, ms: u64) {
        if ms == 0 {
            self.leases.by_func.remove(&func);
        } else {
            self.leases.by_func.insert(func, ms);
        }
    }

    /// Bring a lease back from the journal (`ms` 0: none). Every lease it kept comes back,
    /// past a `--max-function-settings` lowered since: it bounds what admin lines add.
    pub fn restore_lease(&mut self, func: Bytes, ms: u64) {
        self.set_lease(func, ms);
    }

    /// Functions with a lease.
    pub fn lease_count(&self) -> usize {
        self.leases.by_func.len()
    }

    /// The leases set, for the journal's compaction and `show timeouts`.
    pub fn leases(&self) -> impl Iterator<Item = (&Bytes, u64)> {
        self.leases.by_func.iter().map(|(f, &ms)| (f, ms))
    }

    /// `show timeouts`: `FUNCTION\tMS` per lease, by name; then `.`.
    pub(super) fn timeouts_listing(&self) -> Vec<u8> {
        let mut s = Vec::new();
        for (f, ms) in self.leases() {
            push_escaped(&mut s, f);
            let _ = writeln!(s, "\t{ms}");
        }
        s.extend_from_slice(b".\n");
        s
    }

    /// How long the job `k` of function `f` may run once a worker takes it: the worker's
    /// CAN_DO_TIMEOUT (`worker`), else the function's lease; and its entry's `timeout=`,
    /// whichever is shorter.
    pub(super) fn run_limit(&self, k: JobKey, f: FuncId, worker: Option<u64>) -> Option<u64> {
        let own = worker.or_else(|| self.lease_of(f));
        match (own, self.entry_time_limit(k)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn lease_of(&self, f: FuncId) -> Option<u64> {
        if self.leases.by_func.is_empty() {
            return None;
        }
        self.leases.by_func.get(&self.functions[f].name).copied()
    }

    /// Which limit the running job `k` (of `f`, on a worker whose CAN_DO_TIMEOUT is
    /// `worker`) ran past at `now`: its entry's if that one is due (a shorter one may have
    /// come first), else the worker's own, else the function's lease.
    pub(super) fn limit_passed(
        &self,
        k: JobKey,
        f: FuncId,
        worker: Option<u64>,
        now: u64,
    ) -> TimeLimit {
        let entry = self.entry_time_limit(k).filter(|&ms| {
            self.rare(k)
                .and_then(|r| r.origin.as_ref()?.started_ms)
                .is_some_and(|s| s.saturating_add(ms) <= now)
        });
        match (entry, worker, self.lease_of(f)) {
            (Some(ms), _, _) => TimeLimit::Entry(ms),
            (None, Some(_), _) => TimeLimit::CanDo,
            (None, None, Some(ms)) => TimeLimit::Lease(ms),
            (None, None, None) => TimeLimit::CanDo,
        }
    }

    /// The `timeout=` (ms) of the schedule entry that made the job `k`, if it has one.
    pub(super) fn entry_time_limit(&self, k: JobKey) -> Option<u64> {
        // Without entries there is no limit to find: skip the job's extras lookup, which
        // every foreground job's assign would otherwise pay.
        if self.schedules.by_id.is_empty() {
            return None;
        }
        let origin = self.rare(k)?.origin.as_ref()?;
        let &slot = self.schedules.by_id.get(&origin.entry)?;
        self.schedules.entries[slot].entry.timeout_ms
    }
}
