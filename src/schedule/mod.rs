//! Time-pattern logic: the SUBMIT_JOB_SCHED fields and time zones (the schedules file joins
//! them here). Pure: times in, times out; nothing here reads the clock.
//!
//! - `file`: the schedules file's parser; `check`: `gearwheel check` on a file.
//! - `cron`: the adapter giving the `cron` crate crontab's meaning; `words`: a timing in words.
//! - `sched`: SUBMIT_JOB_SCHED's five fields; `zone`: time zones.
//! - `after`: `@after` entries' parents and options, and the checks of their graph.
//! - `duration`: `30s`, `5m`, `1h30m`; `backoff`: retry policies and their delays.
//! - `span`: the FROM and TO of a backfill.
//! - `webhook`: alert targets that are URLs, checked and redacted; `alert_format=`.

pub mod after;
pub mod backoff;
pub mod check;
pub mod cron;
pub mod duration;
pub mod file;
pub mod sched;
pub mod span;
pub mod webhook;
pub mod words;
pub mod zone;

pub use sched::SchedSpec;
pub use zone::Zone;
