//! Several servers, one schedule: the etcd conversation (election, lease, claims
//! of schedule runs, the watch) as a pure state machine, the records it keeps in etcd, and
//! the digests that tell servers with different schedules files apart. `etcd` is the pure
//! codec for etcd's v3 JSON gateway. The reactor owns the sockets (src/reactor/etcd_link.rs);
//! the engine asks for claims through its outbox.

pub mod digest;
pub mod etcd;
pub mod machine;
pub mod records;
pub mod types;
pub mod view;

#[cfg(test)]
mod tests;

pub use machine::Machine;
pub use types::{ClaimAsk, Decision, Link, Output, Refusal, Settings, Stats, Status};
