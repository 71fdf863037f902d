//! Several servers, one schedule: the etcd conversation (election, lease, claims
//! of schedule runs, the watch) as a pure state machine, the records it keeps in etcd, and
//! the digests that tell servers with different schedules files apart. `etcd` is the pure
//! codec for etcd's v3 JSON gateway. The reactor owns the sockets (src/reactor/etcd_link.rs);
//! the engine asks for claims through its outbox.
//!
//! - `machine/`: the etcd conversation as a pure state machine (lease, election, watch,
//!   claims, compaction).
//! - `etcd/`: the v3 JSON gateway codec (requests to bytes, bytes to replies).
//! - `types`: the machine's vocabulary with the outside (links, settings, claims, status).
//! - `records`: the values kept under `gearwheel/{cluster}/`, as JSON both ways.
//! - `digest`: digests of a schedules file, per entry and whole.
//! - `view`: `show cluster`, `/cluster` and the cluster metrics, from a `Status`.
//! - `outage`: what the log says while etcd is unreachable (once, a minute, when back).
//! - `tests`: the machine's unit tests.

pub mod digest;
pub mod etcd;
pub mod machine;
pub mod outage;
pub mod records;
pub mod types;
pub mod view;

#[cfg(test)]
mod tests;

pub use machine::Machine;
pub use types::{ClaimAsk, Decision, EntryOp, Link, Output, Refusal, Settings, Stats, Status};
