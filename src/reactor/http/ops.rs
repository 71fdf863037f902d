//! The engine side of the HTTP actions the API and the console share: a function's limits
//! changed, a failed job retried or dropped, a schedule entry operated or backfilled
//! (answered at once, or when the cluster answers, in the API's shape or the console's).
//! They borrow only the engine and its outbox, so that http/mod.rs and the console's part
//! (console.rs) both call them.

use bytes::Bytes;

use super::conn::{OpWait, Waited};
use crate::engine::{
    BackfillError, Backfilled, Engine, FailedSelector, LimitChange, Outbox, ScheduleOpError,
};
use crate::http::endpoint::FailedOp;
use crate::http::response::Reply;
use crate::http::{console, failed_ops, json, limit_ops, schedule_ops};
use crate::proto::admin::ScheduleOp;

/// An action's answer: now, or when the cluster answers the ask (its ticket, what it asked
/// and the entry's id).
pub(in crate::reactor) enum Acted {
    Now(Reply),
    Asked(u64, Waited, Bytes),
}

/// `POST /schedules/ID/OP`'s answer: the operation's result, with the entry as this server
/// shows it now.
pub(super) fn schedule(
    engine: &Engine,
    op: ScheduleOp,
    id: &[u8],
    result: &Result<Vec<String>, ScheduleOpError>,
) -> Reply {
    let entry = engine
        .schedule_statuses()
        .into_iter()
        .find(|s| s.id.as_bytes() == id);
    schedule_ops::reply(op, result, entry.as_ref()).uncached()
}

/// A backfill of entry `id`: its answer now (the times, with the entry as this server shows
/// it), or, asked of the cluster, when etcd has answered (`answer`).
pub(super) fn backfilled(
    engine: &Engine,
    id: &[u8],
    done: Result<Backfilled, BackfillError>,
) -> Acted {
    match done {
        Ok(done @ Backfilled { asked: Some(t), .. }) => {
            Acted::Asked(t, Waited::Backfill(done), Bytes::copy_from_slice(id))
        }
        done => Acted::Now(backfill_reply(engine, id, &done)),
    }
}

fn backfill_reply(engine: &Engine, id: &[u8], done: &Result<Backfilled, BackfillError>) -> Reply {
    let entry = engine
        .schedule_statuses()
        .into_iter()
        .find(|s| s.id.as_bytes() == id);
    schedule_ops::backfill_reply(done, entry.as_ref())
}

/// The answer of a request held for the cluster's answer to its ask (`result`), in the shape
/// of its asker (the API or the console) and its ask (an operation or a backfill).
pub(super) fn answer(engine: &Engine, w: &OpWait, result: Result<(), String>) -> Reply {
    match &w.what {
        Waited::Op(op) => {
            let done = answered(result);
            match w.console {
                true => schedule_answer(&w.id, &done),
                false => schedule(engine, *op, &w.id, &done),
            }
        }
        Waited::Backfill(done) => {
            let done = result
                .map(|()| done.clone())
                .map_err(BackfillError::ClusterUnreachable);
            let r = backfill_reply(engine, &w.id, &done);
            match w.console {
                true => console::guarded(r),
                false => r.uncached(),
            }
        }
    }
}

/// The cluster's answer to an ask as an operation's result: taken (a run's jobs are queued
/// on the leader, so no handles here), or why not.
fn answered(result: Result<(), String>) -> Result<Vec<String>, ScheduleOpError> {
    result
        .map(|()| Vec::new())
        .map_err(ScheduleOpError::ClusterUnreachable)
}

/// The console's answer to an operation on entry `id`: the run's jobs, or why not.
pub(super) fn schedule_answer(id: &[u8], result: &Result<Vec<String>, ScheduleOpError>) -> Reply {
    console::guarded(schedule_reply(id, result))
}

fn schedule_reply(id: &[u8], result: &Result<Vec<String>, ScheduleOpError>) -> Reply {
    match result {
        Ok(handles) => {
            let mut body = String::new();
            let mut o = json::Obj::new(&mut body);
            o.str("schedule", &String::from_utf8_lossy(id));
            json::array(o.key("jobs"), handles, |out, h| json::string(out, h));
            o.end();
            body.push('\n');
            Reply::json(200, body)
        }
        Err(ScheduleOpError::UnknownEntry) => Reply::text(404, "no schedule entry has this id"),
        Err(ScheduleOpError::RunInProgress(h)) => Reply::text(
            409,
            &format!("the previous run {h} is still queued or running (overlap=skip)"),
        ),
        Err(ScheduleOpError::QueueFull) => {
            Reply::text(503, "the queue of the entry's function is full")
        }
        Err(ScheduleOpError::Heartbeat) => Reply::text(409, crate::engine::HEARTBEAT_NOT_RUN),
        Err(ScheduleOpError::ClusterUnreachable(why)) => Reply::text(503, why),
    }
}

/// `PUT /limits/FUNCTION`, `DELETE /limits/FUNCTION`: each change in turn (the first
/// refused stops the rest), answered with the function's limits now.
pub(super) fn limits(
    engine: &mut Engine,
    outbox: &mut Outbox,
    func: &[u8],
    changes: &[LimitChange],
    now: u64,
) -> Reply {
    for &change in changes {
        if let Err(e) = engine.change_limit(func, change, now, outbox) {
            return limit_ops::reply(Err(e));
        }
    }
    let now_status = engine
        .limit_statuses(now)
        .into_iter()
        .find(|s| s.name == func);
    limit_ops::reply(Ok(now_status))
}

/// `POST /failed/HANDLE/retry`, `DELETE /failed/HANDLE`.
pub(super) fn failed_op(
    engine: &mut Engine,
    outbox: &mut Outbox,
    op: FailedOp,
    handle: &[u8],
    now: u64,
) -> Reply {
    let listed = engine
        .failed_list()
        .iter()
        .any(|j| j.handle.as_ref() == handle);
    let sel = FailedSelector::Handle(handle);
    let done = match op {
        _ if !listed => Err(false),
        FailedOp::Retry => {
            let new = engine.retry_failed(sel, now, outbox);
            // Nothing queued and still listed: its queue is full.
            new.into_iter().next().map(Some).ok_or(true)
        }
        FailedOp::Drop => {
            engine.drop_failed(sel);
            Ok(None)
        }
    };
    failed_ops::reply(op, handle, done)
}
