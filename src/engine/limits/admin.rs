//! The limits' admin side: a change as an operator writes it (`limit`, `rate`, `pause
//! function`, `resume function`, `expire`, by admin line or HTTP), applied and journalled;
//! `show limits`; and the settings read back from the journal.

use std::io::Write as _;

use bytes::Bytes;

use super::gate::{Gate, Rate, Settings, parse_window};
use crate::engine::{Engine, Outbox};
use crate::peer_text::shown;
use crate::proto::names::push_escaped;
use crate::store::{FunctionLimits, Record};

/// The journal's record of `func`'s settings.
fn record_of(func: &[u8], s: &Settings) -> FunctionLimits {
    FunctionLimits {
        func: Bytes::copy_from_slice(func),
        limit: s.limit.unwrap_or(0),
        rate_count: s.rate.map_or(0, |r| r.count),
        rate_window_ms: s.rate.map_or(0, |r| r.window_ms),
        paused: s.paused,
        expire_ms: s.expire_ms.unwrap_or(0),
    }
}

/// The settings a journal record keeps (a rate of no handouts or no window, from a damaged or
/// foreign journal, is dropped rather than trusted). A rate past a `--max-rate-count` lowered
/// since it was set is kept: the bound is on what admin lines set, and the gate's memory
/// grows with handouts, not with N.
pub fn settings_of(r: &FunctionLimits) -> Settings {
    Settings {
        limit: (r.limit > 0).then_some(r.limit),
        rate: (r.rate_count > 0 && r.rate_window_ms > 0).then_some(Rate {
            count: r.rate_count,
            window_ms: r.rate_window_ms,
        }),
        paused: r.paused,
        expire_ms: (r.expire_ms > 0).then_some(r.expire_ms),
    }
}

/// One setting changed: `None` lifts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitChange {
    Limit(Option<u32>),
    Rate(Option<Rate>),
    Paused(bool),
    Expire(Option<u64>),
}

impl LimitChange {
    /// `limit N|off`, `rate N/DURATION|off`, `expire DURATION|off`: the setting named by `word`
    /// from its value as written; the error says what was expected.
    pub fn parse(word: &str, value: &str) -> Result<LimitChange, String> {
        let off = value.eq_ignore_ascii_case("off");
        match word {
            "limit" if off => Ok(LimitChange::Limit(None)),
            "limit" => match value.parse::<u32>() {
                Ok(n) if n > 0 && !value.starts_with('+') => Ok(LimitChange::Limit(Some(n))),
                _ => Err(format!(
                    "limit is a number of jobs above 0 or off, not {value:?}"
                )),
            },
            "rate" if off => Ok(LimitChange::Rate(None)),
            "rate" => Rate::parse(value).map(|r| LimitChange::Rate(Some(r))),
            "expire" if off => Ok(LimitChange::Expire(None)),
            "expire" => match parse_window(value) {
                Ok(ms) if ms > 0 => Ok(LimitChange::Expire(Some(ms))),
                _ => Err(format!(
                    "expire is a duration such as 30s or 1h, or off, not {value:?}"
                )),
            },
            "paused" if value == "true" => Ok(LimitChange::Paused(true)),
            "paused" if value == "false" => Ok(LimitChange::Paused(false)),
            _ => Err(format!(
                "no setting {word:?}: limit, rate, paused or expire"
            )),
        }
    }
}

/// One function's settings and what they count, as the views show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitStatus {
    pub name: Bytes,
    pub settings: Settings,
    /// Its jobs running now.
    pub running: u32,
    /// Handouts in the rate's window that ends now.
    pub window: u32,
    /// Queued jobs the settings hold back now (0 while a worker could take the next).
    pub held: u32,
    /// Times the function was held back since start, by reason: paused, limit, rate.
    pub holds: [u64; 3],
}

/// Why a change was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// This many functions (`--max-function-settings`) have a setting already.
    TooMany(usize),
    /// A rate's N past `--max-rate-count` (this).
    RateTooLarge(u32),
    /// A name no client could send (CR, LF, NUL).
    BadName,
}

impl Engine {
    /// Apply `change` to `func` at `now`, journalled; a function not seen yet is made (and kept
    /// while it has a setting).
    pub fn change_limit(
        &mut self,
        func: &[u8],
        change: LimitChange,
        now: u64,
        out: &mut Outbox,
    ) -> Result<(), LimitError> {
        if crate::proto::names::is_bad_name(func) {
            return Err(LimitError::BadName);
        }
        let mut settings = self.limits_of(func).unwrap_or_default();
        match change {
            LimitChange::Limit(n) => settings.limit = n,
            LimitChange::Rate(r) => settings.rate = r,
            LimitChange::Paused(p) => settings.paused = p,
            LimitChange::Expire(ms) => settings.expire_ms = ms,
        }
        let max_rate = self.config.max_rate_count;
        if let LimitChange::Rate(Some(r)) = change
            && r.count > max_rate
        {
            return Err(LimitError::RateTooLarge(max_rate));
        }
        let had = self.limits_of(func).is_some();
        let max = self.config.max_function_settings;
        if !had && !settings.is_empty() && self.limited >= max {
            log::warn!(
                "limits of {}: refused, {max} functions have a setting already (--max-function-settings)",
                shown(func)
            );
            return Err(LimitError::TooMany(max));
        }
        log::info!("limits of {}: {change:?}", shown(func));
        self.apply_limits(func, settings, now, out);
        if self.config.durable {
            self.durable
                .push(Record::FunctionLimits(record_of(func, &settings)));
        }
        Ok(())
    }

    /// An admin line's change: `OK`, or the error in gearmand's form.
    pub(in crate::engine) fn limit_reply(
        &mut self,
        func: &[u8],
        change: LimitChange,
        now: u64,
        out: &mut Outbox,
    ) -> Bytes {
        match self.change_limit(func, change, now, out) {
            Ok(()) => Bytes::from_static(b"OK\r\n"),
            Err(LimitError::BadName) => Bytes::from_static(
                b"ERR INVALID_FUNCTION_NAME A+function+name+cannot+contain+CR,+LF+or+NUL\r\n",
            ),
            Err(LimitError::TooMany(max)) => format!(
                "ERR TOO_MANY_LIMITS {max}+functions+have+a+setting+already+(--max-function-settings)\r\n"
            )
            .into(),
            Err(LimitError::RateTooLarge(max)) => format!(
                "ERR INVALID_ARGUMENTS N+is+1+to+{max}+(--max-rate-count)\r\n"
            )
            .into(),
        }
    }

    /// `drop function` of a function with settings: they go with it.
    pub(in crate::engine) fn drop_gate(&mut self, f: crate::engine::FuncId) {
        if let Some(g) = self.functions.get_mut(f).and_then(|x| x.gate.take()) {
            self.limited -= 1;
            if let Some(t) = g.timer {
                self.timers.cancel(t);
            }
        }
    }

    /// A function's settings, if it has any.
    pub fn limits_of(&self, func: &[u8]) -> Option<Settings> {
        let &f = self.func_by_name.get(func)?;
        Some(self.functions[f].gate.as_deref()?.settings)
    }

    /// Settings read back from the journal (the newest per function): every function's it
    /// kept, past a `--max-function-settings` lowered since (it bounds what admin lines add).
    pub fn restore_limits(&mut self, func: &[u8], settings: Settings, now: u64) {
        let mut out = Outbox::default();
        self.apply_limits(func, settings, now, &mut out);
    }

    /// Every function's settings, by name, for the journal's compaction.
    pub fn all_limits(&self) -> Vec<(Bytes, Settings)> {
        let mut v: Vec<_> = self
            .functions
            .iter()
            .filter_map(|(_, f)| Some((f.name.clone(), f.gate.as_deref()?.settings)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn apply_limits(&mut self, func: &[u8], settings: Settings, now: u64, out: &mut Outbox) {
        let f = self.func_id(&Bytes::copy_from_slice(func));
        let fun = &mut self.functions[f];
        if settings.is_empty() {
            if let Some(g) = fun.gate.take() {
                self.limited -= 1;
                if let Some(t) = g.timer {
                    self.timers.cancel(t);
                }
            }
            // Kept while it had a setting; a name an admin made stays as it was made.
            fun.pinned = fun.retry.is_some() || fun.max_queue != [self.config.max_queue; 3];
        } else {
            let g = fun.gate.get_or_insert_with(|| {
                self.limited += 1;
                Box::new(Gate::default())
            });
            if settings.expire_ms.is_some() && g.settings.expire_ms.is_none() {
                g.expire_since_ms = now;
            }
            g.settings.limit = settings.limit;
            g.settings.paused = settings.paused;
            g.settings.expire_ms = settings.expire_ms;
            if g.settings.rate != settings.rate {
                g.set_rate(settings.rate);
            }
            fun.pinned = true;
        }
        self.regate(f, now, out);
        self.settle(f);
    }

    /// Every function with a setting, by name: what is set and what it counts now (`show
    /// limits`, `GET /limits`, the console, `/metrics`).
    pub fn limit_statuses(&self, now: u64) -> Vec<LimitStatus> {
        let mut rows: Vec<LimitStatus> = self
            .functions
            .iter()
            .filter_map(|(_, f)| {
                let g = f.gate.as_deref()?;
                Some(LimitStatus {
                    name: f.name.clone(),
                    settings: g.settings,
                    running: f.running,
                    window: g.window_use(now) as u32,
                    held: if f.held { f.queued_total() } else { 0 },
                    holds: g.holds,
                })
            })
            .collect();
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        rows
    }

    /// `show limits`: per function with a setting, by name, `FUNCTION\tLIMIT\tRUNNING\tRATE\t
    /// WINDOW\tPAUSED\tEXPIRE\tHELD` (`-` for what is not set), then `.`.
    pub(in crate::engine) fn limits_listing(&self, now: u64) -> Vec<u8> {
        let dash = |o: Option<String>| o.unwrap_or_else(|| "-".into());
        let mut s = Vec::new();
        for r in self.limit_statuses(now) {
            let st = &r.settings;
            push_escaped(&mut s, &r.name);
            let _ = writeln!(
                s,
                "\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                dash(st.limit.map(|n| n.to_string())),
                r.running,
                dash(st.rate.map(|r| r.text())),
                dash(st.rate.map(|_| r.window.to_string())),
                if st.paused { "paused" } else { "-" },
                dash(st.expire_ms.map(|ms| ms.to_string())),
                r.held,
            );
        }
        s.extend_from_slice(b".\n");
        s
    }
}
