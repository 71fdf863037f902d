//! What an operator does to a schedule entry by hand: run it now, skip its next run, pause and
//! resume it (`run|skip|pause|resume schedule ID`, and the same over HTTP). The marks these
//! leave on an entry travel with its history through reloads and the journal.

use std::rc::Rc;

use bytes::Bytes;

use crate::engine::{Engine, Outbox, rfc3339};
use crate::proto::admin::ScheduleOp;

/// Names an operator's ask handed to the cluster until the cluster's answer comes back.
pub type OpTicket = u64;

/// What an operation did: done here (a manual run's job handles; none for the others), or
/// handed to the cluster, whose answer comes when etcd has given its own
/// (`Engine::cluster_op_done`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    Done(Vec<String>),
    Asked(OpTicket),
}

impl Applied {
    /// The job handles of a run made here (none when asked of the cluster: its leader runs it).
    pub fn handles(self) -> Vec<String> {
        match self {
            Applied::Done(handles) => handles,
            Applied::Asked(_) => Vec::new(),
        }
    }
}

/// Why an operation on an entry did nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleOpError {
    /// No entry of the loaded schedules file has this id.
    UnknownEntry,
    /// `run` on an `overlap=skip` entry whose previous job (named) is still queued or running.
    RunInProgress(String),
    /// `run` found the queue of the entry's function full.
    QueueFull,
    /// `run` of a heartbeat entry (`expect=ping`): its runs happen elsewhere.
    Heartbeat,
    /// A clustered server cannot reach etcd, or etcd did not take the operation (why).
    ClusterUnreachable(String),
}

/// Why a clustered server refuses an operation while etcd cannot be reached.
pub const CLUSTER_UNREACHABLE: &str =
    "etcd cannot be reached: the cluster did not take it (nothing changed); try again";

/// Why a heartbeat entry cannot be run, in each place that says it.
pub const HEARTBEAT_NOT_RUN: &str =
    "this entry expects pings (expect=ping): its runs happen elsewhere, nothing here runs them";

impl ScheduleOpError {
    /// The admin protocol's reply: gearmand's `ERR CODE text+with+pluses`.
    pub fn admin_reply(&self) -> Bytes {
        match self {
            ScheduleOpError::UnknownEntry => {
                Bytes::from_static(b"ERR UNKNOWN_SCHEDULE No+schedule+entry+has+this+id\r\n")
            }
            ScheduleOpError::RunInProgress(h) => format!(
                "ERR RUN_IN_PROGRESS The+previous+run+{}+is+still+queued+or+running+(overlap=skip)\r\n",
                h.replace(' ', "+")
            )
            .into(),
            ScheduleOpError::QueueFull => Bytes::from_static(
                b"ERR QUEUE_FULL The+queue+of+the+entry's+function+is+full\r\n",
            ),
            ScheduleOpError::Heartbeat => {
                format!("ERR NOT_RUNNABLE {}\r\n", HEARTBEAT_NOT_RUN.replace(' ', "+")).into()
            }
            ScheduleOpError::ClusterUnreachable(why) => {
                format!("ERR CLUSTER_UNREACHABLE {}\r\n", why.replace(' ', "+")).into()
            }
        }
    }
}

impl Engine {
    /// Do `op` to the entry `id`. A manual run returns the handles of its jobs (one per
    /// fan-out index); the other operations return none. Each one is logged and journalled.
    /// A clustered server hands it to the cluster instead: its answer comes later.
    pub fn schedule_op(
        &mut self,
        id: &[u8],
        op: ScheduleOp,
        now: u64,
        out: &mut Outbox,
    ) -> Result<Applied, ScheduleOpError> {
        let slot = std::str::from_utf8(id)
            .ok()
            .and_then(|id| self.schedules.by_id.get(id).copied())
            .ok_or(ScheduleOpError::UnknownEntry)?;
        if self.schedules.clustered {
            // The cluster's leader obeys it, whichever server was asked.
            return self.cluster_op(slot, op, now);
        }
        let entry = Rc::clone(&self.schedules.entries[slot].id);
        match op {
            ScheduleOp::Run => return self.run_now(slot, now, out).map(Applied::Done),
            ScheduleOp::Skip => {
                let st = &mut self.schedules.entries[slot];
                st.history.marks.skip_next = true;
                log::info!(
                    "schedule {entry}: its next run{} will be skipped, as asked",
                    st.next_ms
                        .map_or_else(String::new, |t| format!(" (due {})", rfc3339(t)))
                );
            }
            ScheduleOp::Pause => {
                let st = &mut self.schedules.entries[slot];
                if st.history.marks.paused {
                    return Ok(Applied::Done(Vec::new()));
                }
                st.history.marks.paused = true;
                st.next_ms = None;
                if let Some(t) = st.timer.take() {
                    self.timers.cancel(t);
                }
                log::info!("schedule {entry}: paused; it fires nothing until resumed");
            }
            ScheduleOp::Resume => {
                let h = &mut self.schedules.entries[slot].history;
                if !h.marks.paused {
                    return Ok(Applied::Done(Vec::new()));
                }
                h.marks.paused = false;
                // Every run until now is dealt with: none of those missed while paused is
                // made up, now or by a catch-up after a restart.
                h.seen_ms = h.seen_ms.max(Some(now));
                // Runs the pause held (catch-up) may start now.
                self.schedules.pending.may_release();
                self.arm_after(slot, now);
                log::info!(
                    "schedule {entry}: resumed; next run {}",
                    self.schedules.entries[slot]
                        .next_ms
                        .map_or_else(|| "none".to_string(), rfc3339)
                );
            }
        }
        self.journal_history(slot);
        Ok(Applied::Done(Vec::new()))
    }

    /// A run now, outside the entry's timing, with its usual workload (placeholders filled
    /// for now) and its usual uniques, so `overlap=skip` keeps meaning one run at a time.
    pub(super) fn run_now(
        &mut self,
        slot: usize,
        now: u64,
        out: &mut Outbox,
    ) -> Result<Vec<String>, ScheduleOpError> {
        if self.schedules.entries[slot].entry.expect_ping {
            return Err(ScheduleOpError::Heartbeat);
        }
        if let Some(g) = self.group_busy(slot) {
            // The run going is another entry's: the group is named instead of a handle.
            return Err(ScheduleOpError::RunInProgress(format!("of group {g}")));
        }
        let run = self.inject_run(slot, now, now, true, out);
        if run.handles.is_empty() {
            return Err(run
                .busy
                .map_or(ScheduleOpError::QueueFull, ScheduleOpError::RunInProgress));
        }
        self.count_run_in(slot, run.handles.len(), now);
        let st = &self.schedules.entries[slot];
        log::info!(
            "schedule {}: manual run started {} -> {}{}",
            st.id,
            rfc3339(now),
            run.handles.join(" "),
            if run.skipped > 0 {
                format!(
                    " ({} left out: previous still going or queue full)",
                    run.skipped
                )
            } else {
                String::new()
            }
        );
        self.journal_history(slot);
        Ok(run.handles)
    }

    /// `jobs` jobs of the entry started by hand (`run schedule`, `retry failed`): RUNS counts
    /// each job an entry starts (each fan-out job too), so that FAILURES, which counts each job
    /// that fails for good, can never pass it.
    fn count_run_in(&mut self, slot: usize, jobs: usize, now: u64) {
        let h = &mut self.schedules.entries[slot].history;
        h.runs += jobs as u64;
        h.last_run_ms = Some(h.last_run_ms.map_or(now, |l| l.max(now)));
        h.marks.last_manual = true;
    }

    /// As `count_run_in`, for the entry with id `entry` if it is still loaded.
    pub(in crate::engine) fn count_manual_run(&mut self, entry: &str, jobs: usize, now: u64) {
        if let Some(&slot) = self.schedules.by_id.get(entry) {
            self.count_run_in(slot, jobs, now);
            self.journal_history(slot);
        }
    }
}
