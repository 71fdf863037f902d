//! Time-pattern logic: the SUBMIT_JOB_SCHED fields and time zones (the schedules file joins
//! them here). Pure: times in, times out; nothing here reads the clock.

pub mod backoff;
pub mod check;
pub mod cron;
pub mod duration;
pub mod file;
pub mod sched;
pub mod words;
pub mod zone;

pub use sched::SchedSpec;
pub use zone::Zone;
