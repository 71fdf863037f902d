//! One test binary: raw Gearman bytes, admin lines and HTTP against a real server on port 0; the
//! journal across restarts and crashes; TLS. Each file in tests/protocol/ was a test binary of its
//! own; one binary links tests/support once instead of once per file. Run one file's tests with
//! `cargo test --test protocol FILE::` (e.g. `cargo test --test protocol http_client_leaves::`).

#[path = "../support/mod.rs"]
mod support;

mod access;
mod admin;
mod admin_order;
mod audit;
mod backfill;
mod backlog;
mod console_lists;
mod descriptors;
mod door;
mod errors;
mod failed;
mod footprint;
mod functions;
mod future;
mod garbage;
mod grab_wait;
mod http_client_leaves;
mod http_console;
mod http_failed;
mod http_guard;
mod http_journal_metrics;
mod http_limits;
mod http_metrics;
mod http_ping;
mod http_protocol;
mod http_schedule_alerts;
mod http_schedule_ops;
mod http_submit;
mod jobs;
mod jobs_coalescing;
mod journal;
mod journal_bounded;
mod journal_crash;
mod journal_disk_full;
mod journal_kill_loop;
mod journal_restart;
mod kept_output;
mod leases;
mod limits;
mod log;
mod memory;
mod names;
mod output_bound;
mod process;
mod reread;
mod retries;
mod schedule_after;
mod schedule_clock;
mod schedule_durations;
mod schedule_ops;
mod schedules;
mod slots;
mod smoke;
mod stress;
mod support_server;
mod tls_https;
mod tls_identity;
mod tls_server;
mod unique_status;
mod webhooks;
mod workers;
