//! One test binary: several servers over a real etcd (each test starts its own etcd; skipped
//! without one). Each file in tests/cluster/ was a test binary of its own; one binary links
//! tests/support once instead of once per file. Run one file's tests with `cargo test --test
//! cluster FILE::` (e.g. `cargo test --test cluster compaction::`).

#[path = "../support/mod.rs"]
mod support;

mod after;
mod backfill;
mod backfill_answer;
mod compaction;
mod etcd_codec;
mod etcd_tls;
mod failover;
mod heartbeats;
mod logs;
mod missed;
mod op_answer;
mod ops;
mod overlap;
mod push;
