//! Alerts are jobs: a schedule run that fails for good, or never happens, submits a background
//! job to the entry's `on_failure=` function (a completed one to `on_success=`), its workload a
//! JSON account of the run. A worker for that function mails, chats or pages: crontab's MAILTO
//! without a mail server in gearwheel. A target that is a URL gets the account POSTed by the
//! server itself instead (src/engine/hooks.rs), as generic JSON or Slack's `{"text"}`.

use std::rc::Rc;

use bytes::Bytes;

use super::run_history::{RunOutcome, RunRecord, one_line};
use crate::engine::{Engine, NewJob, Outbox, rfc3339};
use crate::json::Obj;
use crate::peer_text::shown;
use crate::proto::request::{JobBody, Priority};
use crate::schedule::webhook::{AlertFormat, is_url};

/// What an alert says about one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert<'a> {
    pub entry: &'a str,
    /// The entry's function (the job that failed, or would have run).
    pub function: &'a str,
    pub run: RunRecord,
    /// Tries the run had (1 without retries); 0 for a run that never started.
    pub attempts: u32,
    /// The error text, or why the run never happened.
    pub error: Option<&'a str>,
    /// The failed job's handle; none for a run that never happened.
    pub handle: Option<&'a str>,
    /// This server: its handle prefix (`H:host`), which names it in a cluster.
    pub server: &'a str,
}

impl Alert<'_> {
    /// The workload: one JSON object (docs/schedules.md, "Alerts", lists its fields).
    pub fn workload(&self) -> String {
        let mut out = String::with_capacity(256);
        let mut o = Obj::new(&mut out);
        let event = if self.run.outcome == RunOutcome::Complete {
            "success"
        } else {
            "failure"
        };
        o.str("event", event)
            .str("entry", self.entry)
            .str("function", self.function)
            .str("outcome", self.run.outcome.name());
        crate::json::time(&mut o, "scheduled", Some(self.run.scheduled_ms));
        crate::json::time(&mut o, "started", self.run.started_ms);
        o.opt_num("duration_ms", self.run.duration_ms)
            .bool("manual", self.run.manual)
            .num("attempts", self.attempts)
            .opt_str("error", self.error)
            .opt_str("handle", self.handle)
            .str("server", self.server);
        o.end();
        out
    }

    /// The body POSTed to a webhook: the workload with its idempotency key, or for Slack one
    /// line of text (Slack takes no other field).
    pub fn webhook_body(&self, format: AlertFormat, key: &str) -> String {
        match format {
            AlertFormat::Generic => {
                let mut w = self.workload();
                w.pop();
                let mut out = String::new();
                let mut o = Obj::new(&mut out);
                o.str("idempotency_key", key);
                o.end();
                w.push(',');
                w.push_str(&out[1..]);
                w
            }
            AlertFormat::Slack => {
                let mut text = format!(
                    "gearwheel: schedule `{}` ({}) {} for the run at {}",
                    self.entry,
                    self.function,
                    self.run.outcome.name(),
                    rfc3339(self.run.scheduled_ms)
                );
                if let Some(d) = self.run.duration_ms {
                    text.push_str(&format!(" after {d} ms"));
                }
                if let Some(e) = self.error {
                    text.push_str(&format!(": {e}"));
                }
                text.push_str(&format!(" ({})", self.server));
                let mut out = String::new();
                let mut o = Obj::new(&mut out);
                o.str("text", &text);
                o.end();
                out
            }
        }
    }
}

/// One run's account as the engine hands it to `alert`: its record and what went wrong.
pub(in crate::engine) struct RunAccount<'a> {
    pub run: RunRecord,
    pub attempts: u32,
    pub error: Option<&'a str>,
    pub handle: Option<&'a str>,
}

impl Engine {
    /// Submit the alert for a run of the entry in `slot`, to its `on_failure=` (any outcome
    /// but a completion; a cancel is an operator's own act and alerts nobody) or `on_success=`.
    /// The alert job has no schedule origin, so an alert that fails alerts nobody (no loop).
    pub(in crate::engine) fn alert(
        &mut self,
        slot: usize,
        account: RunAccount<'_>,
        now: u64,
        out: &mut Outbox,
    ) {
        let RunAccount {
            run,
            attempts,
            error,
            handle,
        } = account;
        let st = &self.schedules.entries[slot];
        let to = match run.outcome {
            RunOutcome::Complete => st.entry.on_success.as_deref(),
            RunOutcome::Cancelled => None,
            _ => st.entry.on_failure.as_deref(),
        };
        let Some(to) = to else { return };
        let id = Rc::clone(&st.id);
        let error = error.map(one_line);
        let (scheduled_ms, outcome) = (run.scheduled_ms, run.outcome);
        let alert = Alert {
            entry: &id,
            function: &st.entry.function,
            run,
            attempts,
            error: error.as_deref(),
            handle,
            server: &self.config.handle_prefix,
        };
        if is_url(to) {
            let key = self.next_hook_key(now);
            let body = alert.webhook_body(st.entry.alert_format, &key);
            let to = to.to_string();
            self.queue_hook(&to, body, &id, now);
            return;
        }
        let to = Bytes::from(to.to_string());
        let workload = alert.workload();
        let f = self.func_id(&to);
        if self.queue_full(f, Priority::High) {
            log::warn!(
                "schedule {id}: alert for the run at {} not sent: the queue of {} is full",
                rfc3339(scheduled_ms),
                shown(&to)
            );
            return;
        }
        let new = NewJob {
            func: f,
            body: JobBody::new(b"", workload.as_bytes()),
            reducer: None,
            priority: Priority::High,
            background: true,
            due_ms: None,
            origin: None,
        };
        let k = self.create_job(new, false, None, now, out);
        log::info!(
            "schedule {id}: {} of the run at {} sent to {} as {}",
            if outcome == RunOutcome::Complete {
                "success"
            } else {
                "alert"
            },
            rfc3339(scheduled_ms),
            shown(&to),
            self.by_handle.of(&self.jobs[k])
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_is_one_json_object_with_every_field() {
        let a = Alert {
            entry: "nightly",
            function: "backup",
            run: RunRecord {
                scheduled_ms: 1_700_000_000_000,
                started_ms: Some(1_700_000_001_000),
                duration_ms: Some(2500),
                outcome: RunOutcome::Failed,
                manual: false,
                backfill: false,
                handle: None,
            },
            attempts: 3,
            error: Some("disk \"full\""),
            handle: Some("H:t:7"),
            server: "H:t",
        };
        assert_eq!(
            a.workload(),
            "{\"event\":\"failure\",\"entry\":\"nightly\",\"function\":\"backup\",\
             \"outcome\":\"failed\",\"scheduled\":\"2023-11-14T22:13:20Z\",\
             \"started\":\"2023-11-14T22:13:21Z\",\"duration_ms\":2500,\"manual\":false,\
             \"attempts\":3,\"error\":\"disk \\\"full\\\"\",\"handle\":\"H:t:7\",\"server\":\"H:t\"}"
        );
        let missed = Alert {
            run: RunRecord {
                started_ms: None,
                duration_ms: None,
                outcome: RunOutcome::Missed,
                ..a.run.clone()
            },
            attempts: 0,
            handle: None,
            error: Some("missed"),
            ..a
        };
        let w = missed.workload();
        assert!(
            w.contains("\"started\":null,\"duration_ms\":null")
                && w.contains("\"handle\":null")
                && w.contains("\"outcome\":\"missed\""),
            "{w}"
        );
    }
}
