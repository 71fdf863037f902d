//! Tests of the /metrics render: every family, its labels and the text format.

use bytes::Bytes;

use super::*;
use crate::engine::{JobCounters, LimitSettings, LimitStatus};
use crate::store::FsyncHistogram;

fn sample_input_render(functions: &[FunctionStatus], schedules: &[ScheduleStatus]) -> String {
    render_with_journal(functions, schedules, None)
}

fn render_with_journal(
    functions: &[FunctionStatus],
    schedules: &[ScheduleStatus],
    journal: Option<&JournalMetrics>,
) -> String {
    let net = NetStats {
        gearman_connections: 3,
        http_connections: 1,
        gearman_accepted: 10,
        http_accepted: 4,
        refused: 0,
        bytes_received: 1234,
        bytes_sent: 5678,
        http_responses: vec![(200, 3), (404, 1)],
        http_clients_left: 0,
        http_refused: vec![("host", 2), ("cross_site", 0), ("origin", 1)],
        access_denied: vec![("addr:10.0.0.5".into(), "submit", 4)],
        output: OutputStats {
            bytes: 70_000,
            max: 1 << 20,
            held: 1,
            holds: 3,
            closes: 0,
        },
        tls: Some(TlsStats {
            connections: 2,
            handshakes: 5,
            failures: vec![("no_client_certificate", 1), ("not_tls", 3)],
            timeouts: 1,
        }),
    };
    let process = ProcessStats {
        resident_bytes: 4096,
        virtual_bytes: 8192,
        open_fds: 9,
        max_fds: Some(1024),
        cpu_seconds: 0.25,
        start_time_seconds: 1700000000.5,
    };
    render(&Input {
        version: "1.2.3",
        functions,
        schedules,
        totals: EngineTotals {
            workers: 1,
            grab_waits_assigned: 40,
            grab_waits_expired: 2,
            ..EngineTotals::default()
        },
        net: &net,
        process: Some(&process),
        journal,
        failed: None,
        limits: &[LimitStatus {
            name: Bytes::from_static(b"resize"),
            settings: LimitSettings {
                limit: Some(4),
                paused: true,
                ..LimitSettings::default()
            },
            running: 4,
            window: 0,
            held: 7,
            holds: [1, 5, 0],
        }],
        webhooks: &crate::engine::HookStatus {
            queued: 2,
            delivered: 5,
            retried: 3,
            given_up: 1,
            ..Default::default()
        },
    })
}

#[test]
fn webhook_families() {
    let page = sample_input_render(&[], &[]);
    for line in [
        "# TYPE gearwheel_webhook_deliveries_total counter",
        "gearwheel_webhook_deliveries_total{outcome=\"delivered\"} 5",
        "gearwheel_webhook_deliveries_total{outcome=\"retried\"} 3",
        "gearwheel_webhook_deliveries_total{outcome=\"given_up\"} 1",
        "gearwheel_webhook_deliveries_total{outcome=\"dropped\"} 0",
        "# TYPE gearwheel_webhook_queue gauge",
        "gearwheel_webhook_queue 2",
    ] {
        assert!(page.lines().any(|l| l == line), "{line} in\n{page}");
    }
}

fn func(name: &[u8]) -> FunctionStatus {
    FunctionStatus {
        name: Bytes::copy_from_slice(name),
        queued: [1, 2, 3],
        running: 4,
        future: 5,
        workers: 2,
        counters: JobCounters {
            submitted: 20,
            completed: 10,
            failed: 2,
            exceptions: 1,
            retried: 3,
        },
        paused: false,
    }
}

#[test]
fn families_samples_and_labels() {
    let s = sample_input_render(&[func(b"resize")], &[]);
    for line in [
        "# HELP gearman_up Whether the job server answers (always 1 here).",
        "# TYPE gearman_up gauge",
        "gearman_up 1",
        "gearman_version_info{version=\"1.2.3\"} 1",
        "# TYPE gearman_jobs gauge",
        "gearman_jobs{function=\"resize\"} 15",
        "gearman_jobs_running{function=\"resize\"} 4",
        "gearman_jobs_waiting{function=\"resize\"} 11",
        "gearman_jobs_queued{function=\"resize\",priority=\"high\"} 1",
        "gearman_jobs_queued{function=\"resize\",priority=\"normal\"} 2",
        "gearman_jobs_queued{function=\"resize\",priority=\"low\"} 3",
        "gearman_jobs_future{function=\"resize\"} 5",
        "gearman_workers{function=\"resize\"} 2",
        "gearman_status_total{function=\"resize\"} 15",
        "# TYPE gearman_jobs_submitted_total counter",
        "gearman_jobs_submitted_total{function=\"resize\"} 20",
        "gearman_jobs_completed_total{function=\"resize\"} 10",
        "gearman_jobs_failed_total{function=\"resize\"} 2",
        "gearman_jobs_exceptions_total{function=\"resize\"} 1",
        "gearman_jobs_retried_total{function=\"resize\"} 3",
        "# TYPE gearwheel_function_limit gauge",
        "gearwheel_function_limit{function=\"resize\"} 4",
        "gearwheel_function_limit_running{function=\"resize\"} 4",
        "gearwheel_function_limit_held{function=\"resize\"} 7",
        "# TYPE gearwheel_function_limit_held_total counter",
        "gearwheel_function_limit_held_total{function=\"resize\",reason=\"paused\"} 1",
        "gearwheel_function_limit_held_total{function=\"resize\",reason=\"limit\"} 5",
        "gearwheel_function_limit_held_total{function=\"resize\",reason=\"rate\"} 0",
        "gearman_connections{protocol=\"gearman\"} 3",
        "gearman_connections{protocol=\"http\"} 1",
        "gearman_tls_connections 2",
        "gearman_tls_handshakes_total 5",
        "gearman_tls_handshake_failures_total{reason=\"no_client_certificate\"} 1",
        "gearman_tls_handshake_failures_total{reason=\"not_tls\"} 3",
        "gearman_tls_handshake_timeouts_total 1",
        "gearman_connections_accepted_total{protocol=\"http\"} 4",
        "gearman_received_bytes_total 1234",
        "gearman_sent_bytes_total 5678",
        "gearman_http_responses_total{code=\"404\"} 1",
        "# TYPE gearman_access_denied_total counter",
        "gearman_access_denied_total{identity=\"addr:10.0.0.5\",operation=\"submit\"} 4",
        "gearman_worker_connections 1",
        "# TYPE gearwheel_grab_waits_total counter",
        "gearwheel_grab_waits_total{outcome=\"assigned\"} 40",
        "gearwheel_grab_waits_total{outcome=\"no_job\"} 2",
        "process_resident_memory_bytes 4096",
        "process_max_fds 1024",
        "process_cpu_seconds_total 0.25",
        "process_start_time_seconds 1700000000.5",
    ] {
        assert!(s.lines().any(|l| l == line), "missing {line:?} in\n{s}");
    }
    assert!(s.ends_with('\n'));
}

#[test]
fn one_help_and_type_per_family_and_none_when_empty() {
    let s = sample_input_render(&[func(b"a"), func(b"b")], &[]);
    let mut seen = std::collections::HashSet::new();
    for l in s.lines().filter(|l| l.starts_with("# TYPE ")) {
        assert!(seen.insert(l.to_string()), "twice: {l}");
    }
    // No functions, no schedules: no empty family headers.
    let s = sample_input_render(&[], &[]);
    assert!(!s.contains("gearman_jobs_running"));
    assert!(!s.contains("gearman_schedule_runs_total"));
    // Every sample line is `name{labels} value` or `name value`.
    for l in s.lines().filter(|l| !l.starts_with('#')) {
        let (_, v) = l.rsplit_once(' ').unwrap();
        assert!(v.parse::<f64>().is_ok(), "{l}");
    }
}

#[test]
fn journal_families_only_with_a_journal() {
    let s = sample_input_render(&[], &[]);
    assert!(!s.contains("gearwheel_journal"), "{s}");
    let mut fsync = FsyncHistogram::default();
    // On a bound counts in that bucket; above the last bound in +Inf.
    for us in [50, 100, 101, 3_000, 2_000_000] {
        fsync.observe(us);
    }
    assert_eq!(fsync.buckets, [2, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    assert_eq!((fsync.count, fsync.max_us), (5, 2_000_000));
    let j = JournalMetrics {
        files: 2,
        live_jobs: 7,
        live_bytes: 900,
        total_bytes: 4096,
        commits: 11,
        write_errors: 3,
        fsync,
    };
    let s = render_with_journal(&[], &[], Some(&j));
    for line in [
        "gearwheel_journal_bytes 4096",
        "gearwheel_journal_live_bytes 900",
        "gearwheel_journal_files 2",
        "gearwheel_journal_live_jobs 7",
        "# TYPE gearwheel_journal_commits_total counter",
        "gearwheel_journal_commits_total 11",
        "gearwheel_journal_write_errors_total 3",
        "# TYPE gearwheel_journal_fsync_seconds histogram",
        "gearwheel_journal_fsync_seconds_bucket{le=\"0.0001\"} 2",
        "gearwheel_journal_fsync_seconds_bucket{le=\"0.00025\"} 3",
        "gearwheel_journal_fsync_seconds_bucket{le=\"0.0025\"} 3",
        "gearwheel_journal_fsync_seconds_bucket{le=\"0.005\"} 4",
        "gearwheel_journal_fsync_seconds_bucket{le=\"1\"} 4",
        "gearwheel_journal_fsync_seconds_bucket{le=\"+Inf\"} 5",
        "gearwheel_journal_fsync_seconds_sum 2.003251",
        "gearwheel_journal_fsync_seconds_count 5",
    ] {
        assert!(s.lines().any(|l| l == line), "missing {line:?} in\n{s}");
    }
}

#[test]
fn label_values_are_escaped() {
    let s = sample_input_render(&[func(b"a\"b\\c\nd")], &[]);
    assert!(
        s.contains("gearman_jobs{function=\"a\\\"b\\\\c\\nd\"} 15"),
        "{s}"
    );
}

#[test]
fn schedule_entries() {
    let sc = ScheduleStatus {
        id: "nightly".into(),
        spec: "0 3 * * *".into(),
        says: "every day at 03:00 UTC".into(),
        function: "backup".into(),
        next_ms: Some(1_700_000_060_000),
        last_run_ms: None,
        last_outcome: None,
        last_duration_ms: None,
        runs: 2,
        failures: 1,
        skips: 3,
        too_long: 0,
        too_short: 0,
        paused: false,
        skip_next: false,
        last_run_manual: false,
        last_error: None,
        recent_runs: Vec::new(),
        recent_after: Vec::new(),
        after_pending: None,
        recent_outputs: Vec::new(),
        retries_pending: 0,
        runs_waiting: 0,
    };
    let s = sample_input_render(&[], &[sc]);
    assert!(s.contains("gearman_schedule_runs_total{entry=\"nightly\"} 2\n"));
    assert!(s.contains("gearman_schedule_failures_total{entry=\"nightly\"} 1\n"));
    assert!(s.contains("gearman_schedule_skips_total{entry=\"nightly\"} 3\n"));
    assert!(
        s.contains("gearman_schedule_next_run_timestamp_seconds{entry=\"nightly\"} 1700000060\n")
    );
    assert!(!s.contains("gearman_schedule_last_run_timestamp_seconds"));
}
