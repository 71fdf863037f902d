//! gearwheel: a Gearman job server in one small binary.
//!
//! Crate map (ARCHITECTURE.md has the layers and one packet's way through them):
//! - `reactor`: the mio loop, one `turn(now)` after another on an injected clock; owns sockets
//!   and buffers, turns frames into requests, drives the journal's commits and the HTTP
//!   connections; `reactor::Embedded` runs it on a thread on a manual clock (for tests).
//! - `engine`: owns jobs, queues, functions, workers, waiting clients and schedule runs.
//! - `proto`: the pure wire codec; `timer`: the timer wheel; `clock`: the server's two times
//!   are read through it, once per turn (the system clock, or a manual one a test moves):
//!   the wall clock it schedules by, and a monotonic one for the etcd link's lease
//!   arithmetic, so that a clock step cannot stretch a lease.
//! - `schedule`: the schedules file, the cron adapter, SUBMIT_JOB_SCHED fields, time zones.
//! - `store`: the journal: records, segments, group commit, compaction, replay, repair.
//! - `http`: the HTTP listener's pure half (request parsing, routes, responses, JSON,
//!   metrics, the console's embedded page); the reactor feeds it bytes and engine replies.
//! - `json`: the small JSON writer the HTTP bodies and the alert workloads share.
//! - `access`: identities and the `--acl` file's rules (the engine gate's access check).
//! - `cluster`: several servers on one etcd: the pure etcd conversation (election, lease,
//!   claims of schedule runs) and its codec, the etcd v3 JSON gateway (`cluster::etcd`); the
//!   reactor owns its sockets.
//! - `config`: validated settings; `config_file`: the one way the server reads a file it
//!   reads again while it runs (regular files only, never a blocking open); `logger`: the `log` back end; `footprint`: the idle
//!   resident set and the process's numbers from /proc; `plural`: counts with their noun.
//! - `log_budget`: the one bound on log lines a peer can cause (`peer_log!`), with a summary
//!   of what it held back; `peer_text`: peer bytes escaped and cut short for a log line.
//! - `tls` (feature `tls`): certificate files, rustls configurations, peer names.
//! - `client`: a blocking Gearman client/worker library and a blocking etcd client
//!   (`client::etcd`); `cli`: the `work`, `submit`, `admin`, `check` and `import-crontab`
//!   commands built on it, and the top-level argv types (`cli::args`). The server uses only
//!   `client::etcd` (the etcd link's TLS settings and its lease revoke at exit, and the
//!   `--etcd-*` files' check in `config`), never `cli`.
//!
//! Dependencies point one way, with no loop between modules (tests/module_graph.rs).

pub mod access;
pub mod cli;
pub mod client;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod config_file;
pub mod engine;
pub mod footprint;
pub mod http;
pub mod json;
pub mod log_budget;
pub mod logger;
pub mod peer_text;
pub mod plural;
pub mod proto;
pub mod reactor;
pub mod schedule;
pub mod store;
pub mod timer;
#[cfg(feature = "tls")]
pub mod tls;
