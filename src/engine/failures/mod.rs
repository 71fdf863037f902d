//! Jobs that fail: retried with backoff while their policy allows, then kept in the failed
//! list for the operator to look at, queue again or drop.
//!
//! - `retries`: a failing background job queued again after its backoff; the retry policies
//!   (the entry's, the function's, the server's) and `show retries`.
//! - `ops`: a job failing for good, and `show failed`, `retry failed`, `drop failed`.
//! - `failed`: the failed list itself, within `--keep-failed` and `--keep-failed-bytes`; pure.

mod failed;
mod ops;
pub(super) mod retries;

pub use failed::{FailedJob, FailedList, FailedSelector, MAX_DROP_LABELS};
