//! The bodies of `/status`, `/workers`, `/jobs/HANDLE`, `/schedules` and `/audit`, formatted from the
//! engine's query structs with the crate's small JSON writer (`crate::json`).

use crate::engine::{
    AuditTrail, FunctionStatus, HookStatus, JobPhase, JobStatus, KeptJob, ScheduleStatus,
    WebhookRow, WorkerStatus,
};
pub use crate::json::{Obj, array, bytes, string, time};
use crate::proto::request::Priority;

pub fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::High => "high",
        Priority::Normal => "normal",
        Priority::Low => "low",
    }
}

fn function(out: &mut String, f: &FunctionStatus) {
    let mut o = Obj::new(out);
    o.bytes("name", &f.name)
        .num("total", f.total())
        .num("queued", f.queued_total())
        .num("running", f.running)
        .num("future", f.future)
        .num("workers", f.workers);
    {
        let p = o.key("priority");
        let mut po = Obj::new(p);
        po.num("high", f.queued[0])
            .num("normal", f.queued[1])
            .num("low", f.queued[2]);
        po.end();
    }
    {
        let c = &f.counters;
        let p = o.key("counters");
        let mut co = Obj::new(p);
        co.num("submitted", c.submitted)
            .num("completed", c.completed)
            .num("failed", c.failed)
            .num("exceptions", c.exceptions)
            .num("retried", c.retried);
        co.end();
    }
    o.bool("paused", f.paused);
    o.end();
}

/// `/status`: every function with its queued, running, future and worker counts.
pub fn status(functions: &[FunctionStatus], server: &[(&str, u64)]) -> String {
    let mut out = String::with_capacity(64 + functions.len() * 192);
    let mut o = Obj::new(&mut out);
    for (k, v) in server {
        o.num(k, v);
    }
    array(o.key("functions"), functions, function);
    o.end();
    out.push('\n');
    out
}

/// `/workers`: connections that registered functions.
///
/// `running` lists the handles (as it always has); `jobs` says, per running job, its function,
/// when it was handed over and for how long it has run (`now_ms` is the loop's time).
pub fn workers(list: &[WorkerStatus], now_ms: u64) -> String {
    let mut out = String::with_capacity(32 + list.len() * 96);
    let mut o = Obj::new(&mut out);
    array(o.key("workers"), list, |out, w| {
        let mut o = Obj::new(out);
        o.num("fd", w.fd)
            .str("ip", &w.ip)
            .opt_str("identity", w.identity.as_deref())
            .bytes("client_id", &w.client_id);
        array(o.key("functions"), &w.functions, |out, f| bytes(out, f));
        array(o.key("running"), &w.running, |out, r| bytes(out, &r.handle));
        array(o.key("jobs"), &w.running, |out, r| {
            let mut o = Obj::new(out);
            o.bytes("handle", &r.handle).bytes("function", &r.function);
            time(&mut o, "since", Some(r.since_ms));
            o.num("running_ms", now_ms.saturating_sub(r.since_ms));
            o.end();
        });
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

/// `/jobs/HANDLE`: GET_STATUS, plus where the job is when it is known.
/// `/jobs/HANDLE`; `kept`: the job's kept output and result once it ended (GET_STATUS no
/// longer knows it).
pub fn job(s: &JobStatus, kept: Option<&KeptJob>, after: Option<&str>) -> String {
    let mut out = String::with_capacity(256);
    let mut o = Obj::new(&mut out);
    o.bytes("handle", &s.handle)
        .bool("known", s.known)
        .bool("running", s.running)
        .num("numerator", s.numerator)
        .num("denominator", s.denominator);
    if let Some(d) = &s.detail {
        o.bytes("function", &d.function)
            .bytes("unique", &d.unique)
            .str("state", d.phase.name())
            .str("priority", priority_name(d.priority))
            .bool("background", d.background)
            .num("retries", d.retries)
            .num("clients", d.clients);
        time(&mut o, "submitted", Some(d.added_ms));
        time(&mut o, "due", d.due_ms);
        if d.phase == JobPhase::Running {
            time(&mut o, "started", d.started_ms);
            o.opt_str("worker", d.worker.as_deref())
                .opt_num("output_bytes", d.output_bytes);
        }
    } else if let Some(k) = kept {
        o.bool("kept", true)
            .bytes("function", &k.func)
            .str("state", k.ending.name());
        time(&mut o, "started", Some(k.started_ms));
        time(&mut o, "ended", Some(k.ended_ms));
        o.num("duration_ms", k.ended_ms.saturating_sub(k.started_ms))
            .str("worker", &k.worker)
            .num("attempts", k.attempts);
        match &k.error {
            Some(e) => o.bytes("error", e),
            None => o.null("error"),
        };
        o.opt_str("entry", k.entry.as_deref());
        time(&mut o, "scheduled", k.scheduled_ms);
        o.num("output_bytes", k.output_bytes)
            .bool("output_cut", k.cut());
        match k.result() {
            Some(r) => o.bytes("result", r),
            None => o.null("result"),
        };
    }
    // The parents' runs an `@after` run was made from (as `{after}`), for the run's page.
    if let Some(a) = after {
        o.key("after").push_str(a);
    }
    o.end();
    out.push('\n');
    out
}

/// `/schedules`: `show schedules` with next and last runs and the last outcome.
pub fn schedules(list: &[ScheduleStatus]) -> String {
    let mut out = String::with_capacity(32 + list.len() * 256);
    let mut o = Obj::new(&mut out);
    array(o.key("schedules"), list, schedule);
    o.end();
    out.push('\n');
    out
}

/// One entry of `/schedules` (also the answer to an operation on it).
pub fn schedule(out: &mut String, s: &ScheduleStatus) {
    let mut o = Obj::new(out);
    o.str("id", &s.id)
        .str("spec", &s.spec)
        .str("says", &s.says)
        .str("function", &s.function);
    time(&mut o, "next_run", s.next_ms);
    time(&mut o, "last_run", s.last_run_ms);
    o.opt_str("last_outcome", s.last_outcome.as_deref())
        .opt_num("last_duration_ms", s.last_duration_ms)
        .num("runs", s.runs)
        .num("failures", s.failures)
        .num("skips", s.skips)
        .num("too_long", s.too_long)
        .num("too_short", s.too_short)
        .bool("paused", s.paused)
        .bool("skip_next", s.skip_next)
        .bool("last_run_manual", s.last_run_manual)
        .opt_str("last_error", s.last_error.as_deref())
        .num("retries_pending", s.retries_pending)
        .num("runs_waiting", s.runs_waiting);
    let runs: Vec<_> = s
        .recent_runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let after = s.recent_after.get(i).and_then(|a| a.as_deref());
            (r, s.recent_outputs.get(i).and_then(|o| o.as_ref()), after)
        })
        .collect();
    array(o.key("recent_runs"), &runs, |out, (r, kept, after)| {
        let mut o = Obj::new(out);
        time(&mut o, "scheduled", Some(r.scheduled_ms));
        time(&mut o, "started", r.started_ms);
        o.opt_num("duration_ms", r.duration_ms)
            .str("outcome", r.outcome.name())
            .bool("manual", r.manual)
            .bool("backfill", r.backfill);
        match kept {
            Some((handle, bytes)) => o.bytes("handle", handle).num("output_bytes", bytes),
            None => o.null("handle").null("output_bytes"),
        };
        o.key("after").push_str(after.unwrap_or("null"));
        o.end();
    });
    // Added at the end, as every field since the first: readers of the older order go on.
    o.key("after_pending")
        .push_str(s.after_pending.as_deref().unwrap_or("null"));
    o.end();
}

/// `/audit` (and the console's `/ui/api/audit`): how many actions are kept, and the newest
/// `shown` of them, oldest first.
pub fn audit(trail: &AuditTrail, shown: usize) -> String {
    let actions: Vec<_> = trail.newest(shown).collect();
    let mut out = String::with_capacity(64 + actions.len() * 160);
    let mut o = Obj::new(&mut out);
    o.num("total", trail.len());
    array(o.key("actions"), &actions, |out, a| {
        let mut o = Obj::new(out);
        o.num("seq", a.seq);
        time(&mut o, "time", Some(a.at_ms));
        o.str("identity", &a.identity)
            .str("peer", &a.peer)
            .str("command", &a.command)
            .str("outcome", &a.outcome);
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

/// `/webhooks`: the queue's counts since start, and each webhook target (redacted as
/// `show webhooks` redacts it) with its alerts waiting and its last try.
pub fn webhooks(rows: &[WebhookRow], totals: &HookStatus) -> String {
    let mut out = String::with_capacity(96 + rows.len() * 160);
    let mut o = Obj::new(&mut out);
    o.num("queued", totals.queued)
        .num("delivered", totals.delivered)
        .num("retried", totals.retried)
        .num("given_up", totals.given_up)
        .num("dropped", totals.dropped);
    array(o.key("webhooks"), rows, |out, r| {
        let mut o = Obj::new(out);
        o.str("url", &r.url).num("queued", r.queued);
        time(&mut o, "last_try", r.last.as_ref().map(|l| l.0));
        o.opt_str("outcome", r.last.as_ref().map(|l| l.1.as_str()));
        o.end();
    });
    o.end();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::engine::{JobCounters, JobDetail, JobPhase, RunningJob};

    fn s(v: &str) -> String {
        let mut o = String::new();
        string(&mut o, v);
        o
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(s("plain"), r#""plain""#);
        assert_eq!(s("a\"b\\c/d"), r#""a\"b\\c/d""#);
        assert_eq!(s("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(s("\0\u{1}\u{1f}\u{7f}"), r#""\u0000\u0001\u001f\u007f""#);
        assert_eq!(s("é\u{2028}x"), "\"é\\u2028x\"");
        let mut o = String::new();
        bytes(&mut o, b"a\xffb");
        assert_eq!(o, "\"a\u{fffd}b\"");
    }

    #[test]
    fn escaped_output_is_valid_json_for_every_char() {
        // Every code point below 0x800 survives as something a strict parser accepts: no raw
        // control character is left in the literal.
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        let lit = s(&all);
        assert!(!lit.chars().any(|c| (c as u32) < 0x20));
        assert!(lit.starts_with('"') && lit.ends_with('"'));
    }

    #[test]
    fn status_shape() {
        let f = FunctionStatus {
            name: Bytes::from_static(b"re\"v"),
            queued: [1, 2, 3],
            running: 4,
            future: 5,
            workers: 6,
            counters: JobCounters {
                submitted: 7,
                ..JobCounters::default()
            },
            paused: true,
        };
        assert_eq!(
            status(&[f], &[("jobs", 15)]),
            "{\"jobs\":15,\"functions\":[{\"name\":\"re\\\"v\",\"total\":15,\"queued\":6,\
             \"running\":4,\"future\":5,\"workers\":6,\"priority\":{\"high\":1,\"normal\":2,\
             \"low\":3},\"counters\":{\"submitted\":7,\"completed\":0,\"failed\":0,\
             \"exceptions\":0,\"retried\":0},\"paused\":true}]}\n"
        );
        assert_eq!(status(&[], &[]), "{\"functions\":[]}\n");
    }

    #[test]
    fn workers_job_and_schedules_shapes() {
        let w = WorkerStatus {
            id: crate::engine::ConnId {
                index: 3,
                generation: 1,
            },
            fd: 7,
            ip: "::1".into(),
            client_id: Bytes::from_static(b"-"),
            functions: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
            running: vec![RunningJob {
                handle: Bytes::from_static(b"H:x:1"),
                function: Bytes::from_static(b"a"),
                since_ms: 1_000,
            }],
            identity: Some("cn:worker-1".into()),
        };
        assert_eq!(
            workers(&[w], 4_500),
            "{\"workers\":[{\"fd\":7,\"ip\":\"::1\",\"identity\":\"cn:worker-1\",\"client_id\":\"-\",\"functions\":[\"a\",\"b\"],\"running\":[\"H:x:1\"],\
             \"jobs\":[{\"handle\":\"H:x:1\",\"function\":\"a\",\"since\":\"1970-01-01T00:00:01Z\",\"running_ms\":3500}]}]}\n"
        );
        let unknown = JobStatus {
            handle: Bytes::from_static(b"H:x:9"),
            known: false,
            running: false,
            numerator: 0,
            denominator: 0,
            detail: None,
        };
        assert_eq!(
            job(&unknown, None, None),
            "{\"handle\":\"H:x:9\",\"known\":false,\"running\":false,\"numerator\":0,\"denominator\":0}\n"
        );
        let future = JobStatus {
            known: true,
            detail: Some(JobDetail {
                function: Bytes::from_static(b"f"),
                unique: Bytes::from_static(b"u"),
                phase: JobPhase::Future,
                priority: Priority::Normal,
                background: true,
                retries: 0,
                clients: 0,
                added_ms: 1_000,
                due_ms: Some(4_102_444_800_000),
                started_ms: None,
                worker: None,
                output_bytes: None,
            }),
            ..unknown.clone()
        };
        assert!(job(&future, None, None).ends_with(
            "\"state\":\"future\",\"priority\":\"normal\",\"background\":true,\"retries\":0,\
             \"clients\":0,\"submitted\":\"1970-01-01T00:00:01Z\",\"due\":\"2100-01-01T00:00:00Z\"}\n"
        ));
        let ended = KeptJob {
            handle: Bytes::from_static(b"H:x:9"),
            func: Bytes::from_static(b"backup"),
            ending: crate::engine::Ending::Complete,
            started_ms: 1000,
            ended_ms: 3500,
            worker: "addr:10.0.0.7".into(),
            attempts: 1,
            error: None,
            entry: Some("nightly".into()),
            scheduled_ms: Some(0),
            manual: false,
            backfill: false,
            output: Bytes::from_static(b"copied\n\xff{\"ok\":1}"),
            output_bytes: 70_000,
            result_len: Some(8),
        };
        assert_eq!(
            job(&unknown, Some(&ended), None),
            "{\"handle\":\"H:x:9\",\"known\":false,\"running\":false,\"numerator\":0,\"denominator\":0,\
             \"kept\":true,\"function\":\"backup\",\"state\":\"complete\",\"started\":\"1970-01-01T00:00:01Z\",\
             \"ended\":\"1970-01-01T00:00:03Z\",\"duration_ms\":2500,\"worker\":\"addr:10.0.0.7\",\"attempts\":1,\
             \"error\":null,\"entry\":\"nightly\",\"scheduled\":\"1970-01-01T00:00:00Z\",\"output_bytes\":70000,\
             \"output_cut\":true,\"result\":\"{\\\"ok\\\":1}\"}\n"
        );
        let sc = ScheduleStatus {
            id: "nightly".into(),
            spec: "0 3 * * *".into(),
            says: "every day at 03:00 UTC".into(),
            function: "backup".into(),
            next_ms: Some(0),
            last_run_ms: None,
            last_outcome: Some("exception: \"disk\"".into()),
            last_duration_ms: None,
            runs: 1,
            failures: 1,
            skips: 0,
            too_long: 0,
            too_short: 0,
            paused: true,
            skip_next: false,
            last_run_manual: true,
            last_error: Some("disk".into()),
            retries_pending: 2,
            runs_waiting: 3,
            recent_runs: vec![crate::engine::RunRecord {
                scheduled_ms: 0,
                started_ms: Some(1000),
                duration_ms: Some(20),
                outcome: crate::engine::RunOutcome::Failed,
                manual: true,
                backfill: false,
                handle: None,
            }],
            recent_outputs: vec![Some((Bytes::from_static(b"H:x:4"), 70_000))],
            recent_after: vec![Some("[]".into())],
            after_pending: Some("[]".into()),
        };
        assert_eq!(
            schedules(&[sc]),
            "{\"schedules\":[{\"id\":\"nightly\",\"spec\":\"0 3 * * *\",\"says\":\"every day at 03:00 UTC\",\"function\":\"backup\",\
             \"next_run\":\"1970-01-01T00:00:00Z\",\"last_run\":null,\
             \"last_outcome\":\"exception: \\\"disk\\\"\",\"last_duration_ms\":null,\"runs\":1,\
             \"failures\":1,\"skips\":0,\"too_long\":0,\"too_short\":0,\"paused\":true,\"skip_next\":false,\"last_run_manual\":true,\
             \"last_error\":\"disk\",\"retries_pending\":2,\"runs_waiting\":3,\"recent_runs\":[{\"scheduled\":\"1970-01-01T00:00:00Z\",\
             \"started\":\"1970-01-01T00:00:01Z\",\"duration_ms\":20,\"outcome\":\"failed\",\
             \"manual\":true,\"backfill\":false,\"handle\":\"H:x:4\",\"output_bytes\":70000,\"after\":[]}],\"after_pending\":[]}]}\n"
        );
    }
}
