//! `/metrics` in the Prometheus text exposition format (version 0.0.4), formatted from
//! numbers passed in: the engine's function and schedule statuses, the reactor's connection
//! and byte counts, and the process's own numbers (read by `crate::footprint`).
//!
//! Per-function gauges carry the names of the gearman exporter (`gearman_jobs`,
//! `gearman_jobs_running`, `gearman_jobs_waiting`, `gearman_workers`, and the original
//! exporter's `gearman_status_total`, `_running`, `_workers`), so dashboards built on it keep
//! working without the exporter in between.
//!
//! - `tests`: every family, its labels and the text format.

use crate::engine::{EngineTotals, FunctionStatus, ScheduleStatus};
use crate::footprint::ProcessStats;

use super::prometheus::{Kind, Value, Writer};
use crate::store::{FSYNC_BUCKETS_US, JournalMetrics};

/// The reactor's numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Open connections now, by protocol.
    pub gearman_connections: u64,
    pub http_connections: u64,
    /// Accepted since start, by protocol.
    pub gearman_accepted: u64,
    pub http_accepted: u64,
    /// Accepted and closed at once because of `--max-connections`.
    pub refused: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    /// HTTP responses by status code, in code order.
    pub http_responses: Vec<(u16, u64)>,
    /// HTTP clients that closed while their foreground job waited.
    pub http_clients_left: u64,
    /// HTTP requests refused with 403 (wrong Host, another site), by reason.
    pub http_refused: Vec<(&'static str, u64)>,
    /// Requests the gate denied: (identity, operation, count).
    pub access_denied: Vec<(String, &'static str, u64)>,
    /// Unsent output against `--max-total-output`.
    pub output: OutputStats,
    /// TLS connections and handshakes (`None` without `--ssl`/`--ssl-listen`).
    pub tls: Option<TlsStats>,
}

/// TLS connections open, and what their handshakes did since start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsStats {
    pub connections: u64,
    pub handshakes: u64,
    /// Failed handshakes by reason (`not_tls`, `no_client_certificate`, `bad_certificate`,
    /// `alert`, `incompatible`, `closed`, `other`).
    pub failures: Vec<(&'static str, u64)>,
    /// Handshakes closed by `--ssl-handshake-timeout`.
    pub timeouts: u64,
}

/// Unsent output of all connections and what its bound did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputStats {
    /// Unsent bytes now, and the bound.
    pub bytes: u64,
    pub max: u64,
    /// Connections not read now because of the bound.
    pub held: u64,
    /// Times a connection was held, and connections closed, since start.
    pub holds: u64,
    pub closes: u64,
}

/// Everything one scrape shows.
pub struct Input<'a> {
    pub version: &'a str,
    pub functions: &'a [FunctionStatus],
    pub schedules: &'a [ScheduleStatus],
    pub totals: EngineTotals,
    pub net: &'a NetStats,
    pub process: Option<&'a ProcessStats>,
    /// None without `--data-dir`: no journal families at all.
    pub journal: Option<&'a JournalMetrics>,
    /// The failed list (None: leave its families out).
    pub failed: Option<&'a crate::engine::FailedList>,
    /// The functions with limits (at most 10,000: the labels are bounded).
    pub limits: &'a [crate::engine::LimitStatus],
    /// The webhook queue (src/engine/hooks.rs).
    pub webhooks: &'a crate::engine::HookStatus,
}

impl Writer {
    /// A per-function family.
    fn per_function(
        &mut self,
        fs: &[(String, &FunctionStatus)],
        name: &str,
        kind: Kind,
        help: &str,
        f: impl Fn(&FunctionStatus) -> u64,
    ) {
        self.family(
            name,
            kind,
            help,
            fs.iter()
                .map(|(n, s)| (vec![("function", n.as_str())], Value::Int(f(s)))),
        );
    }
}

/// The failed list: its size, and its drops by function. Both are labelled by at most
/// `MAX_DROP_LABELS` functions (the largest), the rest summed unlabelled, so a flood of
/// function names cannot grow the page without bound.
fn failed_families(w: &mut Writer, f: &crate::engine::FailedList) {
    use crate::engine::MAX_DROP_LABELS;
    let mut sizes = f.sizes();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rest: usize = sizes.iter().skip(MAX_DROP_LABELS).map(|(_, n)| n).sum();
    sizes.truncate(MAX_DROP_LABELS);
    let named: Vec<(String, u64)> = sizes
        .iter()
        .map(|(n, c)| (String::from_utf8_lossy(n).into_owned(), *c as u64))
        .collect();
    w.single(
        "gearwheel_failed_list_jobs",
        Kind::Gauge,
        "Jobs in the failed list (show failed), all functions.",
        f.len() as u64,
    );
    w.family(
        "gearwheel_failed_jobs",
        Kind::Gauge,
        "Jobs in the failed list, by function (the 64 largest; the rest in \
         gearwheel_failed_jobs_other).",
        named
            .iter()
            .map(|(n, c)| (vec![("function", n.as_str())], Value::Int(*c))),
    );
    w.single(
        "gearwheel_failed_jobs_other",
        Kind::Gauge,
        "Jobs in the failed list of functions not labelled in gearwheel_failed_jobs.",
        rest as u64,
    );
    w.single(
        "gearwheel_failed_bytes",
        Kind::Gauge,
        "Bytes the failed list holds (bounded by --keep-failed-bytes).",
        f.bytes() as u64,
    );
    let (drops, other) = f.drops();
    let drops: Vec<(String, u64)> = drops
        .iter()
        .map(|(n, c)| (String::from_utf8_lossy(n).into_owned(), *c))
        .collect();
    w.family(
        "gearwheel_failed_dropped_total",
        Kind::Counter,
        "Failed jobs dropped from the list past --keep-failed or --keep-failed-bytes, by \
         function (the first 64 functions dropped; the rest in \
         gearwheel_failed_dropped_other_total).",
        drops
            .iter()
            .map(|(n, c)| (vec![("function", n.as_str())], Value::Int(*c))),
    );
    w.single(
        "gearwheel_failed_dropped_other_total",
        Kind::Counter,
        "Failed jobs dropped of functions not labelled in gearwheel_failed_dropped_total.",
        other,
    );
}

/// The functions with limits: the cap, the jobs running and held back now, and how often each
/// reason held the function back.
fn limit_families(w: &mut Writer, limits: &[crate::engine::LimitStatus]) {
    let named: Vec<(String, &crate::engine::LimitStatus)> = limits
        .iter()
        .map(|l| (String::from_utf8_lossy(&l.name).into_owned(), l))
        .collect();
    w.family(
        "gearwheel_function_limit",
        Kind::Gauge,
        "The function's limit: at most this many of its jobs run at once (limit FUNCTION N).",
        named.iter().filter_map(|(n, l)| {
            let cap = l.settings.limit?;
            Some((vec![("function", n.as_str())], Value::Int(cap.into())))
        }),
    );
    w.family(
        "gearwheel_function_limit_running",
        Kind::Gauge,
        "Jobs running now of a function with limits (show limits RUNNING).",
        named
            .iter()
            .map(|(n, l)| (vec![("function", n.as_str())], Value::Int(l.running.into()))),
    );
    w.family(
        "gearwheel_function_limit_held",
        Kind::Gauge,
        "Queued jobs a function's limits hold back now (show limits HELD).",
        named
            .iter()
            .map(|(n, l)| (vec![("function", n.as_str())], Value::Int(l.held.into()))),
    );
    w.family(
        "gearwheel_function_limit_held_total",
        Kind::Counter,
        "Times a function's limits closed it to handouts, by reason (paused, limit, rate).",
        named.iter().flat_map(|(n, l)| {
            ["paused", "limit", "rate"]
                .into_iter()
                .zip(l.holds)
                .map(move |(r, c)| (vec![("function", n.as_str()), ("reason", r)], Value::Int(c)))
        }),
    );
}

/// The whole `/metrics` body.
pub fn render(input: &Input<'_>) -> String {
    use Kind::{Counter, Gauge};
    let mut w = Writer {
        out: String::with_capacity(2048 + input.functions.len() * 1024),
    };
    w.single(
        "gearman_up",
        Gauge,
        "Whether the job server answers (always 1 here).",
        1u64,
    );
    w.family(
        "gearman_version_info",
        Gauge,
        "The server's version, as a label.",
        [(vec![("version", input.version)], Value::Int(1))],
    );
    let fs: Vec<(String, &FunctionStatus)> = input
        .functions
        .iter()
        .map(|f| (String::from_utf8_lossy(&f.name).into_owned(), f))
        .collect();
    w.per_function(
        &fs,
        "gearman_jobs",
        Gauge,
        "Jobs of the function: queued, running and future (the status TOTAL).",
        |f| f.total().into(),
    );
    w.per_function(
        &fs,
        "gearman_jobs_running",
        Gauge,
        "Jobs of the function running on a worker.",
        |f| f.running.into(),
    );
    w.per_function(
        &fs,
        "gearman_jobs_waiting",
        Gauge,
        "Jobs of the function not running: queued and future (TOTAL - RUNNING).",
        |f| (f.total() - f.running).into(),
    );
    w.family(
        "gearman_jobs_queued",
        Gauge,
        "Runnable jobs of the function waiting for a worker, by priority (prioritystatus).",
        fs.iter().flat_map(|(n, f)| {
            ["high", "normal", "low"]
                .into_iter()
                .zip(f.queued)
                .map(move |(p, q)| {
                    (
                        vec![("function", n.as_str()), ("priority", p)],
                        Value::Int(q.into()),
                    )
                })
        }),
    );
    w.per_function(
        &fs,
        "gearman_jobs_future",
        Gauge,
        "Future jobs of the function (SUBMIT_JOB_EPOCH, SUBMIT_JOB_SCHED) not yet due.",
        |f| f.future.into(),
    );
    w.per_function(
        &fs,
        "gearman_workers",
        Gauge,
        "Worker registrations (CAN_DO) of the function.",
        |f| f.workers.into(),
    );
    w.per_function(
        &fs,
        "gearman_status_total",
        Gauge,
        "The status TOTAL (name of the original gearman exporter; same as gearman_jobs).",
        |f| f.total().into(),
    );
    w.per_function(
        &fs,
        "gearman_status_running",
        Gauge,
        "The status RUNNING (original gearman exporter name).",
        |f| f.running.into(),
    );
    w.per_function(
        &fs,
        "gearman_status_workers",
        Gauge,
        "The status AVAILABLE_WORKERS (original gearman exporter name).",
        |f| f.workers.into(),
    );
    w.per_function(
        &fs,
        "gearman_jobs_submitted_total",
        Counter,
        "Jobs created since start (a submit that joins an existing job is not counted; a retry after its backoff is a new job).",
        |f| f.counters.submitted,
    );
    w.per_function(
        &fs,
        "gearman_jobs_completed_total",
        Counter,
        "Jobs ended with WORK_COMPLETE since start.",
        |f| f.counters.completed,
    );
    w.per_function(
        &fs,
        "gearman_jobs_failed_total",
        Counter,
        "Jobs failed for good since start (WORK_FAIL, CAN_DO_TIMEOUT or --job-retries spent, no retry left); each job once.",
        |f| f.counters.failed,
    );
    w.per_function(
        &fs,
        "gearman_jobs_exceptions_total",
        Counter,
        "Jobs ended for good with WORK_EXCEPTION since start (no retry left); each job once.",
        |f| f.counters.exceptions,
    );
    w.per_function(
        &fs,
        "gearman_jobs_retried_total",
        Counter,
        "Attempts run again: given back by a worker that left or dropped the function, or failed with a retry left.",
        |f| f.counters.retried,
    );
    let t = &input.totals;
    server_job_families(&mut w, &t.counters);
    w.single(
        "gearman_worker_connections",
        Gauge,
        "Connections that registered at least one function.",
        t.workers as u64,
    );
    w.single(
        "gearman_draining",
        Gauge,
        "1 during a graceful shutdown.",
        u64::from(t.draining),
    );
    w.family(
        "gearwheel_grab_waits_total",
        Counter,
        "Worker GRABs held after a job end (--grab-wait), by how they ended: a job came \
         (assigned) or the wait ran out (no_job).",
        [
            (vec![("outcome", "assigned")], t.grab_waits_assigned.into()),
            (vec![("outcome", "no_job")], t.grab_waits_expired.into()),
        ],
    );
    if let Some(f) = input.failed {
        failed_families(&mut w, f);
    }
    limit_families(&mut w, input.limits);
    w.single(
        "gearwheel_functions_refused_total",
        Counter,
        "CAN_DOs refused past --max-functions-per-worker.",
        t.functions_refused,
    );
    w.single(
        "gearwheel_functions_idle",
        Gauge,
        "Functions kept with no job, worker or operator's setting (at most --max-idle-functions).",
        t.functions_idle as u64,
    );
    w.single(
        "gearwheel_functions_forgotten_total",
        Counter,
        "Idle functions forgotten, least recently used first, past --max-idle-functions.",
        t.functions_forgotten,
    );
    w.single(
        "gearwheel_wakeups_overdue_total",
        Counter,
        "Woken workers that had not asked for a job --worker-wakeup-next ms after their NOOP \
         while the job waited; the next sleeping worker was woken for it.",
        t.wakeups_overdue,
    );
    w.single(
        "gearwheel_outputs_kept",
        Gauge,
        "Ended jobs whose output and result are kept (show output, /jobs/HANDLE).",
        t.outputs_kept as u64,
    );
    w.single(
        "gearwheel_outputs_kept_bytes",
        Gauge,
        "Bytes the kept outputs count against --keep-output-total.",
        t.outputs_kept_bytes as u64,
    );
    w.single(
        "gearwheel_outputs_dropped_total",
        Counter,
        "Kept outputs dropped past --keep-output-total before --keep-results was up.",
        t.outputs_dropped,
    );
    let h = input.webhooks;
    w.family(
        "gearwheel_webhook_deliveries_total",
        Counter,
        "Webhook alerts (on_failure=https://...) by outcome: delivered, retried (an attempt failed and waits for its backoff), given_up (past --webhook-attempts or --webhook-max-age), dropped (the queue was at --max-webhook-queue).",
        [
            ("delivered", h.delivered),
            ("retried", h.retried),
            ("given_up", h.given_up),
            ("dropped", h.dropped),
        ]
        .map(|(o, n)| (vec![("outcome", o)], n.into())),
    );
    w.single(
        "gearwheel_webhook_queue",
        Gauge,
        "Webhook alerts waiting for delivery (journalled with --data-dir).",
        h.queued as u64,
    );
    let n = input.net;
    w.family(
        "gearman_connections",
        Gauge,
        "Open connections, by protocol.",
        [
            (vec![("protocol", "gearman")], n.gearman_connections.into()),
            (vec![("protocol", "http")], n.http_connections.into()),
        ],
    );
    w.family(
        "gearman_connections_accepted_total",
        Counter,
        "Connections accepted since start, by protocol.",
        [
            (vec![("protocol", "gearman")], n.gearman_accepted.into()),
            (vec![("protocol", "http")], n.http_accepted.into()),
        ],
    );
    w.single(
        "gearman_connections_refused_total",
        Counter,
        "Connections closed at once because --max-connections was reached.",
        n.refused,
    );
    w.single(
        "gearman_received_bytes_total",
        Counter,
        "Bytes read from all connections since start.",
        n.bytes_received,
    );
    w.single(
        "gearman_sent_bytes_total",
        Counter,
        "Bytes written to all connections since start.",
        n.bytes_sent,
    );
    let codes: Vec<(String, u64)> = n
        .http_responses
        .iter()
        .map(|(c, v)| (c.to_string(), *v))
        .collect();
    w.family(
        "gearman_http_responses_total",
        Counter,
        "HTTP responses since start, by status code.",
        codes
            .iter()
            .map(|(c, v)| (vec![("code", c.as_str())], Value::Int(*v))),
    );
    w.single(
        "gearman_http_clients_left_total",
        Counter,
        "HTTP clients that closed while their foreground job waited (the job was given up).",
        n.http_clients_left,
    );
    let o = &n.output;
    w.single(
        "gearman_output_buffered_bytes",
        Gauge,
        "Reply bytes waiting to be written, all connections together.",
        o.bytes,
    );
    w.single(
        "gearman_output_buffered_max_bytes",
        Gauge,
        "--max-total-output: past it, connections holding over 64 KiB of it are not read.",
        o.max,
    );
    w.single(
        "gearman_output_held_connections",
        Gauge,
        "Connections not read now until their peer reads (--max-total-output).",
        o.held,
    );
    w.single(
        "gearman_output_holds_total",
        Counter,
        "Times a connection stopped being read because of --max-total-output.",
        o.holds,
    );
    w.single(
        "gearman_output_closed_total",
        Counter,
        "Connections closed because all unsent output passed twice --max-total-output.",
        o.closes,
    );
    w.family(
        "gearman_http_refused_total",
        Counter,
        "HTTP requests refused with 403: a Host the server does not answer to (DNS rebinding), or a browser request from another site or origin.",
        n.http_refused
            .iter()
            .map(|(r, v)| (vec![("reason", *r)], Value::Int(*v))),
    );
    w.family(
        "gearman_access_denied_total",
        Counter,
        "Requests the access gate denied, by identity (past --acl-metric-identities: other) and operation (protected_mode and unknown_token for those refusals).",
        n.access_denied
            .iter()
            .map(|(i, o, v)| (vec![("identity", i.as_str()), ("operation", *o)], Value::Int(*v))),
    );
    if let Some(t) = &n.tls {
        w.single(
            "gearman_tls_connections",
            Gauge,
            "Open TLS connections (Gearman and HTTPS).",
            t.connections,
        );
        w.single(
            "gearman_tls_handshakes_total",
            Counter,
            "TLS handshakes completed since start.",
            t.handshakes,
        );
        w.family(
            "gearman_tls_handshake_failures_total",
            Counter,
            "TLS handshakes that failed, by reason: not_tls (bytes that are not TLS), no_client_certificate and bad_certificate (mutual TLS), alert (the client refused ours), incompatible, closed, other.",
            t.failures
                .iter()
                .map(|(r, v)| (vec![("reason", *r)], Value::Int(*v))),
        );
        w.single(
            "gearman_tls_handshake_timeouts_total",
            Counter,
            "TLS connections closed because their handshake did not finish within --ssl-handshake-timeout.",
            t.timeouts,
        );
    }
    let sched = input.schedules;
    let per_entry = |f: fn(&ScheduleStatus) -> Option<Value>| {
        sched
            .iter()
            .filter_map(move |s| f(s).map(|v| (vec![("entry", s.id.as_str())], v)))
    };
    w.family(
        "gearman_schedule_runs_total",
        Counter,
        "Jobs the schedule entry started since start (or since the journal remembers): each fan-out job, run schedule and retry failed of its jobs counts one.",
        per_entry(|s| Some(s.runs.into())),
    );
    w.family(
        "gearman_schedule_failures_total",
        Counter,
        "Jobs of the schedule entry that failed for good, threw, timed out or were cancelled; never more than its runs.",
        per_entry(|s| Some(s.failures.into())),
    );
    w.family(
        "gearman_schedule_skips_total",
        Counter,
        "Runs of the schedule entry skipped (overlap, a full queue, a missed time).",
        per_entry(|s| Some(s.skips.into())),
    );
    w.family(
        "gearman_schedule_too_long_total",
        Counter,
        "Runs of the schedule entry still going at its max_duration= (too_long alerts), since start.",
        per_entry(|s| Some(s.too_long.into())),
    );
    w.family(
        "gearman_schedule_too_short_total",
        Counter,
        "Runs of the schedule entry that succeeded sooner than its min_duration= (too_short alerts), since start.",
        per_entry(|s| Some(s.too_short.into())),
    );
    w.family(
        "gearman_schedule_last_run_timestamp_seconds",
        Gauge,
        "Scheduled time of the entry's last run, in Unix seconds.",
        per_entry(|s| s.last_run_ms.map(|ms| Value::Float(ms as f64 / 1000.0))),
    );
    w.family(
        "gearman_schedule_next_run_timestamp_seconds",
        Gauge,
        "Scheduled time of the entry's next run, in Unix seconds.",
        per_entry(|s| s.next_ms.map(|ms| Value::Float(ms as f64 / 1000.0))),
    );
    if let Some(j) = input.journal {
        journal_families(&mut w, j);
    }
    if let Some(p) = input.process {
        w.single(
            "process_resident_memory_bytes",
            Gauge,
            "Resident memory size in bytes.",
            p.resident_bytes,
        );
        w.single(
            "process_virtual_memory_bytes",
            Gauge,
            "Virtual memory size in bytes.",
            p.virtual_bytes,
        );
        w.single(
            "process_open_fds",
            Gauge,
            "Open file descriptors.",
            p.open_fds,
        );
        if let Some(m) = p.max_fds {
            w.single(
                "process_max_fds",
                Gauge,
                "Limit on open file descriptors.",
                m,
            );
        }
        w.single(
            "process_cpu_seconds_total",
            Counter,
            "User and system CPU time spent, in seconds.",
            p.cpu_seconds,
        );
        w.single(
            "process_start_time_seconds",
            Gauge,
            "Start time of the process since the Unix epoch, in seconds.",
            p.start_time_seconds,
        );
    }
    w.out
}

/// The per-function job counters summed over the whole server, without a label: they keep
/// counting what forgotten functions did, so a sum over the labelled series may be less.
fn server_job_families(w: &mut Writer, c: &crate::engine::JobCounters) {
    let families: [(&str, &str, u64); 5] = [
        (
            "gearman_server_jobs_submitted_total",
            "Jobs created since start, all functions (as gearman_jobs_submitted_total).",
            c.submitted,
        ),
        (
            "gearman_server_jobs_completed_total",
            "Jobs ended with WORK_COMPLETE since start, all functions.",
            c.completed,
        ),
        (
            "gearman_server_jobs_failed_total",
            "Jobs failed for good since start, all functions (as gearman_jobs_failed_total).",
            c.failed,
        ),
        (
            "gearman_server_jobs_exceptions_total",
            "Jobs ended with WORK_EXCEPTION for good since start, all functions.",
            c.exceptions,
        ),
        (
            "gearman_server_jobs_retried_total",
            "Attempts of jobs run again since start, all functions (as gearman_jobs_retried_total).",
            c.retried,
        ),
    ];
    for (name, help, v) in families {
        w.single(name, Kind::Counter, help, v);
    }
}

fn journal_families(w: &mut Writer, j: &JournalMetrics) {
    use Kind::{Counter, Gauge};
    w.single(
        "gearwheel_journal_bytes",
        Gauge,
        "Bytes in the journal's files (--data-dir), with what is buffered and not yet written.",
        j.total_bytes,
    );
    w.single(
        "gearwheel_journal_live_bytes",
        Gauge,
        "Bytes of the journal's live records (what a compaction keeps).",
        j.live_bytes,
    );
    w.single(
        "gearwheel_journal_files",
        Gauge,
        "Segment and snapshot files of the journal.",
        j.files,
    );
    w.single(
        "gearwheel_journal_live_jobs",
        Gauge,
        "Jobs kept in the journal (background and future jobs not yet finished).",
        j.live_jobs,
    );
    w.single(
        "gearwheel_journal_commits_total",
        Counter,
        "Group commits of the journal (one write, and under --fsync always one fsync, per loop turn with changes).",
        j.commits,
    );
    w.single(
        "gearwheel_journal_write_errors_total",
        Counter,
        "Journal writes and fsyncs that failed (disk full, I/O error); new jobs are refused meanwhile.",
        j.write_errors,
    );
    let bounds: Vec<f64> = FSYNC_BUCKETS_US.iter().map(|&us| us as f64 / 1e6).collect();
    w.histogram(
        "gearwheel_journal_fsync_seconds",
        "Time the journal's commits spent in fsync.",
        &bounds,
        &j.fsync.buckets,
        j.fsync.sum_us as f64 / 1e6,
        j.fsync.count,
    );
}

#[cfg(test)]
mod tests;
