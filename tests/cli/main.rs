//! One test binary: the commands as processes: serve flags, work, submit, admin, import-crontab,
//! schedules push. Each file in tests/cli/ was a test binary of its own; one binary links
//! tests/support once instead of once per file. Run one file's tests with `cargo test --test cli
//! FILE::` (e.g. `cargo test --test cli admin::`).

#[path = "../support/mod.rs"]
mod support;

mod admin;
mod check_after;
mod env;
mod help;
mod import_crontab;
mod ping;
mod protocol_cli;
mod schedules_backfill;
mod schedules_push;
mod serve;
mod work;
